#!/usr/bin/env bash
# Where a sharded run's time goes (docs/distributed.md, "Where a sharded run's time goes"): each
# case run once on one machine and once as local shards (`run --shard I/N --start-at T`, then
# `merge`), both against the built-in simulator, and a table of the wall times: one machine's
# run from its start to its exit; the sharded run from the shards' start (the lead before
# --start-at included) to the merge's end, and how that splits into the lead, the slots'
# preparation (with the longest any shard needed), decode ramps, windows and schedules, rate
# drains, and the tail (the last cell's end to the merged run).
#
#   scripts/bench-shards.sh               # both cases
#   CASES=rate scripts/bench-shards.sh    # one: rate, rate-prefill or matrix
#   DURATION=10s scripts/bench-shards.sh  # the matrix with shorter windows
#   BIN=path OLD_BIN=path scripts/bench-shards.sh   # another build; OLD_BIN adds its sharded
#                                                   # runs (an older timetable) to the table
#   PREFILL_RATE=10000 scripts/bench-shards.sh      # the matrix's --shard-prefill-rate
#                                                   # (default 100000; 10000 is the flag's own)
#   SIM_PREFILL=10000 scripts/bench-shards.sh       # the simulator's prefill tok/s (a server
#                                                   # that prefills like the seed's, 8-11K tok/s)
#
# The cases: `rate` is issue 34's: two shards, one 3 s rate cell at 10/s at 1K, started 20 s
# ahead, every other setting the default; `rate-prefill` the same with the 1K prefill cell
# before it; `matrix` four shards, contexts 1K,2K,4K × N = 1,4,16,64, 30 s windows, a 20 s
# readiness limit, started 10 s ahead, with --shard-prefill-rate 100000 (the simulator's prefill
# row reads about 190K prompt tok/s).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
  cargo build --release -p llm-inference-bench >&2
  BIN=target/release/llm-inference-bench
fi
PORT="${PORT:-18124}"
DURATION="${DURATION:-30s}"
CASES="${CASES:-rate rate-prefill matrix}"
WORK="$(mktemp -d)"
SIM=
trap '[ -n "$SIM" ] && kill "$SIM" 2>/dev/null; true' EXIT

start_sim() {
  "$1" sim --profile tiny-vllm --port "$PORT" --set context_length=16384 \
    --set kv_capacity_tokens=4000000 --set prefix_cache_tokens=4000000 \
    --set max_running_requests=512 ${SIM_PREFILL:+--set prefill_tok_per_s=$SIM_PREFILL} \
    >/dev/null 2>&1 &
  SIM=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && return; sleep 0.1; done
  echo "the simulator did not start" >&2
  exit 1
}
stop_sim() { kill "$SIM" 2>/dev/null || true; wait "$SIM" 2>/dev/null || true; SIM=; }
now() { date +%s.%N; }

# The plan of a case, and its shard count, lead and shard-only flags.
plan() {
  local common=(--url "http://127.0.0.1:$PORT" --seed 7 --no-hw-monitor --display plain --format none)
  case "$1" in
    rate) PLAN=("${common[@]}" --contexts 1K --prefill-contexts none --skip-prefill --skip-decode --request-rate 10 --duration 3s --max-output 256)
      SHARDS=2 LEAD=20 SHARD_FLAGS=() ;;
    rate-prefill) PLAN=("${common[@]}" --contexts 1K --prefill-contexts none --skip-decode --request-rate 10 --duration 3s --max-output 256)
      SHARDS=2 LEAD=20 SHARD_FLAGS=() ;;
    matrix) PLAN=("${common[@]}" --contexts 1K,2K,4K --prefill-contexts none --concurrency 1,4,16,64 --duration "$DURATION" --readiness-timeout 20s --max-output 256)
      SHARDS=4 LEAD=10 SHARD_FLAGS=(--shard-prefill-rate "${PREFILL_RATE:-100000}") ;;
    *) echo "unknown case $1" >&2; exit 2 ;;
  esac
}

# One machine: seconds from start to exit.
one() {
  local b="$1" out="$2"
  start_sim "$b"
  local t0; t0=$(now)
  "$b" run "${PLAN[@]}" --output "$out" >"$out.log" 2>&1 || { cat "$out.log" >&2; exit 1; }
  python3 -c "print($(now) - $t0)"
  stop_sim
}

# The shards and the merge; writes launch and start instants and the merge's end to $out/times.
sharded() {
  local b="$1" out="$2" flags=()
  "$b" run --help | grep -q -- --shard-prefill-rate && flags=("${SHARD_FLAGS[@]}")
  start_sim "$b"
  mkdir -p "$out/logs"
  local t0 start pids=()
  t0=$(now)
  start=$(date -u -d "@$(python3 -c "import math; print(math.ceil($t0) + $LEAD)")" +%Y-%m-%dT%H:%M:%SZ)
  for i in $(seq 0 $((SHARDS - 1))); do
    "$b" run "${PLAN[@]}" "${flags[@]}" --shard "$i/$SHARDS" --start-at "$start" \
      --output "$out/shard-$i" >"$out/logs/shard-$i.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "a shard failed: see $out/logs" >&2; exit 1; }; done
  "$b" merge "$out"/shard-* -o "$out/merged" >"$out/logs/merge.log" 2>&1 ||
    { cat "$out/logs/merge.log" >&2; exit 1; }
  echo "$t0 $start $(now)" >"$out/times"
  stop_sim
}

ROWS="$WORK/rows.jsonl"
: >"$ROWS"
for c in $CASES; do
  plan "$c"
  one_s=$(one "$BIN" "$WORK/$c-one")
  sharded "$BIN" "$WORK/$c-new"
  python3 scripts/bench_shards_split.py "$c" "$one_s" "$WORK/$c-new" "$SHARDS" now >>"$ROWS"
  if [ -n "${OLD_BIN:-}" ]; then
    sharded "$OLD_BIN" "$WORK/$c-old"
    python3 scripts/bench_shards_split.py "$c" "$one_s" "$WORK/$c-old" "$SHARDS" before >>"$ROWS"
  fi
done
python3 scripts/bench_shards_split.py --table "$ROWS"
echo "(runs kept in $WORK)" >&2
