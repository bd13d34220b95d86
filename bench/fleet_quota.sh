#!/usr/bin/env bash
# Issue 33: N `hb-orchestrator run` processes (embedded grader) at once against one
# `hb-llm-sim --rpm=R --latency-ms=100` (its fixed 60 s windows), without a shared quota
# ("today") and with --quota-redis on one redis-server (Unix socket in a temporary folder,
# --save ''): the share of requests answered 429 (the simulator's own counters), the rows
# graded, and the wall time against the time the quota allows (rows / R minutes).
#   bench/fleet_quota.sh [--rpm R] [--tasks T] [--procs "1 4 8"] [--modes "today quota"]
#                        [--chaos kill|stop]
# T tasks in all (about 11 rows each), split evenly over the N processes. Needs build/ and the
# template and data of this tree (data/, or HB_SHARED_DIR's). Prints one line per (mode, N).
# --chaos: 20 s into each quota run Redis is killed and restarted 10 s later (kill), or stopped
# with SIGSTOP for 10 s (stop); the line then also counts the processes' "unavailable" and
# "back" log lines.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rpm=240 tasks=32 procs="1 4 8" modes="today quota" chaos=
while [[ $# -gt 0 ]]; do
  case $1 in
    --rpm) rpm=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --chaos) chaos=$2; shift 2 ;;
    *) echo "usage: $0 [--rpm R] [--tasks T] [--procs \"1 4 8\"] [--modes \"today quota\"] [--chaos kill|stop]" >&2; exit 2 ;;
  esac
done
shared=${HB_SHARED_DIR:-$root/../shared}
template="$root/data/grader_template.txt"
[[ -f $template ]] || template="$shared/reference/grader_template.txt"
dataset="$root/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"
[[ -f $dataset ]] || dataset="$shared/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"
sim="$root/build/simulator/hb-llm-sim" orch="$root/build/orchestrator/hb-orchestrator"
work=$(mktemp -d)
cleanup() {
  [[ -f $work/redis.pid ]] && kill -CONT "$(cat "$work/redis.pid")" 2>/dev/null
  [[ -f $work/redis.pid ]] && kill "$(cat "$work/redis.pid")" 2>/dev/null
  sleep 0.2
  rm -rf "$work"
}
trap cleanup EXIT

start_redis() {
  rm -f "$work/redis.sock"
  /usr/bin/redis-server --port 0 --unixsocket "$work/redis.sock" --save '' --appendonly no \
    --dir "$work" --logfile "$work/redis.log" --daemonize yes --pidfile "$work/redis.pid"
  for _ in $(seq 100); do [[ -S $work/redis.sock ]] && break; sleep 0.05; done
}
start_redis

disturb() {  # kill or stop Redis 20 s in, for 10 s
  sleep 20
  if [[ $chaos == kill ]]; then
    kill -9 "$(cat "$work/redis.pid")"; rm -f "$work/redis.pid"; sleep 10; start_redis
  else
    kill -STOP "$(cat "$work/redis.pid")"; sleep 10; kill -CONT "$(cat "$work/redis.pid")"
  fi
}

metric() { curl -s "http://$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

one() {  # one MODE N
  local mode=$1 n=$2 dir="$work/$1-$2" per=$((tasks / $2)) sim_pid addr start end rows=0 status=0
  mkdir -p "$dir"
  "$sim" --listen 127.0.0.1:0 --latency-ms 100 --rpm "$rpm" --log-level warn >"$dir/sim.out" 2>/dev/null &
  sim_pid=$!
  for _ in $(seq 200); do grep -q '^listening on' "$dir/sim.out" && break; sleep 0.05; done
  addr=$(head -1 "$dir/sim.out" | sed 's/^listening on //')
  local quota=()
  if [[ $mode == quota ]]; then
    quota=(--quota-redis "unix://$work/redis.sock" --quota-key "bench-$n" --quota-rpm "$rpm")
  fi
  local pids=()
  start=$(date +%s.%N)
  for ((i = 0; i < n; i++)); do
    /usr/bin/python3 "$root/scripts/make_workload.py" --dataset "$dataset" --tasks "$per" \
      --out-dataset "$dir/w$i.jsonl" --out-responses "$dir/r$i.jsonl" >/dev/null
    "$orch" run --dataset "$dir/w$i.jsonl" --responses "b=$dir/r$i.jsonl" --out "$dir/out$i" \
      --grader embedded --llm-base-url "http://$addr/v1" --grader-template "$template" \
      --progress off --simulated-verdicts "${quota[@]}" >/dev/null 2>"$dir/err$i" &
    pids+=($!)
  done
  local chaos_pid=
  if [[ $mode == quota && -n $chaos ]]; then disturb & chaos_pid=$!; fi
  for p in "${pids[@]}"; do wait "$p" || status=$?; done
  end=$(date +%s.%N)
  [[ -n $chaos_pid ]] && wait "$chaos_pid"
  local down back failed=0
  down=$(cat "$dir"/err* | grep -c 'shared budget is unavailable' || true)
  back=$(cat "$dir"/err* | grep -c 'shared budget is back' || true)
  for ((i = 0; i < n; i++)); do
    rows=$((rows + $(sqlite3 "$dir/out$i/journal.sqlite" "select count(*) from rows where status='ok'")))
    failed=$((failed + $(sqlite3 "$dir/out$i/journal.sqlite" "select count(*) from rows where status='failed'")))
  done
  local requests limited
  requests=$(metric "$addr" hb_sim_requests_total)
  limited=$(metric "$addr" hb_sim_rate_limited_total)
  kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
  awk -v m="$mode" -v n="$n" -v r="$rows" -v q="$requests" -v l="$limited" -v s="$start" \
    -v e="$end" -v rpm="$rpm" -v x="$status" -v c="$chaos" -v dn="$down" -v bk="$back" -v f="$failed" 'BEGIN {
    allowed = r / rpm * 60
    printf "mode=%s procs=%d exit=%d rows_ok=%d requests=%d 429s=%d share_429=%.1f%% wall_s=%.1f " \
      "quota_allows_s=%.1f wall_over_allowed=%.2f\n", m, n, x, r, q, l, 100 * l / q, e - s, allowed,
      (e - s) / allowed
    if (c != "" && m == "quota") printf "  chaos=%s unavailable_lines=%d back_lines=%d failed_rows=%d (a row is journaled once: its key is the primary key)\n", c, dn, bk, f }'
}

for mode in $modes; do
  for n in $procs; do one "$mode" "$n"; done
done
