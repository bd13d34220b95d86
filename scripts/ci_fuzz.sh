#!/usr/bin/env bash
# CI step: every libFuzzer target in fuzz/ (clang++-14, -fsanitize=fuzzer,address,undefined)
# run for HB_FUZZ_SECONDS (default 30) from its seed corpus fuzz/corpus/<target>/. New inputs
# go to a scratch copy, so the repository's corpora stay the small seeds we wrote.
#   scripts/ci_fuzz.sh                       # all targets, tree build-fuzz
#   HB_FUZZ_SECONDS=600 scripts/ci_fuzz.sh grader_reply_fuzzer
#   HB_FUZZ_JOBS=1 scripts/ci_fuzz.sh        # one target at a time (default: one per core)
# A crash leaves crash-<sha1> in build-fuzz/artifacts/; rerun it with
#   build-fuzz/fuzz/<target> build-fuzz/artifacts/crash-<sha1>
set -euo pipefail
source "$(dirname "$0")/ci_lib.sh"
dir=${HB_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${HB_FUZZ_SECONDS:-30}
# Targets run HB_FUZZ_JOBS at a time (default: one per core; each still gets its full time, and
# its report is printed in order once its batch is done).
fuzz_jobs=${HB_FUZZ_JOBS:-$jobs}
if ! [[ $fuzz_jobs =~ ^[1-9][0-9]*$ ]]; then
  echo "ci_fuzz.sh: HB_FUZZ_JOBS must be a whole number >= 1 (got '$fuzz_jobs')" >&2
  exit 2
fi
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(sed -n 's/^hb_cc_fuzzer(NAME \([^ )]*\).*/\1/p' "$root/fuzz/CMakeLists.txt")
fi
# 61 MB with its corpora and artifacts on a fresh clone (2026-12-05).
ci_configure "$dir" 100 -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" \
  -DCMAKE_CXX_COMPILER=clang++-14 -DHB_BUILD_TESTS=OFF -DHB_BUILD_FUZZERS=ON
ci_step "fuzz build" ci_build "$dir" "${targets[@]}"
mkdir -p "$dir/artifacts"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# run_fuzzer TARGET: one bounded run; the log goes to build-fuzz/artifacts/TARGET.log.
run_fuzzer() {
  local target=$1 corpus=$dir/corpus/$1
  rm -rf "$corpus" && mkdir -p "$corpus"
  cp "$root/fuzz/corpus/$target"/* "$corpus"/
  # -rss_limit_mb: the default 2 GB is too much when two targets share a small CI machine.
  "$dir/fuzz/$target" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$corpus" \
    >"$dir/artifacts/$target.log" 2>&1
}
status=0
for ((first = 0; first < ${#targets[@]}; first += fuzz_jobs)); do
  batch=("${targets[@]:first:fuzz_jobs}")
  pids=()
  for target in "${batch[@]}"; do
    ci_step "fuzz $target (${seconds} s)" run_fuzzer "$target" >"$dir/artifacts/$target.step" 2>&1 &
    pids+=($!)
  done
  for k in "${!batch[@]}"; do
    target=${batch[k]}
    target_status=0
    wait "${pids[k]}" || target_status=$?
    cat "$dir/artifacts/$target.step"
    if ((target_status == 0)); then
      grep -E '^(Done |stat::new_units_added)' "$dir/artifacts/$target.log" || true
    else
      echo "fuzz: $target failed; the end of its log ($dir/artifacts/$target.log):" >&2
      tail -n 60 "$dir/artifacts/$target.log" >&2
      status=1
    fi
  done
done
exit $status
