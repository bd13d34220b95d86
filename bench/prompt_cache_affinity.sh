#!/usr/bin/env bash
# How much of a run's input is billed at the cached rate, with and without prompt-cache affinity
# (`run --prompt-cache-key off` vs `prompt_id`, what `auto` sends to api.openai.com), measured
# with hb-llm-sim's prompt-cache accounting (simulator/prompt_cache.h: OpenAI's rules, 128-token
# blocks past the first 1,024 tokens, entries keyed by prompt_cache_key or else by the first
# 1,024 tokens). Each mode runs against a fresh simulator (a cold cache) and reports the tokens
# and dollars the run itself wrote to summary.json.
#
#   bench/prompt_cache_affinity.sh [--tasks N] [--latency-ms MS] [--max-in-flight K] [BUILD_DIR]
#
# The workload cycles the real records (scripts/make_workload.py) into N tasks (default 300,
# ~3,500 rows). Needs the simulator and orchestrator of BUILD_DIR (default build/) and the
# grader template and data (data/, else ../shared as scripts/fetch_data.sh finds them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tasks=300 latency_ms=200 in_flight=256
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --tasks) tasks=$2; shift 2 ;;
    --latency-ms) latency_ms=$2; shift 2 ;;
    --max-in-flight) in_flight=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
build=${1:-$root/build}
shared=${HB_SHARED_DIR:-$root/../shared}
template="$root/data/grader_template.txt"
[[ -f $template ]] || template="$shared/reference/grader_template.txt"
dataset="$root/data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl"
[[ -f $dataset ]] || dataset="$shared/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"
work=$(mktemp -d)
sim_pid=
trap '[[ -n $sim_pid ]] && kill "$sim_pid" 2>/dev/null; rm -rf "$work"' EXIT
/usr/bin/python3 "$root/scripts/make_workload.py" --dataset "$dataset" --tasks "$tasks" \
  --out-dataset "$work/w.jsonl" --out-responses "$work/r.jsonl" >/dev/null

one_mode() {  # one_mode MODE
  local mode=$1 dir="$work/$1" addr
  mkdir -p "$dir"
  "$build/simulator/hb-llm-sim" --listen 127.0.0.1:0 --latency-ms "$latency_ms" \
    --latency-jitter 0.5 --threads 1 --log-level warn >"$dir/sim.out" 2>/dev/null &
  sim_pid=$!
  for _ in $(seq 200); do grep -q '^listening on' "$dir/sim.out" && break; sleep 0.05; done
  addr=$(head -1 "$dir/sim.out" | sed 's/^listening on //')
  "$build/orchestrator/hb-orchestrator" run --dataset "$work/w.jsonl" --responses "b=$work/r.jsonl" \
    --out "$dir/out" --grader embedded --llm-base-url "http://$addr/v1" \
    --grader-template "$template" --max-in-flight "$in_flight" --prompt-cache-key "$mode" \
    --progress off --simulated-verdicts >/dev/null 2>"$dir/orch.err" ||
    { cat "$dir/orch.err" >&2; exit 1; }
  kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
  sim_pid=
  /usr/bin/python3 - "$mode" "$dir/out/b/summary.json" <<'PY'
import json, sys
mode, path = sys.argv[1], sys.argv[2]
u = json.load(open(path))["usage"]
p, c = u["prompt_tokens"], u["cached_tokens"]
print(f"prompt-cache-key={mode:<9} rows={json.load(open(path))['counts']['graded_rows']} "
      f"prompt_tokens={p} cached_tokens={c} cached_share={c / p:.3f} "
      f"cost_usd={u['cost_usd']:.4f} wall_s={u['wall_seconds']:.1f}")
PY
}

echo "tasks=$tasks latency_ms=$latency_ms max_in_flight=$in_flight"
one_mode off
one_mode prompt_id
