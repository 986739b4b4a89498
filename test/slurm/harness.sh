#!/usr/bin/env bash
# A real single-node Slurm for gpusuite's integration tests.
#
#   test/slurm/harness.sh start   install what is missing, start munge, slurmctld, slurmd
#   test/slurm/harness.sh stop    stop them and remove the state directory
#   test/slurm/harness.sh status  exit 0 when the node answers
#
# Everything lives under $GPUSUITE_SLURM_DIR (default /run/gpusuite-slurm):
# the config (etc/slurm.conf), fake GPU device nodes (dev/nvidiaN, character
# devices 195:N, because slurmd refuses regular files in gres.conf), the
# spool the hooks write to, logs, and `env`, a KEY=VALUE file the Go tests
# read. The Prolog/Epilog are the freshly built bin/prolog and bin/epilog,
# started through small wrappers that pass --config (slurmd gives hooks no
# arguments and a scrubbed environment). Every test SPANK plugin under
# test/slurm/spank/*.c is compiled and listed in plugstack.conf.
# `start` is idempotent: a running cluster is reused.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${GPUSUITE_SLURM_DIR:-/run/gpusuite-slurm}
# A second cluster (e.g. a CI check beside a developer's) needs other ports.
PORT=${GPUSUITE_SLURM_PORT:-16817}
BIN=${GPUSUITE_BIN:-$ROOT/bin}
NODE=node1
NGPU=4
# NVML index order of the simulated GPUs' minors: deliberately not 0,1,2,3,
# so a hook that confused minors with indices would record the wrong UUIDs.
MINORS="2, 3, 0, 1"

log() { echo "harness: $*" >&2; }

conf_env() { export SLURM_CONF=$DIR/etc/slurm.conf; }

status() {
  conf_env
  [ -f "$DIR/etc/slurm.conf" ] || return 1
  local st
  st=$(timeout 5 sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null) || return 1
  case "$st" in idle*|mix*|alloc*) return 0 ;; *) return 1 ;; esac
}

write_config() {
  mkdir -p "$DIR"/{etc,dev,spool,state,slurmd,log,spank,spank-records,hooks}
  chmod 0755 "$DIR" "$DIR/spank-records"
  chmod 1777 "$DIR/spank-records"
  chmod 0700 "$DIR/spool"
  for i in $(seq 0 $((NGPU - 1))); do
    [ -c "$DIR/dev/nvidia$i" ] || mknod "$DIR/dev/nvidia$i" c 195 "$i"
  done
  cat >"$DIR/etc/gpusuite.toml" <<EOF
# gpusuite config used by the hooks of the test cluster.
[cluster]
name = "testcl"

[spool]
dir = "$DIR/spool"

[hooks]
timeout = "5s"
log_level = "debug"

[gpu]
backend = "simulated"

[gpu.simulated]
count = $NGPU
model = "h100"
minors = [$MINORS]
EOF
  for h in prolog epilog; do
    cat >"$DIR/hooks/$h" <<EOF
#!/bin/sh
# Keep what slurmd handed us: fixtures for parser tests, and a debugging aid.
env | sort >"$DIR/log/$h.\$SLURM_JOB_ID.env" 2>/dev/null
exec "$BIN/$h" --config "$DIR/etc/gpusuite.toml" 2>>"$DIR/log/$h.log"
EOF
    chmod 0755 "$DIR/hooks/$h"
  done
  cat >"$DIR/etc/slurm.conf" <<EOF
ClusterName=testcl
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/slurmd
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
PrologFlags=Alloc
Prolog=$DIR/hooks/prolog
Epilog=$DIR/hooks/epilog
PlugStackConfig=$DIR/etc/plugstack.conf
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
KillWait=2
InactiveLimit=0
MinJobAge=300
MaxJobCount=100000
SchedulerParameters=sched_interval=1,bf_interval=1
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=4000 Gres=gpu:$NGPU State=UNKNOWN
PartitionName=gpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  cat >"$DIR/etc/gres.conf" <<EOF
NodeName=$NODE Name=gpu File=$DIR/dev/nvidia[0-$((NGPU - 1))]
EOF
  : >"$DIR/etc/plugstack.conf"
  shopt -s nullglob
  for src in "$ROOT"/test/slurm/spank/*.c; do
    local name
    name=$(basename "$src" .c)
    gcc -shared -fPIC -O1 -Wall -o "$DIR/spank/$name.so" "$src"
    echo "optional $DIR/spank/$name.so record_dir=$DIR/spank-records" >>"$DIR/etc/plugstack.conf"
  done
  cat >"$DIR/env" <<EOF
SLURM_CONF=$DIR/etc/slurm.conf
GPUSUITE_SLURM_DIR=$DIR
GPUSUITE_SLURM_NODE=$NODE
GPUSUITE_SLURM_SPOOL=$DIR/spool
GPUSUITE_SLURM_HOOK_CONFIG=$DIR/etc/gpusuite.toml
EOF
}

start() {
  if status; then
    log "cluster already running ($DIR)"
    return 0
  fi
  "$ROOT/test/deps.sh"
  for b in prolog epilog; do
    [ -x "$BIN/$b" ] || { log "$BIN/$b is missing: run 'make build' first"; exit 1; }
  done
  stop_daemons
  write_config
  conf_env
  if ! pgrep -x munged >/dev/null; then
    mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
    [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || create-munge-key -f; }
    chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
    runuser -u munge -- /usr/sbin/munged || /usr/sbin/munged --force
  fi
  # slurmd registers once at start and then only every minute or so: make
  # sure munge answers before starting it.
  for i in $(seq 1 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break
    [ "$i" -eq 50 ] && { log "munged does not answer: see /var/log/munge/munged.log"; exit 1; }
    sleep 0.1
  done
  slurmctld -f "$SLURM_CONF" -i
  slurmd -f "$SLURM_CONF" -N "$NODE"
  local i
  for i in $(seq 1 60); do
    if status; then
      log "cluster up: node $NODE idle, $NGPU GPUs, config $SLURM_CONF"
      return 0
    fi
    # A node that registered before its GRES was read may come up DOWN.
    scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
    sleep 1
  done
  log "node did not become idle; last lines of the logs:"
  tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
  sinfo -N >&2 || true
  exit 1
}

stop_daemons() {
  local p
  for p in slurmd slurmctld; do
    if [ -f "$DIR/$p.pid" ]; then
      kill "$(cat "$DIR/$p.pid")" 2>/dev/null || true
    fi
  done
  for i in $(seq 1 50); do
    pgrep -f "$DIR/etc/slurm.conf" >/dev/null || break
    sleep 0.1
  done
  pkill -9 -f "$DIR/etc/slurm.conf" 2>/dev/null || true
}

stop() {
  stop_daemons
  rm -rf "$DIR"
  log "cluster stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
