#!/usr/bin/env bash
# Throughput ceiling of hb-llm-sim: starts the given binary at 0 ms latency on 127.0.0.1:0,
# drives it with wrk (bench/sim_ceiling.lua: ~3 KB grader requests) and prints requests/s.
# Builds nothing: pass the path of a (Release) hb-llm-sim.
#
#   bench/sim_ceiling.sh build-release/simulator/hb-llm-sim
#
# Environment: SIM_THREADS (default 2), WRK_THREADS (2), WRK_CONNECTIONS (64),
# WRK_DURATION (10s), SIM_ARGS (extra simulator flags, e.g. "--fault-500=0.01").
set -euo pipefail

if [[ $# -lt 1 || ! -x "$1" ]]; then
  echo "usage: $0 PATH/TO/hb-llm-sim" >&2
  exit 2
fi
sim="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 2; }

coproc SIM { exec "$sim" --listen 127.0.0.1:0 --threads "${SIM_THREADS:-2}" \
  --latency-ms 0 --log-level warn ${SIM_ARGS:-}; }
sim_pid=$SIM_PID
trap 'kill -TERM "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true' EXIT

# Readiness: the simulator's first stdout line is "listening on HOST:PORT".
read -r -t 10 line <&"${SIM[0]}" || { echo "hb-llm-sim did not start" >&2; exit 1; }
[[ "$line" == "listening on "* ]] || { echo "unexpected first line: $line" >&2; exit 1; }
addr="${line#listening on }"

cmd=(wrk -t"${WRK_THREADS:-2}" -c"${WRK_CONNECTIONS:-64}" -d"${WRK_DURATION:-10s}"
     -s "$here/sim_ceiling.lua" "http://$addr")
echo "command: ${cmd[*]}"
out="$("${cmd[@]}")"
echo "$out"
rps="$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")"
if grep -q "Non-2xx" <<<"$out"; then
  echo "warning: some responses were not 2xx" >&2
fi
echo "requests_per_second ${rps}"
