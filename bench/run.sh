#!/usr/bin/env bash
# make bench: every benchmark of the suite, each beside its baseline.
# Figures and how to read them: docs/performance.md.
. "$(dirname "$0")/env.sh"

echo "== prolog/epilog latency (floor: /bin/true)"
go run ./bench/hooklat -bin ./bin/simulated -n "${HOOKLAT_N:-300}"

echo "== prolog latency with the agent up vs down"
go run ./bench/agenthook -bin ./bin/simulated -n "${AGENTHOOK_N:-200}"

echo "== the demo's wall time"
bench/demo.sh

echo "== Go benchmarks"
go test -run '^$' -bench . -skip 'BenchmarkReportYearPostgres$' -benchmem ./internal/...

echo "== the year report beside the sqlite3 CLI"
bench/report.sh

echo "== PostgreSQL: ingest beside psql \\copy, the year report beside SQLite"
bench/pg-ingest.sh && bench/report-pg.sh
