#!/usr/bin/env bash
# One call on a lent GPU machine (issue 30): token generation at --trace-level hardware. Builds the xsp CLI with
# CUPTI, exports GPT-2 tiny and small, and runs a generation evaluation of each at hardware level (a timed kernel
# run, then a counter run: every kernel replayed once per metric pass inside its launch), printing G4 (kernels per
# step) and G5 (counters per step). The tiny run's store is the fixture: $OUT/generation_counters.db (copied to
# tests/fixtures/gpu/generation_counters_<gpu>.db).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nproc; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
if ! BUILD_TARGETS=xsp scripts/gpu-build.sh > "$OUT/build.log" 2>&1; then
  tail -60 "$OUT/build.log"; exit 1
fi
echo "build $(( $(date +%s) - t0 )) s"
ZOO=/tmp/zoo
# The GPT-2 tokenizer and prompts, trained on Debian (Ubuntu's spm_train is not Debian's 0.1.97): export_zoo reuses
# them when their checksums match the manifests'. Make them with scripts/export_zoo.py --models gpt2_tiny on Debian.
mkdir -p $ZOO && cp .carry/zoo-text/* $ZOO/ 2>/dev/null
python3 scripts/export_zoo.py --models gpt2_tiny,gpt2_small --out $ZOO --record > "$OUT/export.log" 2>&1 || { tail -30 "$OUT/export.log"; exit 1; }
export XSP_ZOO=$ZOO
run() {  # store model prompt output
  local t=$(date +%s)
  XSP_STORE=$1 ./build-gpu/xsp evaluate "$2" --device cuda --synthetic --trace-level hardware --prompt-tokens "$3" \
    --output-tokens "$4" --iterations 5 --warmup 2 --warmup-min-ms 0 --warmup-max-ms 0 --min-duration-ms 0 \
    --max-duration-ms 0 --counter-iterations 2 --seed 3 --no-progress > "$OUT/eval_$2.txt" 2>&1
  echo "$2 hardware rc=$? in $(( $(date +%s) - t )) s"
  XSP_STORE=$1 ./build-gpu/xsp analyze 1 --analysis G4,G5 > "$OUT/analyze_$2.txt" 2>&1; echo "analyze rc=$?"
  XSP_STORE=$1 ./build-gpu/xsp show 1 > "$OUT/show_$2.txt" 2>&1
}
run "$OUT/generation_counters.db" gpt2_tiny 16 6
run "$OUT/generation_counters_small.db" gpt2_small 64 8
for m in gpt2_tiny gpt2_small; do echo "== $m"; tail -5 "$OUT/eval_$m.txt"; cat "$OUT/analyze_$m.txt" | head -60; done
rm -f "$OUT/generation_counters_small.db"
ls -la "$OUT"
