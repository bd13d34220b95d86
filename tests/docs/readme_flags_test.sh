#!/usr/bin/env bash
# Fails when the command-line reference (docs/cli.md) and the binaries' --help disagree: every flag
# a binary (or an hb-orchestrator subcommand) lists in --help must be in the docs/cli.md table of
# that binary (or subcommand), every flag of a table must be in that --help, and where --help
# shows a default (CLI11 prints `--flag LABEL=DEFAULT`) the table's default column must start
# with that default exactly, in backticks (`DEFAULT`, optionally followed by a remark).
#   readme_flags_test.sh docs/cli.md HB_GRADER HB_LLM_SIM HB_ORCHESTRATOR HB_ENV
set -euo pipefail
readme=$1
grader=$2
sim=$3
orchestrator=$4
env=$5
status=0
total=0
defaults=0

# The flags a --help text lists (one per option line; hidden --no<flag> forms are not listed).
help_flags() { grep -oE '^  --[a-z0-9-]+' | sed 's/^  --//' | sort -u; }

# The flags of the docs table under "### `TITLE`".
readme_flags() {
  awk -v title="### \`$1\`" '$0 == title {on = 1; next} /^##/ {on = 0} on' "$readme" |
    grep -oE '^\| `--[a-z0-9-]+`' | sed 's/^| `--//; s/`$//' | sort -u
}

# "FLAG<TAB>DEFAULT" for every flag whose --help line shows a default. CLI11 writes an option as
# "  --name LABEL=DEFAULT" (a boolean "  --name=DEFAULT") padded to the description column (where "-h,--help"'s description
# starts), or alone on its line when it reaches that column; a label is upper case and may
# itself hold "=" (NAME=VALUE), a default never starts with an upper-case letter after "=" (so
# "N=8" is label N, default 8).
help_defaults() {
  awk 'match($0, /^  -h,--help[^ ]* +/) {column = RLENGTH; next}
    match($0, /^  --[a-z0-9-]+/) {
    line = $0
    if (column && length(line) > column && substr(line, column, 1) == " ") line = substr(line, 1, column)
    sub(/ +$/, "", line)
    match(line, /^  --[a-z0-9-]+/)
    name = substr(line, 5, RLENGTH - 4); rest = substr(line, RLENGTH + 1)
    if (rest ~ /^ [^ ]/) rest = substr(rest, 2)
    else if (rest !~ /^=/) next
    sub(/ \.\.\.$/, "", rest)
    if (match(rest, /^[A-Z][A-Z0-9_:@]*(=[A-Z][A-Z0-9_:@]*)*/)) rest = substr(rest, RLENGTH + 1)
    if (substr(rest, 1, 1) == "=") print name "\t" substr(rest, 2)
  }'
}

# "FLAG<TAB>DEFAULT" of the table under "### `TITLE`": the default column's first code span
# (`0` (not given) -> 0), or the whole cell when it does not start with one; "\|" read as "|".
readme_defaults() {
  awk -v title="### \`$1\`" '$0 == title {on = 1; next} /^##/ {on = 0}
    on && match($0, /^\| `--[a-z0-9-]+` \| /) {
      name = substr($0, 6); name = substr(name, 1, index(name, "`") - 1)
      cell = substr($0, RLENGTH + 1); cell = substr(cell, 1, index(cell, " | ") - 1)
      gsub(/\\\|/, "|", cell)
      if (match(cell, /^`[^`]*`/)) cell = substr(cell, 2, RLENGTH - 2)
      print name "\t" cell
    }' "$readme"
}

check_defaults() {  # check_defaults TITLE HELP_TEXT
  local title=$1 help=$2 flag shown cell
  local documented
  documented=$(readme_defaults "$title")
  while IFS=$'\t' read -r flag shown; do
    [ -n "$flag" ] || continue
    defaults=$((defaults + 1))
    # A flag missing from the table is reported by check; only its default is compared here.
    grep -q "^$flag"$'\t' <<<"$documented" || continue
    cell=$(awk -F'\t' -v f="$flag" '$1 == f {print $2; exit}' <<<"$documented")
    if [ "$cell" != "$shown" ]; then
      echo "$readme gives --$flag under $title the default '$cell'; $title --help shows '$shown'" \
        "(write \`$shown\` in its default column, or fix the binary)"
      status=1
    fi
  done < <(printf '%s\n' "$help" | help_defaults)
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
  check_defaults "$title" "$help"
}

check hb-grader "$("$grader" --help)"
check hb-llm-sim "$("$sim" --help)"
check hb-env "$("$env" --help)"
subcommands=$("$orchestrator" --help | sed -n '/^Subcommands:/,/^$/p' | grep -oE '^  [a-z-]+' | tr -d ' ')
[ -n "$subcommands" ] || { echo "hb-orchestrator --help lists no subcommands"; exit 1; }
for sub in $subcommands; do
  check "hb-orchestrator $sub" "$("$orchestrator" "$sub" --help)"
done
[ $status = 0 ] && echo "$readme documents all $total flags and the $defaults defaults --help shows"
exit $status
