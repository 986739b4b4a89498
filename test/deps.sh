#!/usr/bin/env bash
# Installs, from Debian's packages, what `make test` needs and is missing:
# a real Slurm (munge, slurmctld, slurmd, slurm-client), libslurm-dev for the
# test SPANK plugin, fuse3 for the NFS reproduction, chromium for the
# dashboard, postgresql for the second store engine's tests (test/pg/harness.sh
# starts a throwaway server). Safe to run again: it installs only what is absent.
set -euo pipefail
need=()
for pkg in munge slurmctld slurmd slurm-client slurmdbd mariadb-server libslurm-dev fuse3 chromium sqlite3 gcc postgresql; do
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
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
