#!/usr/bin/env bash
# Before and after on the ledgers of bench/scale.sh: each report kind ×
# period × zone through two gpuacct binaries run in turn (old, new, old,
# new...), median of 3 wall times each, process start included, over
# 2026 (the ledgers end on 2027-01-01). The outputs (CSV, or the refusal)
# of the two must be the same byte for byte, else the row says DIFFERENT.
# A binary that cannot open a newer schema reads its own copy (OLDDB).
# Usage: bench/scale/compare.sh OLD NEW DB "KINDS" "PERIODS" [OLDDB]
#   e.g. git worktree add /tmp/old HEAD~3 && (cd /tmp/old && go build -o /tmp/old.gpuacct ./gpuacct)
#        go build -o /tmp/new.gpuacct ./gpuacct
#        bench/scale/compare.sh /tmp/old.gpuacct /tmp/new.gpuacct /var/tmp/gpusuite-scale/1024-365.db "teams nodes" "week day"
set -u
old=$1 new=$2 db=$3 kinds=$4 periods=$5 olddb=${6:-$3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| report | period | zone | before ms | after ms | |"
echo "|---|---|---|---|---|---|"
for kind in $kinds; do
  for p in $periods; do
    for tz in UTC Asia/Tokyo; do
      args=(report "$kind" --format csv --tz "$tz" --start 2026-01-01 --end 2027-01-01)
      [ "$p" = none ] || args+=(--period "$p")
      before=() after=() note=""
      for _ in 1 2 3; do
        for side in old new; do
          bin=$old d=$olddb
          [ "$side" = new ] && bin=$new d=$db
          t0=$(date +%s%N)
          "$bin" "${args[@]}" --db "$d" >"$out/$side.out" 2>"$out/$side.err"
          t=$((($(date +%s%N) - t0) / 1000000))
          if [ "$side" = old ]; then before+=("$t"); else after+=("$t"); fi
        done
        cmp -s "$out/old.out" "$out/new.out" && cmp -s "$out/old.err" "$out/new.err" || note="DIFFERENT "
      done
      grep -q 'would hold more than' "$out/new.err" && note+="refused: $(grep -o 'more than [0-9]* [a-z]*' "$out/new.err") "
      echo "| $kind | $p | $tz | $(printf '%s\n' "${before[@]}" | median) | $(printf '%s\n' "${after[@]}" | median) | ${note}load $(cut -d' ' -f1 /proc/loadavg) |"
    done
  done
done
