#!/usr/bin/env bash
# The product's main job: vLLM serving with the xg2 structured-output backend.
# Sets up the vLLM CPU environment (.venv-vllm, once; see scripts/setup_vllm_env.sh), starts
# vLLM's OpenAI-compatible server with `--structured-outputs-config.backend xg2` on a tiny
# random-weights Llama next to the Llama-3.1 tokenizer, sends JSON-schema, regex and tool-call
# requests, and prints the outputs, their validation and the grammar time per token.
#
#   bash scripts/demo.sh                               # offline, CPU (the default)
#   XG2_VLLM_SPEC=vllm==0.33.0 bash scripts/demo.sh --model meta-llama/Llama-3.1-8B-Instruct
#                                                      # with network and a GPU
#
# Without vLLM, `xg2-demo` (installed with the package) runs the engine-only demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_vllm_env.sh
VENV=${XG2_VLLM_VENV:-.venv-vllm}
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
export XG2_DATA_DIR=${XG2_DATA_DIR:-$(cd .. && pwd)/shared/data}
# Run from outside the source tree so the installed package (not the sources) is imported.
cd "${TMPDIR:-/tmp}"
exec "$VENV/bin/python" -m xg2_plugin.adapters.vllm.demo "$@"
