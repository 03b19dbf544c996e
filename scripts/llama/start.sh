#!/usr/bin/env bash
# Start llama-server with the tiny model on 127.0.0.1, in the background, and wait until it serves.
#
#   scripts/llama/start.sh [--port P] [--slots S] [--ctx-per-slot N] [--api-key K]
#                          [--pidfile F] [--log F] [--ready-timeout SECS] [-- EXTRA_SERVER_ARGS...]
#
#   --port P          0 or "auto" (default): pick a free port.
#   --slots S         parallel slots, -np (default 4).
#   --ctx-per-slot N  context per slot; the server gets -c S*N (default 4096, the model's max).
#   --api-key K       require this key (also read from LLAMA_API_KEY).
#   --pidfile F       default $LLMIB_CACHE/llama.cpp-11434/run/llama-server-<port>.pid
#   --log F           server output, default next to the pidfile (.log)
#   --ready-timeout   seconds to wait for readiness (default 60, env LLAMA_READY_TIMEOUT)
#
# Builds the binary and generates the model first when they are missing (build.sh, gen_model.py).
# Ready means GET /health answers 200 *and* a 1-token completion answers. On stdout, for `eval`:
#   LLAMA_URL=http://127.0.0.1:P
#   LLAMA_PID=1234
#   LLAMA_PIDFILE=...
#   LLAMA_LOG=...
# Stop it with scripts/llama/stop.sh --pidfile F (or --port P).
set -euo pipefail
# shellcheck source=scripts/llama/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Usage text = the comment block at the top of this file.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2; exit "${1:-2}"; }

PORT=0 SLOTS=4 CTX=4096 API_KEY="${LLAMA_API_KEY:-}" PIDFILE="" LOG=""
READY_TIMEOUT="${LLAMA_READY_TIMEOUT:-60}"
EXTRA=()
while (($#)); do
  case "$1" in
    --port) PORT="${2:?--port needs a value}"; shift 2 ;;
    --slots) SLOTS="${2:?--slots needs a value}"; shift 2 ;;
    --ctx-per-slot) CTX="${2:?--ctx-per-slot needs a value}"; shift 2 ;;
    --api-key) API_KEY="${2:?--api-key needs a value}"; shift 2 ;;
    --pidfile) PIDFILE="${2:?--pidfile needs a value}"; shift 2 ;;
    --log) LOG="${2:?--log needs a value}"; shift 2 ;;
    --ready-timeout) READY_TIMEOUT="${2:?--ready-timeout needs a value}"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) usage 0 ;;
    *) llama_log "unknown argument: $1"; usage 2 ;;
  esac
done
[[ "$PORT" == auto ]] && PORT=0
for v in PORT SLOTS CTX READY_TIMEOUT; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || llama_die "$v must be a non-negative integer, got '${!v}'"
done
((SLOTS >= 1 && CTX >= 16)) || llama_die "--slots must be >= 1 and --ctx-per-slot >= 16"

command -v curl >/dev/null 2>&1 || llama_die "curl is required (scripts/llama/build.sh installs it)"
llama_ensure

# Whether nothing listens on 127.0.0.1:$1. SO_REUSEADDR as llama-server itself uses, so ports in
# TIME_WAIT from an earlier run count as free (on Linux it still fails against a live listener).
port_free() {
  "$LLAMA_PY" -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}

free_port() {
  # Bind port 0 and report what the kernel chose. Racy by nature (the port is released before
  # llama-server binds it), hence the retry loop below.
  "$LLAMA_PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

auth=()
[[ -n "$API_KEY" ]] && auth=(-H "Authorization: Bearer $API_KEY")

# One readiness probe: health 200, then a real 1-token completion (health alone can be 200 while
# the first decode still fails, e.g. on an unsupported CPU).
probe() {
  local url="$1" code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/health" || true)
  [[ "$code" == 200 ]] || return 1
  curl -sf --max-time 10 "${auth[@]}" -H 'Content-Type: application/json' \
    -d '{"prompt":"Hello","max_tokens":1,"ignore_eos":true,"temperature":0}' \
    "$url/v1/completions" 2>/dev/null | grep -q '"choices"'
}

mkdir -p "$LLAMA_RUN_DIR"
attempt=0
while :; do
  attempt=$((attempt + 1))
  port="$PORT"
  ((port == 0)) && port="$(free_port)"
  # Another server already on the port would answer our readiness probe for us.
  port_free "$port" || llama_die "port $port on 127.0.0.1 is already in use"
  pidfile="${PIDFILE:-$LLAMA_RUN_DIR/llama-server-$port.pid}"
  log="${LOG:-${pidfile%.pid}.log}"
  if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    llama_die "$pidfile names a running process ($(cat "$pidfile")); stop it first (stop.sh)"
  fi
  url="http://127.0.0.1:$port"
  # The key is passed by environment, not argv, so it does not show in `ps`.
  # --cache-ram 0: no host-RAM prompt cache, so one run's prompts cannot speed up the next.
  # -t nproc: the client shares these cores, but the recipe's numbers were measured this way.
  args=(-m "$LLAMA_MODEL" --host 127.0.0.1 --port "$port"
        -c "$((SLOTS * CTX))" -np "$SLOTS" -t "$(nproc)"
        --metrics --alias tiny-llama --offline --no-ui --cache-ram 0)
  llama_log "starting $(basename "$LLAMA_BIN") on $url (slots $SLOTS x ctx $CTX${API_KEY:+, api key set})"
  LLAMA_API_KEY="$API_KEY" nohup "$LLAMA_BIN" "${args[@]}" "${EXTRA[@]}" >"$log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pidfile"

  deadline=$((SECONDS + READY_TIMEOUT))
  ready=0
  while ((SECONDS < deadline)); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    # Alive again a moment after the probe: a server that lost the bind race exits within ms,
    # and the probe may have been answered by whoever holds the port.
    if probe "$url" && sleep 0.2 && kill -0 "$pid" 2>/dev/null; then ready=1; break; fi
    sleep 0.2
  done
  if ((ready)); then break; fi
  timed_out=$((SECONDS >= deadline))

  # Not ready: clean up, then either retry (auto port lost a race) or fail loudly.
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
  if ((PORT == 0 && attempt < 3)) && grep -qiE 'bind|address already in use' "$log" 2>/dev/null; then
    llama_log "port $port was taken, retrying"
    continue
  fi
  if ((timed_out)); then
    llama_log "llama-server did not become ready within ${READY_TIMEOUT}s on $url; last log lines:"
  else
    llama_log "llama-server exited during startup on $url; last log lines ($log):"
  fi
  tail -n 30 "$log" >&2 2>/dev/null || true
  exit 1
done

llama_log "ready after attempt $attempt: $url (pid $pid, log $log)"
printf 'LLAMA_URL=%s\nLLAMA_PID=%s\nLLAMA_PIDFILE=%s\nLLAMA_LOG=%s\n' "$url" "$pid" "$pidfile" "$log"
