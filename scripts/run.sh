#!/usr/bin/env bash
# The main job, set-up included: installs the packages, builds, fetches the grader template and
# the data (scripts/fetch_data.sh), then samples two simulated checkpoints ("step-100" and
# "step-200", served by the bundled hb-llm-sim in policy mode, POST /policy/v1/chat/completions)
# and grades both end to end with one `hb-orchestrator run --policy ... --policy ...` and its
# embedded grader. For a real checkpoint, pass --policy NAME=MODEL@http://vllm:8000/v1 yourself.
#
# With OPENAI_API_KEY set, the grader calls the real endpoint (--llm-base-url, default OpenAI).
# Without it, the grader is hb-llm-sim too, and the job says so loudly: the verdicts are
# SIMULATED, and the reports are marked so. The policy replies are always simulated here.
#
#   scripts/run.sh                       # reports in out/demo/
#   HB_OUT=/tmp/x scripts/run.sh --max-in-flight 64   # extra flags go to hb-orchestrator run
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${HB_BUILD_DIR:-$root/build}
out=${HB_OUT:-$root/out/demo}

"$root/scripts/setup.sh"
"$root/scripts/fetch_data.sh" --dest "$root/data"

dataset="$root/data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl"
if [ ! -f "$dataset" ]; then
  dataset="$root/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"
  echo "run: the full main set is not available here; grading the 30-record sample $dataset"
fi
mkdir -p "$out"

llm_args=()
sim_pid=""
cleanup() { if [ -n "$sim_pid" ]; then kill "$sim_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
# One simulator: the two checkpoints on its policy route, and (without a key) the grader on /v1.
"$build_dir/simulator/hb-llm-sim" --listen 127.0.0.1:0 --latency-ms 20 --policy-latency-ms 200 \
    --policy-models step-100,step-200 > "$out/llm-sim.stdout" 2> "$out/llm-sim.log" &
sim_pid=$!
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$out/llm-sim.stdout" 2>/dev/null && break
  kill -0 "$sim_pid" 2>/dev/null || { echo "run: hb-llm-sim failed, see $out/llm-sim.log" >&2; exit 1; }
  sleep 0.1
done
addr=$(sed -n 's/^listening on //p' "$out/llm-sim.stdout" | head -n1)
[ -n "$addr" ] || { echo "run: hb-llm-sim did not start" >&2; exit 1; }
if [ -z "${OPENAI_API_KEY:-}" ]; then
  cat <<BANNER
======================================================================================
  OPENAI_API_KEY is not set: grading against the bundled simulator hb-llm-sim at $addr.
  Every verdict below is SIMULATED (a deterministic function of the prompt), not a
  real grader's judgement. Set OPENAI_API_KEY to grade with gpt-4.1 for real.
======================================================================================
BANNER
  llm_args=(--llm-base-url "http://$addr/v1" --simulated-verdicts)
fi

set +e
"$build_dir/orchestrator/hb-orchestrator" run \
  --dataset "$dataset" \
  --policy "step-100=step-100@http://$addr/policy/v1" \
  --policy "step-200=step-200@http://$addr/policy/v1" --policy-max-tokens 600 \
  --grader-template "$root/data/grader_template.txt" \
  --out "$out" "${llm_args[@]}" "$@"
rc=$?
set -e
echo "run: hb-orchestrator exited with $rc; replies: $out/<checkpoint>/responses.jsonl;" \
  "reports: $out/<checkpoint>/report.html, $out/comparison.json"
exit $rc
