#!/bin/sh
# Create the service user that owns the accounting data on /data.
set -e
if ! getent passwd gpuacct >/dev/null 2>&1; then
  if command -v useradd >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin gpuacct || true
  fi
fi
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
exit 0
