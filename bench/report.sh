#!/usr/bin/env bash
# Report benchmarks (docs/performance.md, "reports"): a 1,000-GPU cluster
# (125 nodes × 8 GPUs), GPUSUITE_BENCH_DAYS days (default 30) through the
# real hook/record/ingest code, replicated by SQL to a year (~2.6M jobs);
# then `gpuacct report teams --period month` over the year and `gpuacct job`
# as the built binary runs them (median of 7, wall), beside the sqlite3 CLI
# doing the same aggregation over the jobs table.
# Usage: bench/report.sh [days]; GPUSUITE_BENCH_KEEP=DIR keeps the ledger in DIR
# (for bench/report-zones.sh).
. "$(dirname "$0")/env.sh"
export GPUSUITE_BENCH_DAYS="${1:-${GPUSUITE_BENCH_DAYS:-30}}"
command -v sqlite3 >/dev/null || { echo "bench/report.sh: sqlite3 CLI not found (apt-get install sqlite3)" >&2; exit 1; }
mkdir -p bin && go build -o bin/ ./gpuacct
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(sqlite3 --version | cut -d' ' -f1-2)"
GPUSUITE_BIN="$PWD/bin" go test -run '^$' -bench 'BenchmarkReportYear$' -benchtime 1x -timeout 60m ./gpuacct/reportcmd/
