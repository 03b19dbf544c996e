#!/usr/bin/env bash
# Stop a vLLM server started by scripts/vllm/start.sh, by its pidfile.
#
#   scripts/vllm/stop.sh --pidfile F | --port P
#
# SIGTERM to the server and, after 30 s, SIGKILL to it and its worker children (vLLM forks an
# engine-core process that must not be left behind holding memory).
set -euo pipefail
# shellcheck source=scripts/vllm/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

pidfile=""
case "${1:-}" in
  --pidfile) pidfile="${2:?}" ;;
  --port) pidfile="$VLLM_RUN_DIR/vllm-${2:?}.pid" ;;
  *) vllm_die "usage: stop.sh --pidfile F | --port P" ;;
esac
[[ -f "$pidfile" ]] || { vllm_log "no pidfile $pidfile; nothing to stop"; exit 0; }
pid="$(cat "$pidfile")"
[[ "$pid" =~ ^[0-9]+$ ]] || vllm_die "$pidfile does not hold a PID"
if ! kill -0 "$pid" 2>/dev/null; then rm -f "$pidfile"; vllm_log "pid $pid already gone"; exit 0; fi
grep -qa 'vllm.entrypoints' "/proc/$pid/cmdline" 2>/dev/null \
  || vllm_die "pid $pid is not a vLLM API server; not killing it"
# The whole tree (API server → engine core → workers), taken before it starts unwinding.
descendants() {
  local c
  for c in $(pgrep -P "$1" || true); do echo "$c"; descendants "$c"; done
}
children="$(descendants "$pid")"
kill -TERM "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  vllm_log "pid $pid ignored SIGTERM for 30 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
fi
# Whatever of the tree outlived the server (normally nothing: SIGTERM shuts it down cleanly).
for c in $children; do kill -KILL "$c" 2>/dev/null || true; done
rm -f "$pidfile"
vllm_log "stopped pid $pid"
