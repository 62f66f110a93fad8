#!/usr/bin/env bash
# Timing before and after a change to the run engine, side by side in one run (issue 30): the null-SUT LoadGen
# issue rate (bench_loadgen) and the batch sweep's M run against a plain LibTorch loop (bench_framework_overhead),
# the two builds alternating ALTERNATIONS times so that drift hits both alike.
#
#   bench/engine_side_by_side.sh OLD_BUILD NEW_BUILD MODEL.pt [ALTERNATIONS=3] [ROUNDS=3]
#
# OLD_BUILD and NEW_BUILD are build folders with bench/bench_loadgen and bench/bench_framework_overhead (e.g. a
# worktree of the commit before, `git worktree add /tmp/old <commit>`, built alike). Prints every invocation's
# lines; BENCHMARKS.md takes the medians and ranges.
set -euo pipefail
old=$1 new=$2 model=$3 alternations=${4:-3} rounds=${5:-3}
export OMP_NUM_THREADS=1
for ((i = 1; i <= alternations; ++i)); do
  for side in old new; do
    build=$([ "$side" = old ] && echo "$old" || echo "$new")
    echo "== $side loadgen (alternation $i)"
    "$build/bench/bench_loadgen" 1000000 3
    echo "== $side framework_overhead (alternation $i)"
    "$build/bench/bench_framework_overhead" "$model" cpu "$rounds" 10 1 224
  done
done
