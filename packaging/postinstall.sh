#!/bin/sh
# Create the service user that owns the accounting data on /data, and the
# request queues it applies.
set -e

# make_queues DIR USER: the queues of gpuacct ignore/unignore and gpuacct
# note under DIR (report.requests), USER's whoever files first: a queue
# made by the first `sudo gpuacct ignore` was root's, and serve could not
# remove what was filed there. gpuacct serve makes them too, at start.
make_queues() {
  install -d -o "$2" -g "$(id -gn "$2")" -m 0755 "$1" "$1/pending" "$1/applied" "$1/notes" "$1/notes/applied"
  install -d -o "$2" -g "$(id -gn "$2")" -m 1733 "$1/notes/pending"
}

# The tests run the queue part alone: postinstall.sh queues DIR USER.
if [ "${1:-}" = queues ]; then
  make_queues "$2" "$3"
  exit 0
fi

if ! getent passwd gpuacct >/dev/null 2>&1; then
  if command -v useradd >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin gpuacct || true
  fi
fi
# report.requests as the configuration says, else its default; only when
# the share is mounted (a root-squashed share leaves it to serve).
requests=$(sed -n 's/^[[:space:]]*requests[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' /etc/gpusuite/gpusuite.toml 2>/dev/null | head -n 1)
requests=${requests:-/data/gpusuite/requests}
if getent passwd gpuacct >/dev/null 2>&1 && [ -d "$(dirname "$requests")" ]; then
  make_queues "$requests" gpuacct 2>/dev/null || true
fi
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
exit 0
