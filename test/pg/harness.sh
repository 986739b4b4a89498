#!/usr/bin/env bash
# A throwaway PostgreSQL for gpusuite's tests, from Debian's postgresql
# package (test/deps.sh installs it).
#
#   test/pg/harness.sh start    initdb and start a server under $GPUSUITE_PG_DIR,
#                               and a streaming standby of it beside
#   test/pg/harness.sh stop     stop both and remove the directory
#   test/pg/harness.sh status   exit 0 when both answer
#
# The server runs as a dedicated system user (gpusuite-pg, made if
# missing: PostgreSQL refuses to run as root), listens on 127.0.0.1 only,
# on $GPUSUITE_PG_PORT (default 16830; a busy port moves it up), and
# trusts local connections: it holds nothing but test ledgers. fsync is
# off: a crash of the machine loses only tests. `env` under the directory
# holds GPUSUITE_TEST_PG, the URL of its maintenance database; each test
# makes and drops a database of its own there (internal/testkit/ledgerdb).
#
# The standby (docs/postgresql.md, "A standby that keeps answering") is
# pg_basebackup -R of the primary through a replication slot, under
# $GPUSUITE_PG_DIR/standby, on 127.0.0.1 at $GPUSUITE_PG_STANDBY_PORT
# (default: the first free port after the primary's). It replays every
# database the tests make; GPUSUITE_TEST_PG_STANDBY in `env` reaches it.
# The primary's defaults allow it: wal_level=replica, max_wal_senders=10,
# and initdb's pg_hba.conf trusts replication from 127.0.0.1 only.
set -euo pipefail

DIR=${GPUSUITE_PG_DIR:-/run/gpusuite-pg}
PORT=${GPUSUITE_PG_PORT:-16830}
PGUSER_SYS=gpusuite-pg
SLOT=gpusuite_standby

log() { echo "pg-harness: $*" >&2; }

bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] && [ -x "$d/initdb" ] || { log "no PostgreSQL server: apt-get install postgresql (test/deps.sh does)"; exit 1; }
  echo "$d"
}

# As root, the server runs as its own system user (PostgreSQL refuses
# root); as anyone else, as that user.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u "$PGUSER_SYS" -- "$@"; else "$@"; fi
}

primary_up() {
  unset GPUSUITE_TEST_PG_STANDBY # only env's may count
  [ -f "$DIR/env" ] || return 1
  # shellcheck disable=SC1091
  . "$DIR/env"
  pg_isready -q -d "$GPUSUITE_TEST_PG" -t 3
}

status() {
  primary_up && [ -n "${GPUSUITE_TEST_PG_STANDBY:-}" ] && pg_isready -q -d "$GPUSUITE_TEST_PG_STANDBY" -t 3
}

# free_port is the first port from $1 on that nothing listens on.
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

start() {
  if status; then log "already running ($DIR)"; return 0; fi
  # A primary started before the standby existed (or whose standby died)
  # keeps running, with the tests on it: only the standby is made anew.
  if primary_up; then start_standby; return 0; fi
  local bin
  bin=$(bindir)
  stop_quiet
  mkdir -p "$DIR"
  if [ "$(id -u)" -eq 0 ]; then
    id -u "$PGUSER_SYS" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$PGUSER_SYS"
    chown "$PGUSER_SYS" "$DIR"
  fi
  chmod 0755 "$DIR"
  as_pg "$bin/initdb" -D "$DIR/data" -U gpusuite --auth=trust -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 \
    || { cat "$DIR/initdb.log" >&2; exit 1; }
  PORT=$(free_port "$PORT")
  as_pg "$bin/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
    -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >/dev/null \
    || { cat "$DIR/server.log" >&2; exit 1; }
  echo "GPUSUITE_TEST_PG=postgres://gpusuite@127.0.0.1:$PORT/postgres?sslmode=disable" >"$DIR/env"
  primary_up || { log "server did not answer"; exit 1; }
  log "running on 127.0.0.1:$PORT ($DIR)"
  start_standby
}

# start_standby makes the standby from the running primary (its URL in
# $GPUSUITE_TEST_PG) and appends its URL to env.
start_standby() {
  local bin port sport
  bin=$(bindir)
  port=${GPUSUITE_TEST_PG#*127.0.0.1:}
  port=${port%%/*}
  if [ -d "$DIR/standby" ]; then
    as_pg "$bin/pg_ctl" -D "$DIR/standby" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$DIR/standby"
  fi
  # A slot left by an earlier standby would keep WAL forever; -C makes it anew.
  psql -qAt -d "$GPUSUITE_TEST_PG" -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$SLOT'" >/dev/null
  as_pg "$bin/pg_basebackup" -h 127.0.0.1 -p "$port" -U gpusuite -D "$DIR/standby" -R -C -S "$SLOT" -X stream -c fast >"$DIR/basebackup.log" 2>&1 \
    || { cat "$DIR/basebackup.log" >&2; exit 1; }
  sport=$(free_port "${GPUSUITE_PG_STANDBY_PORT:-$((port + 1))}")
  # hot_standby_feedback: vacuum on the primary waits for the standby's
  # reports instead of cancelling them; max_connections as the primary's
  # (a hot standby needs at least as many).
  as_pg "$bin/pg_ctl" -D "$DIR/standby" -l "$DIR/standby.log" -w -t 60 \
    -o "-p $sport -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 -c hot_standby_feedback=on" start >/dev/null \
    || { cat "$DIR/standby.log" >&2; exit 1; }
  sed -i '/^GPUSUITE_TEST_PG_STANDBY=/d' "$DIR/env"
  echo "GPUSUITE_TEST_PG_STANDBY=postgres://gpusuite@127.0.0.1:$sport/postgres?sslmode=disable" >>"$DIR/env"
  status || { log "standby did not answer"; exit 1; }
  log "standby of 127.0.0.1:$port streaming on 127.0.0.1:$sport ($DIR/standby)"
}

stop_quiet() {
  local d
  for d in standby data; do
    if [ -d "$DIR/$d" ]; then
      as_pg "$(bindir)/pg_ctl" -D "$DIR/$d" -m immediate -w stop >/dev/null 2>&1 || true
    fi
  done
  rm -rf "$DIR"
}

case "${1:-}" in
  start) start ;;
  stop) stop_quiet ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
