#!/usr/bin/env bash
# Record real llama-server transcripts for the client's parser tests.
#
#   scripts/llama/record_transcripts.sh [OUT_DIR]
#
# OUT_DIR defaults to crates/client/fixtures/transcripts/llamacpp. Starts its own servers with
# start.sh on free loopback ports (4 slots x 4096 context, and a second one with an API key),
# records every response body byte for byte with `curl -sN`, then stops them. Files are
# overwritten; the README in OUT_DIR lists what each file is and the exact request.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/llama/common.sh
source "$HERE/common.sh"

OUT="${1:-$HERE/../../crates/client/fixtures/transcripts/llamacpp}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
TMP="$(mktemp -d)"
PIDFILES=()
cleanup() {
  local f
  for f in "${PIDFILES[@]}"; do "$HERE/stop.sh" --pidfile "$f" || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

start_server() { # start_server VAR_PREFIX start.sh-args... ; sets ${PREFIX}_URL, ${PREFIX}_PIDFILE
  local prefix="$1"; shift
  local pidfile="$TMP/$prefix.pid"
  PIDFILES+=("$pidfile")
  local out
  out="$("$HERE/start.sh" --pidfile "$pidfile" --log "$TMP/$prefix.log" "$@")"
  eval "${out//LLAMA_/${prefix}_}"
}

# Every request is bounded; bodies are saved exactly as received (-o, no post-processing).
C=(curl -sN --max-time 120)
JSON=(-H 'Content-Type: application/json')

start_server SRV --slots 4 --ctx-per-slot 4096
U="$SRV_URL"
llama_log "recording into $OUT from $U"

# Counters before and after exactly one request of known size (the readiness probe of start.sh
# already made one 1-token completion, so the "before" counters are not zero).
"${C[@]}" -o "$OUT/metrics_before.txt" "$U/metrics"
"${C[@]}" -o "$OUT/health.json" "$U/health"
"${C[@]}" -o "$OUT/props.json" "$U/props"
"${C[@]}" -o "$OUT/slots_idle.json" "$U/slots"
"${C[@]}" -o "$OUT/models.json" "$U/v1/models"

# Streaming completions, no stream_options: usage still rides on the finish chunk (recipe).
"${C[@]}" -D "$OUT/completions_stream.headers" -o "$OUT/completions_stream.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":"The quick brown fox","max_tokens":8,"stream":true,"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"
"${C[@]}" -o "$OUT/metrics_after.txt" "$U/metrics"

"${C[@]}" -D "$OUT/completions_stream_usage.headers" -o "$OUT/completions_stream_usage.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":"The quick brown fox","max_tokens":8,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"

# continuous_usage_stats is vLLM's; the recipe says llama.cpp ignores it. Recorded to prove it.
"${C[@]}" -o "$OUT/completions_stream_continuous_usage.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":"The quick brown fox","max_tokens":8,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"

# Prompt as token ids ([BOS, "▁Hello", "▁world"]) and min_tokens, non-streaming.
"${C[@]}" -o "$OUT/completions_token_ids.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":[1,15043,3186],"max_tokens":8,"min_tokens":8,"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"

"${C[@]}" -o "$OUT/completions.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":"The quick brown fox","max_tokens":8,"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"

"${C[@]}" -D "$OUT/chat_stream_usage.headers" -o "$OUT/chat_stream_usage.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","messages":[{"role":"user","content":"Say hello"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' \
  "$U/v1/chat/completions"
"${C[@]}" -o "$OUT/chat_stream.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","messages":[{"role":"user","content":"Say hello"}],"max_tokens":8,"stream":true,"ignore_eos":true,"temperature":0}' \
  "$U/v1/chat/completions"

# Tokenizer endpoints: /tokenize adds no BOS unless asked, unlike string prompts.
"${C[@]}" -o "$OUT/tokenize.json" "${JSON[@]}" -d '{"content":"Hello world"}' "$U/tokenize"
"${C[@]}" -o "$OUT/tokenize_add_special.json" "${JSON[@]}" \
  -d '{"content":"Hello world","add_special":true}' "$U/tokenize"
"${C[@]}" -o "$OUT/detokenize.json" "${JSON[@]}" -d '{"tokens":[1,15043,3186]}' "$U/detokenize"

# Over-long prompt: 4100 x " hello" is 4101 tokens with BOS, over the 4096-token slot.
long="$(printf ' hello%.0s' $(seq 4100))"
printf '{"model":"tiny-llama","prompt":"%s","max_tokens":8,"ignore_eos":true}' "$long" >"$TMP/long.json"
printf '{"model":"tiny-llama","prompt":"%s","max_tokens":8,"stream":true,"ignore_eos":true}' "$long" \
  >"$TMP/long-stream.json"
"${C[@]}" -D "$OUT/error_context_exceeded.headers" -o "$OUT/error_context_exceeded.json" \
  "${JSON[@]}" --data-binary "@$TMP/long.json" "$U/v1/completions"
"${C[@]}" -D "$OUT/error_context_exceeded_stream.headers" -o "$OUT/error_context_exceeded_stream.sse" \
  "${JSON[@]}" --data-binary "@$TMP/long-stream.json" "$U/v1/completions"

# Prompt + max_tokens over the slot: not an error, cut with finish_reason "length".
short_long="$(printf ' hello%.0s' $(seq 4080))"
printf '{"model":"tiny-llama","prompt":"%s","max_tokens":64,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' \
  "$short_long" >"$TMP/near-limit.json"
"${C[@]}" -o "$OUT/completions_stream_truncated.sse" "${JSON[@]}" \
  --data-binary "@$TMP/near-limit.json" "$U/v1/completions"

# Queueing: 8 concurrent streams on 4 slots; sample /metrics and /slots while they run.
# Token counters only move when a request finishes (llama.cpp flushes a slot's stats on release),
# so metrics_queued shows the running/deferred gauges but not the in-flight tokens.
"${C[@]}" -o "$OUT/metrics_before_queue.txt" "$U/metrics"
pids=()
for i in $(seq 8); do
  "${C[@]}" -o "$TMP/q$i.sse" "${JSON[@]}" \
    -d '{"model":"tiny-llama","prompt":"Queue test '"$i"'","max_tokens":256,"stream":true,"ignore_eos":true}' \
    "$U/v1/completions" &
  pids+=($!)
done
sleep 1
"${C[@]}" -o "$OUT/metrics_queued.txt" "$U/metrics"
"${C[@]}" -o "$OUT/slots_busy.json" "$U/slots"
for p in "${pids[@]}"; do wait "$p"; done
cp "$TMP/q1.sse" "$OUT/completions_stream_queued.sse"
"${C[@]}" -o "$OUT/metrics_after_queue.txt" "$U/metrics"

# A second server with an API key, called with the wrong one.
start_server KEYED --slots 1 --ctx-per-slot 512 --api-key test-key-123
"${C[@]}" -D "$OUT/error_unauthorized.headers" -o "$OUT/error_unauthorized.json" "${JSON[@]}" \
  -H 'Authorization: Bearer wrong-key' \
  -d '{"model":"tiny-llama","prompt":"Hi","max_tokens":1}' "$KEYED_URL/v1/completions"
"${C[@]}" -o "$OUT/health_with_api_key.json" "$KEYED_URL/health"

llama_log "done: $(find "$OUT" -maxdepth 1 -type f ! -name README.md | wc -l) files in $OUT"
