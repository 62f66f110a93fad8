#!/usr/bin/env bash
# One call on a lent GPU machine for the export checks (docs/exports.md): builds xsp and the CUPTI self-test,
# records the two-stream self-test trace (fixture tests/fixtures/gpu/two_streams_h100.xspt), evaluates ResNet-18 at
# trace level kernel and exports its trace in every format. Everything lands in $OUT/exports.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
ART=$OUT/exports
mkdir -p "$ART"
nvidia-smi -L > "$ART/env.txt" 2>&1
if ! BUILD_TARGETS="xsp xsp_cupti_selftest" scripts/gpu-build.sh > "$ART/build.log" 2>&1; then
  tail -40 "$ART/build.log"; tar czf "$OUT/exports.tgz" -C "$OUT" exports; exit 1
fi
./build-gpu/xsp_cupti_selftest 1 $ART/two_streams_h100.xspt > "$ART/selftest.log" 2>&1
echo "selftest rc=$?" | tee "$ART/report.txt"
ZOO=/tmp/zoo
python3 scripts/export_zoo.py --models resnet18 --out $ZOO --record > "$ART/export_zoo.log" 2>&1
export XSP_STORE=$ART/resnet18_kernel.db XSP_ZOO=$ZOO
./build-gpu/xsp evaluate resnet18 --device cuda --synthetic --batch-sizes 1 --trace-level kernel --leveled \
  --trace-batches 4 --warmup-min-ms 300 --min-duration-ms 300 --max-duration-ms 1500 --no-progress > "$ART/eval.txt" 2>&1
echo "evaluate rc=$?" | tee -a "$ART/report.txt"
for f in chrome otlp sqlite; do
  ./build-gpu/xsp trace export 1 --format $f -o "$ART/resnet18_kernel.$f" >> "$ART/report.txt" 2>&1
done
./build-gpu/xsp show 1 > "$ART/show.txt" 2>&1
# Kineto's own trace of the same model and predict step, for HTA side by side (scripts/hta_check.py --kineto).
python3 scripts/gpu/kineto_trace.py $ZOO/resnet18.pt 1 "$ART/resnet18_kineto.json" 4 >> "$ART/report.txt" 2>&1
echo "kineto rc=$?" | tee -a "$ART/report.txt"
tar czf "$OUT/exports.tgz" -C "$OUT" exports
cat "$ART/report.txt"; grep -E "ok|FAIL|PASS" "$ART/selftest.log" | tail -25
