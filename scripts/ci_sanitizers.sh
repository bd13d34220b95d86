#!/usr/bin/env bash
# CI step: the unit and integration tests under a sanitizer, in a build tree of its own.
#   scripts/ci_sanitizers.sh asan      # -fsanitize=address,undefined (UBSan fatal), build-asan
#   scripts/ci_sanitizers.sh tsan      # -fsanitize=thread with tests/tsan.supp, build-tsan
# Extra arguments go to ctest (e.g. -R grader_server). -O1 -g1: fast to build, fast enough to
# run, and stacks with file:line.
set -euo pipefail
source "$(dirname "$0")/ci_lib.sh"
kind=${1:?usage: ci_sanitizers.sh asan|tsan [ctest args]}
shift
case $kind in
  asan) sanitize=address,undefined ;;
  tsan) sanitize=thread ;;
  *) echo "ci_sanitizers.sh: unknown sanitizer '$kind' (asan or tsan)" >&2; exit 2 ;;
esac
dir=$root/build-$kind
# Disk: on a fresh clone of 97d7fba (2026-12-05) the ASan+UBSan tree was 1.6 GB after its
# tests, the TSan tree 369 MB; the need leaves about a fifth more.
case $kind in asan) need_mb=1900 ;; *) need_mb=450 ;; esac
ci_configure "$dir" "$need_mb" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" \
  -DHB_SANITIZE=$sanitize
# Only what the tests run: the test executables and the binaries the integration and docs
# tests start (no benchmarks, no load generator).
mapfile -t targets < <(ci_test_targets "$dir")
ci_step "$kind build" ci_build "$dir" "${targets[@]}" hb-grader hb-llm-sim hb-orchestrator hb-env
ci_check_tests_built "$dir"
# Any report fails its test: ASan and UBSan (-fno-sanitize-recover) abort, TSan exits 66. TSan
# gets tests/tsan.supp and ignore_noninstrumented_modules=1 through each test's ENVIRONMENT
# (cmake/HbHelpers.cmake), and so do the servers the integration tests start; every TSan binary
# links the absl::Mutex shim (tests/testing/tsan/absl_tsan_shim.cc).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
cd "$dir"
ci_step "$kind tests" ctest --output-on-failure --timeout "$test_timeout" -j "$jobs" -L 'unit|integration' "$@"
