#!/usr/bin/env bash
# One call on a lent GPU machine (issue 4 verification): build, counter self-test (cuBLAS GEMMs of known FLOPs)
# and machine ceilings, a leveled hardware-level evaluation of ResNet-50 (bs 1 and 64) with its raw counters
# dumped, then Nsight Compute with the same metrics on the same program (timed) and a kernel-by-kernel comparison.
# NCU_BATCHES (default "1") picks the batch sizes given to ncu; SKIP_BUILD=1 reuses build-gpu.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
ART=$OUT/art
mkdir -p "$ART"
ZOO=/tmp/zoo
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if ! scripts/gpu-build.sh > "$ART/build.log" 2>&1; then tail -40 "$ART/build.log"; exit 1; fi
  ./build-gpu/xsp_counter_selftest > "$ART/counter_selftest.json" 2> "$ART/counter_selftest.err"
  echo "counter selftest rc=$?" | tee -a "$ART/report.txt"
  python3 scripts/export_zoo.py --models resnet50 --out $ZOO --record > "$ART/export.log" 2>&1
  export XSP_ZOO=$ZOO
  /usr/bin/time -v env XSP_STORE=$ART/hw.db XSP_DUMP_COUNTERS=$ART/dump ./build-gpu/xsp evaluate resnet50 \
    --device cuda --synthetic --batch-sizes 1,64 --trace-level hardware --leveled --iterations 30 --warmup 10 \
    --no-progress > "$ART/eval_hw.txt" 2> "$ART/eval_hw.err"
  echo "evaluate hardware rc=$?" | tee -a "$ART/report.txt"
  XSP_STORE=$ART/hw.db ./build-gpu/xsp show 1 > "$ART/show.txt" 2>&1
fi
export XSP_ZOO=$ZOO
METRICS=$(./build-gpu/xsp_counter_selftest --metrics)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for b in ${NCU_BATCHES:-1}; do
  prog=(./build-gpu/xsp evaluate resnet50 --device cuda --synthetic --batch-sizes $b --trace-level model
        --iterations 1 --warmup 1 --no-progress)
  t0=$(date +%s.%N); XSP_STORE=/tmp/base_$b.db "${prog[@]}" > /dev/null 2>&1; t1=$(date +%s.%N)
  for cache in ${NCU_CACHE:-all}; do
    t2=$(date +%s.%N)
    XSP_STORE=/tmp/ncu_$b.db timeout ${NCU_TIMEOUT:-200} "$NCU" --metrics "$METRICS" --clock-control none \
      --cache-control $cache --csv --page raw --print-units base "${prog[@]}" > "$ART/ncu_${b}_$cache.out" 2> "$ART/ncu_${b}_$cache.err"
    rc=$?; t3=$(date +%s.%N)
    grep -n '^"ID"' "$ART/ncu_${b}_$cache.out" | head -1 | cut -d: -f1 > /tmp/hdr
    tail -n +"$(cat /tmp/hdr)" "$ART/ncu_${b}_$cache.out" > "$ART/ncu_${b}_$cache.csv"
    kernels=$(grep -c '^"[0-9]' "$ART/ncu_${b}_$cache.csv")
    echo "ncu bs=$b cache=$cache rc=$rc wall_s=$(python3 -c "print(round($t3 - $t2, 2))") plain_program_s=$(python3 -c "print(round($t1 - $t0, 2))") kernels_profiled=$kernels" | tee -a "$ART/report.txt"
    idx=$([ "$b" = 1 ] && echo 0 || echo 1)
    python3 scripts/gpu/ncu_compare.py "$ART/dump/counters_$idx.json" "$ART/ncu_${b}_$cache.csv" --label "bs$b cache=$cache" \
      > "$ART/compare_${b}_$cache.json" 2>&1
    head -c 1500 "$ART/compare_${b}_$cache.json"; echo
  done
done
python3 - "$ART" <<'PY' | tee -a "$ART/report.txt"
import json, sys, glob, os
art = sys.argv[1]
for f in sorted(glob.glob(os.path.join(art, "dump", "counters_*.json"))):
    c = json.load(open(f))
    print(os.path.basename(f), "ranges", len(c["ranges"]), "launches", len(c["launches"]), "passes", c["passes"],
          "dropped", c["dropped_ranges"], "chip", c["chip"])
PY
grep -E "collection|counters\." "$ART/show.txt" | head -20 | tee -a "$ART/report.txt"
tar czf "$OUT/counters.tgz" -C "$OUT" art
