#!/usr/bin/env bash
# A year of a 1,000-GPU cluster (docs/performance.md, "store and ingest"):
# generates ~2 M jobs (events, job × GPU aggregates, raw samples for the
# last days) and ingests them in one pass into a fresh database, then
# prints the ingest time, DB size and table sizes. Takes tens of minutes;
# not part of `make test`.
# Usage: bench/year.sh [dir] [flags of bench/year]   (dir default /var/tmp/gpusuite-year)
. "$(dirname "$0")/env.sh"
dir="${1:-/var/tmp/gpusuite-year}"
shift || true
mkdir -p "$dir"
go build -o "$dir/.year" ./bench/year
exec "$dir/.year" -dir "$dir" "$@"
