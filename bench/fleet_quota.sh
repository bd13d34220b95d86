#!/usr/bin/env bash
# Issue 33: N `hb-orchestrator run` processes (embedded grader) at once against one
# `hb-llm-sim --rpm=R [--tpm=T] --latency-ms=100` (its fixed 60 s windows), without a shared
# quota ("today") and with --quota-redis on one redis-server (Unix socket in a temporary folder,
# --save ''): the share of requests answered 429 (the simulator's own counters), the rows
# graded, and the wall time against the time the quota allows.
#   bench/fleet_quota.sh [--rpm R] [--tpm T] [--tasks T] [--procs "1 4 8"]
#                        [--modes "today quota"] [--chaos kill|stop] [--graders K]
#                        [--env] [--env-rate C] [--env-calls M]
# T tasks in all (about 11 rows each), split evenly over the N processes. Needs build/ and the
# template and data of this tree (data/, or HB_SHARED_DIR's). Prints one line per (mode, N).
# "Allowed" is the time the limits allow for the upstream calls the simulator served during
# the batch: served ÷ RPM, or (prompt tokens + served × 2048 max_tokens) ÷ TPM when that is
# longer (the simulator charges prompt estimate + max_tokens, as --quota-tpm does).
# --tpm: the simulator's --tpm and, with the quota, --quota-tpm on every process.
# --graders K: K hb-grader replicas (with the quota: the same --quota-redis and key) serve one
#   more `run --grader ipv4:...` of T/N tasks besides the N embedded runs; its rows and 429s
#   count in the same totals.
# --env: hb-env (embedded grader; with the quota: --quota-redis, same key, priority
#   interactive) under a trainer's fixed pace (hb-env-load --mode=get_reward --rate C, M
#   calls, every reply graded): its reward p50/p99 alone first, then again from 10 s into the
#   batch (the line says whether those calls all ended before the batch did).
# --chaos: 20 s into each quota run Redis is killed and restarted 10 s later (kill), or stopped
#   with SIGSTOP for 10 s (stop); the line also counts the processes' "unavailable" and "back"
#   log lines and gives what polling every process's hb_grader_quota_degraded (every 0.5 s,
#   from their --metrics-listen) saw: the most processes at 1 at once, and how many were back
#   at 0 in their last poll.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rpm=240 tpm=0 tasks=32 procs="1 4 8" modes="today quota" chaos= graders=0 env=0
env_rate=2 env_calls=120
usage="usage: $0 [--rpm R] [--tpm T] [--tasks T] [--procs \"1 4 8\"] [--modes \"today quota\"]"
usage+=" [--chaos kill|stop] [--graders K] [--env] [--env-rate C] [--env-calls M]"
while [[ $# -gt 0 ]]; do
  case $1 in
    --rpm) rpm=$2; shift 2 ;;
    --tpm) tpm=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --chaos) chaos=$2; shift 2 ;;
    --graders) graders=$2; shift 2 ;;
    --env) env=1; shift ;;
    --env-rate) env_rate=$2; shift 2 ;;
    --env-calls) env_calls=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
shared=${HB_SHARED_DIR:-$root/../shared}
template="$root/data/grader_template.txt"
[[ -f $template ]] || template="$shared/reference/grader_template.txt"
dataset="$root/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"
[[ -f $dataset ]] || dataset="$shared/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"
build="$root/build"
sim="$build/simulator/hb-llm-sim" orch="$build/orchestrator/hb-orchestrator"
# The benchmark binaries are not in `all`: build what this script runs (a no-op when current).
source "$root/scripts/ci_lib.sh"
ci_build "$build" hb-env-load
work=$(mktemp -d)
cleanup() {
  [[ -f $work/redis.pid ]] && kill -CONT "$(cat "$work/redis.pid")" 2>/dev/null
  [[ -f $work/redis.pid ]] && kill "$(cat "$work/redis.pid")" 2>/dev/null
  kill $(jobs -p) 2>/dev/null || true
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

# wait_line FILE PATTERN: until FILE has a line matching PATTERN (60 s at most).
wait_line() {
  for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return; sleep 0.1; done
  echo "no '$2' in $1 after 60 s:" >&2; cat "$1" >&2; exit 1
}
metric() { curl -s "http://$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
# The simulator's counters: requests, 429s, prompt tokens admitted.
sim_counters() {
  curl -s "http://$1/metrics" | awk '$1 == "hb_sim_requests_total" {q = $2}
    $1 == "hb_sim_rate_limited_total" {l = $2} $1 == "hb_sim_prompt_tokens_total" {p = $2}
    END {print q + 0, l + 0, p + 0}'
}
metrics_addr() { sed -n 's|.*metrics on http://\([^/]*\)/metrics.*|\1|p' "$1" | head -1; }

# poll_gauge DIR: every 0.5 s while DIR/polling exists, each metrics address in DIR/addrs ->
# "round address value" lines in DIR/gauge.
poll_gauge() {
  local round=0
  while [[ -f $1/polling ]]; do
    round=$((round + 1))
    while read -r a; do
      local v
      v=$(metric "$a" hb_grader_quota_degraded || true)
      [[ -n $v ]] && echo "$round $a $v" >>"$1/gauge"
    done <"$1/addrs"
    sleep 0.5
  done
}
gauge_summary() {  # "most at 1 at once / polled; back at 0 in the last poll"
  [[ -f $1/gauge ]] || { echo "gauge_polled=0"; return; }
  awk '{ if ($3 == 1) up[$1]++; last[$2] = $3; seen[$2] = 1 }
    END { for (r in up) if (up[r] > most) most = up[r]
          for (a in seen) { n++; if (last[a] == 0) back++ }
          printf "gauge_most_at_1_at_once=%d gauge_back_at_0=%d/%d", most, back, n }' "$1/gauge"
}

# start_graders DIR QUOTA...: K hb-grader replicas; their ipv4: target in grader_target.
start_graders() {
  local dir=$1 target= g
  shift
  for ((g = 0; g < graders; g++)); do
    "$build/grader_service/hb-grader" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
      --llm-base-url "http://$addr/v1" --grader-template "$template" "$@" \
      >"$dir/grader$g.out" 2>"$dir/grader$g.err" &
    wait_line "$dir/grader$g.out" '^listening on'
    wait_line "$dir/grader$g.err" 'metrics on'
    metrics_addr "$dir/grader$g.err" >>"$dir/addrs"
    target+=${target:+,}$(sed -n 's/^listening on //p' "$dir/grader$g.out")
  done
  grader_target="ipv4:$target"
}

# start_env DIR QUOTA...: hb-env; its addresses in DIR/env.
start_env() {
  local dir=$1
  shift
  "$build/environment/hb-env" --split=test="$dataset" --listen=127.0.0.1:0 \
    --http-listen=127.0.0.1:0 --metrics-listen=127.0.0.1:0 --llm-base-url="http://$addr/v1" \
    --grader-template="$template" "$@" >"$dir/env" 2>&1 &
  wait_line "$dir/env" "http listening on"
  wait_line "$dir/env" "metrics on"
  metrics_addr "$dir/env" >>"$dir/addrs"
}
# env_load DIR NAME: the trainer's calls; prints "p50 p99 seconds errors".
env_load() {
  "$build/bench/hb-env-load" --target="$(sed -n 's/^grpc listening on //p' "$1/env")" \
    --http_target="$(sed -n 's/^http listening on //p' "$1/env")" --mode=get_reward \
    --split=test --tasks=30 --in_flight=1 --rate="$env_rate" --submissions="$env_calls" --reply_tag=" ($2)" --calls_out="$1/calls_$2" \
    >"$1/load_$2" 2>&1
  sed -n 's/.*seconds=\([0-9.]*\).*p50_ms=\([0-9.]*\) p99_ms=\([0-9.]*\).*/\2 \3 \1/p' "$1/load_$2" |
    head -1 | tr '\n' ' '
  sed -n 's/.* errors=\([0-9]*\) .*/\1/p' "$1/load_$2" | head -1
}

one() {  # one MODE N
  local mode=$1 n=$2 dir="$work/$1-$2" per=$(($3 / $2)) sim_pid start end rows=0 status=0
  mkdir -p "$dir"
  : >"$dir/addrs"
  local limits=(--rpm "$rpm")
  [[ $tpm != 0 ]] && limits+=(--tpm "$tpm")
  "$sim" --listen 127.0.0.1:0 --latency-ms 100 "${limits[@]}" --log-level warn >"$dir/sim.out" 2>/dev/null &
  sim_pid=$!
  wait_line "$dir/sim.out" '^listening on'
  addr=$(head -1 "$dir/sim.out" | sed 's/^listening on //')
  local quota=()
  if [[ $mode == quota ]]; then
    quota=(--quota-redis "unix://$work/redis.sock" --quota-key "bench-$n-$(date +%s)" --quota-rpm "$rpm")
    [[ $tpm != 0 ]] && quota+=(--quota-tpm "$tpm")
  fi
  local pids=() i runs=$n alone=
  grader_target=
  ((graders > 0)) && start_graders "$dir" "${quota[@]}"
  if ((env)); then
    start_env "$dir" "${quota[@]}"
    alone=$(env_load "$dir" alone)
  fi
  [[ -n $grader_target ]] && runs=$((n + 1))
  for ((i = 0; i < runs; i++)); do
    /usr/bin/python3 "$root/scripts/make_workload.py" --dataset "$dataset" --tasks "$per" \
      --out-dataset "$dir/w$i.jsonl" --out-responses "$dir/r$i.jsonl" >/dev/null
  done
  local before
  before=$(sim_counters "$addr")
  start=$(date +%s.%N)
  for ((i = 0; i < runs; i++)); do
    local grading=(--grader embedded --llm-base-url "http://$addr/v1" "${quota[@]}")
    ((i == n)) && grading=(--grader "$grader_target")
    "$orch" run --dataset "$dir/w$i.jsonl" --responses "b=$dir/r$i.jsonl" --out "$dir/out$i" \
      --grader-template "$template" --progress off --simulated-verdicts \
      --metrics-listen 127.0.0.1:0 "${grading[@]}" >/dev/null 2>"$dir/err$i" &
    pids+=($!)
  done
  local chaos_pid= poll_pid= during= env_end=
  if [[ $mode == quota && -n $chaos ]]; then
    for ((i = 0; i < n; i++)); do
      wait_line "$dir/err$i" 'metrics on'
      metrics_addr "$dir/err$i" >>"$dir/addrs"
    done
    touch "$dir/polling"
    poll_gauge "$dir" &
    poll_pid=$!
    disturb &
    chaos_pid=$!
  fi
  if ((env)); then
    sleep 10
    during=$(env_load "$dir" during)
    env_end=$(date +%s.%N)
  fi
  for p in "${pids[@]}"; do wait "$p" || status=$?; done
  end=$(date +%s.%N)
  [[ -n $chaos_pid ]] && wait "$chaos_pid"
  if [[ -n $poll_pid ]]; then rm -f "$dir/polling"; wait "$poll_pid"; fi
  local down back failed=0
  down=$(cat "$dir"/err* "$dir"/grader*.err "$dir"/env 2>/dev/null | grep -c 'shared budget is unavailable' || true)
  back=$(cat "$dir"/err* "$dir"/grader*.err "$dir"/env 2>/dev/null | grep -c 'shared budget is back' || true)
  for ((i = 0; i < runs; i++)); do
    rows=$((rows + $(sqlite3 "$dir/out$i/journal.sqlite" "select count(*) from rows where status='ok'")))
    failed=$((failed + $(sqlite3 "$dir/out$i/journal.sqlite" "select count(*) from rows where status='failed'")))
  done
  local after load
  after=$(sim_counters "$addr")
  kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
  load=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)
  awk -v m="$mode" -v n="$n" -v runs="$runs" -v r="$rows" -v b="$before" -v a="$after" \
    -v s="$start" -v e="$end" -v rpm="$rpm" -v tpm="$tpm" -v x="$status" -v ld="$load" 'BEGIN {
    split(b, B, " "); split(a, A, " ")
    q = A[1] - B[1]; l = A[2] - B[2]; served = q - l
    allowed = served / rpm * 60
    if (tpm > 0 && (A[3] - B[3] + served * 2048) / tpm * 60 > allowed) allowed = (A[3] - B[3] + served * 2048) / tpm * 60
    printf "mode=%s procs=%d runs=%d exit=%d rows_ok=%d requests=%d 429s=%d share_429=%.1f%% wall_s=%.1f " \
      "quota_allows_s=%.1f wall_over_allowed=%.2f loadavg=%s\n", m, n, runs, x, r, q, l, 100 * l / q,
      e - s, allowed, (e - s) / allowed, ld }'
  if ((env)); then
    read -r p50a p99a secsa erra <<<"$alone"
    read -r p50d p99d secsd errd <<<"$during"
    awk -v a50="$p50a" -v a99="$p99a" -v d50="$p50d" -v d99="$p99d" -v ea="$erra" -v ed="$errd" \
      -v ee="$env_end" -v e="$end" -v c="$env_calls" -v rate="$env_rate" 'BEGIN {
      printf "  env get_reward %d calls at %s/s: alone p50=%.1f p99=%.1f ms errors=%d; during the batch " \
        "p50=%.1f p99=%.1f ms errors=%d (p99 ratio %.2f; calls all ended before the batch: %s)\n",
        c, rate, a50, a99, ea, d50, d99, ed, d99 / a99, ee < e ? "yes" : "no" }'
  fi
  if ((env)); then
    echo "  env slowest calls during the batch (index task ms): $(sort -k3 -nr "$dir/calls_during" |
      head -4 | awk '{printf "%s%d %s %.0f", (NR > 1 ? "; " : ""), $1, $2, $3}')"
  fi
  if [[ $mode == quota && -n $chaos ]]; then
    echo "  chaos=$chaos unavailable_lines=$down back_lines=$back failed_rows=$failed" \
      "$(gauge_summary "$dir") (a row is journaled once: its key is the primary key)"
  fi
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

for mode in $modes; do
  for n in $procs; do one "$mode" "$n" "$tasks"; done
done
