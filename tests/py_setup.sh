# py_setup.sh — sourced by the test scripts that read JSON or write pickles
# with python3 (import_stream.sh, explain.sh): the build's program ($pt), a
# temporary folder removed at exit ($tmp), fail() counting into $fails, and a
# skip (exit 77, automake's SKIP) where python3 is missing.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt=$top_builddir/pagetune
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
