#!/usr/bin/env bash
# Wall time of one counter run of a profiled command against the size of the counter data image
# (XSP_COUNTER_MAX_RANGES), BENCHMARKS.md "Hardware counters of a profiled command". On a GPU machine, after
# BUILD_TARGETS="xsp_inject" scripts/gpu-build.sh:
#   bench/counter_image_size.sh ROUNDS SIZE...      e.g. bench/counter_image_size.sh 2 2048 128
# Runs scripts/gpu/profile_ops.py resnet50 nvtx 1 under libxsp_inject.so at trace level hardware, capture nvtx:step,
# once per size per round, the sizes' order reversed every other round; prints "round size wall_s ranges".
set -euo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
lib=$PWD/build-gpu/libxsp_inject.so
rounds=$1
shift
sizes=("$@")
for ((r = 0; r < rounds; r++)); do
  order=("${sizes[@]}")
  if ((r % 2 == 1)); then mapfile -t order < <(printf '%s\n' "${sizes[@]}" | tac); fi
  for n in "${order[@]}"; do
    dir=$(mktemp -d)
    t0=$(date +%s.%N)
    NVTX_INJECTION64_PATH=$lib CUDA_INJECTION64_PATH=$lib XSP_PROFILE_TRACE_LEVEL=hardware XSP_PROFILE_DIR=$dir \
      XSP_CAPTURE_RANGE=step XSP_COUNTER_MAX_RANGES=$n XSP_DUMP_COUNTERS=$dir/dump \
      python3 scripts/gpu/profile_ops.py resnet50 nvtx 1 > /dev/null
    t1=$(date +%s.%N)
    ranges=$(python3 -c "import json,glob; print(len(json.load(open(glob.glob('$dir/dump/*.json')[0]))['ranges']))")
    echo "$r $n $(python3 -c "print(round($t1 - $t0, 2))") $ranges"
    rm -rf "$dir"
  done
done
