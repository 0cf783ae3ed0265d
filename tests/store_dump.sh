#!/bin/sh
# store_dump.sh DB — a store's runs as text, in key order, for comparing two
# stores row by row: each run's key (trace content hash, policy text hash,
# params_json, capacity, gpu, engine_version), every results column but
# run_id and sim_seconds, and its timeline points.  Ids, created_at and
# timings are left out: they differ between two sweeps that agree.
# Sourced or run by the farm tests (tests/farm.sh, tests/mpi.sh).
set -eu
db=$1
cols=$(sqlite3 "$db" "SELECT group_concat('s.' || name, ',') FROM pragma_table_info('results')
  WHERE name NOT IN ('run_id', 'sim_seconds')")
sqlite3 -separator ' ' "$db" "
  SELECT t.content_hash, p.text_hash, r.params_json, r.capacity, r.gpu, r.engine_version, $cols,
    (SELECT group_concat(seq || ':' || event || ':' || time_us || ':' || reserved_bytes || ':' || allocated_bytes, ',')
       FROM (SELECT * FROM timelines l WHERE l.run_id = r.id ORDER BY seq))
  FROM runs r JOIN traces t ON t.id = r.trace_id JOIN policies p ON p.id = r.policy_id
    JOIN results s ON s.run_id = r.id
  ORDER BY t.content_hash, p.text_hash, r.params_json, r.capacity, r.gpu, r.engine_version"
