#!/usr/bin/env bash
# The year's teams × month report in three zones, for each gpuacct binary
# given, on one ledger: median of 7 wall times (process start included)
# and a digest of the output, so that binaries are compared on the same
# figures (docs/performance.md, "Months in any zone").
# Usage: bench/report-zones.sh LEDGER.db GPUACCT [GPUACCT...]
# A ledger: bench/report.sh builds one in a temporary directory; keep one
# with `GPUSUITE_BENCH_KEEP=DIR bench/report.sh 7`.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 LEDGER.db GPUACCT [GPUACCT...]" >&2; exit 2; }
db=$1
shift
[ -r "$db" ] || { echo "$0: cannot read ledger $db" >&2; exit 1; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for tz in UTC Asia/Tokyo America/St_Johns; do
  for bin in "$@"; do
    times=() out=""
    for _ in 1 2 3 4 5 6 7; do
      t0=$(date +%s%N)
      out=$("$bin" report teams --period month --format csv --db "$db" --tz "$tz" --start 2026-01-01 --end 2027-01-01)
      times+=($(( ($(date +%s%N) - t0) / 1000 )))
    done
    ms=$(printf '%s\n' "${times[@]}" | median | awk '{printf "%.1f", $1/1000}')
    printf '%-17s %-40s %7s ms  output %s\n' "$tz" "$bin" "$ms" "$(printf '%s' "$out" | sha256sum | cut -c1-12)"
  done
done
