#!/usr/bin/env bash
# `hb-orchestrator run --grader embedded` against hb-llm-sim at 0 ms: rows/s and the
# orchestrator's CPU seconds per 1,000 rows (the embedded grader runs inside it), for one or more
# orchestrator binaries, interleaved run by run so they share the machine's conditions.
#
#   bench/embedded_grader.sh [--tasks N] [--runs K] LABEL=ORCH_BINARY [LABEL=ORCH_BINARY ...]
#
# The workload cycles the real records (scripts/make_workload.py) into N tasks (default 1000,
# ~11,700 rows). Needs the simulator and template of this tree (build/, data/).
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
template="$root/data/grader_template.txt"
dataset="$root/data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl"
[[ -f $dataset ]] || dataset="$root/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/scripts/make_workload.py" --dataset "$dataset" --tasks "$tasks" \
  --out-dataset "$work/w.jsonl" --out-responses "$work/r.jsonl" >/dev/null

one_run() {  # one_run LABEL ORCH
  local label=$1 orch=$2 dir="$work/$1" sim_pid addr rows wall user sys
  rm -rf "$dir" && mkdir -p "$dir"
  "$sim" --listen 127.0.0.1:0 --latency-ms 0 --threads 1 --log-level warn >"$dir/sim.out" 2>/dev/null &
  sim_pid=$!
  for _ in $(seq 200); do grep -q '^listening on' "$dir/sim.out" && break; sleep 0.05; done
  addr=$(head -1 "$dir/sim.out" | sed 's/^listening on //')
  /usr/bin/time -f '%e %U %S' -o "$dir/time" "$orch" run --dataset "$work/w.jsonl" \
    --responses "b=$work/r.jsonl" --out "$dir/out" --grader embedded \
    --llm-base-url "http://$addr/v1" --grader-template "$template" --max-in-flight 512 \
    --progress off --simulated-verdicts >/dev/null 2>"$dir/orch.err" || true
  kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
  rows=$(sqlite3 "$dir/out/journal.sqlite" "select count(*) from rows where status='ok'")
  read -r wall user sys <"$dir/time"
  awk -v l="$label" -v r="$rows" -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN {
    printf "%s rows=%d wall_s=%.2f rows_per_s=%.0f cpu_s=%.2f cpu_s_per_1000_rows=%.3f\n",
      l, r, w, r / w, u + s, 1000 * (u + s) / r }'
}

for ((run = 1; run <= runs; run++)); do
  for spec in "$@"; do one_run "${spec%%=*}" "${spec#*=}"; done
done
