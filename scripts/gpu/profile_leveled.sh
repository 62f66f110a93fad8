#!/usr/bin/env bash
# `xsp profile --leveled --repeat N` on a GPU (BENCHMARKS.md "Leveled runs of a profiled command"): a PyTorch program
# (scripts/gpu/profile_ops.py, emit_nvtx with shapes, one "step" range per step) run M, M/F, M/F/K per round by the
# real xsp binary (build-gpu/, scripts/gpu-build.sh), every process pinned to CPUS. Writes under OUT, per model:
#   MODEL.show     `xsp show` of the evaluation (samples per level with intervals, overheads)
#   MODEL.json     the same as JSON
#   MODEL.out      the program's stdout: one JSON object per run, with its own step times (perf_counter_ns)
#   MODEL.err      xsp's and the program's stderr
# Usage: scripts/gpu/profile_leveled.sh OUT REPEAT STEPS WARMUP CPUS MODEL...
#   WARMUP: steps each process runs before its recorded ones (outside every range), so that the GPU's clocks have
#   left idle before the first "step" (they fall between processes)
set -euo pipefail
out=$1 repeat=$2 steps=$3 warmup=$4 cpus=$5
shift 5
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
for model in "$@"; do
  db=$out/$model.db
  start=$(date +%s)
  taskset -c "$cpus" build-gpu/xsp --store "$db" profile --inject-library build-gpu/libxsp_inject.so \
    --leveled --repeat "$repeat" --sample-range step -- \
    python3 scripts/gpu/profile_ops.py "$model" nvtx "$steps" "$warmup" >"$out/$model.out" 2>"$out/$model.err" || true
  echo "$model: $(( $(date +%s) - start )) s" >>"$out/times.txt"
  build-gpu/xsp --store "$db" show 1 >"$out/$model.show" 2>&1 || true
  build-gpu/xsp --store "$db" show 1 --format json >"$out/$model.json" 2>&1 || true
  rm -f "$db" "$db"-wal "$db"-shm
done
