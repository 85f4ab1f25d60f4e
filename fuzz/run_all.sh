#!/usr/bin/env bash
# Runs every atheris harness for a fixed budget each: bash fuzz/run_all.sh [seconds] [jobs].
# Corpora grow in build/atheris_corpus/<harness>/ (seeded from fuzz/seeds/<harness>/; not
# committed: fuzz/corpus/ holds the native targets' corpora); crashing inputs land in
# fuzz/crashes/. Copy each into fuzz/regressions/<harness>/ once
# fixed: tests/robustness/test_regressions.py replays that directory.
# Set PYTHON to the interpreter (see scripts/sanitize.sh atheris). The seed is
# fixed (XG2_FUZZ_SEED, default 1) so a CI run is repeatable; pick other seeds for longer runs.
set -uo pipefail
cd "$(dirname "$0")"
SECONDS_EACH=${1:-20}
PYTHON=${PYTHON:-python3}
status=0
mkdir -p crashes
for harness in fuzz_ebnf fuzz_regex fuzz_json_schema fuzz_structural_tag fuzz_matcher; do
  corpus="../build/atheris_corpus/$harness"
  mkdir -p "$corpus"
  seeds=()
  [ -d "seeds/$harness" ] && seeds=("seeds/$harness")
  echo "== $harness (${SECONDS_EACH}s)"
  "$PYTHON" "$harness.py" "$corpus" "${seeds[@]}" -max_total_time="$SECONDS_EACH" -seed="${XG2_FUZZ_SEED:-1}" -timeout=30 \
    -rss_limit_mb=4096 -artifact_prefix="crashes/$harness-" -print_final_stats=1 2>&1 \
    | grep -E "^(#[0-9]+.*(DONE|INITED)|stat::number_of_executed_units|stat::peak_rss|==[0-9]+==|.*(Error|ERROR|Traceback|Uncaught))" || true
  test "${PIPESTATUS[0]}" -eq 0 || status=1
done
exit "$status"
