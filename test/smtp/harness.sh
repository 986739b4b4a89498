#!/usr/bin/env bash
# A real SMTP server for gpusuite's notifier tests: Debian's
# python3-aiosmtpd (test/deps.sh installs it) as a sink on a loopback
# port that writes every message it accepts into a Maildir.
#
#   test/smtp/harness.sh start    start it under $GPUSUITE_SMTP_DIR
#   test/smtp/harness.sh stop     stop it and remove the directory
#   test/smtp/harness.sh status   exit 0 when it answers
#
# It listens on 127.0.0.1:$GPUSUITE_SMTP_PORT (default 16925; a busy port
# moves it up). `env` under the directory holds GPUSUITE_TEST_SMTP (its
# address) and GPUSUITE_TEST_SMTP_DIR (the Maildir), which test/smtp reads.
set -euo pipefail

DIR=${GPUSUITE_SMTP_DIR:-/run/gpusuite-smtp}
PORT=${GPUSUITE_SMTP_PORT:-16925}
# Debian's interpreter: the package installs the module for it, not for
# another python3 that may come first on PATH.
PY=/usr/bin/python3

log() { echo "smtp-harness: $*" >&2; }

status() {
  [ -f "$DIR/env" ] || return 1
  # shellcheck disable=SC1091
  . "$DIR/env"
  (exec 3<>"/dev/tcp/${GPUSUITE_TEST_SMTP%:*}/${GPUSUITE_TEST_SMTP#*:}") 2>/dev/null
}

free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

start() {
  if status; then log "already running ($DIR)"; return 0; fi
  "$PY" -c 'import aiosmtpd' 2>/dev/null || { log "no aiosmtpd: apt-get install python3-aiosmtpd (test/deps.sh does)"; exit 1; }
  stop_quiet
  mkdir -p "$DIR" # aiosmtpd makes the Maildir (new, cur, tmp) only where none is
  PORT=$(free_port "$PORT")
  setsid "$PY" -m aiosmtpd -n -l "127.0.0.1:$PORT" -c aiosmtpd.handlers.Mailbox "$DIR/maildir" \
    >"$DIR/server.log" 2>&1 </dev/null &
  echo $! >"$DIR/pid"
  echo "GPUSUITE_TEST_SMTP=127.0.0.1:$PORT" >"$DIR/env"
  echo "GPUSUITE_TEST_SMTP_DIR=$DIR/maildir" >>"$DIR/env"
  for _ in $(seq 1 100); do
    status && { log "running on 127.0.0.1:$PORT ($DIR)"; return 0; }
    kill -0 "$(cat "$DIR/pid")" 2>/dev/null || break
    sleep 0.1
  done
  cat "$DIR/server.log" >&2
  log "server did not answer"
  exit 1
}

stop_quiet() {
  if [ -f "$DIR/pid" ]; then
    kill "$(cat "$DIR/pid")" 2>/dev/null || true
  fi
  rm -rf "$DIR"
}

case "${1:-}" in
  start) start ;;
  stop) stop_quiet ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
