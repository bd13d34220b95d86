# Sourced by scripts/ci_*.sh and scripts/setup.sh: the repository root, a timed-step helper,
# the disk check, and the configure and build of the build trees. Not a script of its own.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export HB_SHARED_DIR=${HB_SHARED_DIR:-$root/../shared}
# Test processes at a time (one per core), and compile jobs: ninja's own default of two more
# than the cores, which keeps both cores busy while a job waits on disk (509 s for a cold
# build/ at -j2 against 477 s at -j4, 2 cores, docs/development.md "Build time").
jobs=$(nproc)
build_jobs=${HB_BUILD_JOBS:-$((jobs + 2))}
# Longest a single test may run (ctest --timeout; HB_TEST_TIMEOUT overrides). The slowest test
# takes ~40 s under TSan (monitoring.e2e): a test that hangs fails here with its name and
# output instead of holding CI until its own limit (a CI run once ended that way, unnamed).
test_timeout=${HB_TEST_TIMEOUT:-300}

# ci_step NAME COMMAND...: runs COMMAND, prints how long it took, returns its exit status.
ci_step() {
  local name=$1 start=$SECONDS status=0
  shift
  echo "== $name"
  "$@" || status=$?
  if ((status)); then
    echo "== $name: FAILED (exit $status) after $((SECONDS - start)) s"
  else
    echo "== $name: $((SECONDS - start)) s"
  fi
  return $status
}

# ci_check_disk DIR NEED_MB: fails in seconds, saying what to do, when the disk holding DIR
# cannot take a build tree of about NEED_MB (counting what DIR already holds), instead of a
# compiler or linker failing on "No space left on device" minutes later.
ci_check_disk() {
  local dir=$1 need_mb=$2 have_mb=0 avail_mb probe
  probe=$dir
  while [ ! -d "$probe" ]; do probe=$(dirname "$probe"); done
  if [ -d "$dir" ]; then have_mb=$(du -sm "$dir" | cut -f1); fi
  avail_mb=$(df -Pm "$probe" | awk 'NR==2 {print $4}')
  if ((avail_mb + have_mb < need_mb)); then
    echo "ci: $dir needs about $need_mb MB of disk and only $avail_mb MB are free (it holds" \
      "$have_mb MB): free some space (old build trees, /tmp) and run again" >&2
    return 1
  fi
}

# ci_configure DIR NEED_MB CMAKE_ARGS...: checks the disk (ci_check_disk), then configures DIR
# (once) with Ninja, no benchmarks, and the ccache launcher when ccache is installed.
ci_configure() {
  local dir=$1
  ci_check_disk "$dir" "$2"
  shift 2
  if [ -f "$dir/build.ninja" ]; then return 0; fi
  local launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S "$root" -B "$dir" -G Ninja -DHB_BUILD_BENCHMARKS=OFF "${launcher[@]}" "$@" >/dev/null
}

# ci_build DIR [TARGETS...]: builds quietly (ninja's progress lines dropped, errors kept) and
# returns ninja's exit status: the filter may never decide it (a failed build fails the step).
ci_build() {
  local dir=$1
  shift
  ninja -C "$dir" -j "$build_jobs" "$@" | { grep -v '^\[' || true; }
  local status=${PIPESTATUS[0]}
  return "$status"
}

# ci_test_targets DIR: every test executable target of the tree (tests/.../*_test), one a line.
# Any name: a narrower pattern ([a-z_/]) once skipped utf8_test and the HTTP/1.1 tests, which
# then vanished from the sanitizer runs without a failure.
ci_test_targets() {
  ninja -C "$1" -t targets all | sed -n 's|^\(tests/[^: ]*_test\): .*|\1|p'
}

# ci_check_tests_built DIR: fails, naming them, when a test executable of DIR was not built
# (its tests would silently vanish from ctest instead of failing).
ci_check_tests_built() {
  local dir=$1 missing=() target
  while read -r target; do
    [ -x "$dir/$target" ] || missing+=("$target")
  done < <(ci_test_targets "$dir")
  if ((${#missing[@]})); then
    echo "ci: ${#missing[@]} test executable(s) not built in $dir: ${missing[*]}" >&2
    return 1
  fi
}
