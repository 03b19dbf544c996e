#!/usr/bin/env bash
# The Python wheel as a user gets it: built with maturin (pyproject.toml, `bindings = "bin"`),
# installed into a fresh virtual environment from the built file alone (no index), and the
# installed command run: its --version must be the crate's, and a one-cell run against the
# simulator (started from the installed command too) must write run.json and a valid decode
# row in cells.jsonl.
#
# Idempotent: maturin lives in target/wheel-venv (created once); the check's environment,
# target/wheel-check-venv, is made anew on every run. The wheel is built with the dev profile,
# which reuses the test build (`cargo test` builds the same dependencies), to keep CI lean; the
# wheel a user installs is built with the release profile (docs/install.md).
#
# Exits non-zero with one line on stderr on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

MATURIN_VERSION=1.16.0
BIN=llm-inference-bench
TOOLS=target/wheel-venv
CHECK=target/wheel-check-venv
WHEELS=target/wheels
WORK=target/wheel-check

fail() { echo "wheel-test: $*" >&2; exit 1; }

# --- maturin, once -----------------------------------------------------------------------------
if [[ "$("$TOOLS/bin/maturin" --version 2>/dev/null)" != "maturin $MATURIN_VERSION" ]]; then
  rm -rf "$TOOLS"
  python3 -m venv "$TOOLS" >/dev/null || fail "cannot create $TOOLS (python3-venv missing?)"
  "$TOOLS/bin/pip" install -q "maturin==$MATURIN_VERSION" || fail "pip install maturin==$MATURIN_VERSION failed"
fi

# --- the crate's version -----------------------------------------------------------------------
version="$(cargo metadata --no-deps --format-version 1 --locked \
  | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "'"$BIN"'"))')" \
  || fail "cannot read the crate's version with cargo metadata"

# --- the wheel ---------------------------------------------------------------------------------
rm -f "$WHEELS"/llm_inference_bench-*.whl
log="$(mktemp)"
if ! "$TOOLS/bin/maturin" build --profile dev -o "$WHEELS" >"$log" 2>&1; then
  tail -n 30 "$log" >&2; rm -f "$log"
  fail "maturin build failed (output above)"
fi
rm -f "$log"
wheels=("$WHEELS"/llm_inference_bench-*.whl)
[[ ${#wheels[@]} -eq 1 && -f "${wheels[0]}" ]] || fail "expected one wheel in $WHEELS, found: ${wheels[*]}"
wheel="${wheels[0]}"
[[ "$(basename "$wheel")" == "llm_inference_bench-$version-"* ]] \
  || fail "the wheel $(basename "$wheel") does not carry the crate's version $version"

# --- a fresh environment, the wheel installed from the file alone ------------------------------
rm -rf "$CHECK"
python3 -m venv "$CHECK" >/dev/null || fail "cannot create $CHECK"
env -u PIP_FIND_LINKS "$CHECK/bin/pip" install -q --no-index --find-links "$WHEELS" "$wheel" \
  || fail "pip install of $(basename "$wheel") into a fresh venv failed"
cmd="$CHECK/bin/$BIN"
[[ -x "$cmd" ]] || fail "the wheel installed no $BIN command in $CHECK/bin"

got="$("$cmd" --version)" || fail "$cmd --version failed"
[[ "$got" == "$BIN $version" ]] || fail "installed --version says '$got', the crate is $version"

# --- a short run against the simulator, both from the installed command ------------------------
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
rm -rf "$WORK"
mkdir -p "$WORK"
"$cmd" sim --profile tiny --port "$port" >"$WORK/sim.log" 2>&1 &
sim=$!
trap 'kill "$sim" 2>/dev/null || true; wait "$sim" 2>/dev/null || true' EXIT

python3 - "$port" "$sim" <<'EOF' || fail "the simulator did not answer /v1/models on port $port (see $WORK/sim.log)"
import os, sys, time, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(1)  # exited early
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
            if r.status == 200:
                sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
EOF

out="$WORK/run"
"$cmd" run --url "http://127.0.0.1:$port" --contexts 1K --concurrency 1 --duration 1s \
  --max-output 16 --prefill-contexts none --output "$out" --display plain >"$WORK/run.log" 2>&1 \
  || fail "the installed '$BIN run' against the simulator failed (see $WORK/run.log)"
[[ -s "$out/run.json" ]] || fail "the run wrote no $out/run.json"
[[ -s "$out/cells.jsonl" ]] || fail "the run wrote no $out/cells.jsonl"
python3 - "$out/cells.jsonl" <<'EOF' || fail "$out/cells.jsonl has no valid decode row with output tokens"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
ok = any(r.get("phase") == "decode" and r.get("status") == "valid"
         and (r.get("output_tokens") or 0) > 0 and (r.get("total_tok_per_s") or 0) > 0
         for r in rows)
sys.exit(0 if ok else 1)
EOF

echo "wheel-test: ok: $(basename "$wheel") installed in a fresh venv; '$BIN --version' = $version; a run against the simulator wrote a valid decode cell"
