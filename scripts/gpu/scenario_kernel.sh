#!/usr/bin/env bash
# One call on a lent GPU machine (issue 30): LoadGen scenarios traced at kernel level. Builds the xsp CLI with
# CUPTI, exports ResNet-18, runs a Server scenario at --trace-level kernel (the tail queries traced down to their
# CUDA calls and kernels on the SUT's worker thread) and a SingleStream one at framework level for comparison,
# prints `xsp show` and the kernel analysis of the Server run, and leaves the store as a fixture:
# $OUT/server_kernel.db (copied to tests/fixtures/gpu/scenario_server_kernel_<gpu>.db).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nproc; } > "$OUT/env.txt" 2>&1
if ! BUILD_TARGETS=xsp scripts/gpu-build.sh > "$OUT/build.log" 2>&1; then
  tail -60 "$OUT/build.log"; exit 1
fi
ZOO=/tmp/zoo
python3 scripts/export_zoo.py --models resnet18 --out $ZOO --record > "$OUT/export.log" 2>&1 || { tail -30 "$OUT/export.log"; exit 1; }
export XSP_ZOO=$ZOO XSP_STORE=$OUT/server_kernel.db
./build-gpu/xsp evaluate resnet18 --device cuda --synthetic --scenario server --target-qps 200 \
  --latency-bound-ms 20 --min-duration-ms 3000 --min-queries 300 --trace-level kernel --trace-tail 3 --seed 5 \
  --no-progress > "$OUT/eval_server.txt" 2>&1
echo "server kernel rc=$?"
./build-gpu/xsp evaluate resnet18 --device cuda --synthetic --scenario single-stream --min-duration-ms 2000 \
  --min-queries 200 --trace-level framework --trace-tail 3 --no-progress > "$OUT/eval_single.txt" 2>&1
echo "single-stream framework rc=$?"
./build-gpu/xsp show 1 > "$OUT/show.txt" 2>&1; echo "show rc=$?"
./build-gpu/xsp analyze 1 > "$OUT/analyze.txt" 2>&1; echo "analyze rc=$?"
./build-gpu/xsp trace export 1 --run 1 -o "$OUT/server_kernel_trace.json" > /dev/null 2>&1; echo "export rc=$?"
tail -30 "$OUT/eval_server.txt"; head -60 "$OUT/show.txt"; grep -n "A10\|kernel" "$OUT/analyze.txt" | head -20
ls -la "$OUT"
