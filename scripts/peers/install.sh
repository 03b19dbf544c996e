#!/usr/bin/env bash
# Install the peer benchmarks whose result files `import` reads, for the tests that run them
# against the simulator (crates/cli/tests/it/import_peers.rs): AIPerf and GuideLLM, each pinned,
# each in its own venv (their dependencies conflict), no extras.
#
#   scripts/peers/install.sh                      # both; prints each venv's path
#   scripts/peers/install.sh aiperf               # one
#   scripts/peers/install.sh --installed aiperf   # its venv's path if installed, else exit 1
#
# Idempotent: a venv with its marker file is kept. Everything comes from PyPI: about 1.2 GB for
# AIPerf and 6 GB for GuideLLM (it depends on torch), a few minutes the first time. The tests'
# tokenizer is vLLM's converted tiny model, which scripts/vllm/install.sh makes.
set -euo pipefail

AIPERF_VERSION="0.13.0"
GUIDELLM_VERSION="0.8.1"
LLMIB_CACHE="${LLMIB_CACHE:-${HOME:?HOME is unset; set LLMIB_CACHE}/.cache/llm-inference-bench}"
PEERS="$LLMIB_CACHE/peers"

log() { printf '[peers %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# installed TOOL VERSION MODULE: whether the venv is complete (its marker, and the module imports).
installed() {
  local venv="$PEERS/$1-$2"
  [[ -f "$venv/.llmib-installed" ]] && "$venv/bin/python" -c "import $3" 2>/dev/null
}

# install TOOL VERSION MODULE: the venv PEERS/TOOL-VERSION with TOOL==VERSION, its path printed.
install() {
  local tool="$1" version="$2" module="$3"
  local venv="$PEERS/$tool-$version"
  mkdir -p "$PEERS"
  exec 9>"$PEERS/.$tool.lock"
  flock -w 900 9 || { log "timed out waiting for $PEERS/.$tool.lock"; return 1; }
  if installed "$tool" "$version" "$module"; then
    log "$tool $version already installed in $venv"
  else
    log "installing $tool==$version into $venv"
    rm -rf "$venv"
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$tool==$version" </dev/null
    "$venv/bin/python" -c "import $module"
    touch "$venv/.llmib-installed"
  fi
  exec 9>&-
  echo "$venv"
}

action=install
if [[ "${1:-}" == "--installed" ]]; then
  action=check
  shift
fi
tools=("$@")
((${#tools[@]})) || tools=(aiperf guidellm)
for t in "${tools[@]}"; do
  case "$t" in
    aiperf) spec=(aiperf "$AIPERF_VERSION" aiperf) ;;
    guidellm) spec=(guidellm "$GUIDELLM_VERSION" guidellm) ;;
    *) log "unknown tool $t (aiperf, guidellm)"; exit 2 ;;
  esac
  if [[ "$action" == check ]]; then
    installed "${spec[@]}" || exit 1
    echo "$PEERS/${spec[0]}-${spec[1]}"
  else
    install "${spec[@]}"
  fi
done
