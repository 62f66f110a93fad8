#!/usr/bin/env bash
# CUDA graph attribution on a lent GPU (docs/cuda-graphs.md, BENCHMARKS.md "CUDA graphs"); run after
# scripts/gpu-build.sh (BUILD_TARGETS="xsp xsp_inject xsp_torch_ops" suffices). Everything lands in $OUT/graphs:
#  - ResNet-50 eager and --cuda-graphs, leveled to kernel level, batch 1 and 32 (one store: graphs.db);
#  - PyTorch's own eager and graph figures for the same model (graph_reference.py);
#  - a small ResNet-18 --cuda-graphs kernel-level store for tests/fixtures (resnet18_graphs_kernel.db);
#  - a Python program that replays a torch.cuda.graphs capture, under `xsp profile` and under torch.profiler.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
ART=$OUT/graphs
mkdir -p "$ART"
ITER=${ITER:-50}
ZOO=/tmp/zoo
X=./build-gpu/xsp
# PARTS picks sections (default all): eval ref fixture profile refused
want() { [[ " ${PARTS:-eval ref fixture profile refused} " == *" $1 "* ]]; }
python3 scripts/export_zoo.py --models resnet18,resnet50 --out $ZOO --record > "$ART/export.log" 2>&1
export XSP_ZOO=$ZOO XSP_STORE=$ART/graphs.db
for mode in eager graphs; do
  want eval || break
  flag=""; [ $mode = graphs ] && flag=--cuda-graphs
  /usr/bin/time -f "%e s %M KiB" $X evaluate resnet50 --device cuda --synthetic --batch-sizes 1,32 --trace-level kernel \
    --leveled --iterations "$ITER" --warmup 10 --no-progress $flag > "$ART/eval_resnet50_$mode.txt" 2>&1
  echo "evaluate resnet50 $mode rc=$?" >> "$ART/report.txt"
done
for b in 1 32; do
  want ref || break
  python3 scripts/gpu/graph_reference.py $ZOO/resnet50.pt $b 200 > "$ART/ref_resnet50_$b.json" 2>> "$ART/ref.err"
done
want fixture && XSP_STORE=$ART/resnet18_graphs_kernel.db $X evaluate resnet18 --device cuda --synthetic --batch-sizes 1 \
  --trace-level kernel --iterations 2 --warmup 3 --warmup-max-ms 0 --cuda-graphs --no-progress \
  > "$ART/eval_resnet18_fixture.txt" 2>&1
echo "fixture rc=$?" >> "$ART/report.txt"
want profile && XSP_STORE=$ART/graph_program_h200.db $X profile --trace-level kernel -- python3 scripts/gpu/graph_program.py 20 \
  > "$ART/profile_program.txt" 2>&1
echo "profile rc=$?" >> "$ART/report.txt"
want profile && python3 scripts/gpu/graph_program.py 20 torch > "$ART/program_torch.json" 2>> "$ART/ref.err"
# A model that cannot be captured (a host synchronization in its forward): the refusal names the op.
want refused && python3 scripts/gpu/sync_model.py "$ZOO" >> "$ART/report.txt" 2>&1
want refused && XSP_STORE=$ART/refused.db $X evaluate ResNet18Sync --device cuda --synthetic --batch-sizes 1 --iterations 2 \
  --cuda-graphs --no-progress > "$ART/eval_refused.txt" 2>&1
echo "refused rc=$? (expected non-zero)" >> "$ART/report.txt"
tail -3 "$ART/eval_refused.txt" >> "$ART/report.txt"
tar czf "$OUT/graphs.tgz" -C "$OUT" graphs
cat "$ART/report.txt"
