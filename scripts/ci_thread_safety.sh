#!/usr/bin/env bash
# CI step: our libraries and binaries built with clang++-14 -Wthread-safety -Werror (the
# top-level CMakeLists adds -Wthread-safety for clang), so ABSL_GUARDED_BY and friends are
# checked. Tests are not built: they add build time and no annotations. The benchmarks are
# (`all benchmarks`): no other CI tree compiles them.
#   scripts/ci_thread_safety.sh        # tree: build-tsa (HB_TSA_BUILD_DIR to change)
set -euo pipefail
source "$(dirname "$0")/ci_lib.sh"
dir=${HB_TSA_BUILD_DIR:-$root/build-tsa}
# 97 MB on a fresh clone (2026-12-05); the need leaves room.
ci_configure "$dir" 150 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DHB_BUILD_TESTS=OFF -DHB_BUILD_BENCHMARKS=ON
ci_step "thread-safety build (clang++-14 -Wthread-safety -Werror)" ci_build "$dir" all benchmarks
