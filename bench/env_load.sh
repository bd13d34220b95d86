#!/usr/bin/env bash
# hb-env under load: starts hb-llm-sim (--latency-ms, default 1000, no jitter) and hb-env
# (embedded grader, the main file's 30 real records as split "test"), then runs hb-env-load
# against it and prints its lines (calls/s, latency percentiles, latency added over the
# judge's fixed latency, CPU per call of hb-env and of the driver, hb-env's peak RSS, load
# average).
#
#   bench/env_load.sh IN_FLIGHT SUBMISSIONS [hb-env-load flags, e.g. --same_reply, --mode=ors]
# Environment: HB_BUILD_DIR (default build), HB_ENV_BIN (default its hb-env; for A/B runs),
# HB_ENV_WRAPPER (a command hb-env runs under, e.g. "valgrind --tool=callgrind ..."),
# HB_SHARED_DIR (default ../shared), SPLIT_FILE (the JSONL served as split "test"; default the
# 30 real records), TASKS (distinct tasks cycled, default 30), LATENCY_MS, METRICS_LISTEN
# (HOST:PORT: hb-env serves Prometheus metrics there and the script prints its
# hb_env_added_latency_seconds histogram after the run),
# PERF_DATA (when set, `perf record -g` samples hb-env's CPU into that file while the driver
# runs; read it with `perf report -i FILE --no-children`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HB_BUILD_DIR:-$root/build}
# The benchmark binaries are not in `all`: build what this script runs (a no-op when current).
source "$root/scripts/ci_lib.sh"
ci_build "$build" hb-env-load
shared=${HB_SHARED_DIR:-$root/../shared}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# wait_line FILE PATTERN: until FILE has a line matching PATTERN (60 s at most).
wait_line() {
  for _ in $(seq 1 120); do grep -q "$2" "$1" 2>/dev/null && return; sleep 0.5; done
  echo "no '$2' in $1 after 60 s:" >&2; cat "$1" >&2; exit 1
}

"$build/simulator/hb-llm-sim" --listen=127.0.0.1:0 --latency-ms="${LATENCY_MS:-1000}" >"$work/sim" 2>&1 &
sim_pid=$!
wait_line "$work/sim" "listening on"
${HB_ENV_WRAPPER:-} "${HB_ENV_BIN:-$build/environment/hb-env}" \
  --split=test="${SPLIT_FILE:-$shared/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl}" \
  --listen=127.0.0.1:0 --http-listen=127.0.0.1:0 --metrics-listen="${METRICS_LISTEN:-}" \
  --llm-base-url="http://$(head -1 "$work/sim" | sed 's/^listening on //')/v1" \
  --grader-template="$shared/reference/grader_template.txt" --max-upstream-in-flight=8192 \
  --log-level=warn >"$work/env" 2>&1 &
env_pid=$!
wait_line "$work/env" "http listening on"
in_flight=$1 submissions=$2
shift 2
if [[ -n "${PERF_DATA:-}" ]]; then
  perf record -e cpu-clock ${PERF_FLAGS:--g} -p "$env_pid" -o "$PERF_DATA" >"$work/perf" 2>&1 &
  perf_pid=$!
fi
"$build/bench/hb-env-load" --target="$(sed -n 's/^grpc listening on //p' "$work/env")" \
  --http_target="$(sed -n 's/^http listening on //p' "$work/env")" \
  --judge_latency_ms="${LATENCY_MS:-1000}" --split=test --tasks="${TASKS:-30}" --in_flight="$in_flight" \
  --submissions="$submissions" \
  --server_pid="$env_pid" --judge_pid="$sim_pid" "$@"
if [[ -n "${METRICS_LISTEN:-}" ]]; then
  curl -s "http://$METRICS_LISTEN/metrics" | grep '^hb_env_added_latency_seconds' || true
fi
if [[ -n "${perf_pid:-}" ]]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
