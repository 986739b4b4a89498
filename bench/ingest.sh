#!/usr/bin/env bash
# Store and ingest benchmarks (docs/performance.md, "store and ingest"):
#   1. the "done when" day: 16 nodes × 8 GPUs, ~1.1M samples, ~5,000 jobs,
#      one ingest pass checked against ground truth, side by side with the
#      sqlite3 CLI importing the same sample rows from CSV in one transaction;
#   2. a 1,000-GPU cluster's job events for GPUSUITE_BENCH_DAYS days
#      (default 14), extrapolated to a year, with the teams-by-month query.
# The full year, generated and ingested once, is bench/year.sh (long).
# Usage: bench/ingest.sh [days]
. "$(dirname "$0")/env.sh"
export GPUSUITE_BENCH_DAYS="${1:-${GPUSUITE_BENCH_DAYS:-14}}"
command -v sqlite3 >/dev/null || { echo "bench/ingest.sh: sqlite3 CLI not found (apt-get install sqlite3)" >&2; exit 1; }
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(sqlite3 --version | cut -d' ' -f1-2)"
go test -run '^$' -bench 'BenchmarkIngest(Day|Year)$' -benchtime 1x -timeout 60m ./internal/ingest/
