#!/usr/bin/env bash
# Record real vLLM (CPU) transcripts for the client's parser tests.
#
#   scripts/vllm/record_transcripts.sh [OUT_DIR]
#
# OUT_DIR defaults to crates/client/fixtures/transcripts/vllm/live (a subfolder, so the
# hand-written vllm fixtures next to it are left alone). Needs scripts/vllm/install.sh first.
# Starts one server (max-num-seqs 4, API key test-key-123, so the same server also gives the 401;
# --enable-log-requests, so the log shows the SamplingParams each request became), records every
# body byte for byte with `curl -sN`, then stops it. After the OpenAI routes it records the
# agent APIs: the Anthropic Messages API (/v1/messages, messages_*) and the OpenAI Responses API
# (/v1/responses, responses_*), their usage on a long prompt sent twice (prefix cache cold, then
# warm), their errors, auth, which request controls each route honours (controls.tsv), /tokenize
# against their prompt counts, and the Prometheus counters around them.
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
out="$("$HERE/start.sh" --max-num-seqs 4 --api-key "$KEY" --pidfile "$TMP/vllm.pid" --log "$TMP/server.log" \
  -- --enable-log-requests)"
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

# ---------------------------------------------------------------------------------------------
# The agent APIs: Anthropic Messages (/v1/messages) and OpenAI Responses (/v1/responses).
# Greedy ("temperature":0) so the text repeats between runs; "Say hello" is chat_stream's prompt.
# Every long prompt is its own sentence repeated (~1,700 tokens), so each "cold" one is a real
# prefix-cache miss whatever ran before it; vLLM caches whole 128-token blocks (prefix caching is
# on by default in vLLM 0.32; start.sh does not turn it off).
agent_log_from=$(($(wc -l <"$TMP/server.log") + 1))
STEPS="$OUT/metrics_agent_apis_steps.txt"
: >"$STEPS"
# The engine's counters after each request (the full text before and after is kept too).
mstep() {
  sleep 0.5
  { echo "## after $1"
    "${C[@]}" "$U/metrics" | grep -E '^vllm:(prompt_tokens_total|prompt_tokens_cached_total|generation_tokens_total|prefix_cache_queries_total|prefix_cache_hits_total|request_success_total\{[^}]*finished_reason="(length|stop)")'
  } >>"$STEPS"
}
# A JSON body from a template whose @LONG@ is replaced with a long prompt (too big for -d in argv
# comfort, so it goes through a file).
body() { local t="$1" l="$2" f="$3"; printf '%s' "${t//@LONG@/"$l"}" >"$f"; }
# `status FILE curl-args...`: the HTTP status on the first line, the body after it.
status() {
  local f="$1" code; shift
  code="$("${@}" -o "$TMP/status.body" -w '%{http_code}')"
  { echo "$code"; cat "$TMP/status.body"; echo; } >"$f"
}

"${C[@]}" -o "$OUT/metrics_before_agent_apis.txt" "$U/metrics"
mstep start

# -- Messages: the short stream (ignore_eos is sent to show the route takes it: the log shows
#    ignore_eos=False, the Messages request type has no such field), non-streamed, system.
MSG='{"model":"tiny-llama","max_tokens":8,"stream":true,"ignore_eos":true,"temperature":0,"messages":[{"role":"user","content":"Say hello"}]}'
"${C[@]}" -D "$OUT/messages_stream.headers" -o "$OUT/messages_stream.sse" "${JSON[@]}" -d "$MSG" \
  "$U/v1/messages"
mstep messages_stream.sse
"${C[@]}" -D "$OUT/messages.headers" -o "$OUT/messages.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","max_tokens":8,"ignore_eos":true,"temperature":0,"messages":[{"role":"user","content":"Say hello"}]}' \
  "$U/v1/messages"
mstep messages.json
"${C[@]}" -o "$OUT/messages_stream_system.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","max_tokens":8,"stream":true,"temperature":0,"system":"You are a terse assistant.","messages":[{"role":"user","content":"Say hello"}]}' \
  "$U/v1/messages"
"${C[@]}" -o "$OUT/messages_stream_stop_sequence.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","max_tokens":8,"stream":true,"temperature":0,"stop_sequences":["counter"],"messages":[{"role":"user","content":"Say hello"}]}' \
  "$U/v1/messages"
"${C[@]}" -o "$OUT/messages_stop_sequence.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","max_tokens":8,"temperature":0,"stop_sequences":["counter"],"messages":[{"role":"user","content":"Say hello"}]}' \
  "$U/v1/messages"

# -- Messages: the cache trap. The same ~1,700-token prompt twice, streamed; then another one
#    twice, not streamed.
long_m="$(printf 'The quick brown fox jumps over the lazy dog near the river bank. %.0s' $(seq 105))"
body '{"model":"tiny-llama","max_tokens":8,"stream":true,"temperature":0,"messages":[{"role":"user","content":"@LONG@"}]}' \
  "$long_m" "$TMP/m-long.json"
"${C[@]}" -o "$OUT/messages_stream_long_cold.sse" "${JSON[@]}" --data-binary "@$TMP/m-long.json" "$U/v1/messages"
mstep messages_stream_long_cold.sse
"${C[@]}" -o "$OUT/messages_stream_long_warm.sse" "${JSON[@]}" --data-binary "@$TMP/m-long.json" "$U/v1/messages"
mstep messages_stream_long_warm.sse
body '{"model":"tiny-llama","messages":[{"role":"user","content":"@LONG@"}]}' "$long_m" "$TMP/t-long.json"
"${C[@]}" -o "$OUT/tokenize_messages_long.json" "${JSON[@]}" --data-binary "@$TMP/t-long.json" "$U/tokenize"
long_n="$(printf 'A slow green turtle walks under the bright moon beside the quiet lake. %.0s' $(seq 98))"
body '{"model":"tiny-llama","max_tokens":8,"temperature":0,"messages":[{"role":"user","content":"@LONG@"}]}' \
  "$long_n" "$TMP/m-long-n.json"
"${C[@]}" -o "$OUT/messages_long_cold.json" "${JSON[@]}" --data-binary "@$TMP/m-long-n.json" "$U/v1/messages"
mstep messages_long_cold.json
"${C[@]}" -o "$OUT/messages_long_warm.json" "${JSON[@]}" --data-binary "@$TMP/m-long-n.json" "$U/v1/messages"
mstep messages_long_warm.json

# -- Messages: count_tokens, auth, errors.
"${C[@]}" -D "$OUT/messages_count_tokens.headers" -o "$OUT/messages_count_tokens.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","messages":[{"role":"user","content":"Say hello"}]}' "$U/v1/messages/count_tokens"
SHORT='{"model":"tiny-llama","max_tokens":2,"temperature":0,"messages":[{"role":"user","content":"Say hello"}]}'
# Anthropic's own auth: x-api-key (and the anthropic-version header its SDKs send), no Bearer.
status "$OUT/messages_xapikey.status" curl -sN --max-time 60 -H "x-api-key: $KEY" \
  -H 'anthropic-version: 2023-06-01' "${JSON[@]}" -d "$SHORT" "$U/v1/messages"
# Bearer plus anthropic-version (200 here and without the header, as in messages.json: ignored).
status "$OUT/messages_anthropic_version.status" "${C[@]}" -H 'anthropic-version: 2023-06-01' \
  "${JSON[@]}" -d "$SHORT" "$U/v1/messages"
curl -sN --max-time 60 -H 'Authorization: Bearer wrong-key' "${JSON[@]}" \
  -D "$OUT/messages_401.headers" -o "$OUT/messages_401.json" -d "$SHORT" "$U/v1/messages"
too_long="$(printf ' hello%.0s' $(seq 4100))"
body '{"model":"tiny-llama","max_tokens":8,"messages":[{"role":"user","content":"@LONG@"}]}' "$too_long" "$TMP/m-tl.json"
body '{"model":"tiny-llama","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"@LONG@"}]}' \
  "$too_long" "$TMP/m-tl-s.json"
"${C[@]}" -D "$OUT/messages_too_long.headers" -o "$OUT/messages_too_long.json" "${JSON[@]}" \
  --data-binary "@$TMP/m-tl.json" "$U/v1/messages"
"${C[@]}" -D "$OUT/messages_too_long_stream.headers" -o "$OUT/messages_too_long_stream.sse" "${JSON[@]}" \
  --data-binary "@$TMP/m-tl-s.json" "$U/v1/messages"
# A prompt that fits but leaves less room than max_tokens: cut at the context, or refused?
near="$(printf ' hello%.0s' $(seq 4000))"
body '{"model":"tiny-llama","max_tokens":200,"temperature":0,"messages":[{"role":"user","content":"@LONG@"}]}' \
  "$near" "$TMP/m-near.json"
"${C[@]}" -o "$OUT/messages_over_context.json" "${JSON[@]}" --data-binary "@$TMP/m-near.json" "$U/v1/messages"
mstep messages_over_context.json

# -- Responses: the short stream (ignore_eos is a field of vLLM's Responses request), the same
#    non-streamed, instructions, input as a list of messages, a stop string.
"${C[@]}" -D "$OUT/responses_stream.headers" -o "$OUT/responses_stream.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","input":"Say hello","max_output_tokens":8,"stream":true,"ignore_eos":true,"temperature":0}' \
  "$U/v1/responses"
mstep responses_stream.sse
"${C[@]}" -D "$OUT/responses.headers" -o "$OUT/responses.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","input":"Say hello","max_output_tokens":8,"ignore_eos":true,"temperature":0}' \
  "$U/v1/responses"
mstep responses.json
"${C[@]}" -o "$OUT/responses_stream_instructions.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","instructions":"You are a terse assistant.","input":"Say hello","max_output_tokens":8,"stream":true,"ignore_eos":true,"temperature":0}' \
  "$U/v1/responses"
"${C[@]}" -o "$OUT/responses_stream_input_list.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","input":[{"role":"user","content":"Say hello"}],"max_output_tokens":8,"stream":true,"ignore_eos":true,"temperature":0}' \
  "$U/v1/responses"
"${C[@]}" -o "$OUT/responses_stream_stop.sse" "${JSON[@]}" \
  -d '{"model":"tiny-llama","input":"Say hello","max_output_tokens":8,"stream":true,"temperature":0,"stop":["counter"]}' \
  "$U/v1/responses"

# -- Responses: the cache trap, its own sentence (so the Messages runs above cannot warm it).
long_r="$(printf 'Seven silver ships sailed across the cold northern sea before the dawn. %.0s' $(seq 120))"
body '{"model":"tiny-llama","input":"@LONG@","max_output_tokens":8,"stream":true,"ignore_eos":true,"temperature":0}' \
  "$long_r" "$TMP/r-long.json"
"${C[@]}" -o "$OUT/responses_stream_long_cold.sse" "${JSON[@]}" --data-binary "@$TMP/r-long.json" "$U/v1/responses"
mstep responses_stream_long_cold.sse
"${C[@]}" -o "$OUT/responses_stream_long_warm.sse" "${JSON[@]}" --data-binary "@$TMP/r-long.json" "$U/v1/responses"
mstep responses_stream_long_warm.sse

# -- Responses: errors (the same over-long prompt; and one that leaves less room than asked).
body '{"model":"tiny-llama","input":"@LONG@","max_output_tokens":8}' "$too_long" "$TMP/r-tl.json"
body '{"model":"tiny-llama","input":"@LONG@","max_output_tokens":8,"stream":true}' "$too_long" "$TMP/r-tl-s.json"
"${C[@]}" -D "$OUT/responses_too_long.headers" -o "$OUT/responses_too_long.json" "${JSON[@]}" \
  --data-binary "@$TMP/r-tl.json" "$U/v1/responses"
"${C[@]}" -D "$OUT/responses_too_long_stream.headers" -o "$OUT/responses_too_long_stream.sse" "${JSON[@]}" \
  --data-binary "@$TMP/r-tl-s.json" "$U/v1/responses"
body '{"model":"tiny-llama","input":"@LONG@","max_output_tokens":200,"temperature":0}' "$near" "$TMP/r-near.json"
"${C[@]}" -o "$OUT/responses_over_context.json" "${JSON[@]}" --data-binary "@$TMP/r-near.json" "$U/v1/responses"
mstep responses_over_context.json
curl -sN --max-time 60 -H 'Authorization: Bearer wrong-key' "${JSON[@]}" -o "$OUT/responses_401.json" \
  -d '{"model":"tiny-llama","input":"Say hello","max_output_tokens":2}' "$U/v1/responses"

# -- /tokenize (outside /v1, so no key needed) on the same chat prompts, to set beside the routes'
#    own counts: the chat template's default, and with add_special_tokens (a second BOS).
"${C[@]}" -o "$OUT/tokenize_messages.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","messages":[{"role":"user","content":"Say hello"}]}' "$U/tokenize"
"${C[@]}" -o "$OUT/tokenize_messages_special.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","messages":[{"role":"user","content":"Say hello"}],"add_special_tokens":true}' "$U/tokenize"
"${C[@]}" -o "$OUT/tokenize_messages_system.json" "${JSON[@]}" \
  -d '{"model":"tiny-llama","messages":[{"role":"system","content":"You are a terse assistant."},{"role":"user","content":"Say hello"}]}' \
  "$U/tokenize"

# -- Which request controls each route honours: one request per control, its status, output
#    and the SamplingParams vLLM built (from the --enable-log-requests log line of its id).
cat >"$TMP/ctl.py" <<'PY'
import json, re, sys
route, name, code, path, log = sys.argv[1:6]
raw = open(path, encoding="utf-8").read()


def parse():
    """(id, output tokens, stop, text, error) of a Messages/Responses body or stream."""
    if raw.startswith(("event:", "data:")):
        ev = [json.loads(l[6:]) for l in raw.splitlines() if l.startswith("data: ")]
        errs = [e for e in ev if "error" in e.get("type", "")]
        if errs:
            return "", "", "", "", json.dumps(errs[0])
        if route == "messages":
            d = next(e for e in ev if e["type"] == "message_delta")
            text = "".join(e["delta"].get("text", "") for e in ev if e["type"] == "content_block_delta")
            rid = next(e["message"]["id"] for e in ev if e["type"] == "message_start")
            return rid, d["usage"]["output_tokens"], d["delta"].get("stop_reason"), text, ""
        r = next(e["response"] for e in ev if e["type"] == "response.completed")
    else:
        r = json.loads(raw)
    if "error" in r:
        e = r["error"]
        return "", "", "", "", e.get("message", e) if isinstance(e, dict) else e
    if route == "messages":
        text = "".join(b.get("text", "") for b in r["content"])
        return r["id"], r["usage"]["output_tokens"], r.get("stop_reason"), text, ""
    inc = r.get("incomplete_details")
    stop = r["status"] + ("/" + inc["reason"] if inc else "")
    text = "".join(c.get("text", "") for o in r["output"] for c in o.get("content", []))
    return r["id"], r["usage"]["output_tokens"], stop, text, ""


try:
    rid, toks, stop, text, err = parse()
except (StopIteration, KeyError, TypeError, ValueError) as e:
    rid, toks, stop, text, err = "", "", "", "", "unparsed (%r): %r" % (e, raw[:200])
params = ""
if rid:
    for line in open(log, encoding="utf-8", errors="replace"):
        if "Received request " + rid in line:
            keys = "temperature|top_p|top_k|seed|stop|ignore_eos|max_tokens|min_tokens"
            f = re.findall(r"\b(" + keys + r")=(\[[^\]]*\]|[^,]*)", line)
            params = " ".join("%s=%s" % kv for kv in f)
            break
print("\t".join(map(str, [route, name, code, toks, stop, json.dumps(text), params or err])))
PY
printf 'route\tcontrol\thttp\toutput_tokens\tstop\ttext\tvllm_sampling_params_or_error\n' >"$OUT/controls.tsv"
control() {
  local route="$1" extra="$2" base code
  [[ "$extra" == *'"temperature"'* ]] || extra=',"temperature":0'"$extra"
  if [[ "$route" == messages ]]; then
    base='{"model":"tiny-llama","max_tokens":8,"messages":[{"role":"user","content":"Say hello"}]'
  else
    base='{"model":"tiny-llama","max_output_tokens":8,"input":"Say hello"'
  fi
  code="$("${C[@]}" -o "$TMP/ctl.out" -w '%{http_code}' "${JSON[@]}" -d "$base$extra}" "$U/v1/$route")"
  "$VLLM_PY" "$TMP/ctl.py" "$route" "${extra#,}" "$code" "$TMP/ctl.out" "$TMP/server.log" >>"$OUT/controls.tsv"
}
for route in messages responses; do
  for extra in '' ',"temperature":0.7' ',"temperature":1,"top_p":0.5' ',"temperature":1,"top_k":5' ',"min_tokens":8' ',"ignore_eos":true' \
      ',"stop":["counter"]' ',"stop_sequences":["counter"]' ',"seed":1234' \
      ',"stream":true,"stream_options":{"include_usage":false}' \
      ',"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}'; do
    control "$route" "$extra"
  done
done

mstep all
"${C[@]}" -o "$OUT/metrics_after_agent_apis.txt" "$U/metrics"
# What the server logged for this section: each request's SamplingParams and each HTTP status.
tail -n +"$agent_log_from" "$TMP/server.log" \
  | grep -E 'Received request (chatcmpl|resp_)|"POST /(v1/messages|v1/responses|tokenize)' \
  | sed "s/$KEY/<redacted>/g" >"$OUT/server_log_agent_apis.txt" || true

# The server's own description of its flags, key redacted, for the README.
grep -m1 -i 'non-default args' "$TMP/server.log" 2>/dev/null | sed "s/$KEY/<redacted>/g" \
  >"$OUT/server_args.txt" || true
vllm_log "done: $(find "$OUT" -maxdepth 1 -type f ! -name README.md | wc -l) files in $OUT"
