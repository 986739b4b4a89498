#!/usr/bin/env bash
# The demo's wall time (issue 16: under 5 s on the 2-CPU machine, after the
# build), N runs of bin/simulated/gpuacct demo into a fresh directory each,
# and their median beside the target. Usage: bench/demo.sh [N]
. "$(dirname "$0")/env.sh"
n="${1:-3}"
bin=./bin/simulated/gpuacct
[ -x "$bin" ] || { echo "bench/demo.sh: $bin not built (make build-simulated)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
times=()
for i in $(seq "$n"); do
	start=$(date +%s%N)
	"$bin" demo --dir "$work/run$i" >"$work/out$i"
	end=$(date +%s%N)
	grep -q "equal to the simulation's ground truth" "$work/out$i" ||
		{ echo "bench/demo.sh: run $i: the ledger is not the ground truth" >&2; cat "$work/out$i" >&2; exit 1; }
	times+=("$(( (end - start) / 1000000 ))")
	echo "run $i: ${times[-1]} ms"
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "demo median ${median} ms over $n runs, target under 5000 ms: $(awk -v m="$median" 'BEGIN {printf "%.2f", m/5000}')× the target"
