#!/usr/bin/env bash
# Installs, from Debian's packages, what `make test` needs and is missing:
# a real Slurm (munge, slurmctld, slurmd, slurm-client), libslurm-dev for the
# test SPANK plugin, fuse3 for the NFS reproduction, chromium for the
# dashboard, postgresql for the second store engine's tests (test/pg/harness.sh
# starts a throwaway server), prometheus for promtool (the alert rules'
# checks and unit tests; its own server is kept from starting) and rpm for
# inspecting the .rpm, python3-aiosmtpd for the notifier's SMTP sink
# (test/smtp/harness.sh). Safe to run again: it installs only what is absent.
set -euo pipefail
need=()
for pkg in munge slurmctld slurmd slurm-client slurmdbd mariadb-server libslurm-dev fuse3 chromium sqlite3 gcc postgresql prometheus rpm docker-registry skopeo umoci python3-aiosmtpd; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "test/deps.sh: missing packages ${need[*]}; run as root (or: apt-get install ${need[*]})" >&2
  exit 1
fi
echo "test/deps.sh: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Debian's prometheus package starts a server on :9090 when it is installed;
# the tests need only promtool. A policy-rc.d for the install keeps every
# service from starting (unless the machine has one already).
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && made_policy=1
  trap '[ -n "$made_policy" ] && rm -f "$policy"' EXIT
fi
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
if [[ " ${need[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
  systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
