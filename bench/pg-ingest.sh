#!/usr/bin/env bash
# Ingest on PostgreSQL beside psql's \copy (docs/performance.md,
# "PostgreSQL"): BenchmarkIngestDay with GPUSUITE_TEST_ENGINE=postgres,
# the "done when" day (16 nodes × 8 GPUs, 1,105,920 samples) ingested by one
# pass and checked against the ground truth, then psql \copy of the same
# sample rows from CSV into the samples table of a new, migrated ledger, in
# one transaction, in the same run (metric x-psql).
#
# It starts a server of its own with test/pg/harness.sh under
# GPUSUITE_PG_DIR (default /var/tmp/gpusuite-pg-bench, local disk) on
# GPUSUITE_PG_PORT (default 16850), then restarts it durable: fsync,
# synchronous_commit and full_page_writes on (the harness's test server has
# them off), and stops it at the end. The shared test server under
# /run/gpusuite-pg is left alone. Must run as root (the harness makes the
# server's system user).
# GPUSUITE_PG_BENCH_TOP=N loads pg_stat_statements and prints, after the
# run, the N statements that took the server the most time, with their
# calls (each one a round trip).
# GPUSUITE_PG_BENCH_SOCKET=1 connects both the pass and psql through the
# server's Unix socket instead of TCP on the loopback.
# Usage: bench/pg-ingest.sh [extra go test flags, e.g. -count 3 -cpuprofile /tmp/cpu.out]
. "$(dirname "$0")/env.sh"
export GPUSUITE_PG_DIR="${GPUSUITE_PG_DIR:-/var/tmp/gpusuite-pg-bench}"
export GPUSUITE_PG_PORT="${GPUSUITE_PG_PORT:-16850}"
[ "$GPUSUITE_PG_DIR" != /run/gpusuite-pg ] || { echo "bench/pg-ingest.sh: GPUSUITE_PG_DIR is the shared test server's; name another" >&2; exit 2; }

test/pg/harness.sh start
trap 'test/pg/harness.sh stop' EXIT
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
# shellcheck disable=SC1091
. "$GPUSUITE_PG_DIR/env"
port=$(sed -E 's|.*:([0-9]+)/.*|\1|' <<<"$GPUSUITE_TEST_PG")
# The harness starts the server without fsync; the figure is for a durable
# one. pg_ctl restart takes the new options in place of the old.
runuser -u gpusuite-pg -- "$bin/pg_ctl" -D "$GPUSUITE_PG_DIR/data" -l "$GPUSUITE_PG_DIR/server.log" -w -t 60 -m fast \
  -o "-p $port -k $GPUSUITE_PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on -c synchronous_commit=on -c full_page_writes=on${GPUSUITE_PG_BENCH_TOP:+ -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all}" \
  restart >/dev/null
if [ -n "${GPUSUITE_PG_BENCH_SOCKET:-}" ]; then
  # The same server through its Unix socket, as a ledger on the same host
  # is best reached: no TCP on the loopback for each round trip.
  GPUSUITE_TEST_PG="postgres://gpusuite@/postgres?host=$GPUSUITE_PG_DIR&port=$port&sslmode=disable"
fi
export GPUSUITE_TEST_PG GPUSUITE_TEST_ENGINE=postgres
settings=$(psql -X -At -d "$GPUSUITE_TEST_PG" -c "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync','synchronous_commit','full_page_writes','shared_buffers','wal_level','max_wal_size','checkpoint_timeout')")
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(psql -X -At -d "$GPUSUITE_TEST_PG" -c 'SHOW server_version'), data in $GPUSUITE_PG_DIR: $settings"
if [ -n "${GPUSUITE_PG_BENCH_TOP:-}" ]; then
  psql -X -q -d "$GPUSUITE_TEST_PG" -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements'
fi
go test -o "${TMPDIR:-/tmp}/gpusuite-pg-ingest.test" -run '^$' -bench 'BenchmarkIngestDay$' -benchtime 1x -timeout 30m "$@" ./internal/ingest/
if [ -n "${GPUSUITE_PG_BENCH_TOP:-}" ]; then
  # Statements on a batch's temporary table get a query id per batch:
  # they are summed by their text.
  q="SELECT sum(calls) AS calls, round(sum(total_exec_time)) AS ms, sum(rows) AS rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS query
    FROM pg_stat_statements GROUP BY 4"
  psql -X -d "$GPUSUITE_TEST_PG" -c "$q ORDER BY 2 DESC LIMIT $GPUSUITE_PG_BENCH_TOP" -c "$q ORDER BY 1 DESC LIMIT $GPUSUITE_PG_BENCH_TOP" \
    -c "SELECT sum(calls) AS calls, round(sum(total_exec_time)) AS ms FROM pg_stat_statements"
fi
