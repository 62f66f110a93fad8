#!/usr/bin/env bash
# The cost of one NVTX range to the profiled program, without and with the injection library, side by side:
# ROUNDS alternations of bench_nvtx_inject (PAIRS push/pop pairs of two nested ranges each), medians and ranges.
#   bench/nvtx_inject.sh [build dir] [rounds] [pairs]
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
pairs=${3:-100000}
bin=$build/bench/bench_nvtx_inject
lib=$build/libxsp_inject.so
[ -x "$bin" ] && [ -f "$lib" ] || { echo "nvtx_inject.sh: build $bin and $lib first (NVTX v3 headers needed)"; exit 1; }
off=() on=()
for ((i = 0; i < rounds; i++)); do
  off+=("$("$bin" "$pairs" | awk '{print $2}')")
  on+=("$(NVTX_INJECTION64_PATH=$(realpath "$lib") "$bin" "$pairs" | awk '{print $2}')")
done
python3 - "${off[*]}" "${on[*]}" <<'PY'
import statistics, sys
off = [float(x) for x in sys.argv[1].split()]
on = [float(x) for x in sys.argv[2].split()]
ratio = [b / a for a, b in zip(off, on)]
def show(name, v, unit):
    print(f"{name}: median {statistics.median(v):.1f}{unit} (min {min(v):.1f}, max {max(v):.1f}, n={len(v)})")
show("without injection, ns per range", off, "")
show("with libxsp_inject.so, ns per range", on, "")
show("difference, ns per range", [b - a for a, b in zip(off, on)], "")
PY
