#!/usr/bin/env bash
# A real multi-node Slurm for gpusuite's integration tests, on one machine:
# one controller (the "head") and GPU servers gpu1..gpuN, each in network,
# UTS and mount namespaces of its own (docs/testing.md).
#
#   test/cluster/harness.sh start          start everything (idempotent)
#   test/cluster/harness.sh stop           stop it and remove the state directory
#   test/cluster/harness.sh status         exit 0 when every server is up
#   test/cluster/harness.sh kill NODE      lose a server: kill -9 its slurmd, agent,
#                                          jobs and namespaces, as a power cut would
#   test/cluster/harness.sh revive NODE    boot it again and return it to service
#   test/cluster/harness.sh ensure NODE    as a test expects it: up, agent running,
#                                          /data writable, in service
#   test/cluster/harness.sh data-off NODE  /data read-only on NODE alone (the share lost)
#   test/cluster/harness.sh data-on NODE   /data writable again on NODE
#   test/cluster/harness.sh exec NODE CMD  run CMD inside NODE's namespaces
#
# Everything lives under $GPUSUITE_CLUSTER_DIR (default /run/gpusuite-cluster):
#   data/           stands in for the shared /data: incoming/, live/, the ledger
#   nodes/NODE/     that server's own disk: spool, agent state, slurmd's spool,
#                   fake GPU device nodes, logs, its gpusuite.toml
#   node/           an empty directory; inside a server's mount namespace
#                   nodes/NODE/ is mounted on it and data/ on node/data, so one
#                   slurm.conf and one set of paths serve every server
#   etc/ log/ state/ mysql/  the head's: slurm.conf, slurmdbd, MariaDB, serve
#   env             KEY=VALUE for the Go tests (test/cluster, internal/testkit/slurm.Multi)
#
# Network: a bridge gsc-br0 with $NET.1/24 (the head: slurmctld listens
# there), one veth pair per server into its namespace gsc-NODE with
# $NET.(10+i). The range is 198.18.0.0/15's, set aside for network tests
# (RFC 2544), so it meets no site's own addresses. slurmctld, slurmdbd,
# MariaDB and `gpuacct serve` (ingest and board, on 127.0.0.1:PORT+4) run in
# the host's namespaces; each server runs slurmd and `gpuacct agent` on 4
# simulated GPUs, and its hooks. gpu3's clock runs SKEW ahead (its hooks and
# agent read gpu.simulated.clock_offset), as a server without NTP would.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${GPUSUITE_CLUSTER_DIR:-/run/gpusuite-cluster}
# Beside the single-node harness's 16817..16820.
PORT=${GPUSUITE_CLUSTER_PORT:-16917}
DBD_PORT=$((PORT + 2))
DB_PORT=$((PORT + 3))
SERVE_PORT=$((PORT + 4))
NET=${GPUSUITE_CLUSTER_NET:-198.18.17}
BRIDGE=gsc-br0
CLUSTER=gsc
NODES="gpu1 gpu2 gpu3"
NGPU=4
SKEW_NODE=gpu3
SKEW=4s
BIN=${GPUSUITE_BIN:-$ROOT/bin}
HOOK_BIN=${GPUSUITE_HOOK_BIN:-$BIN/simulated}
# The agents sample simulated GPUs: the simulated build of gpuacct.
AGENT=$HOOK_BIN/gpuacct
ACCOUNTS="alice:team-a bob:team-b carol:team-c root:team-a root:team-b root:team-c"

# shellcheck source=test/slurm/lib.sh
. "$ROOT/test/slurm/lib.sh"

ns() { echo "gsc-$1"; }

node_index() {
  local i=1 n
  for n in $NODES; do
    [ "$n" = "$1" ] && { echo "$i"; return 0; }
    i=$((i + 1))
  done
  log "no server $1 (servers: $NODES)"
  exit 2
}

# holder_of prints the pid of NODE's namespace holder (a sleep whose
# namespaces the server's processes enter) while it lives.
holder_of() {
  local pid
  pid=$(cat "$DIR/nodes/$1/holder.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && alive "$pid" && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = sleep ] && echo "$pid"
}

# agent_of prints the pid of NODE's agent while it runs.
agent_of() {
  local pid
  pid=$(cat "$DIR/nodes/$1/agent.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && alive "$pid" && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = gpuacct ] && echo "$pid"
}

# in_node NODE CMD... runs CMD in NODE's network, UTS and mount namespaces.
in_node() {
  local h
  h=$(holder_of "$1") || { log "server $1 is down (no namespace holder)"; return 1; }
  shift
  nsenter -t "$h" -n -u -m -- "$@"
}

status() {
  conf_env
  [ -f "$DIR/etc/slurm.conf" ] || return 1
  local n st
  for n in $NODES; do
    holder_of "$n" >/dev/null || return 1
    agent_of "$n" >/dev/null || return 1
    st=$(timeout 5 sinfo -h -N -n "$n" -o '%t' 2>/dev/null) || return 1
    case "$st" in idle*|mix*|alloc*) ;; *) return 1 ;; esac
  done
  curl -fsS -m 5 "http://127.0.0.1:$SERVE_PORT/api/v1/health" >/dev/null 2>&1 || return 1
  # One whose slurm.conf is not the one start writes now (from before the
  # job accounting gather, or any later line) is replaced.
  slurm_conf | cmp -s - "$DIR/etc/slurm.conf" || return 1
  dbd_answers
}

# slurm_conf prints the cluster's slurm.conf, one for every server.
slurm_conf() {
  slurm_conf_common "$DIR/hooks"
  cat <<EOF
SlurmctldHost=localhost($NET.1)
SlurmdSpoolDir=$DIR/node/slurmd
SlurmdPidFile=$DIR/node/slurmd.pid
SlurmdLogFile=$DIR/node/log/slurmd.log
# A lost server is noticed within seconds, not the default 5 minutes.
SlurmdTimeout=10
# Jobs of a lost server are requeued (the default for batch jobs).
JobRequeue=1
EOF
  local n i=1
  for n in $NODES; do
    echo "NodeName=$n NodeAddr=$NET.$((10 + i)) CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=2000 Gres=gpu:$NGPU State=UNKNOWN"
    i=$((i + 1))
  done
  echo "PartitionName=gpu Nodes=${NODES// /,} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
}

write_config() {
  mkdir -p "$DIR"/{etc,state,log,hooks,mysql-tmp,node} "$DIR"/data/{incoming,live,quarantine,archive}
  chmod 0755 "$DIR" "$DIR/data" "$DIR"/data/*
  local n skew
  for n in $NODES; do
    mkdir -p "$DIR/nodes/$n"/{spool,agent,slurmd,log,data}
    chmod 0700 "$DIR/nodes/$n/spool"
    make_gpu_devices "$DIR/nodes/$n/dev" "$NGPU"
    skew=""
    [ "$n" = "$SKEW_NODE" ] && skew="clock_offset = \"$SKEW\""
    # Seen as $DIR/node/gpusuite.toml inside the server.
    {
      echo "# gpusuite config of server $n (hooks and agent)."
      hook_config "$DIR/node/spool"
      echo "$skew"
      cat <<EOF

[agent]
interval = "1s"
incoming_dir = "$DIR/node/data/incoming"
live_dir = "$DIR/node/data/live"
state_dir = "$DIR/node/agent"
segment_duration = "5s"
ship_interval = "1s"
ship_backoff_max = "3s"
metrics_listen = ""
profile_socket = "$DIR/node/profile.sock"
log_level = "debug"
EOF
    } >"$DIR/nodes/$n/gpusuite.toml"
    cat >"$DIR/nodes/$n/run-agent" <<EOF
#!/bin/sh
# Started inside server $n: records its pid where the harness looks.
echo \$\$ >"$DIR/node/agent.pid"
exec "$AGENT" --config "$DIR/node/gpusuite.toml" agent
EOF
    chmod 0755 "$DIR/nodes/$n/run-agent"
  done
  write_hook_wrappers "$DIR/hooks" "$DIR/node/gpusuite.toml" "$DIR/node/log"
  slurm_conf >"$DIR/etc/slurm.conf"
  # Each server's own device nodes, through its mount of node/.
  echo "Name=gpu File=$DIR/node/dev/nvidia[0-$((NGPU - 1))]" >"$DIR/etc/gres.conf"
  cat >"$DIR/etc/head.toml" <<EOF
# gpusuite config of the head: gpuacct serve (ingest, dashboard, board).
[cluster]
name = "$CLUSTER"

[store]
path = "$DIR/data/gpuacct.db"

[ingest]
incoming = "$DIR/data/incoming"
quarantine = "$DIR/data/quarantine"
archive = "$DIR/data/archive"
keep = "delete"
interval = "1s"
grace = "20s"
sacct = "sacct"
sacctmgr = "sacctmgr"
sacct_timeout = "30s"
metrics_listen = "127.0.0.1:$SERVE_PORT"
log_level = "debug"

[web]
enabled = true

[board]
live_dir = "$DIR/data/live"
slurm_interval = "2s"
EOF
  write_db_config
  cat >"$DIR/env" <<EOF
SLURM_CONF=$DIR/etc/slurm.conf
GPUSUITE_SLURM_DIR=$DIR
GPUSUITE_CLUSTER_NODES=$NODES
GPUSUITE_CLUSTER_DATA=$DIR/data
GPUSUITE_CLUSTER_HEAD_CONFIG=$DIR/etc/head.toml
GPUSUITE_CLUSTER_SERVE=http://127.0.0.1:$SERVE_PORT
GPUSUITE_CLUSTER_HARNESS=$ROOT/test/cluster/harness.sh
GPUSUITE_CLUSTER_SKEW=$SKEW_NODE=$SKEW
EOF
}

# start_network makes the bridge and each server's namespace and veth pair.
start_network() {
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip addr replace "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local n i=1
  for n in $NODES; do
    ip netns list | grep -qw "$(ns "$n")" || ip netns add "$(ns "$n")"
    if ! ip link show "$(ns "$n")" >/dev/null 2>&1; then
      ip link add "$(ns "$n")" type veth peer name eth0 netns "$(ns "$n")"
    fi
    ip link set "$(ns "$n")" master "$BRIDGE" up
    ip -n "$(ns "$n")" addr replace "$NET.$((10 + i))/24" dev eth0
    ip -n "$(ns "$n")" link set lo up
    ip -n "$(ns "$n")" link set eth0 up
    i=$((i + 1))
  done
}

# boot NODE starts the server: its namespace holder (host name, its disk
# on node/, the share on node/data, a boot id of this boot's own over
# /proc/sys/kernel/random/boot_id, as a real reboot makes), slurmd, then
# its agent.
boot() {
  local n=$1 i
  if ! holder_of "$n" >/dev/null; then
    rm -f "$DIR/nodes/$n/holder.pid"
    # nsenter, not `ip netns exec`: that mounts a fresh /sys, without
    # the cgroup file system slurmd insists on.
    setsid nsenter --net=/run/netns/"$(ns "$n")" unshare --uts --mount --propagation private \
      sh -c "hostname $n && mount --bind $DIR/nodes/$n $DIR/node && mount --bind $DIR/data $DIR/node/data &&
             cat /proc/sys/kernel/random/uuid >$DIR/node/boot_id &&
             mount --bind $DIR/node/boot_id /proc/sys/kernel/random/boot_id &&
             echo \$\$ >$DIR/node/holder.pid && exec sleep infinity" </dev/null >>"$DIR/log/holder.$n.log" 2>&1 &
    for i in $(seq 1 100); do
      holder_of "$n" >/dev/null && break
      [ "$i" -eq 100 ] && { log "server $n did not come up:"; cat "$DIR/log/holder.$n.log" >&2; exit 1; }
      sleep 0.05
    done
  fi
  start_slurmd "$n"
  start_agent "$n"
}

start_slurmd() {
  in_node "$1" env SLURM_CONF="$SLURM_CONF" slurmd -f "$SLURM_CONF" -N "$1"
}

# start_agent starts NODE's agent and waits until it runs.
start_agent() {
  local i
  rm -f "$DIR/nodes/$1/agent.pid"
  in_node "$1" setsid "$DIR/node/run-agent" </dev/null >>"$DIR/nodes/$1/log/agent.log" 2>&1 &
  for i in $(seq 1 100); do
    agent_of "$1" >/dev/null && return 0
    sleep 0.05
  done
  log "the agent of $1 did not start:"
  tail -n 5 "$DIR/nodes/$1/log/agent.log" >&2
  exit 1
}

# ensure NODE puts a server back as a test expects to find it: up (booted
# again when lost), slurmd and agent running (a stopped agent continued),
# /data writable, and in service.
ensure() {
  local n=$1 pid
  if ! holder_of "$n" >/dev/null; then
    kill_node "$n"
    boot "$n"
  else
    if ! pid=$(cat "$DIR/nodes/$n/slurmd.pid" 2>/dev/null) || ! alive "$pid"; then start_slurmd "$n"; fi
    if pid=$(agent_of "$n"); then kill -CONT "$pid"; else start_agent "$n"; fi
    in_node "$n" mount -o remount,bind,rw "$DIR/node/data"
  fi
  wait_node "$n" 90
}

# kill_node NODE: every process of the server at once (slurmd, its jobs
# and hooks, the agent, the holder), as a power cut would.
kill_node() {
  local n=$1 pids i
  pids=$(ip netns pids "$(ns "$n")" 2>/dev/null || true)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  for i in $(seq 1 100); do
    [ -z "$(ip netns pids "$(ns "$n")" 2>/dev/null)" ] && break
    sleep 0.05
  done
  rm -f "$DIR/nodes/$n/holder.pid" "$DIR/nodes/$n/slurmd.pid" "$DIR/nodes/$n/agent.pid"
}

# wait_node NODE [SECONDS] waits until slurmctld has NODE idle (or busy).
wait_node() {
  local n=$1 i st
  for i in $(seq 1 $((${2:-60} * 4))); do
    st=$(timeout 5 sinfo -h -N -n "$n" -o '%t' 2>/dev/null || true)
    case "$st" in idle|mix|alloc) return 0 ;; esac
    # A node that registered before its GRES was read may come up DOWN.
    [ $((i % 8)) -eq 1 ] && scontrol update nodename="$n" state=resume >/dev/null 2>&1 || true
    sleep 0.25
  done
  log "server $n is $st, not idle, after ${2:-60} s; its slurmd log:"
  tail -n 20 "$DIR/nodes/$n/log/slurmd.log" >&2 || true
  return 1
}

start_serve() {
  pid_of gpuacct >/dev/null && return 0
  cat >"$DIR/run-serve" <<EOF
#!/bin/sh
echo \$\$ >"$DIR/gpuacct.pid"
exec "$BIN/gpuacct" --config "$DIR/etc/head.toml" serve
EOF
  chmod 0755 "$DIR/run-serve"
  SLURM_CONF=$SLURM_CONF setsid "$DIR/run-serve" </dev/null >>"$DIR/log/serve.log" 2>&1 &
  local i
  for i in $(seq 1 200); do
    curl -fsS -m 2 "http://127.0.0.1:$SERVE_PORT/api/v1/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  log "gpuacct serve does not answer on 127.0.0.1:$SERVE_PORT:"
  tail -n 20 "$DIR/log/serve.log" >&2
  exit 1
}

start() {
  if status; then
    log "cluster already running ($DIR)"
    return 0
  fi
  "$ROOT/test/deps.sh"
  for b in prolog epilog hook-gpus gpuacct; do
    [ -x "$HOOK_BIN/$b" ] || { log "$HOOK_BIN/$b is missing: run 'make build-simulated' first"; exit 1; }
  done
  [ -x "$BIN/gpuacct" ] || { log "$BIN/gpuacct is missing: run 'make build' first"; exit 1; }
  stop_daemons
  write_config
  conf_env
  start_munge
  start_accounting
  start_network
  slurmctld -f "$SLURM_CONF" -i
  local n
  for n in $NODES; do boot "$n"; done
  for n in $NODES; do
    wait_node "$n" 60 || { tail -n 20 "$DIR/log/slurmctld.log" >&2; exit 1; }
  done
  start_serve
  log "cluster up: servers ${NODES// /, } idle ($NGPU GPUs each, $SKEW_NODE's clock $SKEW ahead), head on $NET.1, serve on 127.0.0.1:$SERVE_PORT, config $SLURM_CONF"
}

stop_daemons() {
  local n pid i
  if pid=$(pid_of gpuacct); then stop_pid "$pid" TERM; fi
  for n in $NODES; do kill_node "$n"; done
  if pid=$(pid_of slurmctld); then stop_pid "$pid" TERM; fi
  pkill -9 -f "$DIR/etc/slurm.conf" 2>/dev/null || true
  stop_accounting "${1:-}"
  for n in $NODES; do
    ip netns del "$(ns "$n")" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
}

stop() {
  stop_daemons discard
  rm -rf "$DIR"
  log "cluster stopped"
}

need_node() {
  [ -n "${1:-}" ] || { echo "usage: $0 ${CMD} NODE" >&2; exit 2; }
  node_index "$1" >/dev/null
}

CMD=${1:-}
case "$CMD" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  kill) need_node "${2:-}"; kill_node "$2"; log "server $2 lost" ;;
  revive)
    need_node "${2:-}"; conf_env; boot "$2"; wait_node "$2" 90; log "server $2 back" ;;
  ensure) need_node "${2:-}"; conf_env; ensure "$2" ;;
  data-off) need_node "${2:-}"; in_node "$2" mount -o remount,bind,ro "$DIR/node/data"; log "/data read-only on $2" ;;
  data-on) need_node "${2:-}"; in_node "$2" mount -o remount,bind,rw "$DIR/node/data"; log "/data writable on $2" ;;
  exec) need_node "${2:-}"; n=$2; shift 2; conf_env; in_node "$n" "$@" ;;
  *) echo "usage: $0 start|stop|status|kill NODE|revive NODE|ensure NODE|data-off NODE|data-on NODE|exec NODE CMD..." >&2; exit 2 ;;
esac
