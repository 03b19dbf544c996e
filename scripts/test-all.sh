#!/usr/bin/env bash
# The one command that runs all the tests (the README points here; .ci/run calls it).
# Installs what the tests need, idempotently, then runs lints, docs and the test suites.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup component add rustfmt clippy >/dev/null 2>&1 || true

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
cargo test --workspace --locked
