#!/usr/bin/env bash
# Set-up (packages + build), the whole test suite, then the CI checks. This is what CI runs.
#
#   scripts/test.sh              # everything: format, build, tests, then the CI steps below
#   scripts/test.sh -L unit      # extra arguments go to ctest, and the CI steps are skipped
#   HB_CI_STEPS="asan fuzz" scripts/test.sh   # the main suite plus only these steps
#   HB_CI_STEPS= scripts/test.sh              # the main suite only
#
# CI steps (each also runs on its own, see README.md "Building and testing by hand"):
#   format         scripts/ci_format.sh          clang-format-14 --dry-run --Werror
#   thread-safety  scripts/ci_thread_safety.sh   clang++-14 -Wthread-safety -Werror, build-tsa
#   asan           scripts/ci_sanitizers.sh asan unit+integration under ASan+UBSan, build-asan
#   tsan           scripts/ci_sanitizers.sh tsan unit+integration under TSan, build-tsan
#   fuzz           scripts/ci_fuzz.sh            each libFuzzer target for 30 s, build-fuzz
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if (($#)); then
  steps=${HB_CI_STEPS-}
else
  steps=${HB_CI_STEPS-format thread-safety asan tsan fuzz}
fi
has_step() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

"$root/scripts/setup.sh" --no-build
if has_step format; then "$root/scripts/ci_format.sh"; fi
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
start=$SECONDS
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" "$@")
echo "== tests: $((SECONDS - start)) s"

# The sanitizer and clang trees build one after another: on 2 cores, building two at once
# only makes both slower (and doubles peak memory).
if has_step thread-safety; then "$root/scripts/ci_thread_safety.sh"; fi
if has_step asan; then "$root/scripts/ci_sanitizers.sh" asan; fi
if has_step tsan; then "$root/scripts/ci_sanitizers.sh" tsan; fi
if has_step fuzz; then "$root/scripts/ci_fuzz.sh"; fi
