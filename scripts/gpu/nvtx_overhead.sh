#!/usr/bin/env bash
# Per-forward cost of framework-level tracing on a PyTorch program (BENCHMARKS.md "NVTX injection"): ROUNDS
# alternations of plain, emit_nvtx without a tool, emit_nvtx with libxsp_inject.so, and torch.profiler (CPU ops), one
# process each (no XSP_PROFILE_DIR: the ranges are recorded, not written; writing happens at exit, outside the timed
# blocks); then bench_nvtx_inject's per-range cost on this host.
#   scripts/gpu/nvtx_overhead.sh [build dir] [rounds]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
lib=$(realpath "$build/libxsp_inject.so")
for ((i = 0; i < rounds; i++)); do
  python3 scripts/gpu/nvtx_overhead.py plain
  python3 scripts/gpu/nvtx_overhead.py nvtx | sed 's/^nvtx/nvtx_no_tool/'
  NVTX_INJECTION64_PATH=$lib python3 scripts/gpu/nvtx_overhead.py nvtx | sed 's/^nvtx/nvtx_xsp_inject/'
  python3 scripts/gpu/nvtx_overhead.py profiler
done
if [ -x "$build/bench/bench_nvtx_inject" ]; then bench/nvtx_inject.sh "$build" 9 100000; fi
