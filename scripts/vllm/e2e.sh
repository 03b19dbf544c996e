#!/usr/bin/env bash
# Run by the test command (scripts/test-all.sh) after the tests: the real-engine check against
# vLLM on CPU. Starts vLLM with the tiny model
# (scripts/vllm/install.sh must have run: ~7 GB), runs a small matrix with the release binary,
# prints the tables and checks the vLLM-specific facts the adapter must get right:
# engine detected as vLLM, KV capacity from vllm:cache_config_info, token counts per chunk from
# continuous usage, prompt lengths exact, and the API key in no output file.
#
#   scripts/vllm/e2e.sh [OUTPUT_DIR]
#
# LLMIB_BIN names the binary to check (the test command passes its debug build); without it the
# release binary is built. With VLLM_URL and VLLM_KEY set, the vLLM already serving there (with
# that key, --max-num-seqs 4) is checked instead of a fresh one: the test command's real-vLLM
# suite (crates/cli/tests/it/vllm_suite.rs) runs this script on the one server it starts.
# VLLM_E2E_DURATION sets each decode window (default 5s; the suite passes 2s: the checks read
# prompts, per-chunk counts and files, which a shorter window checks as well, and it saves the
# test command half a minute).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-results/vllm-e2e}"
KEY="${VLLM_KEY:-sk-vllm-e2e-$$}"

BIN="${LLMIB_BIN:-}"
if [[ -z "$BIN" ]]; then
  cargo build --release -p llm-inference-bench >&2
  BIN=target/release/llm-inference-bench
fi
if [[ -z "${VLLM_URL:-}" ]]; then
  eval "$(scripts/vllm/start.sh --max-num-seqs 4 --api-key "$KEY")"
  trap 'scripts/vllm/stop.sh --pidfile "$VLLM_PIDFILE" >/dev/null 2>&1 || true' EXIT
fi

rm -rf "$OUT"
"$BIN" run --url "$VLLM_URL" --api-key "$KEY" \
  --contexts 256,1K,3K --concurrency 1,2,4,8 --duration "${VLLM_E2E_DURATION:-5s}" --max-output 64 \
  --readiness-timeout 20s --save-requests --output "$OUT"

python3 - "$OUT" "$KEY" <<'PY'
import json, os, sys
out, key = sys.argv[1], sys.argv[2]
run = json.load(open(os.path.join(out, "run.json")))
rows = [json.loads(l) for l in open(os.path.join(out, "cells.jsonl")) if l.strip()]
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fail.append(what)
check(run["engine"]["kind"] == "vllm", f"engine detected as vllm ({run['engine']['kind']})")
kv = run["engine"].get("kv_capacity_tokens") or {}
check(bool(kv.get("value")), f"KV capacity read: {kv}")
for r in rows:
    tag = f"{r['phase']} C={r['context_tokens']} N={r['concurrency']}"
    pc = r.get("prompt_check") or {}
    if r["status"] in ("valid", "requests_queued", "failed"):
        check(pc.get("mismatched", 0) == 0, f"{tag}: prompt lengths exact ({pc})")
    if r["phase"] == "decode" and r["status"] in ("valid", "requests_queued"):
        check(r["token_count_source"] == "server_usage_per_chunk", f"{tag}: {r['token_count_source']}")
        print(f"     {tag}: {r['status']}, {r['total_tok_per_s']:.1f} tok/s, client {r['output_tokens']} vs server {r['server_generation_tokens']}")
for name in os.listdir(out):
    with open(os.path.join(out, name), "rb") as f:
        check(key.encode() not in f.read(), f"no API key in {name}")
sys.exit(1 if fail else 0)
PY
