#!/usr/bin/env bash
# Stop a llama-server started by start.sh, by its pidfile.
#
#   scripts/llama/stop.sh --pidfile F | --port P
#
# Sends SIGTERM, waits up to 10 s, then SIGKILL. Succeeds when the server is already gone.
# Refuses to signal a PID that is not llama-server (the pidfile may be stale and the PID reused).
set -euo pipefail
# shellcheck source=scripts/llama/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

pidfile=""
while (($#)); do
  case "$1" in
    --pidfile) pidfile="${2:?--pidfile needs a value}"; shift 2 ;;
    --port) pidfile="$LLAMA_RUN_DIR/llama-server-${2:?--port needs a value}.pid"; shift 2 ;;
    *) llama_die "usage: stop.sh --pidfile F | --port P" ;;
  esac
done
[[ -n "$pidfile" ]] || llama_die "usage: stop.sh --pidfile F | --port P"
if [[ ! -f "$pidfile" ]]; then
  llama_log "no pidfile $pidfile; nothing to stop"
  exit 0
fi
pid="$(cat "$pidfile")"
[[ "$pid" =~ ^[0-9]+$ ]] || llama_die "$pidfile does not hold a PID"
if ! kill -0 "$pid" 2>/dev/null; then
  llama_log "pid $pid already gone"
  rm -f "$pidfile"
  exit 0
fi
comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
[[ "$comm" == llama-server ]] || llama_die "pid $pid is '$comm', not llama-server; not killing it"
kill -TERM "$pid"
for _ in $(seq 100); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
  llama_log "pid $pid ignored SIGTERM for 10 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
fi
rm -f "$pidfile"
llama_log "stopped pid $pid"
