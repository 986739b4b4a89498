# Sourced first by the bench scripts: strict mode, the repository root as
# the working directory, and cgo's flags as the Makefile sets them
# (setting CGO_CFLAGS replaces cgo's "-O2 -g": keep -O2, or SQLite is
# slow; the deprecation warnings are go-nvml's).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
