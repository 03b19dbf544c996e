#!/usr/bin/env bash
# Print where the llama-server binary and the tiny model are, building/generating them first.
#
#   eval "$(scripts/llama/paths.sh)"   # sets LLAMA_SERVER_BIN and LLAMA_MODEL
#
# stdout carries exactly these KEY=VALUE lines (progress goes to stderr):
#   LLAMA_SERVER_BIN=/abs/path/llama-server
#   LLAMA_MODEL=/abs/path/tiny-llama-seed0.gguf
#   LLAMA_MODEL_SHA256=<hex>
# For tests that spawn and own the server themselves. Env: LLMIB_CACHE, LLAMA_SEED (default 0).
set -euo pipefail
# shellcheck source=scripts/llama/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

llama_ensure
printf 'LLAMA_SERVER_BIN=%s\n' "$LLAMA_BIN"
printf 'LLAMA_MODEL=%s\n' "$LLAMA_MODEL"
printf 'LLAMA_MODEL_SHA256=%s\n' "$(cut -d' ' -f1 "$LLAMA_MODEL.sha256")"
