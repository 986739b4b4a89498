#!/usr/bin/env bash
# A throwaway PostgreSQL for gpusuite's tests, from Debian's postgresql
# package (test/deps.sh installs it).
#
#   test/pg/harness.sh start    initdb and start a server under $GPUSUITE_PG_DIR
#   test/pg/harness.sh stop     stop it and remove the directory
#   test/pg/harness.sh status   exit 0 when it answers
#
# The server runs as a dedicated system user (gpusuite-pg, made if
# missing: PostgreSQL refuses to run as root), listens on 127.0.0.1 only,
# on $GPUSUITE_PG_PORT (default 16830; a busy port moves it up), and
# trusts local connections: it holds nothing but test ledgers. fsync is
# off: a crash of the machine loses only tests. `env` under the directory
# holds GPUSUITE_TEST_PG, the URL of its maintenance database; each test
# makes and drops a database of its own there (internal/testkit/ledgerdb).
set -euo pipefail

DIR=${GPUSUITE_PG_DIR:-/run/gpusuite-pg}
PORT=${GPUSUITE_PG_PORT:-16830}
PGUSER_SYS=gpusuite-pg

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

status() {
  [ -f "$DIR/env" ] || return 1
  # shellcheck disable=SC1091
  . "$DIR/env"
  pg_isready -q -d "$GPUSUITE_TEST_PG" -t 3
}

# free_port is the first port from $1 on that nothing listens on.
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

start() {
  if status; then log "already running ($DIR)"; return 0; fi
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
  status || { log "server did not answer"; exit 1; }
  log "running on 127.0.0.1:$PORT ($DIR)"
}

stop_quiet() {
  if [ -d "$DIR/data" ]; then
    as_pg "$(bindir)/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$DIR"
}

case "${1:-}" in
  start) start ;;
  stop) stop_quiet ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
