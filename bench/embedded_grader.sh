#!/usr/bin/env bash
# `hb-orchestrator run --grader embedded` against hb-llm-sim at 0 ms: rows/s and the
# orchestrator's CPU seconds per 1,000 rows (the embedded grader runs inside it), for one or more
# orchestrator binaries, interleaved run by run so they share the machine's conditions.
#
#   bench/embedded_grader.sh [--tasks N] [--runs K] LABEL=ORCH_BINARY [LABEL=ORCH_BINARY ...]
#
# The workload cycles the real records (scripts/make_workload.py) into N tasks (default 1000,
# ~11,700 rows). Needs the simulator and template of this tree (build/, data/). The simulator
# runs with SIM_THREADS threads (default 2, as bench/sim_ceiling.sh measures its ceiling), and the
# orchestrator gets ORCH_ARGS (extra flags, e.g. "--max-upstream-in-flight 1024"). Each round also
# measures the simulator's own ceiling on the same request bodies (wrk -t2 -c64 for 5 s with
# bench/sim_bodies.lua over 3,000 bodies dumped by hb-workload-stats, a fresh simulator with the
# same threads) and prints every run's rows/s over it: issue 20's overhead ratio.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tasks=1000 runs=3
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --tasks) tasks=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
[[ $# -gt 0 ]] || { echo "usage: $0 [--tasks N] [--runs K] LABEL=ORCH ..." >&2; exit 2; }
sim="$root/build/simulator/hb-llm-sim"
# The benchmark binaries are not in `all`: build what this script runs (a no-op when current).
source "$root/scripts/ci_lib.sh"
ci_build "$root/build" hb-workload-stats
template="$root/data/grader_template.txt"
dataset="$root/data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl"
[[ -f $dataset ]] || dataset="$root/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/scripts/make_workload.py" --dataset "$dataset" --tasks "$tasks" \
  --out-dataset "$work/w.jsonl" --out-responses "$work/r.jsonl" >/dev/null
"$root/build/bench/hb-workload-stats" --dataset="$work/w.jsonl" --responses="$work/r.jsonl" \
  --grader-template="$template" --dump-bodies="$work/bodies.txt" --dump-limit=3000 >/dev/null

start_sim() {  # start_sim DIR: sets sim_pid and addr
  "$sim" --listen 127.0.0.1:0 --latency-ms 0 --threads "${SIM_THREADS:-2}" --log-level warn \
    >"$1/sim.out" 2>/dev/null &
  sim_pid=$!
  for _ in $(seq 200); do grep -q '^listening on' "$1/sim.out" && break; sleep 0.05; done
  addr=$(head -1 "$1/sim.out" | sed 's/^listening on //')
}

ceiling=0
measure_ceiling() {
  local dir="$work/ceiling" sim_pid addr
  rm -rf "$dir" && mkdir -p "$dir"
  start_sim "$dir"
  HB_BODIES_FILE="$work/bodies.txt" wrk -t2 -c64 -d5s -s "$root/bench/sim_bodies.lua" \
    "http://$addr" >"$dir/wrk.txt"
  kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
  ceiling=$(awk '/^Requests\/sec:/ {print $2}' "$dir/wrk.txt")
  echo "ceiling requests_per_s=$ceiling (wrk, same bodies)"
}

one_run() {  # one_run LABEL ORCH
  local label=$1 orch=$2 dir="$work/$1" sim_pid addr rows wall user sys status=0
  rm -rf "$dir" && mkdir -p "$dir"
  start_sim "$dir"
  /usr/bin/time -f '%e %U %S' -o "$dir/time" "$orch" run --dataset "$work/w.jsonl" \
    --responses "b=$work/r.jsonl" --out "$dir/out" --grader embedded \
    --llm-base-url "http://$addr/v1" --grader-template "$template" --max-in-flight 512 \
    --progress off --simulated-verdicts ${ORCH_ARGS:-} >/dev/null 2>"$dir/orch.err" || status=$?
  kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
  if ((status)); then  # a failed run would only show as fewer rows: say so, keep its stderr
    echo "$label: hb-orchestrator exited $status; the end of its stderr:" >&2
    tail -5 "$dir/orch.err" >&2
  fi
  rows=$(sqlite3 "$dir/out/journal.sqlite" "select count(*) from rows where status='ok'")
  # GNU time writes "Command exited with non-zero status N" before its line when it fails.
  read -r wall user sys < <(tail -1 "$dir/time")
  awk -v l="$label" -v x="$status" -v r="$rows" -v w="$wall" -v u="$user" -v s="$sys" -v c="$ceiling" 'BEGIN {
    printf "%s exit=%d rows=%d wall_s=%.2f rows_per_s=%.0f cpu_s=%.2f cpu_s_per_1000_rows=%.3f " \
      "ratio=%.3f\n", l, x, r, w, r / w, u + s, 1000 * (u + s) / r, r / w / c }'
}

for ((run = 1; run <= runs; run++)); do
  measure_ceiling
  for spec in "$@"; do one_run "${spec%%=*}" "${spec#*=}"; done
done
