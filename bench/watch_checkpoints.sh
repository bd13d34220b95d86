#!/usr/bin/env bash
# Issue 34's benchmark: `hb-orchestrator watch` grading K checkpoints of N tasks that land one
# every few seconds, against `hb-orchestrator run` grading the same K checkpoints (K runs, one
# checkpoint each: the unit watch grades) on the same simulator.
#
#   bench/watch_checkpoints.sh [--tasks N] [--checkpoints K] [--land-every S] [--poll-interval D]
#                              [--deadline S] [--order watch-run|run-watch|interleaved]
#                              [ORCH_BINARY]
#
# Defaults: 5,000 tasks (58,697 rows), 20 checkpoints landing every 3 s, --poll-interval 1s, a
# 900 s bound on the watch phase, the watch phase first (--order run-watch: the runs first, to
# see how much the machine's load moving between the phases moves the ratio; --order
# interleaved: checkpoint i lands, watch grades it, then `run` grades it, so both see the same
# load checkpoint by checkpoint; --land-every is then unused), ORCH_BINARY
# build/orchestrator/hb-orchestrator. The workload cycles the real records (scripts/make_workload.py); every checkpoint DIR/step-<100 i>/ gets the
# same responses.jsonl and then DONE (each folder is its own checkpoint: watch keys a version by
# folder name and responses sha256). One hb-llm-sim at 0 ms with SIM_THREADS threads (default 2,
# as bench/embedded_grader.sh) serves both phases; ORCH_ARGS adds grading flags to both. Records
# and template from data/ (scripts/fetch_data.sh), else from HB_SHARED_DIR (default ../shared).
#
# Prints, for each checkpoint: when watch queued it, graded it and rewrote OUT/comparison.*
# (timestamps of watch's own stderr lines, read as they are written), its rows (its journal) and
# watch's VmRSS / VmHWM right after it was graded; then watch's rows/s over the time it was busy
# (queued -> comparison written, summed: the landing gaps left out), run's rows/s over the K
# processes' wall time, their ratio, the RSS curve sampled every 0.5 s, and the comparison's
# rewrite times. Any failure (a process exiting non-zero, a checkpoint not graded in time, a row
# missing) stops the script with a non-zero status naming it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tasks=5000 checkpoints=20 land_every=3 poll_interval=1s deadline=900 order=watch-run
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --tasks) tasks=$2; shift 2 ;;
    --checkpoints) checkpoints=$2; shift 2 ;;
    --land-every) land_every=$2; shift 2 ;;
    --poll-interval) poll_interval=$2; shift 2 ;;
    --deadline) deadline=$2; shift 2 ;;
    --order) order=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
[[ $order == watch-run || $order == run-watch || $order == interleaved ]] ||
  { echo "--order is watch-run, run-watch or interleaved, not '$order'" >&2; exit 2; }
orch=${1:-$root/build/orchestrator/hb-orchestrator}
sim="$root/build/simulator/hb-llm-sim"
shared=${HB_SHARED_DIR:-$root/../shared}  # the shared records and template, when data/ has none
template="$root/data/grader_template.txt"
[[ -f $template ]] || template="$shared/reference/grader_template.txt"
dataset=
for candidate in "$root/data/healthbench/2025-05-07-06-14-12_oss_eval.jsonl" \
    "$root/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl" \
    "$shared/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl"; do
  if [[ -f $candidate ]]; then dataset=$candidate; break; fi
done
for f in "$orch" "$sim" "$template" "$dataset"; do
  [[ -e $f ]] || { echo "missing '$f' (build: ninja -C build hb-orchestrator hb-llm-sim;" \
    "records and template: scripts/fetch_data.sh or HB_SHARED_DIR)" >&2; exit 2; }
done

fail() { echo "FAILED: $*" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  set +e  # the processes still running are ours to stop; their statuses no longer matter
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
/usr/bin/python3 "$root/scripts/make_workload.py" --dataset "$dataset" --tasks "$tasks" \
  --out-dataset "$work/w.jsonl" --out-responses "$work/r.jsonl" >/dev/null
grading=(--grader embedded --grader-template "$template" --max-in-flight 512 --progress off
  --simulated-verdicts ${ORCH_ARGS:-})

"$sim" --listen 127.0.0.1:0 --latency-ms 0 --threads "${SIM_THREADS:-2}" --log-level warn \
  >"$work/sim.out" 2>"$work/sim.err" &
sim_pid=$!
pids+=("$sim_pid")
for _ in $(seq 200); do grep -q '^listening on' "$work/sim.out" && break; sleep 0.05; done
grep -q '^listening on' "$work/sim.out" || fail "hb-llm-sim did not start: $(cat "$work/sim.err")"
addr=$(head -1 "$work/sim.out" | sed 's/^listening on //')
grading+=(--llm-base-url "http://$addr/v1")
echo "workload tasks=$tasks checkpoints=$checkpoints land_every_s=$land_every" \
  "poll_interval=$poll_interval sim=$addr threads=${SIM_THREADS:-2} latency_ms=0"
echo "machine load (1/5/15 min) before: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- watch ----
ckdir="$work/checkpoints" out="$work/watch-out" log="$work/watch.log"
start_watch() {
  mkdir -p "$ckdir"
  # Each stderr line of watch, prefixed with the time it was read.
  stamp='import sys, time
for line in sys.stdin:
    sys.stdout.write("%.3f %s" % (time.time(), line)); sys.stdout.flush()'
  "$orch" watch --dataset "$work/w.jsonl" --checkpoints-dir "$ckdir" --out "$out" \
    --poll-interval "$poll_interval" "${grading[@]}" >"$work/watch.stdout" \
    2> >(/usr/bin/python3 -u -c "$stamp" >"$log") &
  watch_pid=$!
  pids+=("$watch_pid")
  # RSS of watch every 0.5 s while it lives: "time VmRSS_kB VmHWM_kB".
  ( while [[ -r /proc/$watch_pid/status ]]; do
      awk -v t="$(now)" '/^VmRSS/ {r=$2} /^VmHWM/ {h=$2} END {if (r) print t, r, h}' \
        "/proc/$watch_pid/status" 2>/dev/null >>"$work/rss.txt"
      sleep 0.5
    done ) &
  pids+=("$!")
  watch_start=$(now) graded=0
  : >"$work/per_checkpoint_rss.txt"
}

land() {  # land I: the trainer writes step-<100 I>/responses.jsonl, then DONE
  local d="$ckdir/step-$((100 * $1))"
  mkdir -p "$d" && cp "$work/r.jsonl" "$d/responses.jsonl" && touch "$d/DONE"
  echo "$(now) step-$((100 * $1))" >>"$work/landed.txt"
}

status_kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$watch_pid/status"; }
count() {  # count TEXT FILE: lines of FILE holding TEXT (0 while FILE does not exist yet)
  if [[ -f $2 ]]; then awk -v p="$1" 'index($0, p) {n++} END {print n + 0}' "$2"; else echo 0; fi
}

wait_watch() {  # wait_watch N: until N checkpoints are graded and the comparison over N written
  local want=$1 n
  while ((graded < want)) || (($(count "comparison over $want checkpoints" "$log") == 0 && want > 1)); do
    kill -0 "$watch_pid" 2>/dev/null || fail "watch exited early; its log: $(tail -5 "$log")"
    (($(count '"event":"failed"' "$out/watch.jsonl") == 0)) ||
      fail "a checkpoint failed: $(grep '"failed"' "$out/watch.jsonl" | head -3)"
    awk -v s="$watch_start" -v n="$(now)" -v d="$deadline" 'BEGIN {exit !(n - s > d)}' &&
      fail "only $graded of $want checkpoints graded after ${deadline}s; log: $(tail -3 "$log")"
    n=$(count '"event":"graded"' "$out/watch.jsonl")
    if ((n > graded)); then
      graded=$n
      echo "$graded $(now) $(status_kb VmRSS) $(status_kb VmHWM)" >>"$work/per_checkpoint_rss.txt"
    fi
    sleep 0.2
  done
}

stop_watch() {
  kill -TERM "$watch_pid"
  watch_status=0
  wait "$watch_pid" || watch_status=$?
  ((watch_status == 0)) || fail "watch exited $watch_status after SIGTERM; log: $(tail -5 "$log")"
  echo "machine load (1/5/15 min) after watch: $(cut -d' ' -f1-3 /proc/loadavg)"
  watch_rows=0
  for ((i = 1; i <= checkpoints; i++)); do
    j="$out/versions/step-$((100 * i))/v1/journal.sqlite"
    [[ -f $j ]] || fail "no journal $j"
    r=$(sqlite3 "$j" "select count(*) from rows where status='ok'")
    echo "$r" >>"$work/watch_rows.txt"
    watch_rows=$((watch_rows + r))
  done
}

watch_phase() {  # the checkpoints land every land_every seconds while watch runs
  start_watch
  # Pacing, not synchronisation: wait_watch polls watch's journal.
  ( for ((i = 1; i <= checkpoints; i++)); do land "$i"; sleep "$land_every"; done ) &
  lander_pid=$!
  pids+=("$lander_pid")
  wait_watch "$checkpoints"
  wait "$lander_pid"
  stop_watch
}

# ---- run: the same K checkpoints, one `run` each, on the same simulator ----
run_rows=0 run_wall=0
run_one() {  # run_one I
  local name="step-$((100 * $1))" status=0 wall maxrss_kb r
  /usr/bin/time -f '%e %M' -o "$work/time.$1" "$orch" run --dataset "$work/w.jsonl" \
    --responses "$name=$work/r.jsonl" --out "$work/run-out/$name" \
    "${grading[@]}" >/dev/null 2>"$work/run.$1.err" || status=$?
  ((status == 0)) || fail "run $name exited $status: $(tail -5 "$work/run.$1.err")"
  read -r wall maxrss_kb < <(tail -1 "$work/time.$1")
  r=$(sqlite3 "$work/run-out/$name/journal.sqlite" "select count(*) from rows where status='ok'")
  echo "run $name rows=$r wall_s=$wall peak_rss_mb=$((maxrss_kb / 1024))"
  run_rows=$((run_rows + r))
  run_wall=$(awk -v a="$run_wall" -v b="$wall" 'BEGIN {print a + b}')
}
run_phase() {
  for ((i = 1; i <= checkpoints; i++)); do run_one "$i"; done
  echo "machine load (1/5/15 min) after run: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# interleaved: checkpoint i lands, watch grades it (and rewrites the comparison), then `run`
# grades the same checkpoint; the two see the same machine load, checkpoint by checkpoint.
interleaved() {
  start_watch
  for ((i = 1; i <= checkpoints; i++)); do land "$i"; wait_watch "$i"; run_one "$i"; done
  stop_watch
}

case $order in
  run-watch) run_phase; watch_phase ;;
  watch-run) watch_phase; run_phase ;;
  interleaved) interleaved ;;
esac
((run_rows == watch_rows)) || fail "watch graded $watch_rows rows, run $run_rows"

# ---- report ----
/usr/bin/python3 - "$work" "$checkpoints" "$run_rows" "$run_wall" <<'EOF'
import re, sys
work, k, run_rows, run_wall = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
queued, graded, compared = {}, {}, {}
for line in open(f"{work}/watch.log"):
    t, _, text = line.partition(" ")
    if m := re.search(r"(step-\d+): queued", text): queued[m[1]] = float(t)
    elif m := re.search(r"(step-\d+): graded", text): graded[m[1]] = (float(t), m[1])
    elif m := re.search(r"comparison over (\d+) checkpoints", text): compared[int(m[1])] = float(t)
landed = {n: float(t) for t, n in (l.split() for l in open(f"{work}/landed.txt"))}
rows = [int(l) for l in open(f"{work}/watch_rows.txt")]
rss = {int(a[0]): (int(a[2]), int(a[3])) for a in (l.split() for l in open(f"{work}/per_checkpoint_rss.txt"))}
busy = graded_only = 0.0
print("checkpoint rows landed_s queued_s graded_s grade_s comparison_s vmrss_mb vmhwm_mb")
t0 = min(landed.values())
for i in range(1, k + 1):
    n = f"step-{100 * i}"
    g = graded[n][0]
    c = compared.get(i)
    end = c if c is not None else g
    busy += end - queued[n]
    graded_only += g - queued[n]
    r = rss.get(i, (0, 0))
    print(f"{n} {rows[i - 1]} {landed[n] - t0:.2f} {queued[n] - t0:.2f} {g - t0:.2f} "
          f"{g - queued[n]:.2f} {'-' if c is None else f'{c - g:.3f}'} {r[0] / 1024:.1f} {r[1] / 1024:.1f}")
wr = sum(rows)
span = max(compared.values(), default=max(g for g, _ in graded.values())) - min(queued.values())
w, rr = wr / busy, run_rows / run_wall
print(f"watch rows={wr} busy_s={busy:.2f} rows_per_s={w:.0f} (grading only {wr / graded_only:.0f};"
      f" first queued -> last comparison {span:.2f} s = {wr / span:.0f} rows/s)")
print(f"run   rows={run_rows} wall_s={run_wall:.2f} rows_per_s={rr:.0f} ({k} processes, one checkpoint each)")
print(f"ratio watch/run={w / rr:.3f} (goal >= 0.9)")
rewrites = [compared[i] - graded[f'step-{100 * i}'][0] for i in range(2, k + 1) if i in compared]
if rewrites:
    print(f"comparison rewrite s: first (2 checkpoints) {rewrites[0]:.3f}, last ({k}) {rewrites[-1]:.3f},"
          f" max {max(rewrites):.3f}")
hwm = [v[1] for _, v in sorted(rss.items())]
print(f"VmHWM MB after checkpoint 1 / {k // 2} / {k}: {hwm[0] / 1024:.1f} / {hwm[k // 2 - 1] / 1024:.1f} /"
      f" {hwm[-1] / 1024:.1f}")
samples = [l.split() for l in open(f"{work}/rss.txt")]
s0 = float(samples[0][0])
print("rss samples (s since watch start, VmRSS MB, VmHWM MB), every 10th:")
print(" ".join(f"{float(a[0]) - s0:.0f}:{int(a[1]) / 1024:.0f}/{int(a[2]) / 1024:.0f}" for a in samples[::10]))
EOF
