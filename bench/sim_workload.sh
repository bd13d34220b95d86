# Sourced by the policy benches (sample_throughput.sh, pipeline_throughput.sh): a temporary
# folder $work (removed on exit), the workload $work/w.jsonl (+ $work/r.jsonl) of $tasks tasks
# cycled from the real records (scripts/make_workload.py), and one hb-llm-sim of $build started
# with the arguments given to start_sim, stopped on exit; start_sim sets $addr (HOST:PORT).
# Needs $root, $build and $tasks set by the caller.
shared=${HB_SHARED_DIR:-$root/../shared}
dataset=$root/data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl
[ -f "$dataset" ] || dataset=$shared/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl
work=$(mktemp -d)
sim_pid=""
cleanup() { [ -z "$sim_pid" ] || kill "$sim_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
/usr/bin/python3 "$root/scripts/make_workload.py" --dataset "$dataset" --tasks "$tasks" \
  --out-dataset "$work/w.jsonl" --out-responses "$work/r.jsonl" > /dev/null

start_sim() {  # start_sim SIM_FLAGS...
  "$build/simulator/hb-llm-sim" --listen 127.0.0.1:0 --threads 1 --log-level error "$@" \
    > "$work/sim.out" &
  sim_pid=$!
  for _ in $(seq 1 100); do grep -q '^listening on ' "$work/sim.out" && break; sleep 0.1; done
  addr=$(sed -n 's/^listening on //p' "$work/sim.out")
}
