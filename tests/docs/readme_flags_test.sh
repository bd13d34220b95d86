#!/usr/bin/env bash
# Fails when the command-line reference (docs/cli.md) and the binaries' --help disagree: every flag
# a binary (or an hb-orchestrator subcommand) lists in --help must be in the docs/cli.md table of that
# binary (or subcommand), and every flag of a table must be in that --help.
#   readme_flags_test.sh docs/cli.md HB_GRADER HB_LLM_SIM HB_ORCHESTRATOR HB_ENV
set -euo pipefail
readme=$1
grader=$2
sim=$3
orchestrator=$4
env=$5
status=0
total=0

# The flags a --help text lists (one per option line; hidden --no<flag> forms are not listed).
help_flags() { grep -oE '^  --[a-z0-9-]+' | sed 's/^  --//' | sort -u; }

# The flags of the docs table under "### `TITLE`".
readme_flags() {
  awk -v title="### \`$1\`" '$0 == title {on = 1; next} /^##/ {on = 0} on' "$readme" |
    grep -oE '^\| `--[a-z0-9-]+`' | sed 's/^| `--//; s/`$//' | sort -u
}

check() {  # check TITLE HELP_TEXT
  local title=$1 help=$2 documented listed
  listed=$(printf '%s\n' "$help" | help_flags)
  documented=$(readme_flags "$title")
  if [ -z "$listed" ]; then echo "$title --help lists no flags"; status=1; fi
  for flag in $listed; do
    total=$((total + 1))
    # A here-string, not printf | grep -q: under pipefail, grep -q exiting at its first match
    # can kill printf with SIGPIPE and fail the pipeline (a false "not documented" under load).
    if ! grep -qx -- "$flag" <<<"$documented"; then
      echo "$readme does not document --$flag under $title"
      status=1
    fi
  done
  for flag in $documented; do
    if ! grep -qx -- "$flag" <<<"$listed"; then
      echo "$readme documents --$flag under $title, which $title --help does not list"
      status=1
    fi
  done
}

check hb-grader "$("$grader" --help)"
check hb-llm-sim "$("$sim" --help)"
check hb-env "$("$env" --help)"
subcommands=$("$orchestrator" --help | sed -n '/^Subcommands:/,/^$/p' | grep -oE '^  [a-z-]+' | tr -d ' ')
[ -n "$subcommands" ] || { echo "hb-orchestrator --help lists no subcommands"; exit 1; }
for sub in $subcommands; do
  check "hb-orchestrator $sub" "$("$orchestrator" "$sub" --help)"
done
[ $status = 0 ] && echo "$readme documents all $total flags"
exit $status
