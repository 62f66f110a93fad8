#!/usr/bin/env bash
# The cost of one PyTorch op to the profiled program with XSP's op observer, side by side: ROUNDS alternations of
# bench_torch_ops (OPS cheap ops each) without injection, with libxsp_inject.so but ops from NVTX only
# (XSP_PROFILE_TORCH_OPS=nvtx), with the observer (XSP_PROFILE_TORCH_OPS=observer), and (one thread) under PyTorch's
# own profiler without injection (Kineto, CPU ops: what torch.profiler records); medians, ranges, differences.
# THREADS threads run OPS ops each at once (default 1).
#   bench/torch_ops.sh [build dir] [rounds] [ops] [threads]
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
ops=${3:-200000}
threads=${4:-1}
bin=$build/bench/bench_torch_ops
lib=$(realpath "$build/libxsp_inject.so")
[ -x "$bin" ] && [ -f "$build/libxsp_torch_ops.so" ] || { echo "torch_ops.sh: build $bin and libxsp_torch_ops.so first (LibTorch needed)"; exit 1; }
parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT
off=() nvtx=() obs=() kineto=()
for ((i = 0; i < rounds; i++)); do
  off+=("$("$bin" "$ops" "$threads" | awk '{print $2}')")
  nvtx+=("$(XSP_PROFILE_TORCH_OPS=nvtx XSP_PROFILE_TRACE_LEVEL=kernel NVTX_INJECTION64_PATH=$lib "$bin" "$ops" "$threads" | awk '{print $2}')")
  obs+=("$(XSP_PROFILE_DIR=$parts XSP_PROFILE_TORCH_OPS=observer XSP_PROFILE_TRACE_LEVEL=kernel NVTX_INJECTION64_PATH=$lib "$bin" "$ops" "$threads" | awk '{print $2}')")
  rm -f "$parts"/*
  if [ "$threads" = 1 ]; then kineto+=("$("$bin" "$ops" 1 torch-profiler | awk '/^ns_per_op/ {print $2}')"); fi
done
python3 - "${off[*]}" "${nvtx[*]}" "${obs[*]}" "${kineto[*]}" <<'PY'
import statistics, sys
off, nvtx, obs, kineto = ([float(x) for x in a.split()] for a in sys.argv[1:5])
def show(name, v):
    print(f"{name}: median {statistics.median(v):.1f} (min {min(v):.1f}, max {max(v):.1f}, n={len(v)})")
show("without injection, ns per op", off)
show("injection, ops from NVTX only, ns per op", nvtx)
show("injection with the op observer, ns per op", obs)
show("observer's cost, ns per op (paired by round)", [b - a for a, b in zip(off, obs)])
if kineto:
    show("torch.profiler (Kineto, CPU ops), ns per op", kineto)
    show("torch.profiler's cost, ns per op (paired by round)", [b - a for a, b in zip(off, kineto)])
    show("observer's cost / torch.profiler's (paired by round)", [(b - a) / (k - a) for a, b, k in zip(off, obs, kineto)])
PY
