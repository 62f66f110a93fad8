#!/usr/bin/env bash
# `xsp serve` under load and under attack at once (docs/server.md "Security", BENCHMARKS.md "Server load"): wrk asks
# the read endpoints (listing, one evaluation, an analysis, the zoo, the jobs) from 16 connections for DURATION
# seconds while 32 slow clients trickle one header byte a second and reconnect when refused. Prints requests/s,
# latency percentiles, the server's RSS before and after, and what the front refused.
#
# Usage: [SLOW_CLIENTS=32] bench/server_load.sh XSP [DURATION_S=60] [--check]
#   --check (CTest `server_load`): exit 1 when any read got a non-2xx answer or a socket error, when the server died,
#   or when its RSS grew by more than 32 MiB over the run. Exit 77 (skipped) without wrk.
# Runs the server on 127.0.0.1 with a copy of the committed H200 ResNet-18 kernel-level evaluation
# (tests/fixtures/gpu/resnet18_bs1_kernel_h200.db, 1 evaluation of 3 runs, 1,185 spans in its kernel run).
set -euo pipefail
xsp=$(realpath "$1")
duration=${2:-60}
check=${3:-}
src=$(cd "$(dirname "$0")/.." && pwd)
command -v wrk > /dev/null || { echo "server_load: wrk is missing (Debian: wrk; scripts/install-deps.sh)"; exit 77; }
work=$(mktemp -d /tmp/xsp-server-load.XXXXXX)
server_pid=""
slow_pid=""
cleanup() {
  [ -n "$slow_pid" ] && kill "$slow_pid" 2> /dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2> /dev/null && wait "$server_pid" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cp "$src/tests/fixtures/gpu/resnet18_bs1_kernel_h200.db" "$work/s.db"
"$xsp" --store "$work/s.db" --zoo "$src/models" serve --port 0 > "$work/serve.out" 2> "$work/serve.err" &
server_pid=$!
for _ in $(seq 100); do
  url=$(sed -n 's/.*listening on \(http:[^ ]*\) .*/\1/p' "$work/serve.out")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "server_load: the server did not start"; cat "$work/serve.err"; exit 1; }
port=${url##*:}
id=$(curl -sf "$url/api/v1/evaluations" | python3 -c 'import json,sys; print(json.load(sys.stdin)["evaluations"][0]["id"])')

cat > "$work/paths.lua" << EOF
local paths = {"/api/v1/evaluations", "/api/v1/evaluations/$id", "/api/v1/evaluations/$id/analyses/A1",
               "/api/v1/models", "/api/v1/jobs"}
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
EOF

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status"; }

# The attackers: SLOW_CLIENTS connections, one header byte a second each; a refused or closed one comes back at once.
python3 - "$port" "$duration" "${SLOW_CLIENTS:-32}" > "$work/slow.out" 2>&1 << 'EOF' &
import socket, sys, time
port, duration, count = int(sys.argv[1]), float(sys.argv[2]) + 10, int(sys.argv[3])
def opened():
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /api/v1/evaluations HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return s
conns, reconnects, end = [opened() for _ in range(count)], 0, time.time() + duration
while time.time() < end:
    for i, s in enumerate(conns):
        try:
            s.sendall(b"a")
        except OSError:
            s.close()
            conns[i] = opened()
            reconnects += 1
    time.sleep(1)
print("slow-client reconnects:", reconnects)
EOF
slow_pid=$!

# Warm-up (reader connections, the page cache), then the measured run.
wrk -t2 -c16 -d5s -s "$work/paths.lua" "$url" > /dev/null
rss_before=$(rss_kib)
wrk -t2 -c16 -d"${duration}s" --latency -s "$work/paths.lua" "$url" > "$work/wrk.out"
rss_after=$(rss_kib)
kill -0 "$server_pid" 2> /dev/null || { echo "server_load: the server died"; cat "$work/serve.err"; exit 1; }
cat "$work/wrk.out"
rps=$(sed -n 's/^Requests\/sec: *//p' "$work/wrk.out")
non2xx=$(sed -n 's/.*Non-2xx or 3xx responses: *//p' "$work/wrk.out")
errors=$(sed -n 's/.*Socket errors: *//p' "$work/wrk.out")
p50=$(awk '$1 == "50%" {print $2}' "$work/wrk.out")
p99=$(awk '$1 == "99%" {print $2}' "$work/wrk.out")
growth=$(((rss_after - rss_before) / 1024))
echo "server_load: ${SLOW_CLIENTS:-32} slow clients; ${rps} requests/s, p50 ${p50}, p99 ${p99}, non-2xx ${non2xx:-0}, socket errors ${errors:-none}," \
     "RSS ${rss_before} KiB before, ${rss_after} KiB after (${growth} MiB)"
if [ "$check" = "--check" ]; then
  fail=0
  [ -z "$non2xx" ] || { echo "server_load: FAIL: $non2xx non-2xx answers"; fail=1; }
  [ -z "$errors" ] || { echo "server_load: FAIL: socket errors: $errors"; fail=1; }
  [ "$growth" -le 32 ] || { echo "server_load: FAIL: RSS grew by $growth MiB"; fail=1; }
  exit $fail
fi
