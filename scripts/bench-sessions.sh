#!/usr/bin/env bash
# The client's CPU in a session cell of 256 concurrent sessions against a single-turn open-loop
# cell of about as many output tokens (docs/benchmarks.md, "Sessions"): both runs against the
# same simulator (vLLM-flavoured, KV and cache large enough to hold every session), the whole
# client process timed by /usr/bin/time (user + system seconds), divided by the output tokens
# it received and by the requests it sent. Prints one line per run.
#
#   scripts/bench-sessions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p llm-inference-bench >&2
B=target/release/llm-inference-bench
PORT="${PORT:-18123}"
"$B" sim --profile tiny-vllm --port "$PORT" --set context_length=8192 \
  --set kv_capacity_tokens=4000000 --set prefix_cache_tokens=4000000 \
  --set max_running_requests=512 >/dev/null 2>&1 &
SIM=$!
trap 'kill $SIM 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
OUT="$(mktemp -d)"
common=(--url "http://127.0.0.1:$PORT" --api chat --contexts 1K --max-output 64 --format none --display plain)
measure() {
  local name="$1"; shift
  /usr/bin/time -f "%U %S" -o "$OUT/$name.time" "$B" run "${common[@]}" --output "$OUT/$name" "$@" >/dev/null 2>&1
  python3 - "$OUT/$name" "$(cat "$OUT/$name.time")" "$name" <<'PY'
import json, sys
d, t, name = sys.argv[1], sys.argv[2].split(), sys.argv[3]
cpu = float(t[0]) + float(t[1])
rows = [json.loads(l) for l in open(d + "/cells.jsonl") if l.strip()]
recs = [json.loads(l) for l in open(d + "/requests.jsonl") if l.strip()]
tokens = sum(sum(c["tokens"] for c in r["chunks"]) for r in recs)
print(f"{name}: {len(recs)} requests, {tokens} output tokens, client CPU {cpu:.2f} s: "
      f"{cpu / tokens * 1e6:.1f} µs per token, {cpu / len(recs) * 1e3:.2f} ms per request")
PY
}
measure sessions --sessions 256 --turns 4 --turn-input-len 128 --turn-output-len 64 \
  --system-prompt-len 256 --duration 60s --save-requests
measure open-loop --skip-decode --request-rate 130 --duration 8s --save-requests
