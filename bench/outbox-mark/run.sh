#!/usr/bin/env bash
# What the relay's claim and mark cost PostgreSQL per create: the outbox as migrated (a queue table and a log
# of sends, migration 20261203000000_outbox_pending_queue) against the schema before it (docs/benchmarks.md,
# "The mark's cost per row").
#
#   bash bench/outbox-mark/run.sh          (a quiet PostgreSQL server: the CPU of all its processes is read)
#
# Variants, each in its own copy of the migrated database:
#   shipped  as migrated: a trigger queues each inserted row in outbox_pending; the claim walks the queue, the
#            mark deletes the entries and records the send as one outbox_publications row (relay_shipped.sql)
#   before   the schema until that migration, rebuilt by DDL: no queue, published_at and the mark's columns on
#            the rows, the claim's partial index on published_at IS NULL; the mark is a non-HOT UPDATE
#            (published_at is in the keys or predicates of three indexes: relay_before.sql)
# Per round and variant: pgbench creates at a fixed rate (create.sql) with the relay off, then with the
# relay's statement (relay_*.sql, 60 rows every 50 ms) beside them, each on an emptied table after a
# CHECKPOINT. The CPU is that of every process of the server (backends, autovacuum, WAL writer,
# checkpointer) over the phase, the WAL the server wrote (pg_current_wal_insert_lsn) and the buffers the
# database read or hit (pg_stat_database), each divided by the creates. A warm-up phase of each variant and
# side runs first, not counted.
#
# Env: PGHOST (127.0.0.1), PGPORT (5432), PGUSER (postgres); OUTBOX_MARK_RATE creates/s (1000),
# OUTBOX_MARK_SECONDS per phase (30), OUTBOX_MARK_ROUNDS (3), OUTBOX_MARK_DB name prefix
# (tickets_outbox_mark; the databases are dropped at the end). Needs pgbench and psql.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
rate="${OUTBOX_MARK_RATE:-1000}" secs="${OUTBOX_MARK_SECONDS:-30}" rounds="${OUTBOX_MARK_ROUNDS:-3}"
db="${OUTBOX_MARK_DB:-tickets_outbox_mark}"
for tool in pgbench psql; do
  command -v "$tool" >/dev/null || { echo "outbox-mark: $tool not found; install PostgreSQL's client tools (Debian: postgresql-client)" >&2; exit 1; }
done
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
say() { printf '[outbox-mark %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# The server's processes: the children of its postmaster, the parent of its checkpointer.
checkpointer=$(psql -X -Atc "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'" postgres)
postmaster=$(awk '/^PPid:/ { print $2 }' "/proc/$checkpointer/status" 2>/dev/null || true)
[ -n "$postmaster" ] || { echo "outbox-mark: cannot find the processes of the server at $PGHOST:$PGPORT (it must run on this machine)" >&2; exit 1; }
hz=$(getconf CLK_TCK)
server_ticks() { # utime+stime of the postmaster's live children, plus cutime+cstime of those it reaped
  local t c0 c1 p s
  while :; do
    c0=$(cut -d' ' -f16,17 "/proc/$postmaster/stat")
    t=0
    for p in $(pgrep -P "$postmaster"); do
      s=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
      t=$((t + ${s% *} + ${s#* }))
    done
    c1=$(cut -d' ' -f16,17 "/proc/$postmaster/stat")
    # A child reaped between the two reads would count twice (alive, then in cutime): read again.
    [ "$c0" = "$c1" ] && break
  done
  echo $((t + ${c1% *} + ${c1#* }))
}
quiet() { # waits until no session is left on the database but this one (psql's and pgbench's backends exit after them)
  local i
  for i in $(seq 1 100); do
    [ "$(psql -X -Atc "SELECT count(*) FROM pg_stat_activity WHERE datname = '$1' AND pid <> pg_backend_pid()" postgres)" = 0 ] && return
    sleep 0.05
  done
  echo "outbox-mark: sessions still open on $1 after 5 s" >&2
  exit 1
}
num() { [[ "$2" =~ ^[0-9]+$ ]] || { echo "outbox-mark: $1 is not a number: '$2'" >&2; exit 1; }; }

variants="shipped before"
results=$(mktemp)
bench_log=$(mktemp)
drop_databases() { for v in tpl $variants; do q -c "DROP DATABASE IF EXISTS ${db}_$v WITH (FORCE)" postgres 2>/dev/null || true; done; }
trap 'drop_databases; rm -f "$results" "$bench_log" "$bench_log.relay"' EXIT
drop_databases
say "migrating ${db}_tpl (scripts/db-migrate.mjs)"
q -c "CREATE DATABASE ${db}_tpl" postgres
DATABASE_URL="postgresql://$PGUSER@$PGHOST:$PGPORT/${db}_tpl" bash "$root/scripts/node.sh" "$root/scripts/db-migrate.mjs" >/dev/null
for v in $variants; do q -c "CREATE DATABASE ${db}_$v TEMPLATE ${db}_tpl" postgres; done
q -c "DROP TRIGGER outbox_events_enqueue ON outbox_events" \
  -c "ALTER TABLE outbox_events ADD COLUMN published_at timestamptz(3), ADD COLUMN kafka_timestamp timestamptz(3), ADD COLUMN attempts int NOT NULL DEFAULT 0, ADD COLUMN last_error text, ADD COLUMN next_attempt_at timestamptz(3)" \
  -c "CREATE INDEX outbox_events_published_at_idx ON outbox_events (published_at)" \
  -c "CREATE INDEX outbox_events_unpublished_seq_idx ON outbox_events (seq) WHERE published_at IS NULL" \
  -c "CREATE INDEX outbox_events_parked_idx ON outbox_events (aggregate_id) WHERE published_at IS NULL AND next_attempt_at IS NOT NULL" \
  "${db}_before"

phase() { # variant relay(0|1) -> prints "creates ticks wal_bytes buffers"
  local v=$1 relay=$2 rp= n a b lsn0 blk0 wal blk
  q -c "TRUNCATE outbox_events" "${db}_$v"
  [ "$v" = shipped ] && q -c "TRUNCATE outbox_pending, outbox_publications" "${db}_$v"
  q -c "VACUUM ANALYZE outbox_events" -c "CHECKPOINT" "${db}_$v"
  sleep 1
  lsn0=$(psql -X -Atc 'SELECT pg_current_wal_insert_lsn()' postgres)
  blk0=$(blocks "$v")
  num buffers "$blk0"
  quiet "${db}_$v"
  a=$(server_ticks)
  if [ "$relay" = 1 ]; then pgbench -n -c 1 -T "$secs" -f "$here/relay_$v.sql" "${db}_$v" >"$bench_log.relay" 2>&1 & rp=$!; fi
  pgbench -n -c 8 -j 2 -R "$rate" -T "$secs" -f "$here/create.sql" "${db}_$v" >"$bench_log" 2>&1 || { cat "$bench_log" >&2; exit 1; }
  if [ -n "$rp" ]; then wait "$rp" || { cat "$bench_log.relay" >&2; exit 1; }; fi
  quiet "${db}_$v"
  b=$(server_ticks)
  n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$bench_log")
  num creates "$n"
  sleep 1 # the statistics of the last transactions reach pg_stat_database
  wal=$(psql -X -Atc "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn0')::bigint" postgres)
  blk=$(blocks "$v")
  num "WAL bytes" "$wal"
  num buffers "$blk"
  echo "$n $((b - a)) $wal $((blk - blk0))"
}
blocks() { psql -X -Atc "SELECT blks_hit + blks_read FROM pg_stat_database WHERE datname = '${db}_$1'" postgres; }

say "warm-up: one phase of each variant and side, not counted"
for relay in 0 1; do for v in $variants; do phase "$v" "$relay" >/dev/null; done; done
for r in $(seq 1 "$rounds"); do
  for relay in 0 1; do
    for v in $variants; do
      read -r n ticks wal blk < <(phase "$v" "$relay")
      read -r us walb blkc < <(awk -v t="$ticks" -v n="$n" -v hz="$hz" -v w="$wal" -v b="$blk" \
        'BEGIN { printf "%.1f %.0f %.1f\n", t / hz / n * 1e6, w / n, b / n }')
      say "round $r/$rounds $v relay $([ "$relay" = 1 ] && echo on || echo off): $n creates; per create: PostgreSQL $us µs of CPU, $walb bytes of WAL, $blkc buffers"
      echo "$r $v $relay $us $walb $blkc" >>"$results"
    done
  done
done

echo
echo "## bench/outbox-mark — $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git -C "$root" rev-parse --short HEAD)"
echo
echo "PostgreSQL $(psql -X -Atc 'SHOW server_version' postgres), $(nproc) CPUs; $rate creates/s for $secs s per phase, $rounds rounds; the relay's statement on 60 rows every 50 ms."
echo
echo "| variant | PostgreSQL CPU µs per create, relay off / on (rounds) | on/off | WAL bytes per create, off / on | buffers per create, off / on |"
echo "|---|---|---|---|---|"
for v in $variants; do
  awk -v v="$v" '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                     return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    $2 == v { k = $1 "," $3; cpu[k] = $4; wal[k] = $5; blk[k] = $6; if ($1 > R) R = $1 }
    END {
      for (r = 1; r <= R; r++) {
        ratio[r] = cpu[r ",1"] / cpu[r ",0"]
        c0[r] = cpu[r ",0"]; c1[r] = cpu[r ",1"]; w0[r] = wal[r ",0"]; w1[r] = wal[r ",1"]; b0[r] = blk[r ",0"]; b1[r] = blk[r ",1"]
        lo = lo (r > 1 ? ", " : "") cpu[r ",0"]; hi = hi (r > 1 ? ", " : "") cpu[r ",1"]
      }
      printf "| %s | %s / %s | %.2fx | %.0f / %.0f | %.1f / %.1f |\n", v, lo, hi, med(ratio, R), med(w0, R), med(w1, R), med(b0, R), med(b1, R)
    }' "$results"
done
echo
echo "WAL and buffers: medians of the rounds. CPU: every process of the server; on a shared 2-core box its spread between"
echo "phases of one variant can exceed the relay's share."
