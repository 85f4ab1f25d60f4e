#!/usr/bin/env bash
# The product's main job: vLLM serving with the xg2 structured-output backend, offline on a CPU.
# Sets up the vLLM CPU environment (.venv-vllm, once; see scripts/setup_vllm_env.sh), builds the
# project's own small tokenizer and a tiny random-weights Llama next to it (once, cached in the
# temp dir), starts vLLM's OpenAI-compatible server with `--structured-outputs-config.backend xg2`,
# sends JSON-schema, regex and tool-call requests, and prints the outputs, their validation and
# the grammar time per token. Needs nothing beside the checkout.
#
#   bash scripts/demo.sh                               # offline, CPU (the default)
#   bash scripts/demo.sh --tokenizer DIR               # the tiny model next to another HF tokenizer folder
#   XG2_VLLM_SPEC=vllm==0.33.0 bash scripts/demo.sh --model meta-llama/Llama-3.1-8B-Instruct
#                                                      # with network and a GPU
#
# Without vLLM, `xg2-demo` (installed with the package) runs the engine-only demo.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
echo "[demo] setting up the vLLM environment (the first run installs vLLM: several minutes)"
bash scripts/setup_vllm_env.sh
echo "[demo] environment ready after $(( $(date +%s) - start )) s"
VENV=${XG2_VLLM_VENV:-.venv-vllm}
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
# Run from outside the source tree so the installed package (not the sources) is imported.
cd "${TMPDIR:-/tmp}"
exec "$VENV/bin/python" -m xg2_plugin.adapters.vllm.demo "$@"
