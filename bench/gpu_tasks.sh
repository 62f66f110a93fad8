#!/usr/bin/env bash
# Detection, segmentation and text models on a GPU (issue 15; BENCHMARKS.md "Detection, segmentation and text models
# on a GPU"), on the lent GPU machine from the repository root, with .carry/debs (scripts/gpu-build.sh) and
# .carry/zoo-tasks: the CI-size exports made on the CPU machine (ssdlite_mobilenet_v3.pt, lraspp_mobilenet_v3.pt,
# bert_tiny.pt, with their manifests and labels, gpt2_tokenizer.model and gpt2_prompts.txt; LibTorch 2.x loads
# torch 1.13's TorchScript, so the committed checksums hold). bert_base (350 MB) is exported there, with that
# machine's torch, reusing the carried tokenizer.
#
# For each model and batch size: a leveled kernel run (M, M/F, M/F/K), its trace exported to SQLite, and
# bench/tasks_check.py's kernel count and kernel time per batch against torch.profiler's for the same predict step.
# Settings: MODELS, BATCHES (default "1 8"), ITER (20 measured batches per run). Results under $OUT (default
# /tmp/xsp-tasks), packed into $OUT/tasks.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/xsp-tasks}
art=$out/art
mkdir -p "$art"
models=${MODELS:-ssdlite_mobilenet_v3 lraspp_mobilenet_v3 bert_tiny bert_base}
batches=${BATCHES:-1 8}
iter=${ITER:-20}
zoo=build-gpu/zoo-tasks
xsp="build-gpu/xsp --zoo $zoo"
start=$(date +%s)
BUILD_TARGETS="xsp xsp_sentencepiece" scripts/gpu-build.sh > "$art/build.log" 2>&1 || { tail -40 "$art/build.log"; exit 1; }
echo "-- built at $(( $(date +%s) - start )) s"
mkdir -p "$zoo" && cp .carry/zoo-tasks/* "$zoo/"
if [[ " $models " == *" bert_base "* ]]; then
  python3 scripts/export_zoo.py --models bert_base --out "$zoo" --record > "$art/export.log" 2>&1 \
    || { tail -20 "$art/export.log"; models=${models//bert_base/}; }
  echo "-- exported at $(( $(date +%s) - start )) s"
fi
for model in $models; do
  # The GPU build has no OpenCV (no image decoder): image models take synthetic inputs there, as the CNNs do.
  case $model in
    ssdlite*) shape=(--image 3,320,320); inputs=--synthetic ;;
    lraspp*) shape=(--image 3,224,224); inputs=--synthetic ;;
    bert_tiny) shape=(--text 64); inputs= ;;
    bert_base) shape=(--text 128); inputs= ;;
  esac
  for bs in $batches; do
    db="$art/$model-$bs.db"
    $xsp --store "$db" evaluate "$model" $inputs --device cuda --batch-sizes "$bs" --trace-level kernel --leveled \
      --warmup 5 --warmup-min-ms 0 --warmup-max-ms 0 --iterations "$iter" --min-duration-ms 0 --max-duration-ms 0 \
      --no-progress > "$art/eval-$model-$bs.log" 2>&1 || { tail -20 "$art/eval-$model-$bs.log"; continue; }
    $xsp --store "$db" trace export 1 --trace-level kernel --format sqlite -o "$art/$model-$bs.sqlite" >> "$art/eval-$model-$bs.log" 2>&1
    $xsp --store "$db" show 1 > "$art/show-$model-$bs.txt" 2>&1
    echo "== $model batch $bs"
    python3 bench/tasks_check.py xsp "$art/$model-$bs.sqlite" | tee "$art/xsp-$model-$bs.json"
    python3 bench/tasks_check.py torchprof "$zoo/$model.pt" --batch "$bs" "${shape[@]}" | tee "$art/torch-$model-$bs.json"
    rm -f "$art/$model-$bs.sqlite"
  done
  echo "-- $model done at $(( $(date +%s) - start )) s"
done
tar czf "$out/tasks.tgz" -C "$out" art
