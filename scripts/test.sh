#!/usr/bin/env bash
# Set-up (packages + build) and the whole test suite. This is what CI runs.
#
#   scripts/test.sh              # everything
#   scripts/test.sh -L unit      # extra arguments go to ctest
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
build_dir=${HB_BUILD_DIR:-$root/build}
export HB_SHARED_DIR=${HB_SHARED_DIR:-$root/../shared}
if [ ! -d "$HB_SHARED_DIR/data/healthbench" ]; then
  echo "test: $HB_SHARED_DIR/data/healthbench is missing; set HB_SHARED_DIR" >&2
  exit 1
fi
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" "$@"
