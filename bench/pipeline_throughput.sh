#!/usr/bin/env bash
# Pipelining of `hb-orchestrator run --policy`: the same workload sampled alone (`sample`), graded
# alone (`run --responses` of those replies) and sampled-and-graded in one job (`run --policy`),
# against hb-llm-sim at a fixed latency for both the policy route and the grader. Prints the
# three wall times (process start to exit) and the pipelined wall over the slower of the two
# alone (the target is <= 1.1: about max(sampling, grading), not their sum).
#   bench/pipeline_throughput.sh BUILD_DIR [TASKS=5000] [POLICY_IN_FLIGHT=100]
#                                [GRADER_IN_FLIGHT=1024] [LATENCY_MS=1000]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: pipeline_throughput.sh BUILD_DIR [TASKS] [POLICY_IN_FLIGHT] [GRADER_IN_FLIGHT] [LATENCY_MS]}
tasks=${2:-5000}
policy_in_flight=${3:-100}
grader_in_flight=${4:-1024}
latency_ms=${5:-1000}
template=$root/data/grader_template.txt
[ -f "$template" ] || template=${HB_SHARED_DIR:-$root/../shared}/reference/grader_template.txt
orch=$build/orchestrator/hb-orchestrator
# shellcheck source=bench/sim_workload.sh
source "$root/bench/sim_workload.sh"
start_sim --latency-ms "$latency_ms" --policy-latency-ms "$latency_ms"
grader=(--grader-template "$template" --llm-base-url "http://$addr/v1" --simulated-verdicts
        --max-in-flight "$grader_in_flight" --progress off)

timed() {  # timed NAME CMD...: runs CMD, prints its wall milliseconds
  local name=$1 start end
  shift
  start=$(date +%s%N)
  "$@" 2> "$work/$name.stderr" || { echo "$name failed:" >&2; tail "$work/$name.stderr" >&2; exit 1; }
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
sample_s=$(timed sample "$orch" sample --dataset "$work/w.jsonl" --out "$work/s.jsonl" \
  --policy-base-url "http://$addr/policy/v1" --policy-model bench \
  --max-in-flight "$policy_in_flight" --progress-interval 1h)
grade_s=$(timed grade "$orch" run --dataset "$work/w.jsonl" --responses "a=$work/s.jsonl" \
  --out "$work/grade" "${grader[@]}")
pipelined_s=$(timed pipelined "$orch" run --dataset "$work/w.jsonl" \
  --policy "a=bench@http://$addr/policy/v1" --policy-max-in-flight "$policy_in_flight" \
  --out "$work/pipelined" "${grader[@]}")
rows=$(/usr/bin/python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
  "select count(*) from rows where status = ?", ("ok",)).fetchone()[0])' "$work/pipelined/journal.sqlite")
/usr/bin/python3 - "$tasks" "$rows" "$latency_ms" "$sample_s" "$grade_s" "$pipelined_s" <<'PY'
import sys
tasks, rows, latency_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
sample, grade, pipelined = (float(ms) / 1000 for ms in sys.argv[4:7])
print(f"tasks {tasks} rows {rows} latency_ms {latency_ms:g} sample_s {sample:.1f} "
      f"grade_s {grade:.1f} pipelined_s {pipelined:.1f} "
      f"pipelined/max {pipelined / max(sample, grade):.3f} "
      f"pipelined/sum {pipelined / (sample + grade):.3f}")
PY
