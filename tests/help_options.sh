#!/bin/sh
# help_options.sh — every command's --help documents every option it takes:
# the commands are walked from `pagetune --help` (main.c's table), each
# command's option lines are its option table (sim/cli/opts.c prints them),
# and each option there must have help text and be named in the usage lines.
# Exit codes follow one rule: 0 ok, 1 bad input or a failed run, 2 usage.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$pt" --help >"$tmp/top" || fail "pagetune --help"
# "  trace import|stats|gen   summary" -> "trace import", "trace stats", ...; "  sim   summary" -> "sim"
# "  trace import|stats|gen   summary" is a group: "trace import", "trace stats", ...; "  sim   summary" is "sim"
sed -n '/^Commands:/,/^$/p' "$tmp/top" | awk 'NF >= 2 && $1 != "Commands:" {
  if (index($2, "|")) { n = split($2, subs, "|"); for (i = 1; i <= n; i++) print $1 " " subs[i] } else print $1 }' >"$tmp/cmds"
ncmd=0
while read -r c; do
  ncmd=$((ncmd + 1))
  # shellcheck disable=SC2086
  "$pt" $c --help >"$tmp/help" 2>"$tmp/err"; rc=$?
  [ $rc -eq 0 ] || { fail "$c --help: exit $rc"; continue; }
  grep -q "^usage: pagetune $c" "$tmp/help" || { fail "$c --help: no 'usage: pagetune $c' line"; continue; }
  sed -n '1,/^$/p' "$tmp/help" >"$tmp/usage"
  # option lines: "  -x, --name VALUE  help" or "  --name VALUE  help" (continuations start with spaces only)
  grep -E '^  (-[a-zA-Z], )?--[a-z]' "$tmp/help" >"$tmp/opts"
  nopt=0
  while IFS= read -r line; do
    opt=$(echo "$line" | sed -E 's/^  (-[a-zA-Z], )?(--[a-z0-9-]+).*/\2/')
    short=$(echo "$line" | sed -nE 's/^  (-[a-zA-Z]), .*/\1/p')
    [ "$opt" = "--help" ] && continue
    nopt=$((nopt + 1))
    rest=$(echo "$line" | sed -E 's/^  (-[a-zA-Z], )?--[a-z0-9-]+( [A-Z][A-Za-z=,.]*)?//')
    if [ -z "$(echo "$rest" | tr -d ' ')" ]; then
      # help on the next line: the label was too long
      next=$(grep -A1 -F -- "$line" "$tmp/help" | sed -n 2p)
      case $next in "  "*[a-z]*) ;; *) fail "$c: $opt has no help text" ;; esac
    fi
    { grep -q -- "$opt\b" "$tmp/usage" || { [ -n "$short" ] && grep -q -- "$short\b" "$tmp/usage"; }; } || fail "$c: $opt is in the option table but not in the usage lines"
  done <"$tmp/opts"
  echo "ok: $c --help: $nopt options"
done <"$tmp/cmds"
[ "$(wc -l <"$tmp/cmds")" -ge 14 ] || fail "only $(wc -l <"$tmp/cmds") commands found in pagetune --help"

# exit codes: a trace with no runs is bad input (1) for report as for best and export
db="$tmp/w.db"
PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$top_srcdir/policies}; export PAGETUNE_POLICY_DIR
"$pt" sweep --db "$db" --trace "$top_srcdir/tests/data/synthetic_snapshot.pickle" --policy direct --gpu none >/dev/null 2>&1 ||
  fail "sweep"
for c in "report" "best" "export --format env"; do
  # shellcheck disable=SC2086
  "$pt" $c --db "$db" --trace nope >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ $rc -ne 1 ]; then fail "$c --trace nope: exit $rc, wanted 1"
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then fail "$c --trace nope: not one line"; sed 's/^/  /' "$tmp/err"
  else echo "ok: $c --trace nope: exit 1"; fi
done
"$pt" report --db "$db" >/dev/null 2>&1 || fail "report of every trace"
"$pt" report --db "$db" --trace synthetic_snapshot.pickle >/dev/null 2>&1 || fail "report of a stored trace"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
