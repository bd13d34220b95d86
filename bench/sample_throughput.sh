#!/usr/bin/env bash
# Sampling throughput of `hb-orchestrator sample` against hb-llm-sim's policy route at a fixed
# latency: prints tasks, in-flight, latency, wall seconds, tasks/s and tasks/s ÷ (in-flight ÷
# latency), the fraction of the ideal pipelined rate (the probe's lone round trip included).
#   bench/sample_throughput.sh BUILD_DIR [TASKS=5000] [IN_FLIGHT=256] [LATENCY_MS=2000]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: sample_throughput.sh BUILD_DIR [TASKS] [IN_FLIGHT] [LATENCY_MS]}
tasks=${2:-5000}
in_flight=${3:-256}
latency_ms=${4:-2000}
# shellcheck source=bench/sim_workload.sh
source "$root/bench/sim_workload.sh"
start_sim --policy-latency-ms "$latency_ms"
start=$(date +%s.%N)
"$build/orchestrator/hb-orchestrator" sample --dataset "$work/w.jsonl" --out "$work/s.jsonl" \
  --policy-base-url "http://$addr/policy/v1" --policy-model bench --max-in-flight "$in_flight" \
  --progress-interval 1h 2> "$work/sample.stderr"
end=$(date +%s.%N)
/usr/bin/python3 - "$tasks" "$in_flight" "$latency_ms" "$start" "$end" <<'PY'
import sys
tasks, in_flight, latency_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
wall = float(sys.argv[5]) - float(sys.argv[4])
rate = tasks / wall
ideal = in_flight / (latency_ms / 1000)
print(f"tasks {tasks} in_flight {in_flight} latency_ms {latency_ms:g} wall_s {wall:.2f} "
      f"tasks_per_s {rate:.1f} ideal {ideal:.1f} ratio {rate / ideal:.3f}")
PY
