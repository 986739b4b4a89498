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
# bin/simulated/epilog (built with -tags simulated, so that they may open the
# simulated GPUs of gpu.backend = "simulated"; bin/prolog cannot), started
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
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${GPUSUITE_SLURM_DIR:-/run/gpusuite-slurm}
# A second cluster (e.g. a CI check beside a developer's) needs other ports.
PORT=${GPUSUITE_SLURM_PORT:-16817}
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

log() { echo "harness: $*" >&2; }

conf_env() { export SLURM_CONF=$DIR/etc/slurm.conf; }

status() {
  conf_env
  [ -f "$DIR/etc/slurm.conf" ] || return 1
  local st
  st=$(timeout 5 sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null) || return 1
  case "$st" in idle*|mix*|alloc*) ;; *) return 1 ;; esac
  # A cluster from before accounting, or one whose slurmdbd is gone, is
  # not what the tests need: start replaces it.
  dbd_answers
}

dbd_answers() {
  grep -qx 'AccountingStorageType=accounting_storage/slurmdbd' "$DIR/etc/slurm.conf" 2>/dev/null || return 1
  timeout 5 sacctmgr -n -P show cluster format=cluster 2>/dev/null | grep -qx testcl
}

write_config() {
  mkdir -p "$DIR"/{etc,dev,spool,state,slurmd,log,spank,spank-records,hooks,mysql-tmp}
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
# A test may delay this hook for its own user's jobs only ("SECONDS USER"
# in hooks/$h.delay), as a slow node would, so that others' jobs run on.
if [ -r "$DIR/hooks/$h.delay" ]; then
  read -r delay user <"$DIR/hooks/$h.delay" || true
  [ -n "\$user" ] && [ "\$user" = "\$SLURM_JOB_USER" ] && sleep "\$delay"
fi
exec "$HOOK_BIN/$h" --config "$DIR/etc/gpusuite.toml" 2>>"$DIR/log/$h.log"
EOF
    chmod 0755 "$DIR/hooks/$h"
    # A delay left by a killed test must not slow a fresh cluster's jobs.
    rm -f "$DIR/hooks/$h.delay"
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
# AllocTRES and ElapsedRaw come from slurmctld's own job record: no
# per-task gathering is needed for them, and none keeps jobs light.
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# So that sacct's AllocTRES lists gres/gpu=N.
AccountingStorageTRES=gres/gpu
# So that sacct's Comment holds what sbatch --comment said (the ignore tag).
AccountingStoreFlags=job_comment
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
  write_db_config
  cat >"$DIR/env" <<EOF
SLURM_CONF=$DIR/etc/slurm.conf
GPUSUITE_SLURM_DIR=$DIR
GPUSUITE_SLURM_NODE=$NODE
GPUSUITE_SLURM_SPOOL=$DIR/spool
GPUSUITE_SLURM_HOOK_CONFIG=$DIR/etc/gpusuite.toml
EOF
}

# write_db_config writes MariaDB's and slurmdbd's configuration. The
# database password is made once per state directory and kept, so a
# restart over an existing datadir still logs in.
write_db_config() {
  local pass
  [ -s "$DIR/etc/db.pass" ] || (umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$DIR/etc/db.pass")
  pass=$(cat "$DIR/etc/db.pass")
  # Test data in a throwaway datadir: no doublewrite, no binlog, lazy log
  # flushes and small files keep the first start and job writes fast.
  cat >"$DIR/etc/my.cnf" <<EOF
[mysqld]
user=root
datadir=$DIR/mysql
socket=$DIR/mysql.sock
pid-file=$DIR/mariadbd.pid
log-error=$DIR/log/mariadb.log
tmpdir=$DIR/mysql-tmp
port=$DB_PORT
bind-address=127.0.0.1
skip-name-resolve
skip-log-bin
performance_schema=OFF
innodb_buffer_pool_size=64M
innodb_log_file_size=16M
innodb_data_file_path=ibdata1:4M:autoextend
innodb_flush_log_at_trx_commit=0
innodb_doublewrite=0
innodb_lock_wait_timeout=900
# slurmdbd's login, made at every start (the bootstrap cannot make users).
init-file=$DIR/etc/db-init.sql

[client]
socket=$DIR/mysql.sock
EOF
  (umask 077 && cat >"$DIR/etc/db-init.sql" <<EOF
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
  )
  # slurmdbd reads slurmdbd.conf beside $SLURM_CONF and refuses one that
  # is not mode 0600 and owned by its SlurmUser.
  (umask 077 && cat >"$DIR/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$DIR/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$pass
StorageLoc=slurm_acct_db
EOF
  )
  chown root:root "$DIR/etc/slurmdbd.conf"
  chmod 0600 "$DIR/etc/slurmdbd.conf"
}

# start_accounting starts MariaDB and slurmdbd, then adds the cluster,
# accounts and users. slurmctld starts after it, so it registers with a
# slurmdbd that already knows the cluster.
start_accounting() {
  local i
  if [ ! -d "$DIR/mysql/mysql" ]; then
    mariadb-install-db --defaults-file="$DIR/etc/my.cnf" --skip-test-db \
      --auth-root-authentication-method=socket \
      >"$DIR/log/mariadb-install.log" 2>&1 ||
      { log "mariadb-install-db failed:"; tail -n 20 "$DIR/log/mariadb-install.log" >&2; exit 1; }
  fi
  rm -f "$DIR/mysql.sock"
  # mariadbd does not daemonize: detach it from this shell and its output,
  # so whoever waits for our stdout (make, a CI runner) is not held.
  setsid mariadbd --defaults-file="$DIR/etc/my.cnf" </dev/null >>"$DIR/log/mariadb.log" 2>&1 &
  for i in $(seq 1 300); do
    [ -S "$DIR/mysql.sock" ] && break
    [ "$i" -eq 300 ] && { log "MariaDB did not start:"; tail -n 20 "$DIR/log/mariadb.log" >&2; exit 1; }
    sleep 0.1
  done
  slurmdbd
  for i in $(seq 1 300); do
    timeout 5 sacctmgr -n -P show cluster format=cluster >/dev/null 2>&1 && break
    [ "$i" -eq 300 ] && { log "slurmdbd does not answer:"; tail -n 20 "$DIR/log/slurmdbd.log" >&2; exit 1; }
    sleep 0.1
  done
  add_associations
}

# add_associations adds the cluster, the accounts and their users in one
# `sacctmgr load` (each sacctmgr call costs a few delayed-ACK round trips
# to slurmdbd, about 0.5 s: one per user would double the start time).
add_associations() {
  local pair user acct accts="" have out
  for pair in $ACCOUNTS; do
    user=${pair%%:*}
    # Jobs run as these users, so they must exist here (as slurmtest.EnsureUser makes them).
    id -u "$user" >/dev/null 2>&1 || useradd -M -s /bin/sh "$user" 2>/dev/null || id -u "$user" >/dev/null
    case " $accts " in *" ${pair#*:} "*) ;; *) accts="$accts ${pair#*:}" ;; esac
  done
  {
    echo "Cluster - 'testcl'"
    echo "Parent - 'root'"
    echo "User - 'root':DefaultAccount='root':AdminLevel='Administrator'"
    for acct in $accts; do echo "Account - '$acct'"; done
    for acct in $accts; do
      echo "Parent - '$acct'"
      for pair in $ACCOUNTS; do
        [ "${pair#*:}" = "$acct" ] || continue
        user=${pair%%:*}
        # A user's default account is their first one here (root's stays root).
        [ "$user" = root ] && echo "User - 'root'" ||
          echo "User - '$user':DefaultAccount='$(default_account "$user")'"
      done
    done
  } >"$DIR/etc/testcl.assoc"
  # Over an existing datadir (a restart) load finds the cluster there and
  # may refuse: the check of the associations below is what counts.
  out=$(sacctmgr -i load file="$DIR/etc/testcl.assoc" 2>&1) || true
  have=$(sacctmgr -n -P show assoc where cluster=testcl format=user,account)
  for pair in $ACCOUNTS; do
    grep -qx "${pair%%:*}|${pair#*:}" <<<"$have" ||
      { log "sacctmgr did not add ${pair%%:*} to ${pair#*:}: $out; associations:"; echo "$have" >&2; exit 1; }
  done
}

default_account() {
  local pair
  for pair in $ACCOUNTS; do
    [ "${pair%%:*}" = "$1" ] && { echo "${pair#*:}"; return; }
  done
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
  if ! pgrep -x munged >/dev/null; then
    mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
    [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || create-munge-key -f; }
    chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
    runuser -u munge -- /usr/sbin/munged || /usr/sbin/munged --force
  fi
  # slurmd registers once at start and then only every minute or so, and
  # slurmdbd authenticates every client: make sure munge answers first.
  for i in $(seq 1 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break
    [ "$i" -eq 50 ] && { log "munged does not answer: see /var/log/munge/munged.log"; exit 1; }
    sleep 0.1
  done
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

# pid_of prints the pid in $DIR/NAME.pid while that process is still NAME:
# a stale pid file must not make us kill someone else's process.
pid_of() {
  local pid
  pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$1" ] && echo "$pid"
}

# alive: the process runs (a zombie that our parent has not reaped yet is
# done: kill -0 would still find it).
alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$st" ] && [ "${st:0:1}" != Z ]
}

# stop_daemons stops this cluster's daemons: the job daemons first, then
# slurmdbd (it flushes to the database on the way down), then MariaDB.
# With "discard" the database is about to be removed: slurmdbd and
# MariaDB are killed outright, which saves the 2 s each takes to shut down.
stop_daemons() {
  local p pid i sig=TERM
  [ "${1:-}" = discard ] && sig=KILL
  for p in slurmd slurmctld; do
    if pid=$(pid_of $p); then kill "$pid" 2>/dev/null || true; fi
  done
  for i in $(seq 1 50); do
    pgrep -f "$DIR/etc/slurm.conf" >/dev/null || break
    sleep 0.1
  done
  pkill -9 -f "$DIR/etc/slurm.conf" 2>/dev/null || true
  # slurmdbd's command line does not name $DIR, its pid file does;
  # mariadbd's names its own my.cnf (found so even before its pid file).
  for p in slurmdbd mariadbd; do
    pid=$(pid_of $p) ||
      { [ $p = mariadbd ] && pid=$(pgrep -f -x "mariadbd --defaults-file=$DIR/etc/my.cnf"); } || continue
    kill -s $sig "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
      alive "$pid" || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  done
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
