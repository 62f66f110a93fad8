#!/usr/bin/env bash
# One call on a lent GPU machine: build the CUDA build, run the CUPTI self-test, evaluate ResNet-50 and
# ViT-B/16 at trace level kernel (leveled M -> M/F -> M/F/K, batch 1 and 64), take PyTorch's own figures
# (plain timing loop, torch.profiler kernel counts/time) for the same models, and record fixtures.
# Everything lands in $OUT/gpu-verify.tgz; a short report is printed last.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
ART=$OUT/art
mkdir -p "$ART"
ITER=${ITER:-30}
{ nvidia-smi; nvcc --version; python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))";
  cmake --version | head -1; nproc; cat /etc/os-release | head -2; } > "$ART/env.txt" 2>&1
if ! scripts/gpu-build.sh > "$ART/build.log" 2>&1; then
  tail -60 "$ART/build.log"; tar czf "$OUT/gpu-verify.tgz" -C "$OUT" art; exit 1
fi
./build-gpu/xsp_cupti_selftest > "$ART/selftest.log" 2>&1; echo "selftest rc=$?" | tee -a "$ART/report.txt"
ZOO=/tmp/zoo
python3 scripts/export_zoo.py --models resnet18,resnet50,vit_b_16 --out $ZOO --record > "$ART/export.log" 2>&1
cp $ZOO/*.yaml "$ART/"
export XSP_STORE=$ART/gpu.db XSP_ZOO=$ZOO
for m in resnet50 vit_b_16; do
  ./build-gpu/xsp evaluate $m --device cuda --synthetic --batch-sizes 1,64 --trace-level kernel --leveled \
    --iterations $ITER --warmup 10 --no-progress > "$ART/eval_$m.txt" 2>&1
  echo "evaluate $m rc=$?" >> "$ART/report.txt"
  for b in 1 64; do
    python3 scripts/gpu/torch_reference.py $ZOO/$m.pt $b 50 > "$ART/torchref_${m}_$b.json" 2>> "$ART/torchref.err"
  done
done
for id in 1 2; do
  ./build-gpu/xsp analyze $id --analysis A1,A10,A11,A13,A15,gpu-idle,launch-stats > "$ART/analyze_$id.txt" 2>&1
  ./build-gpu/xsp analyze $id --analysis A1,A10,A11,A13,A15,gpu-idle,launch-stats,A8 --format json > "$ART/analyze_$id.json" 2>&1
done
./build-gpu/xsp trace export 1 --batch-size 1 --format chrome -o "$ART/resnet50_bs1_chrome.json" >> "$ART/report.txt" 2>&1
# Fixture: a small real evaluation (ResNet-18, batch 1, 2 batches per run) and its raw CUPTI records.
mkdir -p "$ART/fixture"
XSP_DUMP_GPU_ACTIVITY=$ART/fixture XSP_STORE=$ART/fixture/resnet18_kernel.db ./build-gpu/xsp evaluate resnet18 \
  --device cuda --synthetic --batch-sizes 1 --trace-level kernel --leveled --iterations 2 --warmup 3 --no-progress \
  > "$ART/fixture/eval.txt" 2>&1
echo "fixture rc=$?" >> "$ART/report.txt"
python3 scripts/gpu/report.py "$ART" >> "$ART/report.txt" 2>&1
tar czf "$OUT/gpu-verify.tgz" -C "$OUT" art
cat "$ART/report.txt"
head -40 "$ART/eval_resnet50.txt"
