# wb_setup.sh — sourced by the workbench's test scripts (check.sh, report_rec.sh, knobs.sh, store_views.sh, policies.sh,
# readme_tour.sh): the build's program and bundled policies, a temporary folder
# removed at exit ($tmp), fail() counting into $fails, done_ok NAME to end with the
# verdict, and a skip (exit 77, automake's SKIP) without python3, which checks the JSON.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$top_srcdir/policies}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
done_ok() {
  [ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
  echo "$1: ok"
}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is missing"; exit 77; }
