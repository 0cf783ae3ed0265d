#!/bin/sh
# import_mem.sh — peak memory (RSS) and time of `pagetune trace import` on
# large generated snapshots (bench/import/gen_snapshot.py: frames on every
# entry, as _record_memory_history() records by default).
#   sh bench/import/import_mem.sh PAGETUNE MB [MB ...]
# Each size is generated once under ${TMPDIR:-/tmp} (pagetune-snap-MB.pickle,
# kept for the next run), imported plain and gzip'd; prints one line each.
set -eu
pt=$1
shift
dir=${TMPDIR:-/tmp}
here=$(dirname "$0")
for mb in "$@"; do
  f=$dir/pagetune-snap-$mb.pickle
  [ -f "$f" ] || python3 "$here/gen_snapshot.py" "$mb" "$f"
  [ -f "$f.gz" ] || gzip -k -1 "$f"
  for src in "$f" "$f.gz"; do
    out=$(mktemp "$dir/pagetune-import-XXXXXX.trace.gz")
    cat "$src" >/dev/null # warm the page cache
    if /usr/bin/time -f "%M %e" -o "$out.time" "$pt" trace import "$src" -o "$out" >/dev/null 2>"$out.err"; then
      status=ok
    else
      status="failed: $(tail -1 "$out.err")"
    fi
    read -r rss secs <<EOT
$(tail -1 "$out.time")
EOT
    case $rss in *[!0-9]*|"") rss=0 ;; esac
    printf '%-40s %8s MB input  peak RSS %6s MB  %7s s  %s\n' "$(basename "$src")" \
      "$(( $(wc -c <"$src") / 1000000 ))" "$((rss / 1024))" "$secs" "$status"
    rm -f "$out" "$out.time" "$out.err"
  done
done
