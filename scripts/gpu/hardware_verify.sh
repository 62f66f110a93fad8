#!/usr/bin/env bash
# One call on a lent GPU machine (issue 4): build, counter self-test with setup timings, `xsp machine ceilings`,
# a leveled hardware-level evaluation of ResNet-50 (bs 1 and 64) with the counter analyses, a small ResNet-18
# fixture (store + raw counters), Nsight Compute on bs 1 with warm caches (--cache-control none, as XSP's user
# replay sees them) compared kernel by kernel, and the framework-overhead bench. Everything in $OUT/hw.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
A=$OUT/hw
mkdir -p "$A/fixture"
scripts/gpu-build.sh > "$A/build.log" 2>&1 || { tail -40 "$A/build.log"; tar czf "$OUT/hw.tgz" -C "$OUT" hw; exit 1; }
export XSP_ZOO=/tmp/zoo XSP_STORE=$A/hw.db
[ -f /tmp/zoo/resnet50.pt ] && [ -f /tmp/zoo/resnet18.pt ] ||
  python3 scripts/export_zoo.py --models resnet18,resnet50 --out /tmp/zoo --record > "$A/export.log" 2>&1
XSP_COUNTER_TIMING=1 timeout 120 ./build-gpu/xsp_counter_selftest > "$A/selftest.json" 2> "$A/selftest.err"
echo "selftest rc=$?" | tee -a "$A/report.txt"
timeout 120 ./build-gpu/xsp machine ceilings > "$A/ceilings.txt" 2>&1; echo "ceilings rc=$?" | tee -a "$A/report.txt"
./build-gpu/xsp machine ceilings --show --export "$A/ceilings.json" > /dev/null 2>&1
XSP_DUMP_COUNTERS=$A/dump timeout 200 ./build-gpu/xsp evaluate resnet50 --device cuda --synthetic --batch-sizes 1,64 \
  --trace-level hardware --leveled --iterations 30 --warmup 10 --no-progress > "$A/eval.txt" 2>&1
echo "evaluate rc=$?" | tee -a "$A/report.txt"
./build-gpu/xsp analyze 1 --analysis A8,A9,A12,A14,A15,roofline-hier > "$A/analyze.txt" 2>&1
./build-gpu/xsp analyze 1 --analysis A8,A9,A12,A14,A15,roofline-hier --format json > "$A/analyze.json" 2>&1
./build-gpu/xsp analyze 1 --analysis A9 --batch-size 1 --chart "$A/a9_bs1.vl.json" > /dev/null 2>&1
XSP_DUMP_COUNTERS=$A/fixture XSP_STORE=$A/fixture/resnet18_hw.db timeout 120 ./build-gpu/xsp evaluate resnet18 \
  --device cuda --synthetic --batch-sizes 1 --trace-level hardware --leveled --iterations 2 --warmup 3 --no-progress \
  > "$A/fixture/eval.txt" 2>&1
XSP_STORE=$A/fixture/resnet18_hw.db ./build-gpu/xsp machine ceilings --import "$A/ceilings.json" >> "$A/fixture/eval.txt" 2>&1
METRICS=$(./build-gpu/xsp_counter_selftest --metrics)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
t0=$(date +%s.%N)
XSP_STORE=/tmp/ncu.db timeout 170 "$NCU" --metrics "$METRICS" --clock-control none --cache-control none --csv --page raw \
  --print-units base ./build-gpu/xsp evaluate resnet50 --device cuda --synthetic --batch-sizes 1 --trace-level model \
  --iterations 1 --warmup 1 --no-progress > "$A/ncu_none.out" 2> "$A/ncu_none.err"
echo "ncu cache=none rc=$? wall_s=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" | tee -a "$A/report.txt"
tail -n +"$(grep -n '^"ID"' "$A/ncu_none.out" | head -1 | cut -d: -f1)" "$A/ncu_none.out" > "$A/ncu_none.csv"
python3 scripts/gpu/ncu_compare.py "$A/dump/counters_0.json" "$A/ncu_none.csv" --label "bs1 cache=none" > "$A/compare_none.json" 2>&1
timeout 150 ./build-gpu/bench/bench_framework_overhead /tmp/zoo/resnet50.pt cuda 5 40 1 > "$A/bench.txt" 2>&1
cat "$A/bench.txt" | tee -a "$A/report.txt"
rm -f "$A/ncu_none.out"
tar czf "$OUT/hw.tgz" -C "$OUT" hw
