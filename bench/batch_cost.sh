#!/usr/bin/env bash
# Online vs Batch API grading of the same workload against hb-llm-sim: runs `hb-orchestrator run`
# twice on the real records cycled to TASKS tasks (grader embedded, simulated verdicts), once
# online and once with --grader-mode batch, and prints each run's wall time and the dollars it
# reports itself (online: the final progress line's "est. $"; batch: the final "at batch price"
# line), plus whether both runs wrote the same verdicts.
#   bench/batch_cost.sh BUILD_DIR [TASKS=300] [BATCH_COMPLETION_DELAY=2s]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: batch_cost.sh BUILD_DIR [TASKS] [BATCH_COMPLETION_DELAY]}
tasks=${2:-300}
delay=${3:-2s}
shared=${HB_SHARED_DIR:-$root/../shared}
dataset=$root/data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl
[ -f "$dataset" ] || dataset=$shared/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl
template=$root/data/grader_template.txt
[ -f "$template" ] || template=$shared/reference/grader_template.txt
work=$(mktemp -d)
sim_pid=""
cleanup() { [ -z "$sim_pid" ] || kill "$sim_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
/usr/bin/python3 "$root/scripts/make_workload.py" --dataset "$dataset" --tasks "$tasks" \
  --out-dataset "$work/w.jsonl" --out-responses "$work/r.jsonl" | tr '\n' ' '
echo
"$build/simulator/hb-llm-sim" --listen 127.0.0.1:0 --threads 1 --log-level error \
  --batch-completion-delay "$delay" > "$work/sim.out" &
sim_pid=$!
for _ in $(seq 1 100); do grep -q '^listening on ' "$work/sim.out" && break; sleep 0.1; done
addr=$(sed -n 's/^listening on //p' "$work/sim.out")
for mode in online batch; do
  start=$(date +%s.%N)
  "$build/orchestrator/hb-orchestrator" run --dataset "$work/w.jsonl" --responses "base=$work/r.jsonl" \
    --out "$work/$mode" --grader-template "$template" --llm-base-url "http://$addr/v1" \
    --simulated-verdicts --progress log --progress-interval 1h --grader-mode "$mode" \
    --batch-poll-interval 1s 2> "$work/$mode.stderr" || { cat "$work/$mode.stderr"; exit 1; }
  end=$(date +%s.%N)
  if [ "$mode" = online ]; then
    cost=$(grep -o 'tokens in .*est\. \$[0-9.]*' "$work/online.stderr" | tail -1)
  else
    cost=$(grep -o 'tokens in .*at batch price.*' "$work/batch.stderr" | tail -1)
  fi
  printf '%s: wall %.1f s | %s\n' "$mode" "$(echo "$end - $start" | bc)" "$cost"
done
/usr/bin/python3 - "$work/online/base/verdicts.jsonl" "$work/batch/base/verdicts.jsonl" <<'PY'
import json, sys
def load(path):
    rows = [json.loads(line) for line in open(path)]
    return {(r["prompt_id"], r["rubric_index"]): (r["criteria_met"], r["explanation"]) for r in rows}
a, b = load(sys.argv[1]), load(sys.argv[2])
print(f"verdicts: {len(a)} online, {len(b)} batch, {'identical' if a == b else 'DIFFERENT'}")
PY
