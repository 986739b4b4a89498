#!/usr/bin/env bash
# The year report on PostgreSQL beside SQLite (docs/performance.md,
# "PostgreSQL"): the year of bench/report.sh (125 nodes × 8 GPUs,
# GPUSUITE_BENCH_DAYS days through the real ingest, replicated by SQL to
# ~2.6M jobs) as a SQLite file, copied by `gpuacct migrate` into a new
# database on the test server, then `gpuacct report teams --period month`
# over the year on each (the built binary, median of 7, wall, process
# start included), in the same run.
# The SQLite year is kept in GPUSUITE_BENCH_YEAR_DIR (default
# /var/tmp/gpusuite-report-year) and reused; remove it to build it again.
# The server: GPUSUITE_TEST_PG, else the one test/pg/harness.sh started.
# Usage: bench/report-pg.sh [days]
. "$(dirname "$0")/env.sh"
export GPUSUITE_BENCH_DAYS="${1:-${GPUSUITE_BENCH_DAYS:-30}}"
export GPUSUITE_BENCH_YEAR_DIR="${GPUSUITE_BENCH_YEAR_DIR:-/var/tmp/gpusuite-report-year}"
if [ -z "${GPUSUITE_TEST_PG:-}" ]; then
  [ -f /run/gpusuite-pg/env ] || { echo "bench/report-pg.sh: no PostgreSQL: set GPUSUITE_TEST_PG or run test/pg/harness.sh start" >&2; exit 1; }
  # shellcheck disable=SC1091
  . /run/gpusuite-pg/env
fi
export GPUSUITE_TEST_PG
mkdir -p bin && go build -o bin/ ./gpuacct
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(psql -X -At -d "$GPUSUITE_TEST_PG" -c 'SHOW server_version' 2>/dev/null | sed 's/^/PostgreSQL /')"
GPUSUITE_BIN="$PWD/bin" go test -run '^$' -bench 'BenchmarkReportYearPostgres$' -benchtime 1x -timeout 90m ./internal/report/
