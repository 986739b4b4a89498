#!/usr/bin/env bash
# A real single-node Slurm for gpusuite's integration tests.
#
#   test/slurm/harness.sh start   install what is missing, start munge, a private
#                                 MariaDB, slurmdbd, slurmctld, slurmd
#   test/slurm/harness.sh stop    stop them and remove the state directory
#   test/slurm/harness.sh status  exit 0 when the node and slurmdbd answer
#
# Everything lives under $GPUSUITE_SLURM_DIR (default /run/gpusuite-slurm):
# the config (etc/slurm.conf), fake GPU device nodes (dev/nvidiaN, character
# devices 195:N, because slurmd refuses regular files in gres.conf), the
# spool the hooks write to, logs, and `env`, a KEY=VALUE file the Go tests
# read. The Prolog/Epilog are the freshly built bin/simulated/prolog and
# bin/simulated/epilog (static hooks that run bin/simulated/hook-gpus, built
# with -tags simulated, when no agent answers: it may open the simulated GPUs
# of gpu.backend = "simulated"; bin/hook-gpus cannot), started
# through small wrappers that pass --config (slurmd gives hooks no
# arguments and a scrubbed environment). Every test SPANK plugin under
# test/slurm/spank/*.c is compiled and listed in plugstack.conf.
# `start` is idempotent: a running cluster is reused.
#
# Slurm's own accounting is real too, so tests can compare with sacct: a
# MariaDB of the cluster's own (datadir, socket and log under $DIR,
# listening on 127.0.0.1 only, never the system's /run/mysqld), slurmdbd in
# front of it, and the cluster, accounts and users the tests submit as
# (ACCOUNTS below) added with sacctmgr.
#
# GPUSUITE_SLURM_MIG=1 starts, stops or checks a MIG-shaped cluster of its
# own instead (test/slurm/mig_test.go starts it): $GPUSUITE_SLURM_MIG_DIR
# (default /run/gpusuite-slurm-mig), ports from 16840, node mig1 with a
# whole A100 and an A100 cut into 3g.40gb + 4 x 1g.10gb, typed gres whose
# MultipleFiles= name fake nvidia-caps devices under root/dev, and the
# driver's mig-minors faked in root/proc (the hooks' hooks.root).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MIG=${GPUSUITE_SLURM_MIG:-}
DIR=${GPUSUITE_SLURM_DIR:-/run/gpusuite-slurm}
# A second cluster (e.g. a CI check beside a developer's) needs other ports.
PORT=${GPUSUITE_SLURM_PORT:-16817}
if [ -n "$MIG" ]; then
  # make test exports GPUSUITE_SLURM_DIR for the main cluster: not ours
  DIR=${GPUSUITE_SLURM_MIG_DIR:-/run/gpusuite-slurm-mig}
  PORT=${GPUSUITE_SLURM_MIG_PORT:-16840}
fi
# After slurmctld's (PORT) and slurmd's (PORT+1): slurmdbd, then MariaDB.
DBD_PORT=$((PORT + 2))
DB_PORT=$((PORT + 3))
# The hooks' simulated build (make build-simulated).
HOOK_BIN=${GPUSUITE_HOOK_BIN:-${GPUSUITE_BIN:-$ROOT/bin}/simulated}
NODE=node1
NGPU=4
# NVML index order of the simulated GPUs' minors: deliberately not 0,1,2,3,
# so a hook that confused minors with indices would record the wrong UUIDs.
MINORS="2, 3, 0, 1"
# user:account associations for the accounts tests submit with (grep for
# '"-A"' under test/ and internal/ when a test brings a new one). They are
# not enforced (no AccountingStorageEnforce), yet they matter: slurmctld
# gives a user who has associations their default account in place of one
# they lack, silently; only a user with none keeps what -A says. A job
# without -A now gets its user's default account (the first listed here;
# root's is "root", as sacctmgr makes it), where it had none before.
ACCOUNTS="alice:team-a bob:team-b agentuser:physics root:team-a root:team-b root:physics"
CLUSTER=testcl
if [ -n "$MIG" ]; then
  NODE=mig1
  NGPU=2
  MINORS="0, 1"
  SIM_MODEL=a100
  GPU_TYPES="a100 3g.40gb 1g.10gb"
  # GPU 1's layout, as gpu.simulated.mig numbers it: GPU instance 1 is
  # the 3g.40gb, 2 to 5 the 1g.10gb, each with compute instance 0.
  MIG_LAYOUT="3g.40gb 1g.10gb 1g.10gb 1g.10gb 1g.10gb"
fi

# shellcheck source=test/slurm/lib.sh
. "$ROOT/test/slurm/lib.sh"

status() {
  conf_env
  [ -f "$DIR/etc/slurm.conf" ] || return 1
  local st
  st=$(timeout 5 sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null) || return 1
  case "$st" in idle*|mix*|alloc*) ;; *) return 1 ;; esac
  # A cluster whose slurm.conf is not the one start writes now (one from
  # before accounting, the job accounting gather, MailProg, or any later
  # line), or whose slurmdbd is gone, is not what the tests need: start
  # replaces it.
  slurm_conf | cmp -s - "$DIR/etc/slurm.conf" || return 1
  dbd_answers
}

# slurm_conf prints the cluster's slurm.conf.
slurm_conf() {
  slurm_conf_common "$DIR/hooks"
  cat <<EOF
SlurmctldHost=localhost(127.0.0.1)
SlurmdSpoolDir=$DIR/slurmd
SlurmdPidFile=$DIR/slurmd.pid
SlurmdLogFile=$DIR/log/slurmd.log
PlugStackConfig=$DIR/etc/plugstack.conf
# Job mail goes to etc/mailprog, which drops it until a test puts gpuacct
# mailprog there (test/slurm/mailprog_test.go).
MailProg=$DIR/etc/mailprog
EOF
  if [ -n "$MIG" ]; then
    cat <<EOF
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=4000 Gres=gpu:a100:1,gpu:3g.40gb:1,gpu:1g.10gb:4 State=UNKNOWN
PartitionName=gpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
# Slices billed by their share of an A100 (seven slices).
PartitionName=billed Nodes=$NODE Default=NO MaxTime=INFINITE State=UP OverSubscribe=NO TRESBillingWeights=CPU=1.0,GRES/gpu:a100=7.0,GRES/gpu:3g.40gb=3.0,GRES/gpu:1g.10gb=1.0
EOF
    return
  fi
  cat <<EOF
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=4000 Gres=gpu:a100:$((NGPU / 2)),gpu:t4:$((NGPU / 2)) State=UNKNOWN
PartitionName=gpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
# The same node billed as docs/budgets.md's example (test/slurm/billing_test.go).
PartitionName=billed Nodes=$NODE Default=NO MaxTime=INFINITE State=UP OverSubscribe=NO TRESBillingWeights=CPU=1.0,Mem=0.25G,GRES/gpu:a100=4.0,GRES/gpu:t4=0.5
EOF
}

# cap_minor GPU GI [CI] prints the nvidia-caps minor of a GPU instance's
# (or, with CI, a compute instance's) access cap as the driver numbers
# them in mig-minors: 3, then 135 a GPU, 9 a GPU instance, 1 + CI.
cap_minor() {
  if [ $# -eq 3 ]; then echo $((3 + $1 * 135 + $2 * 9 + 1 + $3)); else echo $((3 + $1 * 135 + $2 * 9)); fi
}

# write_mig_node makes the MIG node's fake devices under root/dev and its
# mig-minors under root/proc, and prints its gres.conf: the whole GPU 0,
# then GPU 1's instances in MIG_LAYOUT's order.
write_mig_node() {
  local r=$DIR/root g gi c p
  mkdir -p "$r/dev/nvidia-caps" "$r/proc/driver/nvidia-caps"
  make_gpu_devices "$r/dev" "$NGPU"
  {
    echo "config 1"
    echo "monitor 2"
    for g in 0 1; do
      for gi in $(seq 0 14); do
        echo "gpu$g/gi$gi/access $(cap_minor "$g" "$gi")"
        for c in $(seq 0 7); do echo "gpu$g/gi$gi/ci$c/access $(cap_minor "$g" "$gi" "$c")"; done
      done
    done
  } >"$r/proc/driver/nvidia-caps/mig-minors"
  echo "NodeName=$NODE Name=gpu Type=a100 File=$r/dev/nvidia0"
  gi=1
  for p in $MIG_LAYOUT; do
    for c in "$(cap_minor 1 "$gi")" "$(cap_minor 1 "$gi" 0)"; do
      # nvidia-caps' major is the driver's choice: any character device will do
      [ -c "$r/dev/nvidia-caps/nvidia-cap$c" ] || mknod "$r/dev/nvidia-caps/nvidia-cap$c" c 240 "$c"
    done
    echo "NodeName=$NODE Name=gpu Type=$p MultipleFiles=$r/dev/nvidia1,$r/dev/nvidia-caps/nvidia-cap$(cap_minor 1 "$gi"),$r/dev/nvidia-caps/nvidia-cap$(cap_minor 1 "$gi" 0)"
    gi=$((gi + 1))
  done
}

write_config() {
  mkdir -p "$DIR"/{etc,dev,spool,state,slurmd,log,spank,spank-records,hooks,mysql-tmp}
  chmod 0755 "$DIR" "$DIR/spank-records"
  chmod 1777 "$DIR/spank-records"
  chmod 0700 "$DIR/spool"
  make_gpu_devices "$DIR/dev" "$NGPU"
  {
    echo "# gpusuite config used by the hooks of the test cluster."
    if [ -n "$MIG" ]; then
      hook_config "$DIR/spool" "$DIR/root"
      echo "mig = [\"\", \"$(echo "$MIG_LAYOUT" | tr ' ' ',')\"]"
    else
      hook_config "$DIR/spool"
    fi
    echo "minors = [$MINORS]"
  } >"$DIR/etc/gpusuite.toml"
  write_hook_wrappers "$DIR/hooks" "$DIR/etc/gpusuite.toml" "$DIR/log"
  slurm_conf >"$DIR/etc/slurm.conf"
  printf '#!/bin/sh\nexit 0\n' >"$DIR/etc/mailprog"
  chmod 0755 "$DIR/etc/mailprog"
  if [ -n "$MIG" ]; then
    write_mig_node >"$DIR/etc/gres.conf"
  else
    cat >"$DIR/etc/gres.conf" <<EOF
NodeName=$NODE Name=gpu Type=a100 File=$DIR/dev/nvidia[0-$((NGPU / 2 - 1))]
NodeName=$NODE Name=gpu Type=t4 File=$DIR/dev/nvidia[$((NGPU / 2))-$((NGPU - 1))]
EOF
  fi
  : >"$DIR/etc/plugstack.conf"
  shopt -s nullglob
  for src in "$ROOT"/test/slurm/spank/*.c; do
    local name
    name=$(basename "$src" .c)
    gcc -shared -fPIC -O1 -Wall -o "$DIR/spank/$name.so" "$src"
    echo "optional $DIR/spank/$name.so record_dir=$DIR/spank-records" >>"$DIR/etc/plugstack.conf"
  done
  write_db_config
  cat >"$DIR/env" <<EOF
SLURM_CONF=$DIR/etc/slurm.conf
GPUSUITE_SLURM_DIR=$DIR
GPUSUITE_SLURM_NODE=$NODE
GPUSUITE_SLURM_SPOOL=$DIR/spool
GPUSUITE_SLURM_HOOK_CONFIG=$DIR/etc/gpusuite.toml
EOF
}

# drop_test_reservations deletes the reservations tests make: the board
# end-to-end test's (board-e2e-<pid>), which a run killed before its
# cleanup leaves for its 10 minutes (the node reads "resv", not idle, and
# the next test finds its GPUs reserved), and TestClusterUtilization<pid>,
# planned 20 days ahead on the only node, where no job without --time
# starts while it exists. Quiet when slurmctld does not answer yet.
drop_test_reservations() {
  conf_env
  [ -f "$DIR/etc/slurm.conf" ] || return 0
  local r
  for r in $(timeout 5 scontrol -o show reservation 2>/dev/null | grep -oE 'ReservationName=(board-e2e-|TestClusterUtilization)[0-9]+' | cut -d= -f2); do
    timeout 5 scontrol delete reservation="$r" >/dev/null 2>&1 && log "deleted reservation $r left by a killed test" ||
      log "could not delete reservation $r: scontrol delete reservation=$r"
  done
}

start() {
  drop_test_reservations
  if status; then
    log "cluster already running ($DIR)"
    return 0
  fi
  "$ROOT/test/deps.sh"
  for b in prolog epilog; do
    [ -x "$HOOK_BIN/$b" ] || { log "$HOOK_BIN/$b is missing: run 'make build-simulated' first"; exit 1; }
  done
  stop_daemons
  write_config
  conf_env
  start_munge
  start_accounting
  slurmctld -f "$SLURM_CONF" -i
  slurmd -f "$SLURM_CONF" -N "$NODE"
  local i
  for i in $(seq 1 240); do
    if status; then
      log "cluster up: node $NODE idle, $NGPU GPUs, accounting on slurmdbd port $DBD_PORT, config $SLURM_CONF"
      return 0
    fi
    # A node that registered before its GRES was read may come up DOWN;
    # slurmctld restored a killed test's reservation from its state.
    scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
    [ $((i % 20)) -eq 1 ] && drop_test_reservations
    sleep 0.25
  done
  log "node did not become idle; last lines of the logs:"
  tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" "$DIR/log/slurmdbd.log" >&2 || true
  sinfo -N >&2 || true
  exit 1
}

# stop_daemons stops this cluster's daemons: the job daemons first, then
# accounting ("discard": killed outright, see stop_accounting).
stop_daemons() {
  local p pid i
  for p in slurmd slurmctld; do
    if pid=$(pid_of $p); then kill "$pid" 2>/dev/null || true; fi
  done
  for i in $(seq 1 50); do
    pgrep -f "$DIR/etc/slurm.conf" >/dev/null || break
    sleep 0.1
  done
  pkill -9 -f "$DIR/etc/slurm.conf" 2>/dev/null || true
  stop_accounting "${1:-}"
}

stop() {
  stop_daemons discard
  rm -rf "$DIR"
  log "cluster stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
