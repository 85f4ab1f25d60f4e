#!/usr/bin/env bash
# Runs every libFuzzer target for a fixed budget each:
#   bash fuzz/native/run_all.sh BUILD_DIR [seconds]
# BUILD_DIR holds the targets (scripts/sanitize.sh fuzz builds them there). Each target starts
# from its corpus in the tree (fuzz/corpus/<target>/, read only) and writes what it finds to
# BUILD_DIR/corpus/<target>/; crashing, leaking, slow (-timeout) and memory-hungry
# (-rss_limit_mb) inputs land in BUILD_DIR/crashes/ and fail the run. To keep new coverage,
# merge it into the tree corpus (minimised):
#   BUILD_DIR/fuzz_x -merge=1 fuzz/corpus/fuzz_x BUILD_DIR/corpus/fuzz_x
# The seed is fixed (XG2_FUZZ_SEED, default 1) so a CI run is repeatable.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BUILD_DIR="$(cd "$1" && pwd)"
SECONDS_EACH=${2:-20}
TARGETS=(fuzz_ebnf fuzz_regex fuzz_json_schema fuzz_structural_tag fuzz_matcher fuzz_serialization)
declare -A DICTIONARY=([fuzz_ebnf]=ebnf.dict [fuzz_regex]=regex.dict [fuzz_json_schema]=json.dict
                       [fuzz_structural_tag]=json.dict)
status=0
mkdir -p "$BUILD_DIR/crashes"
for target in "${TARGETS[@]}"; do
  work="$BUILD_DIR/corpus/$target"
  mkdir -p "$work"
  options=(-max_total_time="$SECONDS_EACH" -seed="${XG2_FUZZ_SEED:-1}" -timeout=10 -rss_limit_mb=2048
           -max_len=4096 -print_final_stats=1 -artifact_prefix="$BUILD_DIR/crashes/$target-")
  [ -n "${DICTIONARY[$target]:-}" ] && options+=(-dict="$HERE/${DICTIONARY[$target]}")
  echo "== $target (${SECONDS_EACH}s)"
  log="$BUILD_DIR/$target.log"
  "$BUILD_DIR/$target" "${options[@]}" "$work" "$HERE/../corpus/$target" >"$log" 2>&1
  code=$?
  grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)" "$log"
  if [ "$code" -ne 0 ]; then
    # The report: sanitizer / invariant / timeout text and the path of the saved input.
    grep -v -E "^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|RELOAD|INITED)|^INFO:|Test unit written|^Base64|^Shadow|^=?>? +0x|^  [A-Z][a-z ]+: " "$log" \
      | head -n 80
    grep -E "Test unit written to|^Base64:" "$log"
    echo "$target: FAILED (exit $code); the input is under $BUILD_DIR/crashes/" >&2
    status=1
  fi
done
exit "$status"
