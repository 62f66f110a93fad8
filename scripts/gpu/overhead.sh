#!/usr/bin/env bash
# Overhead measurement on a lent GPU (after scripts/gpu-build.sh): per-op and per-kernel cost of XSP's profilers
# on ResNet-50 (bench_framework_overhead: plain / framework / kernel modes in alternating blocks), the leveled
# evaluation M -> M/F -> M/F/K, and PyTorch's own figures for the same model. Output under $OUT/ov.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
A=$OUT/ov
mkdir -p "$A"
[ -x build-gpu/xsp ] || scripts/gpu-build.sh > "$A/build.log" 2>&1 || { tail -40 "$A/build.log"; exit 1; }
ZOO=/tmp/zoo
python3 scripts/export_zoo.py --models resnet50,vit_b_16 --out $ZOO --record > "$A/export.log" 2>&1
./build-gpu/xsp_cupti_selftest > "$A/selftest.txt" 2>&1; echo "selftest rc=$?" >> "$A/selftest.txt"
for m in resnet50 vit_b_16; do
  ./build-gpu/bench/bench_framework_overhead $ZOO/$m.pt cuda 5 40 1 > "$A/bench_$m.txt" 2>&1
done
XSP_CUPTI_API_SOURCE=activity ./build-gpu/bench/bench_framework_overhead $ZOO/resnet50.pt cuda 5 40 1 \
  > "$A/bench_resnet50_activity.txt" 2>&1
export XSP_STORE=$A/ov.db XSP_ZOO=$ZOO
for m in resnet50 vit_b_16; do
  ./build-gpu/xsp evaluate $m --device cuda --synthetic --batch-sizes 1,64 --trace-level kernel --leveled \
    --iterations 50 --warmup 10 --no-progress > "$A/eval_$m.txt" 2>&1
done
./build-gpu/xsp analyze 1 --analysis A15,launch-stats > "$A/analyze_1.txt" 2>&1
./build-gpu/xsp analyze 2 --analysis A15,launch-stats > "$A/analyze_2.txt" 2>&1
for m in resnet50 vit_b_16; do for b in 1 64; do python3 scripts/gpu/torch_reference.py $ZOO/$m.pt $b 100 > "$A/torchref_${m}_$b.json" 2>/dev/null; done; done
tail -3 "$A/selftest.txt"
for f in "$A"/bench_*.txt "$A"/eval_*.txt; do echo "### $f"; cat "$f"; done
grep -A4 "^A15\|launch statistics" "$A"/analyze_*.txt | cut -c1-200
cat "$A"/torchref_*.json
