#!/usr/bin/env bash
# Reports at scale (issue 35; docs/performance.md, "scale"): for each GPU
# count a year of rollups is generated (bench/scale), then every report
# kind × period is timed through the built gpuacct in UTC and Asia/Tokyo
# (median of 3 wall times, process start included; a report over its
# row cap counts as refused, its time still the read's), and reports by
# node are timed in-process hour by hour (before) and from the node
# rollups (after) in the same run (BenchmarkNodeReportYear). Then the
# board at 1,000 and 10,000 GPUs: its document and page as served
# (BenchmarkBoardScale) and its first render in headless chromium
# (TestBoardBrowser10k), its first event and status document
# (TestBoard10kBounds). Last, the table of the largest size extrapolated
# to 100,000 GPUs: reports by node and the board grow with the GPUs (10×),
# the others with the users and accounts, which bench/year scales with
# the GPUs too (10×): a bound, not a measurement.
# Usage: bench/scale.sh [GPUS...]   (default 128 1024 10000)
#   GPUSUITE_SCALE_DIR  where the ledgers go (default /var/tmp/gpusuite-scale; kept between runs)
#   GPUSUITE_SCALE_DAYS days generated (default 365; fewer for a quick look)
#   GPUSUITE_SCALE_BOARD=0 leaves the board out
#   GPUSUITE_SCALE_JOBDB a ledger with jobs (bench/year.sh makes one) whose
#     newest job gpuacct job is timed on; the generated ledgers hold none
# Not part of make test: the 10,000-GPU year takes most of an hour to make.
. "$(dirname "$0")/env.sh"
dir=${GPUSUITE_SCALE_DIR:-/var/tmp/gpusuite-scale}
days=${GPUSUITE_SCALE_DAYS:-365}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(128 1024 10000)
mkdir -p "$dir"
go build -o "$dir/gpuacct" ./gpuacct
go build -o "$dir/scale" ./bench/scale
go test -c -o "$dir/report.test" ./internal/report/
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
end=2027-01-01
start=$(date -u -d "$end - $days days" +%F)
echo "# $(date -u +%FT%TZ), $(nproc) CPUs, $(git rev-parse --short HEAD); window $start – $end"
for n in "${sizes[@]}"; do
  db="$dir/$n-$days.db"
  if [ ! -e "$db" ]; then
    "$dir/scale" -db "$db" -gpus "$n" -days "$days" -end "$end"
  fi
  echo "## $n GPUs: $(du -h "$db" | cut -f1)"
  printf '| report | period | UTC ms | Asia/Tokyo ms |\n|---|---|---|---|\n' | tee "$dir/table-$n.md"
  for kind in teams users accounts partitions nodes models tree; do
    for period in none month week day; do
      row="| $kind | $period"
      for tz in UTC Asia/Tokyo; do
        args=(report "$kind" --format csv --db "$db" --tz "$tz" --start "$start" --end "$end")
        [ "$period" = none ] || args+=(--period "$period")
        times=() note=""
        for _ in 1 2 3; do
          t0=$(date +%s%N)
          if ! "$dir/gpuacct" "${args[@]}" >/dev/null 2>"$dir/err"; then
            grep -q 'would hold more than' "$dir/err" && note=" (over the row cap)" || { cat "$dir/err" >&2; exit 1; }
          fi
          times+=($(( ($(date +%s%N) - t0) / 1000 )))
        done
        row+=" | $(printf '%s\n' "${times[@]}" | median | awk '{printf "%.0f", $1/1000}')$note"
      done
      echo "$row |" | tee -a "$dir/table-$n.md"
    done
  done
  GPUSUITE_SCALE_DB=$db GPUSUITE_SCALE_END=$end "$dir/report.test" -test.run '^$' -test.bench NodeReportYear -test.benchtime 1x |
    awk '/^Benchmark/ {printf "%s %.1f ms\n", $1, $3/1e6}'
done
if [ -n "${GPUSUITE_SCALE_JOBDB:-}" ]; then
  id=$(sqlite3 -readonly "$GPUSUITE_SCALE_JOBDB" "SELECT cluster || '/' || job_id FROM jobs ORDER BY id DESC LIMIT 1")
  times=()
  for _ in 1 2 3; do
    t0=$(date +%s%N)
    "$dir/gpuacct" job "${id#*/}" -M "${id%%/*}" --db "$GPUSUITE_SCALE_JOBDB" >/dev/null
    times+=($(( ($(date +%s%N) - t0) / 1000 )))
  done
  echo "gpuacct job ${id#*/}: $(printf '%s\n' "${times[@]}" | median | awk '{printf "%.0f", $1/1000}') ms"
fi
if [ "${GPUSUITE_SCALE_BOARD:-1}" = 1 ]; then
  echo "## board"
  go test -count=1 ./internal/web/ -run '^$' -bench 'BenchmarkBoardScale$' -benchtime 10x |
    awk '/^Benchmark/ {printf "%s %.1f ms, %s gzbytes\n", $1, $3/1e6, $5}'
  go test -count=1 ./internal/web/ -run 'TestBoardBrowser10k$' -v | grep -o 'first render.*'
  go test -count=1 ./internal/web/ -run 'TestBoard10kBounds$' -v | grep -oE '(first event|status document|page) of 10000.*'
fi
# The largest size's table × 10 (see the head of this file).
last=${sizes[${#sizes[@]}-1]}
echo "## $((last * 10)) GPUs, extrapolated from $last (× 10)"
printf '| report | period | UTC ms | Asia/Tokyo ms |\n|---|---|---|---|\n'
awk -F' *[|] *' 'NR > 2 {
  u = $4; t = $5; sub(/ .*/, "", u); sub(/ .*/, "", t)
  cu = ($4 ~ /cap/) ? " (over the row cap)" : ""; ct = ($5 ~ /cap/) ? " (over the row cap)" : ""
  printf "| %s | %s | %d%s | %d%s |\n", $2, $3, u * 10, cu, t * 10, ct }' "$dir/table-$last.md"
