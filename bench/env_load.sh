#!/usr/bin/env bash
# hb-env under load: starts hb-llm-sim (--latency-ms, default 1000) and hb-env (embedded
# grader, the main file's 30 real records as split "test"), then runs hb-env-load against it
# and prints its line (submissions/s, latency percentiles, hb-env's peak RSS).
#
#   bench/env_load.sh IN_FLIGHT SUBMISSIONS [hb-env-load flags, e.g. --same_reply]
# Environment: HB_BUILD_DIR (default build), HB_SHARED_DIR (default ../shared), LATENCY_MS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HB_BUILD_DIR:-$root/build}
shared=${HB_SHARED_DIR:-$root/../shared}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
wait_line() { for _ in $(seq 1 120); do grep -q listening "$1" 2>/dev/null && return; sleep 0.5; done; exit 1; }

"$build/simulator/hb-llm-sim" --listen=127.0.0.1:0 --latency-ms="${LATENCY_MS:-1000}" >"$work/sim" 2>&1 &
wait_line "$work/sim"
"$build/environment/hb-env" \
  --split=test="$shared/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl" \
  --listen=127.0.0.1:0 --metrics-listen= --llm-base-url="http://$(head -1 "$work/sim" | sed 's/^listening on //')/v1" \
  --grader-template="$shared/reference/grader_template.txt" --max-upstream-in-flight=8192 \
  --log-level=warn >"$work/env" 2>&1 &
env_pid=$!
wait_line "$work/env"
in_flight=$1 submissions=$2
shift 2
"$build/bench/hb-env-load" --target="$(head -1 "$work/env" | sed 's/^grpc listening on //')" \
  --split=test --tasks=30 --in_flight="$in_flight" --submissions="$submissions" \
  --server_pid="$env_pid" "$@"
