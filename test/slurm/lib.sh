# Shell functions the Slurm test harnesses share (sourced, not run):
# test/slurm/harness.sh (one node) and test/cluster/harness.sh (a
# controller and several GPU servers in their own namespaces).
#
# The caller sets, before sourcing:
#   DIR       the harness's state directory (config, databases, logs)
#   CLUSTER   the Slurm cluster name
#   PORT      slurmctld's port; slurmd listens on PORT+1
#   DBD_PORT  slurmdbd's port; DB_PORT  its private MariaDB's
#   ACCOUNTS  "user:account ..." associations the tests submit with
#   HOOK_BIN  the directory of the hooks' simulated build

log() { echo "harness: $*" >&2; }

conf_env() { export SLURM_CONF=$DIR/etc/slurm.conf; }

# dbd_answers: slurmdbd answers and knows this cluster.
dbd_answers() {
  grep -qx 'AccountingStorageType=accounting_storage/slurmdbd' "$DIR/etc/slurm.conf" 2>/dev/null || return 1
  timeout 5 sacctmgr -n -P show cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER"
}

# write_hook_wrappers HOOK_DIR CONFIG LOG_DIR writes the prolog and epilog
# slurmd runs: they keep slurmd's environment (fixtures for parser tests,
# and a debugging aid), may be delayed for one user's jobs, and exec the
# hooks' simulated build with --config (slurmd gives hooks no arguments
# and a scrubbed environment).
write_hook_wrappers() {
  local hooks=$1 cfg=$2 logs=$3 h
  for h in prolog epilog; do
    cat >"$hooks/$h" <<EOS
#!/bin/sh
env | sort >"$logs/$h.\$SLURM_JOB_ID.env" 2>/dev/null
# A test may delay this hook for its own user's jobs only ("SECONDS USER"
# in $hooks/$h.delay), as a slow node would, so that others' jobs run on.
if [ -r "$hooks/$h.delay" ]; then
  read -r delay user <"$hooks/$h.delay" || true
  [ -n "\$user" ] && [ "\$user" = "\$SLURM_JOB_USER" ] && sleep "\$delay"
fi
exec "$HOOK_BIN/$h" --config "$cfg" 2>>"$logs/$h.log"
EOS
    chmod 0755 "$hooks/$h"
    # A delay left by a killed test must not slow a fresh cluster's jobs.
    rm -f "$hooks/$h.delay"
  done
}

# hook_config SPOOL [ROOT] prints the gpusuite.toml both harnesses' hooks
# share, ending inside [gpu.simulated] (NGPU GPUs of SIM_MODEL, H100s
# unless set): the caller adds its keys. ROOT is hooks.root (the MIG
# node's fake /dev and /proc).
hook_config() {
  cat <<EOS
[cluster]
name = "$CLUSTER"

[spool]
dir = "$1"

[hooks]
timeout = "5s"
log_level = "debug"
EOS
  [ -z "${2:-}" ] || echo "root = \"$2\""
  cat <<EOS

[gpu]
backend = "simulated"

[gpu.simulated]
count = $NGPU
model = "${SIM_MODEL:-h100}"
EOS
}

# slurm_conf_common prints the slurm.conf lines both harnesses share;
# the caller adds SlurmctldHost, the slurmd paths, the nodes and the
# partition. $1 is the hooks' directory.
slurm_conf_common() {
  cat <<EOS
ClusterName=$CLUSTER
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# Each step's CPU time and peak RSS (sacct's TotalCPU, MaxRSS), read
# from /proc (linuxproc tracks the processes); sampled each second, so a
# test job of a few seconds has its peak, and once more as each task ends.
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# So that sacct's AllocTRES lists gres/gpu=N, and the typed GPUs that
# TRESBillingWeights weigh (test/slurm/harness.sh's a100 and t4).
AccountingStorageTRES=gres/gpu$(for t in ${GPU_TYPES:-a100 t4}; do printf ',gres/gpu:%s' "$t"; done)
# So that sacct's Comment holds what sbatch --comment said (the ignore tag).
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
PrologFlags=Alloc
Prolog=$1/prolog
Epilog=$1/epilog
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
KillWait=2
InactiveLimit=0
MinJobAge=300
MaxJobCount=100000
SchedulerParameters=sched_interval=1,bf_interval=1
EOS
}

# make_gpu_devices DIR N makes N fake GPU device nodes DIR/nvidia0.. :
# character devices 195:N, because slurmd refuses regular files in gres.conf.
make_gpu_devices() {
  local i
  mkdir -p "$1"
  for i in $(seq 0 $(($2 - 1))); do
    [ -c "$1/nvidia$i" ] || mknod "$1/nvidia$i" c 195 "$i"
  done
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
  cat >"$DIR/etc/my.cnf" <<EOS
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
EOS
  (umask 077 && cat >"$DIR/etc/db-init.sql" <<EOS
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOS
  )
  # slurmdbd reads slurmdbd.conf beside $SLURM_CONF and refuses one that
  # is not mode 0600 and owned by its SlurmUser.
  (umask 077 && cat >"$DIR/etc/slurmdbd.conf" <<EOS
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
EOS
  )
  chown root:root "$DIR/etc/slurmdbd.conf"
  chmod 0600 "$DIR/etc/slurmdbd.conf"
}

# start_munge starts munged when none runs and waits until it answers:
# slurmd registers once at start and then only every minute or so, and
# slurmdbd authenticates every client.
start_munge() {
  local i
  if ! pgrep -x munged >/dev/null; then
    mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
    [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || create-munge-key -f; }
    chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
    runuser -u munge -- /usr/sbin/munged || /usr/sbin/munged --force
  fi
  for i in $(seq 1 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  log "munged does not answer: see /var/log/munge/munged.log"
  exit 1
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
    # Jobs run as these users, so they must exist here (as internal/testkit/slurm.EnsureUser makes them).
    id -u "$user" >/dev/null 2>&1 || useradd -M -s /bin/sh "$user" 2>/dev/null || id -u "$user" >/dev/null
    case " $accts " in *" ${pair#*:} "*) ;; *) accts="$accts ${pair#*:}" ;; esac
  done
  {
    echo "Cluster - '$CLUSTER'"
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
  } >"$DIR/etc/$CLUSTER.assoc"
  # Over an existing datadir (a restart) load finds the cluster there and
  # may refuse: the check of the associations below is what counts.
  out=$(sacctmgr -i load file="$DIR/etc/$CLUSTER.assoc" 2>&1) || true
  have=$(sacctmgr -n -P show assoc where cluster="$CLUSTER" format=user,account)
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

# stop_pid PID SIGNAL sends SIGNAL, waits up to 10 s, then kills.
stop_pid() {
  local i
  kill -s "$2" "$1" 2>/dev/null || true
  for i in $(seq 1 100); do
    alive "$1" || return 0
    sleep 0.1
  done
  kill -9 "$1" 2>/dev/null || true
}

# stop_accounting stops slurmdbd (it flushes to the database on the way
# down), then MariaDB. With "discard" the database is about to be removed:
# both are killed outright, which saves the 2 s each takes to shut down.
stop_accounting() {
  local p pid sig=TERM
  [ "${1:-}" = discard ] && sig=KILL
  # slurmdbd's command line does not name $DIR, its pid file does;
  # mariadbd's names its own my.cnf (found so even before its pid file).
  for p in slurmdbd mariadbd; do
    pid=$(pid_of $p) ||
      { [ $p = mariadbd ] && pid=$(pgrep -f -x "mariadbd --defaults-file=$DIR/etc/my.cnf"); } || continue
    stop_pid "$pid" "$sig"
  done
}
