#!/usr/bin/env bash
# Installs deploy/validate's npm dependencies (kubernetes-models, yaml) into DEST with `npm ci`,
# once per package-lock.json: later runs find the stamp and return at once.
#
#   deploy/validate/npm-ci-cached.sh DEST      # e.g. build/tests/deploy/node
#
# Exit status: 0 when DEST/node_modules matches the lock file; npm's status otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ]; then
  echo "usage: npm-ci-cached.sh DEST" >&2
  exit 2
fi
dest=$1
if ! command -v npm >/dev/null; then
  echo "npm-ci-cached: npm is not installed (node >= 20 with npm is needed by tests/deploy)" >&2
  exit 1
fi
want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
stamp=$dest/node_modules/.hb-package-lock.sha256
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "npm-ci-cached: $dest/node_modules is up to date"
  exit 0
fi
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
echo "$want" > "$stamp"
echo "npm-ci-cached: installed $dest/node_modules from package-lock.json"
