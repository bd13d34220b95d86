#!/usr/bin/env bash
# Fails when a binary has a flag the README does not document, or the README's command-line
# reference names a flag no binary has.
set -euo pipefail
readme=$1; shift
abseil="flagfile fromenv tryfromenv undefok"
status=0
all=""
for binary in "$@"; do
  help=$("$binary" --helpfull 2>&1 || true)  # Abseil exits non-zero after --helpfull
  flags=$(printf "%s\n" "$help" | grep -oE "^    --[a-z0-9_]+" | sed "s/^ *--//" | tr _ -)
  for flag in $flags; do
    case " $abseil " in *" $flag "*) continue ;; esac
    all="$all $flag"
    if ! grep -q -- "\`--$flag\`" "$readme"; then
      echo "README.md does not document --$flag of $(basename "$binary")"
      status=1
    fi
  done
done
reference=$(sed -n '/^## Command-line reference/,$p' "$readme" | grep -oE '^\| `--[a-z0-9-]+`' | sed 's/^| `--//; s/`$//')
for flag in $reference; do
  case " $all " in *" $flag "*) ;; *) echo "README.md documents --$flag, which no binary has"; status=1 ;; esac
done
[ $status = 0 ] && echo "README documents all $(echo $all | wc -w) flags"
exit $status
