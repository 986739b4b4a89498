#!/usr/bin/env bash
# The store issue's "done when" (docs/performance.md, "simulated day
# through the real agent"): 16 simulated nodes × 8 GPUs ship one simulated
# day through the real agent and prolog/epilog code, one `gpuacct ingest`
# takes it into a fresh database, and the totals read back through the
# report queries must equal the ground truth. Not part of `make test`.
# Usage: bench/dayrun.sh [dir] [flags of bench/dayrun]
#   dir (default /var/tmp/gpusuite-dayrun) holds incoming/ and the
#   database; the nodes' local spools go to /dev/shm when it exists (16
#   machines' local disks, not the share), else under dir.
. "$(dirname "$0")/env.sh"
dir="${1:-/var/tmp/gpusuite-dayrun}"
shift || true
mkdir -p "$dir"
go build -o "$dir/.gpuacct" ./gpuacct
go build -o "$dir/.dayrun" ./bench/dayrun
nodes=()
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  nodes=(-node-dir /dev/shm/gpusuite-dayrun-nodes)
fi
rc=0
"$dir/.dayrun" -dir "$dir/run" -gpuacct "$dir/.gpuacct" "${nodes[@]}" "$@" || rc=$?
rm -rf /dev/shm/gpusuite-dayrun-nodes
exit $rc
