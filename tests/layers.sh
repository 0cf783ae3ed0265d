#!/bin/sh
# layers.sh — the includes the compiler flags cannot stop.  Each layer's
# convenience library sees only its own and lower layers' headers through
# its -I flags, but a header that sits in /usr/include (sqlite3.h, zlib.h,
# gsl/...) needs no flag, and a quoted include of a higher layer's header
# resolves wherever the flags happen to overlap.  So every .c and .h under
# sim/<layer>/ and backend/ is read here:
#  - the layers, lowest first: base trace device mech gpu engine policy work
#    cli (sim/cli may not exist); backend/ stands beside work and may include
#    base, device, mech and gpu; main.c may include anything (not checked);
#  - a project header (quoted or not) must be of the file's layer or a lower
#    one, and must exist in sim/ or backend/ (a quoted name that is neither
#    is an error: it would come from wherever the flags point);
#  - an outside library's headers only where it belongs: lua*.h, lauxlib.h,
#    lualib.h in sim/policy; sqlite3*.h in sim/work; gsl/* in sim/work and
#    sim/trace/gen.c; cuda*.h in backend; zlib.h in sim/trace; mpi.h in
#    sim/cli/farm_mpi.c alone (compiled into pagetune-mpi only).
# Each violation is one line, FILE:LINE: reason; exit 1 if any.
set -u
top_srcdir=${top_srcdir:-.}
cd "$top_srcdir" || exit 1

files=$(find sim backend -name '*.[ch]' 2>/dev/null | LC_ALL=C sort)
[ -n "$files" ] || { echo "layers.sh: no sources under $top_srcdir/sim" >&2; exit 1; }
# every project header: "NAME DIR" (DIR = base, trace, ..., backend)
headers=$(for f in $files; do
  case $f in *.h) d=${f%/*}; echo "${f##*/} ${d##*/}" ;; esac
done)

printf '%s\n' "$files" | xargs awk -v headers="$headers" '
BEGIN {
  n = split("base trace device mech gpu engine policy work cli", order, " ")
  for (i = 1; i <= n; i++) rank[order[i]] = i
  m = split(headers, h, "\n")
  for (i = 1; i <= m; i++) { split(h[i], f, " "); owner[f[1]] = (f[1] in owner && owner[f[1]] != f[2]) ? owner[f[1]] " " f[2] : f[2] }
  bad = 0
}
function layer_of(path,   p) {   # "backend" or the sim/<layer> folder
  if (path ~ /^backend\//) return "backend"
  p = path; sub(/^sim\//, "", p); sub(/\/.*/, "", p); return p
}
function may_include(from, to) {  # may layer "from" see layer "to"?
  if (from == to) return 1
  if (from == "backend") return to == "base" || to == "device" || to == "mech" || to == "gpu"
  if (to == "backend") return from == "cli"
  return rank[to] < rank[from]
}
function report(msg) {
  print FILENAME ":" FNR ": " msg
  bad = 1
}
FNR == 1 {
  L = layer_of(FILENAME)
  if (L != "backend" && !(L in rank)) report("sim/" L " is not a layer (base trace device mech gpu engine policy work cli)")
}
/^[ \t]*#[ \t]*include[ \t]*["<]/ {
  line = $0
  sub(/^[ \t]*#[ \t]*include[ \t]*/, "", line)
  q = substr(line, 1, 1)
  name = substr(line, 2)
  end = index(name, q == "\"" ? "\"" : ">")
  if (end) name = substr(name, 1, end - 1)
  base = name; sub(/.*\//, "", base)
  lib = ""
  if (name in owner) lib = ""  # a project header (cudadev.h is ours, not CUDA)
  else if (name ~ /^lua[^\/]*\.h$/ || name == "lauxlib.h" || name == "lualib.h") lib = "lua"
  else if (name ~ /^sqlite3[^\/]*\.h$/) lib = "sqlite3"
  else if (name ~ /^gsl\//) lib = "gsl"
  else if (name ~ /^cuda[^\/]*\.h$/) lib = "cuda"
  else if (name == "zlib.h") lib = "zlib"
  else if (name ~ /^mpi[^\/]*\.h$/) lib = "mpi"
  if (lib != "") {
    place = lib == "lua" ? "sim/policy" : lib == "sqlite3" ? "sim/work" : lib == "gsl" ? "sim/work and sim/trace/gen.c" : lib == "cuda" ? "backend" : lib == "mpi" ? "sim/cli/farm_mpi.c" : "sim/trace"
    good = (lib == "lua" && L == "policy") || (lib == "sqlite3" && L == "work") || (lib == "cuda" && L == "backend") ||
           (lib == "mpi" && FILENAME == "sim/cli/farm_mpi.c") ||
           (lib == "zlib" && L == "trace") || (lib == "gsl" && (L == "work" || FILENAME == "sim/trace/gen.c"))
    if (!good) report("includes " name ": " lib " headers belong only in " place)
    next
  }
  if (!(name in owner)) {
    if (q == "\"" && name != "config.h") report("includes \"" name "\": no such header in sim/ or backend/")
    next
  }
  split(owner[name], dirs, " ")
  to = dirs[1]
  for (j in dirs) if (dirs[j] == L) to = L
  if (!may_include(L, to))
    report("includes " name " of layer " to ", which " L " may not see (" (L == "backend" ? "backend sees base device mech gpu" : "only its own and lower layers: base < trace < device < mech < gpu < engine < policy < work < cli") ")")
}
END { exit bad }
' || exit 1  # xargs says 123 when an awk found violations
exit 0
