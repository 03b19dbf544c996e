#!/usr/bin/env bash
# Client CPU per token with the dashboard on (`--display tui`, in a pseudo-terminal) and off
# (`--display plain`, same terminal), against a simulator in its own process so that only the
# client's CPU is counted. Prints one line per run and the medians (docs/benchmarks.md).
#
#   scripts/bench-dashboard.sh [RUNS] [CONCURRENCY]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
n=${2:-64}
cargo build -q --release -p llm-inference-bench
bin=$PWD/target/release/llm-inference-bench
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
# A decode step of 2 ms whatever the batch: N × 500 tok/s of 1-token chunks.
"$bin" sim --port "$port" --profile tiny --set 'decode_step_ms=[[1,2.0]]' \
  --set kv_capacity_tokens=10000000 >"$work/sim.log" 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; rm -rf "$work"' EXIT
sleep 1
for mode in plain tui; do
  for i in $(seq "$runs"); do
    out="$work/$mode-$i"
    # bash's `time` reports the client process's own user and system CPU seconds.
    script -qfec "stty cols 140 rows 45; TIMEFORMAT='CPU %3U %3S'; time $bin run \
      --url http://127.0.0.1:$port --contexts 512 --concurrency $n --duration 5s \
      --max-output 512 --display $mode --format none --output $out" "$work/tty-$mode-$i" \
      >/dev/null 2>&1
    if [ "$mode" = tui ] && ! grep -aq $'\e\[?1049h' "$work/tty-$mode-$i"; then
      echo "the dashboard did not start in the pseudo-terminal" >&2; exit 1
    fi
    cpu=$(grep -a -o 'CPU [0-9.]* [0-9.]*' "$work/tty-$mode-$i" | tail -1 | awk '{print $2 + $3}')
    tokens=$(python3 -c "
import json,sys
t=0
for l in open('$out/cells.jsonl'):
    r=json.loads(l); t+=r.get('output_tokens') or 0
print(t)")
    echo "$mode run $i: cpu ${cpu} s, window tokens $tokens, $(python3 -c "print(f'{$cpu/$tokens*1e6:.2f}')") µs/token"
  done
done | tee "$work/lines"
python3 - "$work/lines" <<'EOF'
import re, statistics, sys
per = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) run \d+: .* ([0-9.]+) µs/token", line)
    if m:
        per.setdefault(m.group(1), []).append(float(m.group(2)))
for mode, v in per.items():
    print(f"{mode}: median {statistics.median(v):.2f} µs/token over {len(v)} runs")
if "plain" in per and "tui" in per:
    print(f"tui / plain: {statistics.median(per['tui']) / statistics.median(per['plain']):.3f}")
EOF
