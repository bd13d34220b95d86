#!/usr/bin/env bash
# CI step: every tracked *.cc / *.h must be clang-format-14 clean (.clang-format at the root).
# Fix with: git ls-files '*.cc' '*.h' | xargs clang-format-14 -i
set -euo pipefail
source "$(dirname "$0")/ci_lib.sh"
cd "$root"
ci_step format bash -c "git ls-files -z '*.cc' '*.h' | xargs -0 clang-format-14 --dry-run --Werror"
