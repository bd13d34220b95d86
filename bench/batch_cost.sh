#!/usr/bin/env bash
# Online vs Batch API grading of the same workload against hb-llm-sim: runs `hb-orchestrator run`
# twice on the real records cycled to TASKS tasks (grader embedded, simulated verdicts), once
# online and once with --grader-mode batch, and prints each run's wall time, its final cost line
# and its summary.json usage (the dollars the run reports itself), the batch / online cost ratio,
# and whether both runs wrote the same verdicts.
#   bench/batch_cost.sh BUILD_DIR [TASKS=300] [BATCH_COMPLETION_DELAY=2s] [GRADER_FLAGS]
# GRADER_FLAGS (one word-split string) are added to both runs, e.g.
# "--llm-model gpt-5.4-2026-03-05 --llm-reasoning-effort low" for PR #108's Responses grader.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: batch_cost.sh BUILD_DIR [TASKS] [BATCH_COMPLETION_DELAY]}
tasks=${2:-300}
delay=${3:-2s}
read -r -a grader_flags <<< "${4:-}"
template=$root/data/grader_template.txt
[ -f "$template" ] || template=${HB_SHARED_DIR:-$root/../shared}/reference/grader_template.txt
source "$root/bench/sim_workload.sh"
# The Batch API takes files up to 200 MB (--batch-max-file-bytes), more than the simulator's
# default request limit.
start_sim --batch-completion-delay "$delay" --max-body-bytes 268435456
for mode in online batch; do
  start=$(date +%s.%N)
  "$build/orchestrator/hb-orchestrator" run --dataset "$work/w.jsonl" --responses "base=$work/r.jsonl" \
    --out "$work/$mode" --grader-template "$template" --llm-base-url "http://$addr/v1" \
    --simulated-verdicts --progress log --progress-interval 1h --grader-mode "$mode" \
    --batch-poll-interval 1s "${grader_flags[@]}" 2> "$work/$mode.stderr" || { cat "$work/$mode.stderr"; exit 1; }
  end=$(date +%s.%N)
  printf '%s: wall %.1f s\n  %s\n' "$mode" "$(echo "$end - $start" | bc)" \
    "$(grep '^hb-orchestrator run: cost ' "$work/$mode.stderr" | tail -1)"
done
/usr/bin/python3 - "$work/online/base" "$work/batch/base" <<'PY'
import json, sys
def usage(d):
    return json.load(open(d + "/summary.json"))["usage"]
def verdicts(d):
    rows = [json.loads(line) for line in open(d + "/verdicts.jsonl")]
    return {(r["prompt_id"], r["rubric_index"]): (r["criteria_met"], r["explanation"])
            for r in rows if "verdicts_header" not in r}
online, batch = usage(sys.argv[1]), usage(sys.argv[2])
for name, u in (("online", online), ("batch", batch)):
    print(f"{name} summary.json: prompt {u['prompt_tokens']} (cached {u['cached_tokens']}) "
          f"completion {u['completion_tokens']} batch_rows {u['batch_rows']} "
          f"cost_usd {u['cost_usd']:.4f}")
print(f"batch / online cost: {batch['cost_usd'] / online['cost_usd']:.3f}")
a, b = verdicts(sys.argv[1]), verdicts(sys.argv[2])
print(f"verdicts: {len(a)} online, {len(b)} batch, {'identical' if a == b else 'DIFFERENT'}")
PY
