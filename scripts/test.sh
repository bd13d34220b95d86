#!/usr/bin/env bash
# The README's test command: set-up (packages + build into build/), then every test of the
# suite (ctest), closing with one line `N passed, N failed`; exits non-zero when any failed.
# The CI steps (format, thread-safety, ASan+UBSan, TSan, fuzz) are not run here: `.ci/run`
# runs this command and then them (docs/development.md, "Which command is which").
#
#   scripts/test.sh              # set-up, build, the whole suite
#   scripts/test.sh -L unit      # extra arguments go to ctest
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

"$root/scripts/setup.sh" --no-build
start=$SECONDS
"$root/scripts/setup.sh"
echo "== build: $((SECONDS - start)) s"
build_dir=${HB_BUILD_DIR:-$root/build}
export HB_SHARED_DIR=${HB_SHARED_DIR:-$root/../shared}
if [ ! -d "$HB_SHARED_DIR/data/healthbench" ]; then
  echo "test: $HB_SHARED_DIR/data/healthbench is missing; set HB_SHARED_DIR" >&2
  exit 1
fi
source "$root/scripts/ci_lib.sh"
ci_check_tests_built "$build_dir"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
status=0
(cd "$build_dir" && ctest --output-on-failure --no-tests=error --timeout "$test_timeout" -j "$jobs" "$@") 2>&1 |
  tee "$log" || status=$?
echo "== tests: $((SECONDS - start)) s"
# ctest's own count: "97% tests passed, 3 tests failed out of 899".
counts=$(sed -nE 's/^[0-9]+% tests passed, ([0-9]+) tests? failed out of ([0-9]+)$/\1 \2/p' "$log" | tail -n 1)
if [ -z "$counts" ]; then
  echo "test: ctest printed no result line (exit $status): see its output above" >&2
  exit $((status ? status : 1))
fi
read -r failed total <<<"$counts"
echo "$((total - failed)) passed, $failed failed"
if ((failed || status)); then exit $((status ? status : 1)); fi
