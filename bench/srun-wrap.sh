#!/usr/bin/env bash
# Measures what srun-wrap adds before it execs srun: the same command run
# through srun-wrap and straight through "srun", where "srun" is /bin/true,
# so the difference is srun-wrap's own work (config, enroot paths, the
# container check, building the command line, exec).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GPUSUITE_BIN:-$ROOT/bin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/proj" "$work/data/pyxis_proj"
ln -s /bin/true "$work/bin/srun"
printf '[container]\nenroot_conf = "/nonexistent"\n' >"$work/gpusuite.toml"
cd "$work/proj"
export PATH="$work/bin:$PATH" ENROOT_DATA_PATH="$work/data" GPUSUITE_CONFIG="$work/gpusuite.toml"
args="--gpus=1 --comment=gpusuite-container=proj --container-name=proj --container-mounts=$work/proj:/workspace --container-workdir=/workspace python train.py"
hyperfine -N --warmup 20 --runs "${RUNS:-300}" --export-markdown "${OUT:-/dev/null}" ${JSON:+--export-json "$JSON"} \
  "srun $args" \
  "$BIN/srun-wrap python train.py"
