#!/usr/bin/env bash
# Installs the Debian 12 packages the project needs (from scripts/deps.txt) and builds it.
# Idempotent and quiet when everything is already there.
#
#   scripts/setup.sh                 # install + build (RelWithDebInfo) into ./build
#   HB_BUILD_DIR=build-rel HB_BUILD_TYPE=Release scripts/setup.sh
#   scripts/setup.sh --no-build      # install only
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${HB_BUILD_DIR:-$root/build}
build_type=${HB_BUILD_TYPE:-RelWithDebInfo}

stages="build test"
mapfile -t wanted < <(awk -v stages="$stages" '!/^#/ && NF==2 && index(" " stages " ", " " $1 " ") {print $2}' "$root/scripts/deps.txt")
missing=()
for pkg in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--no-build" ]; then exit 0; fi

source "$root/scripts/ci_lib.sh"
# A RelWithDebInfo tree with the benchmarks was 0.98 GB on 2026-12-04 (debug sections
# compressed, thin archives).
ci_check_disk "$build_dir" 1200
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
fi
# Progress lines dropped, errors kept; ninja's status decides (ci_build).
ci_build "$build_dir"
