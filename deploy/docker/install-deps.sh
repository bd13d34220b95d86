#!/bin/sh
# Installs the Debian packages of one stage of scripts/deps.txt, the single source of truth for
# the packages the project needs ("<stage> <package>" lines). The container build runs it with
# stage "build" in the builder and "runtime" in the runtime images, so the images never carry a
# package list of their own; tests/deploy checks that the Dockerfile calls it that way.
#
#   install-deps.sh STAGE DEPS_FILE [EXTRA_PACKAGE...]           # apt-get install them
#   install-deps.sh --print STAGE DEPS_FILE [EXTRA_PACKAGE...]   # print them, one a line
#
# Exit status: 0 on success; 1 when the stage lists no package; 2 on bad usage; apt's status
# when the installation fails.
set -eu
print=0
if [ "${1:-}" = "--print" ]; then
  print=1
  shift
fi
if [ $# -lt 2 ]; then
  echo "usage: install-deps.sh [--print] STAGE DEPS_FILE [EXTRA_PACKAGE...]" >&2
  exit 2
fi
stage=$1
deps=$2
shift 2
pkgs=$(awk -v stage="$stage" '$1 !~ /^#/ && NF == 2 && $1 == stage { print $2 }' "$deps")
if [ -z "$pkgs" ]; then
  echo "install-deps: $deps lists no '$stage' package" >&2
  exit 1
fi
if [ "$print" = 1 ]; then
  # shellcheck disable=SC2086  # one package a word
  printf '%s\n' $pkgs "$@"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $pkgs "$@"
apt-get clean
rm -rf /var/lib/apt/lists/*
