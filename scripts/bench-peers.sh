#!/usr/bin/env bash
# Side by side with vLLM's own Rust benchmark client, vllm-bench (docs/peers.md): builds
# vllm-bench from its public source at a pinned commit and this tool in release, then runs each
# against the built-in simulator (vLLM flavour, 1 ms decode steps at any batch, one token per
# chunk, 1K prompts, EOS ignored) with the simulator pinned to one CPU and the client to
# another, at N = 1, 64, 256, 1024 streams. Prints each tool's CPU per token (its whole process
# tree over the same 10 s of steady streaming), peak RSS, and the output tok/s it reports; then
# startup times, the time to build 10,000 prompts, and each client's user-space instructions per
# token under valgrind (a count that does not move with the host's noise). Idempotent: a
# finished build is reused.
#
#   scripts/bench-peers.sh
#   VLLM_BENCH_SRC=/path/to/a/clone NS="1 64" STEPS=build,throughput scripts/bench-peers.sh
#
# Environment:
#   VLLM_BENCH_SRC     git URL or path of vllm-bench (default: its GitHub repository)
#   VLLM_BENCH_COMMIT  the commit built (default: f313182, the last standalone commit)
#   LLMIB_REV          the commit of this tool built (default HEAD), from a `git archive` snapshot
#                      in target/peers/llmib-src, so that edits in progress in the working tree
#                      neither break nor change the build; `worktree` builds the working tree
#   VLLM_BENCH_PROFILE_ENV  extra env for vllm-bench's build, e.g. "CARGO_PROFILE_RELEASE_LTO=thin"
#                      (default: none: vllm-bench's own release profile, fat LTO, 1 codegen unit)
#   NS                 stream counts (default "1 64 256 1024")
#   WINDOW             seconds of the measured window (default 10)
#   STEP_MS            decode step in ms by N, "N=MS,..." (default "1024=4": 1 ms at 1024 streams
#                      asks for 1M tok/s, more than the simulator's one CPU sends; 4 ms is the
#                      256k tok/s of N = 256; others 1 ms)
#   STEPS              comma-separated subset of build,throughput,hog,startup,prompts,instructions
#                      (default: all)
#   INSTR_NS, INSTR_RAMP  the instructions step: stream counts (default "1": under valgrind a
#                      client is ~50x slower, and at N = 64 it would fall behind) and the seconds
#                      each client runs before its count starts (default 12)
#   HOG_N, HOG_S       the hog step: N (default 256) and seconds of the busy loop (default 3)
#   SIM_CPU, CLIENT_CPU  the CPUs the simulator and the client are pinned to (default 0 and 1)
#   PORT, PROXY_PORT   the simulator's port and the startup proxy's (default 18190, 18191)
#   REPEATS            runs that count wanted per (tool, N) (default 3); the table gives the
#                      median and the range; FIRST_REPEAT=K adds repeats K.. to an OUT
#   TRIES              runs per repeat until one counts (default 3)
#   QUIET_MAX_BUSY, QUIET_TIMEOUT  each run waits (at most QUIET_TIMEOUT s, default 900) for a
#                      3 s span in which no CPU was more than QUIET_MAX_BUSY busy (default 0.10)
#   OUT                results directory (default target/peers/results-DATE)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

VLLM_BENCH_SRC="${VLLM_BENCH_SRC:-https://github.com/vllm-project/vllm-bench}"
VLLM_BENCH_COMMIT="${VLLM_BENCH_COMMIT:-f3131823f167aa1e6f31a48be1ae15a18667a534}"
VLLM_BENCH_PROFILE_ENV="${VLLM_BENCH_PROFILE_ENV:-}"
NS="${NS:-1 64 256 1024}"
WINDOW="${WINDOW:-10}"
STEPS="${STEPS:-build,throughput,hog,startup,prompts,instructions}"
INSTR_NS="${INSTR_NS:-1}"
INSTR_RAMP="${INSTR_RAMP:-12}"
HOG_N="${HOG_N:-256}"
STEP_MS="${STEP_MS:-1024=4}"
HOG_S="${HOG_S:-3}"
SIM_CPU="${SIM_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
PORT="${PORT:-18190}"
PROXY_PORT="${PROXY_PORT:-18191}"
PEERS="$ROOT/target/peers"
VB_DIR="$PEERS/vllm-bench"
VB="$VB_DIR/target/release/vllm-bench"
LLMIB_REV="${LLMIB_REV:-HEAD}"
LLMIB_SRC="$PEERS/llmib-src"
LLMIB_TARGET="$PEERS/llmib-target"
LLMIB="$LLMIB_TARGET/release/llm-inference-bench"
OUT="${OUT:-$PEERS/results-$(date -u +%Y%m%dT%H%M%SZ)}"
HELPER=(python3 "$ROOT/scripts/bench_peers.py")
TRIES="${TRIES:-3}"
REPEATS="${REPEATS:-3}"
FIRST_REPEAT="${FIRST_REPEAT:-1}"
QUIET_MAX_BUSY="${QUIET_MAX_BUSY:-0.10}"
QUIET_TIMEOUT="${QUIET_TIMEOUT:-900}"
URL="http://127.0.0.1:$PORT"

step() { [[ ",$STEPS," == *",$1,"* ]]; }
log() { printf '== %s\n' "$*" >&2; }

build() {
  mkdir -p "$PEERS"
  if [[ ! -d "$VB_DIR/.git" ]]; then
    log "cloning vllm-bench from $VLLM_BENCH_SRC"
    git clone --quiet "$VLLM_BENCH_SRC" "$VB_DIR"
  fi
  if ! git -C "$VB_DIR" cat-file -e "$VLLM_BENCH_COMMIT^{commit}" 2>/dev/null; then
    git -C "$VB_DIR" fetch --quiet origin
  fi
  if [[ "$(git -C "$VB_DIR" rev-parse HEAD)" != "$VLLM_BENCH_COMMIT" ]]; then
    git -C "$VB_DIR" -c advice.detachedHead=false checkout --quiet --force "$VLLM_BENCH_COMMIT"
  fi
  # The clone sits under this workspace's target/, and cargo would take it for a member of
  # this workspace: an empty [workspace] table makes it a workspace of its own (the one local
  # change to its tree; its Cargo.lock is used as it is, --locked).
  grep -q '^\[workspace\]' "$VB_DIR/Cargo.toml" || printf '\n[workspace]\n' >>"$VB_DIR/Cargo.toml"
  log "building vllm-bench $(git -C "$VB_DIR" rev-parse --short HEAD) (release${VLLM_BENCH_PROFILE_ENV:+, $VLLM_BENCH_PROFILE_ENV})"
  # shellcheck disable=SC2086 # VLLM_BENCH_PROFILE_ENV is a list of NAME=VALUE words
  (cd "$VB_DIR" && env $VLLM_BENCH_PROFILE_ENV cargo build --release --locked --bin vllm-bench)
  local src="$ROOT" rev
  if [[ "$LLMIB_REV" != worktree ]]; then
    rev="$(git rev-parse --verify "$LLMIB_REV^{commit}")"
    if [[ "$(cat "$LLMIB_SRC/.rev" 2>/dev/null)" != "$rev" ]]; then
      rm -rf "$LLMIB_SRC"
      mkdir -p "$LLMIB_SRC"
      git archive "$rev" | tar -x -C "$LLMIB_SRC"
      echo "$rev" >"$LLMIB_SRC/.rev"
    fi
    src="$LLMIB_SRC"
  fi
  log "building llm-inference-bench ${rev:-(working tree)} (release, target dir $LLMIB_TARGET)"
  (cd "$src" && CARGO_TARGET_DIR="$LLMIB_TARGET" cargo build --release --locked -p llm-inference-bench)
}

SIM_PID=""
stop_sim() {
  if [[ -n "$SIM_PID" ]]; then
    kill "$SIM_PID" 2>/dev/null || true
    wait "$SIM_PID" 2>/dev/null || true
    SIM_PID=""
  fi
}
trap stop_sim EXIT

# The decode step (ms, the same at every batch size) at N streams: STEP_MS's entry for N, else 1.
step_ms() { # N
  local kv
  for kv in ${STEP_MS//,/ }; do
    if [[ "${kv%%=*}" == "$1" ]]; then
      echo "${kv#*=}"
      return
    fi
  done
  echo 1
}

# A fresh simulator for every measured run, so that both tools meet the same state.
start_sim() { # [STEP_MS]
  local step="${1:-1}"
  stop_sim
  taskset -c "$SIM_CPU" "$LLMIB" sim --profile tiny-vllm --flavor vllm --port "$PORT" --api-key '' \
    --context-length 65536 --kv-capacity 100000000 --max-running-requests 4096 \
    --prefill-tok-per-s 10000000 --set "decode_step_ms=[[1,$step],[2,$step]]" \
    --set per_kv_token_us=0 --spec-tokens 1 >>"$OUT/sim.log" 2>&1 &
  SIM_PID=$!
  for _ in $(seq 100); do
    curl -sf "$URL/health" >/dev/null && return 0
    sleep 0.1
  done
  echo "the simulator did not start (see $OUT/sim.log)" >&2
  exit 1
}

# this tool: one decode cell at 1K, long enough for the helper's window after its ramp
CMD=()
llmib_cmd() { # N URL OUTDIR DURATION_S MAX_OUTPUT: sets CMD
  CMD=(taskset -c "$CLIENT_CPU" "$LLMIB" run --url "$2" --contexts 1K --concurrency "$1"
    --duration "$4s" --max-output "$5" --skip-prefill --format none --display plain
    --output "$3" --force)
}

# vllm-bench: random prompts of 1024 token ids from its built-in tiktoken vocabulary `gpt2`
# (r50k_base; no download: the simulator's own tokenizer has no file to give it, and its
# cl100k_base and o200k_base panic on text prompts, docs/peers.md),
# OUTPUT_LEN tokens each with EOS ignored, NUM_PROMPTS of them with at most N in flight
vb_cmd() { # N URL RESULT_DIR OUTPUT_LEN NUM_PROMPTS [text]: sets CMD
  CMD=(taskset -c "$CLIENT_CPU" "$VB" --backend vllm --base-url "$2" --model sim/tiny
    --tokenizer gpt2 --dataset-name random --random-input-len 1024
    --random-output-len "$4" --ignore-eos --num-prompts "$5"
    --max-concurrency "$1" --disable-tqdm --save-result --result-dir "$3"
    --result-filename result.json)
  [[ "${6:-}" == text ]] || CMD+=(--prompt-token-ids)
}

# One measured run of a tool at N, on a fresh simulator once the machine is quiet, tried again
# (up to TRIES times) while its window does not count: other processes ran on the client's
# CPU, the client fell behind the simulator, or not all N streams ran throughout.
measure_one() { # NAME N TAG REPORTED -- CMD...: writes $OUT/NAME-nN$TAG.json
  local name="$1" n="$2" tag="$3" reported="$4" try file
  shift 5
  file="$OUT/$name-n$n$tag"
  for ((try = 1; try <= TRIES; try++)); do
    "${HELPER[@]}" quiet --max-busy "$QUIET_MAX_BUSY" --timeout "$QUIET_TIMEOUT" ||
      log "the machine did not get quiet; measuring anyway"
    log "N=$n$tag: $name, decode step $(step_ms "$n") ms (try $try)"
    if [[ "$reported" == vllm:* ]]; then rm -f "${reported#vllm:}"; fi
    start_sim "$(step_ms "$n")"
    # the helper runs on the simulator's CPU, off the client's
    taskset -c "$SIM_CPU" "${HELPER[@]}" measure --metrics "$URL/metrics" --n "$n" \
      --window "$WINDOW" --client-cpu "$CLIENT_CPU" --step-ms "$(step_ms "$n")" \
      --log "$file.log" --out "$file.json" --reported "$reported" -- "$@" || true
    stop_sim
    "${HELPER[@]}" valid "$file.json" && return 0
  done
  return 0
}

throughput() {
  local n r tag rate len
  for n in $NS; do
    for ((r = FIRST_REPEAT; r <= REPEATS; r++)); do
      tag=""
      if ((r > 1)); then tag="-r$r"; fi
      # this tool first: a decode cell with requests longer than its window (never re-sent)
      llmib_cmd "$n" "$URL" "$OUT/llmib-n$n$tag" $((WINDOW + 6)) 60000
      measure_one llmib "$n" "$tag" "llmib:$OUT/llmib-n$n$tag" -- "${CMD[@]}"
      # vllm-bench sends one request per slot, and each must outlast its ramp, the helper's
      # 2 s and the window: twice the window (+4 s) of tokens at the rate per stream this
      # tool's window just saw (the simulator's nominal rate where that run did not count)
      rate=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("window_tok_s") if r.get("steady") else 0)' "$OUT/llmib-n$n$tag.json" 2>/dev/null || echo 0)
      len=$(python3 -c 'import math,sys; r,n,w,st=map(float,sys.argv[1:]); r=r/n if r else 1000.0/st; print(max(2000, min(60000, math.ceil(r * (2 * w + 4)))))' "$rate" "$n" "$WINDOW" "$(step_ms "$n")")
      vb_cmd "$n" "$URL" "$OUT/vb-n$n$tag" "$len" "$n"
      measure_one vllm-bench "$n" "$tag" "vllm:$OUT/vb-n$n$tag/result.json" -- "${CMD[@]}"
    done
  done
}

# Robustness: the same N=HOG_N run of each tool with a busy loop on the client's CPU for the
# first HOG_S seconds of the window (the client gets about half its CPU), then none: does the
# client catch up, and does its own figure still match what the simulator sent?
hog() {
  local n="$HOG_N" len
  len=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["cmd"][r["cmd"].index("--random-output-len") + 1])' "$OUT/vllm-bench-n$n.json" 2>/dev/null || echo 24000)
  "${HELPER[@]}" quiet --max-busy "$QUIET_MAX_BUSY" --timeout "$QUIET_TIMEOUT" || true
  log "hog, N=$n: llm-inference-bench"
  start_sim "$(step_ms "$n")"
  llmib_cmd "$n" "$URL" "$OUT/hog-llmib-n$n" $((WINDOW + 6)) 60000
  taskset -c "$SIM_CPU" "${HELPER[@]}" measure --metrics "$URL/metrics" --n "$n" \
    --window "$WINDOW" --client-cpu "$CLIENT_CPU" --step-ms "$(step_ms "$n")" --hog "$HOG_S" \
    --log "$OUT/hog-llmib-n$n.log" \
    --out "$OUT/hog-llmib-n$n.json" --reported "llmib:$OUT/hog-llmib-n$n" -- "${CMD[@]}" || true
  "${HELPER[@]}" quiet --max-busy "$QUIET_MAX_BUSY" --timeout "$QUIET_TIMEOUT" || true
  log "hog, N=$n: vllm-bench"
  start_sim "$(step_ms "$n")"
  rm -rf "$OUT/hog-vb-n$n"
  vb_cmd "$n" "$URL" "$OUT/hog-vb-n$n" "$len" "$n"
  taskset -c "$SIM_CPU" "${HELPER[@]}" measure --metrics "$URL/metrics" --n "$n" \
    --window "$WINDOW" --client-cpu "$CLIENT_CPU" --step-ms "$(step_ms "$n")" --hog "$HOG_S" \
    --exit-timeout 300 \
    --log "$OUT/hog-vllm-bench-n$n.log" --out "$OUT/hog-vllm-bench-n$n.json" \
    --reported "vllm:$OUT/hog-vb-n$n/result.json" -- "${CMD[@]}" || true
  stop_sim
}

startup() {
  local tmp="$OUT/startup-tmp"
  "${HELPER[@]}" quiet --max-busy "$QUIET_MAX_BUSY" --timeout "$QUIET_TIMEOUT" || true
  start_sim
  # exec -> first connection and first generation request, through a logging TCP proxy (the
  # tool is killed at its first generation request); each tool's defaults
  llmib_cmd 1 "http://127.0.0.1:$PROXY_PORT" "$tmp" 1 16
  "${HELPER[@]}" startup --listen "$PROXY_PORT" --upstream "$PORT" --runs 7 \
    --label "llm-inference-bench, to first request (proxy)" --out "$OUT/startup-1-llmib.json" \
    -- "${CMD[@]}"
  vb_cmd 1 "http://127.0.0.1:$PROXY_PORT" "$tmp" 16 1
  "${HELPER[@]}" startup --listen "$PROXY_PORT" --upstream "$PORT" --runs 7 \
    --label "vllm-bench, to first request (proxy)" --out "$OUT/startup-2-vllm-bench.json" \
    -- "${CMD[@]}"
  # exec -> exit of a run with one measured request of 16 tokens, direct, each tool's defaults
  # (this tool: its hidden warm-up, then a burst cell of 1 with its one warm-up request;
  # vllm-bench: no warm-up)
  llmib_cmd 1 "$URL" "$tmp" 1 16
  "${HELPER[@]}" startup --listen 0 --upstream "$PORT" --runs 7 --wait-exit \
    --label "llm-inference-bench, one-request run to exit" --out "$OUT/startup-3-llmib-exit.json" \
    -- "${CMD[@]}" --request-count 1
  vb_cmd 1 "$URL" "$tmp" 16 1
  "${HELPER[@]}" startup --listen 0 --upstream "$PORT" --runs 7 --wait-exit \
    --label "vllm-bench, one-request run to exit" --out "$OUT/startup-4-vllm-bench-exit.json" \
    -- "${CMD[@]}"
  stop_sim
}

# this tool's open-load cell of 10,000 1K prompts, timed to its first send: LABEL, the files'
# SUFFIX, then any more `run` flags
llmib_prompts() {
  local label="$1" suffix="$2"
  shift 2
  start_sim
  "${HELPER[@]}" timeline --label "llm-inference-bench 10k prompts (open load, $label)" \
    --mark 'prompts="phase":"prompts"' --mark 'sending="phase":"open loop"' \
    --until '"phase":"open loop"' \
    --log "$OUT/prompts-llmib$suffix.log" --out "$OUT/prompts-llmib$suffix.json" \
    -- taskset -c "$CLIENT_CPU" "$LLMIB" run --url "$URL" --contexts 1K --skip-decode \
    --skip-prefill --input-len 1K --output-len 16 --request-rate 1000 --duration 10s \
    --format none --display json --output "$OUT/prompts-tmp" --force "$@"
}

prompts() {
  local tmp="$OUT/prompts-tmp"
  "${HELPER[@]}" quiet --max-busy "$QUIET_MAX_BUSY" --timeout "$QUIET_TIMEOUT" || true
  start_sim
  # vllm-bench: 10,000 random 1K prompts, dry run (generation only), token ids and text
  vb_cmd 1 "$URL" "$tmp" 16 10000
  "${HELPER[@]}" timeline --label "vllm-bench 10k prompts, token ids (dry run)" \
    --mark 'generated=Generated [0-9]+ prompts' --log "$OUT/prompts-vb-ids.log" \
    --out "$OUT/prompts-vb-ids.json" -- "${CMD[@]}" --dry-run
  vb_cmd 1 "$URL" "$tmp" 16 10000 text
  "${HELPER[@]}" timeline --label "vllm-bench 10k prompts, text (dry run)" \
    --mark 'generated=Generated [0-9]+ prompts' --log "$OUT/prompts-vb-text.log" \
    --out "$OUT/prompts-vb-text.json" -- "${CMD[@]}" --dry-run
  # vllm-bench, text prompts for real: their lengths are checked against the server's
  # /tokenize (10 sampled; on a mismatch all are re-tokenized and fixed) before the first
  # request; its verification cache (under ~/.cache) is cleared first
  start_sim
  rm -rf "${XDG_CACHE_HOME:-$HOME/.cache}/vllm-bench"
  "${HELPER[@]}" timeline --label "vllm-bench 10k prompts, text, verified by the server" \
    --mark 'generated=Generated [0-9]+ prompts' --mark 'verified=prompts verified|verification passed' \
    --until 'Starting main benchmark run|Traffic request rate|Burstiness factor' \
    --log "$OUT/prompts-vb-verify.log" --out "$OUT/prompts-vb-verify.json" -- "${CMD[@]}"
  # this tool: an open-load cell of 10,000 requests of 1K prompts (1000/s for 10 s), each
  # prompt exact by the server's tokenizer, then the same with token-id prompts (the words'
  # ids learned once, each prompt exact by construction); killed when its sending starts
  llmib_prompts "exact" ""
  llmib_prompts "token ids" "-ids" --token-targeting ids
  stop_sim
}

# The simulator's count of generated tokens.
sim_tokens() {
  curl -sf "$URL/metrics" | awk '/^vllm:generation_tokens_total/ {print $2}'
}

# User-space instructions per token (callgrind): each client at N streams under valgrind, its
# count switched on after INSTR_RAMP s and taken over WINDOW s of steady streaming, divided by
# the tokens the simulator sent meanwhile. Kernel work is not counted (the same system calls
# for both, docs/peers.md). `busy` is the client's CPU over the window: near 1 it may have
# fallen behind (its count then covers fewer tokens than were sent, and reads low).
instructions() {
  if ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
    log "valgrind not found: the instructions step is skipped (apt-get install valgrind)"
    return 0
  fi
  local n name pid g0 g1 c0 c1 total file md="$OUT/instructions.md"
  printf '| N | tool | instructions / token | tokens counted | client busy |\n|---:|---|---:|---:|---:|\n' >"$md"
  for n in $INSTR_NS; do
    for name in llm-inference-bench vllm-bench; do
      "${HELPER[@]}" quiet --max-busy "$QUIET_MAX_BUSY" --timeout "$QUIET_TIMEOUT" || true
      start_sim 1
      if [[ "$name" == vllm-bench ]]; then
        vb_cmd "$n" "$URL" "$OUT/instr-tmp" 60000 "$n"
      else
        llmib_cmd "$n" "$URL" "$OUT/instr-tmp" $((INSTR_RAMP + WINDOW + 30)) 60000
      fi
      file="$OUT/callgrind-$name-n$n.out"
      rm -f "$file"*
      log "instructions, N=$n: $name"
      # CMD is taskset -c CPU BINARY ARGS...: valgrind goes between
      "${CMD[@]:0:3}" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$file" \
        "${CMD[@]:3}" >"$OUT/instr-$name-n$n.log" 2>&1 &
      pid=$!
      sleep "$INSTR_RAMP"
      callgrind_control -i on "$pid" >/dev/null 2>&1
      g0=$(sim_tokens)
      c0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
      sleep "$WINDOW"
      g1=$(sim_tokens)
      c1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
      callgrind_control -d "$pid" >/dev/null 2>&1
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      stop_sim
      total=$(callgrind_annotate "$file.1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
      python3 -c 'import sys; n, name, t, g0, g1, c0, c1, w, hz = sys.argv[1:]; tok = float(g1) - float(g0)
print(f"| {n} | {name} | {int(t) / tok:,.0f} | {tok:,.0f} | {(int(c1) - int(c0)) / int(hz) / float(w):.2f} |")' \
        "$n" "$name" "${total:-0}" "$g0" "$g1" "$c0" "$c1" "$WINDOW" "$(getconf CLK_TCK)" | tee -a "$md"
    done
  done
}

main() {
  mkdir -p "$OUT"
  if step build; then build; fi
  [[ -x "$VB" && -x "$LLMIB" ]] || { echo "build both tools first (STEPS=build)" >&2; exit 1; }
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(uname -r)"
    echo "vllm-bench: $(git -C "$VB_DIR" rev-parse HEAD) ($VLLM_BENCH_SRC)"
    if [[ "$LLMIB_REV" == worktree ]]; then
      echo "llm-inference-bench: working tree on $(git rev-parse HEAD)"
    else
      echo "llm-inference-bench: $(cat "$LLMIB_SRC/.rev")"
    fi
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  } | tee -a "$OUT/machine.txt" >&2
  if step throughput; then throughput; fi
  if step hog; then hog; fi
  if step startup; then startup; fi
  if step prompts; then prompts; fi
  if step instructions; then instructions; fi
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2
  "${HELPER[@]}" table "$OUT" | tee "$OUT/table.md"
  if [[ -f "$OUT/instructions.md" ]]; then cat "$OUT/instructions.md"; fi
  echo "results: $OUT" >&2
}

# the whole file is read before anything runs, so editing it meanwhile is safe
main "$@"; exit
