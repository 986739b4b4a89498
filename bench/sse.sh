#!/usr/bin/env bash
# Board event stream benchmark (docs/performance.md, "web"): the built
# gpuacct serve on loopback with a fresh ledger and a live directory of
# 125 nodes × 8 GPUs rewritten as agents do (each node every 10 s,
# staggered), 200 streams of /api/v1/board/events held for 60 s; prints
# errors, events received, serve's RSS at start/middle/end and its CPU
# seconds. No Slurm: the board says "Slurm unreachable" and goes on.
# Usage: bench/sse.sh [clients] [seconds]
. "$(dirname "$0")/env.sh"
clients="${1:-200}"
seconds="${2:-60}"
dir="$(mktemp -d)"
# Built into the run's own directory: bin/ may be in use by a test run.
go build -o "$dir/bin/" ./gpuacct && go build -o "$dir/bin/ssebench" ./bench/sse
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
mkdir -p "$dir/incoming" "$dir/live"
cat >"$dir/gpusuite.toml" <<TOML
[store]
path = "$dir/gpuacct.db"
[ingest]
incoming = "$dir/incoming"
quarantine = "$dir/quarantine"
archive = "$dir/archive"
keep = "delete"
sacct = ""
metrics_listen = "127.0.0.1:$port"
[agent]
interval = "10s"
[board]
live_dir = "$dir/live"
TOML
GPUSUITE_CONFIG="$dir/gpusuite.toml" "$dir/bin/gpuacct" serve >"$dir/serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$port/api/v1/health" >/dev/null 2>&1 && break
  sleep 0.2
done
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $clients streams for ${seconds}s, serve pid $pid"
"$dir/bin/ssebench" -url "http://127.0.0.1:$port" -pid "$pid" -live-dir "$dir/live" -clients "$clients" -duration "${seconds}s"
