#!/usr/bin/env bash
# Record real vLLM (CPU) transcripts for the client's parser tests.
#
#   scripts/vllm/record_transcripts.sh [OUT_DIR]
#
# OUT_DIR defaults to crates/client/fixtures/transcripts/vllm/live (a subfolder, so the
# hand-written vllm fixtures next to it are left alone). Needs scripts/vllm/install.sh first.
# Starts one server (max-num-seqs 4, API key test-key-123, so the same server also gives the 401),
# records every body byte for byte with `curl -sN`, then stops it.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/vllm/common.sh
source "$HERE/common.sh"

OUT="${1:-$HERE/../../crates/client/fixtures/transcripts/vllm/live}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
TMP="$(mktemp -d)"
cleanup() {
  "$HERE/stop.sh" --pidfile "$TMP/vllm.pid" || true
  rm -rf "$TMP"
}
trap cleanup EXIT

KEY=test-key-123
out="$("$HERE/start.sh" --max-num-seqs 4 --api-key "$KEY" --pidfile "$TMP/vllm.pid" --log "$TMP/server.log")"
eval "$out"
U="$VLLM_URL"
vllm_log "recording into $OUT from $U"

C=(curl -sN --max-time 300 -H "Authorization: Bearer $KEY")
JSON=(-H 'Content-Type: application/json')

"${C[@]}" -o "$OUT/metrics_before.txt" "$U/metrics"
"${C[@]}" -o "$OUT/health.txt" -D "$OUT/health.headers" "$U/health"
"${C[@]}" -o "$OUT/version.json" "$U/version"
"${C[@]}" -o "$OUT/models.json" "$U/v1/models"

"${C[@]}" -D "$OUT/completions_stream.headers" -o "$OUT/completions_stream.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":"The quick brown fox","max_tokens":8,"stream":true,"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"
"${C[@]}" -o "$OUT/metrics_after.txt" "$U/metrics"
"${C[@]}" -o "$OUT/completions_stream_usage.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":"The quick brown fox","max_tokens":8,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"
"${C[@]}" -o "$OUT/completions_stream_continuous_usage.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":"The quick brown fox","max_tokens":8,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"
"${C[@]}" -o "$OUT/completions_token_ids.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":[1,15043,3186],"max_tokens":8,"min_tokens":8,"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"
"${C[@]}" -o "$OUT/completions.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":"The quick brown fox","max_tokens":8,"ignore_eos":true,"temperature":0}' \
  "$U/v1/completions"
"${C[@]}" -o "$OUT/chat_stream_usage.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","messages":[{"role":"user","content":"Say hello"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' \
  "$U/v1/chat/completions"
"${C[@]}" -o "$OUT/chat_stream.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","messages":[{"role":"user","content":"Say hello"}],"max_tokens":8,"stream":true,"ignore_eos":true,"temperature":0}' \
  "$U/v1/chat/completions"

"${C[@]}" -o "$OUT/tokenize.json" "${JSON[@]}" -d '{"model":"tiny-llama","prompt":"Hello world"}' "$U/tokenize"
"${C[@]}" -o "$OUT/tokenize_no_special.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","prompt":"Hello world","add_special_tokens":false}' "$U/tokenize"
"${C[@]}" -o "$OUT/detokenize.json" "${JSON[@]}" -d '{"model":"tiny-llama","tokens":[1,15043,3186]}' "$U/detokenize"

long="$(printf ' hello%.0s' $(seq 4100))"
printf '{"model":"tiny-llama","prompt":"%s","max_tokens":8,"ignore_eos":true}' "$long" >"$TMP/long.json"
printf '{"model":"tiny-llama","prompt":"%s","max_tokens":8,"stream":true,"ignore_eos":true}' "$long" \
  >"$TMP/long-stream.json"
"${C[@]}" -D "$OUT/error_context_exceeded.headers" -o "$OUT/error_context_exceeded.json" \
  "${JSON[@]}" --data-binary "@$TMP/long.json" "$U/v1/completions"
"${C[@]}" -D "$OUT/error_context_exceeded_stream.headers" -o "$OUT/error_context_exceeded_stream.sse" \
  "${JSON[@]}" --data-binary "@$TMP/long-stream.json" "$U/v1/completions"
short_long="$(printf ' hello%.0s' $(seq 4080))"
printf '{"model":"tiny-llama","prompt":"%s","max_tokens":64,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}' \
  "$short_long" >"$TMP/near-limit.json"
"${C[@]}" -o "$OUT/completions_stream_truncated.sse" "${JSON[@]}" \
  --data-binary "@$TMP/near-limit.json" "$U/v1/completions"

# Queueing: 8 concurrent streams with --max-num-seqs 4.
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
for p in "${pids[@]}"; do wait "$p"; done
cp "$TMP/q1.sse" "$OUT/completions_stream_queued.sse"
"${C[@]}" -o "$OUT/metrics_after_queue.txt" "$U/metrics"

# Wrong key (the C array carries the right one; this call does not use it).
curl -sN --max-time 60 -H 'Authorization: Bearer wrong-key' "${JSON[@]}" \
  -D "$OUT/error_unauthorized.headers" -o "$OUT/error_unauthorized.json" \
  -d '{"model":"tiny-llama","prompt":"Hi","max_tokens":1}' "$U/v1/completions"

# The server's own description of its flags, key redacted, for the README.
grep -m1 -i 'non-default args' "$TMP/server.log" 2>/dev/null | sed "s/$KEY/<redacted>/g" \
  >"$OUT/server_args.txt" || true
vllm_log "done: $(find "$OUT" -maxdepth 1 -type f ! -name README.md | wc -l) files in $OUT"
