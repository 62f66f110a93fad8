#!/usr/bin/env bash
# Two builds of the injection library side by side on bench_torch_ops (the op observer on): ROUNDS alternations of no
# injection, A's libxsp_inject.so and B's (each directory holding libxsp_inject.so and libxsp_torch_ops.so), THREADS
# threads of OPS ops each; medians, ranges, the costs over no injection and B/A paired by round.
#   bench/torch_ops_ab.sh A_DIR B_DIR [build dir] [rounds] [ops] [threads]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/torch_ops_ab.sh A_DIR B_DIR [build dir] [rounds] [ops] [threads]"; exit 2; }
a=$(realpath "$1")/libxsp_inject.so
b=$(realpath "$2")/libxsp_inject.so
build=${3:-build}
rounds=${4:-9}
ops=${5:-200000}
threads=${6:-1}
bin=$build/bench/bench_torch_ops
for f in "$a" "$b" "$bin"; do [ -e "$f" ] || { echo "torch_ops_ab.sh: $f is missing"; exit 1; }; done
parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT
off=() ta=() tb=()
run() { XSP_PROFILE_DIR=$parts XSP_PROFILE_TORCH_OPS=observer XSP_PROFILE_TRACE_LEVEL=kernel NVTX_INJECTION64_PATH=$1 \
  "$bin" "$ops" "$threads" | awk '{print $2}'; }
for ((i = 0; i < rounds; i++)); do
  off+=("$("$bin" "$ops" "$threads" | awk '{print $2}')")
  ta+=("$(run "$a")")
  tb+=("$(run "$b")")
  rm -f "$parts"/*
done
python3 - "${off[*]}" "${ta[*]}" "${tb[*]}" <<'PY'
import statistics, sys
off, a, b = ([float(x) for x in v.split()] for v in sys.argv[1:4])
def show(name, v):
    print(f"{name}: median {statistics.median(v):.1f} (min {min(v):.1f}, max {max(v):.1f}, n={len(v)})")
show("without injection, ns per op", off)
show("A, ns per op", a)
show("B, ns per op", b)
show("A's cost, ns per op (paired by round)", [x - o for o, x in zip(off, a)])
show("B's cost, ns per op (paired by round)", [x - o for o, x in zip(off, b)])
show("B / A (paired by round)", [y / x for x, y in zip(a, b)])
PY
