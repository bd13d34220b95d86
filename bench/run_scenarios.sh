#!/usr/bin/env bash
# End-to-end benchmark of the grading pipeline: builds Release into build-release, builds a
# workload by cycling the real HealthBench records with fresh prompt ids, then runs each scenario
# with hb-llm-sim, N hb-grader replicas and hb-orchestrator on 127.0.0.1, measuring each
# scenario's limit in the same run. Results: one JSON line per run in
# bench/results/<scenario>.jsonl (plus workload.jsonl), a markdown table of medians on stdout.
#
#   bench/run_scenarios.sh                                    # all scenarios, 5,000 tasks, 3 runs
#   bench/run_scenarios.sh --scenario overhead --tasks 300 --runs 1   # a quick check
#
# Flags:
#   --scenario overhead|latency|ratelimit|memory|reference|all   (default all)
#   --tasks N      workload size in tasks (default 5000, ~58,700 rows; 300 = ~3,500 rows)
#   --runs K       runs per scenario; tables show the median (default 3)
#   --graders N    hb-grader replicas (default 2; the memory scenario always uses 1)
#   --dataset F    source records (default: data/healthbench/<official main file> when present,
#                  else the 30-record head from data/ or $HB_SHARED_DIR)
#   --no-build     use the binaries already in build-release
#   Anything else is passed to bench/scenarios.py (--latency-ms, --rpm, --tpm,
#   --ceiling-seconds, --overhead-in-flight, --latency-in-flight, --ref-latency-ms, ...).
#
# Scenarios and their limits:
#   overhead   sim at 0 ms; limit = the sim's own capacity for the same bodies (wrk, same run)
#   latency    sim at 1 s +-20 %, 2,000 in flight; limit = in-flight / mean sim latency
#   ratelimit  sim with --rpm/--tpm; limit = the RPM (or TPM) in rows/s over full 60 s windows.
#              Needs at least one window reset, so it always takes more than 60 s.
#   memory     1 grader, 2,000 in flight at 1 s; limits 300 MB (orchestrator), 150 MB (grader)
#   reference  hb-reference-pace (the reference's 120 x min(CPUs, items) pattern) vs the pipeline
#
# Environment: JOBS (ninja parallelism, default 2), PYTHON (default /usr/bin/python3 when
# present, else python3), HB_SHARED_DIR (where the shared records live).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-release"
python=${PYTHON:-}
if [[ -z "$python" ]]; then
  if [[ -x /usr/bin/python3 ]]; then python=/usr/bin/python3; else python=python3; fi
fi

scenario=all tasks=5000 runs=3 graders=2 dataset="" do_build=1
passthrough=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scenario) scenario=$2; shift 2 ;;
    --scenario=*) scenario=${1#*=}; shift ;;
    --tasks) tasks=$2; shift 2 ;;
    --tasks=*) tasks=${1#*=}; shift ;;
    --runs) runs=$2; shift 2 ;;
    --runs=*) runs=${1#*=}; shift ;;
    --graders) graders=$2; shift 2 ;;
    --graders=*) graders=${1#*=}; shift ;;
    --dataset) dataset=$2; shift 2 ;;
    --dataset=*) dataset=${1#*=}; shift ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) passthrough+=("$1"); shift ;;
  esac
done
case "$scenario" in
  overhead|latency|ratelimit|memory|reference|all) ;;
  *) echo "run_scenarios: unknown --scenario '$scenario'" >&2; exit 2 ;;
esac

command -v wrk >/dev/null || { echo "run_scenarios: wrk is not installed" >&2; exit 2; }

if [[ $do_build == 1 ]]; then
  echo "[bench] building Release into $build" >&2
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHB_BUILD_TESTS=OFF \
    >"$build/bench-cmake.log" 2>&1 || { cat "$build/bench-cmake.log" >&2; exit 1; }
  ninja -C "$build" -j"${JOBS:-2}" hb-llm-sim hb-grader hb-orchestrator hb-reference-pace \
    hb-workload-stats hb-row-latency-probe >&2
fi

# The grader template (the reference's text; never committed).
if [[ ! -f "$root/data/grader_template.txt" ]]; then
  "$root/scripts/fetch_data.sh" --template-only >&2
fi

if [[ -z "$dataset" ]]; then
  shared=${HB_SHARED_DIR:-$root/../shared}
  for candidate in \
      "$root/data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl" \
      "$root/data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl.gz" \
      "$root/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl" \
      "$shared/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"; do
    if [[ -f "$candidate" ]]; then dataset=$candidate; break; fi
  done
  [[ -n "$dataset" ]] || { echo "run_scenarios: no dataset found; run scripts/fetch_data.sh" >&2; exit 2; }
fi
echo "[bench] source records: $dataset" >&2

exec "$python" "$root/bench/scenarios.py" --scenario "$scenario" --tasks "$tasks" \
  --runs "$runs" --graders "$graders" --dataset "$dataset" --build-dir "$build" \
  "${passthrough[@]}"
