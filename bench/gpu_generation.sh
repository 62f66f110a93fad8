#!/usr/bin/env bash
# Token generation on a GPU (issue 15; BENCHMARKS.md "Token generation"), on the lent GPU machine from the repository
# root, with .carry/debs (scripts/gpu-build.sh) and .carry/zoo (gpt2_tokenizer.model, gpt2_prompts.txt: the exported
# tokenizer and prompts, which the export then reuses instead of training them with a spm_train that machine lacks):
#
#   bench/gpu_generation.sh build       # build xsp, export the GPT-2 models of $MODELS with that machine's torch
#   bench/gpu_generation.sh compare     # XSP's M run vs scripts/generate_reference.py, alternating, $REPS times each
#   bench/gpu_generation.sh kernels     # a kernel-level run with tail traces, the p99 decode step, torch.profiler
#   bench/gpu_generation.sh all         # the three in one call (a lent machine is given back when idle)
#
# Settings: MODELS (default gpt2_small), BATCHES (default "1 8"), REPS (3), PROMPT (128), OUTPUT (128),
# REQUESTS (10 measured requests per run), DTYPE (fp32). Logs and results go to $OUT (default /tmp/xsp-gen).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/xsp-gen}
mkdir -p "$out"
models=${MODELS:-gpt2_small}
batches=${BATCHES:-1 8}
reps=${REPS:-3}
prompt=${PROMPT:-128}
output=${OUTPUT:-128}
requests=${REQUESTS:-10}
dtype=${DTYPE:-fp32}
zoo=build-gpu/zoo  # ignored by git: kept between calls on a warm machine
# Both sides pinned to the same cores: a decode step of a small model is CPU-bound (operator dispatch, launches), and
# moves between cores or their clocks changed one request's TPOT by up to 2x within a run (H100, 2026-11-24).
pin=${PIN-taskset -c 2-5}
xsp="build-gpu/xsp --zoo $zoo"
# Fixed counts: 3 warm-up and $requests measured requests, no duration rule (the reference does the same).
counts="--warmup 3 --warmup-min-ms 0 --warmup-max-ms 0 --iterations $requests --min-duration-ms 0 --max-duration-ms 0"

if [ "${1:-}" = all ]; then
  start=$(date +%s)
  for step in build compare kernels; do
    "$0" "$step" || exit 1
    echo "-- $step done at $(( $(date +%s) - start )) s"
  done
  exit 0
fi

case "${1:-}" in
  build)
    BUILD_TARGETS="xsp xsp_sentencepiece" scripts/gpu-build.sh > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
    mkdir -p "$zoo" && cp .carry/zoo/* "$zoo/"
    /usr/bin/env python3 scripts/export_zoo.py --models "${models// /,}" --out "$zoo" --record > "$out/export.log" 2>&1 \
      || { tail -40 "$out/export.log"; exit 1; }
    tail -5 "$out/export.log"
    ;;
  compare)
    refs=()
    for model in $models; do
      for bs in $batches; do
        for rep in $(seq "$reps"); do
          $pin $xsp --store "$out/compare.db" evaluate "$model" --device cuda --precision "$dtype" --synthetic \
            --batch-sizes "$bs" --prompt-tokens "$prompt" --output-tokens "$output" $counts > "$out/xsp-$model-$bs-$rep.log" 2>&1 \
            || { tail -20 "$out/xsp-$model-$bs-$rep.log"; exit 1; }
          $pin python3 scripts/generate_reference.py "$zoo/$model.pt" --device cuda --dtype "$dtype" --synthetic \
            --batch "$bs" --prompt-tokens "$prompt" --output-tokens "$output" --requests "$requests" --warmup 3 \
            > "$out/ref-$model-$bs-$rep.json" 2> "$out/ref-$model-$bs-$rep.log" || { tail -20 "$out/ref-$model-$bs-$rep.log"; exit 1; }
          refs+=("$out/ref-$model-$bs-$rep.json")
        done
      done
    done
    python3 bench/generation_check.py compare "$out/compare.db" "${refs[@]}" | tee "$out/compare.md"
    ;;
  kernels)
    for model in $models; do
      for bs in $batches; do
        db="$out/kernels-$model-$bs.db"
        $xsp --store "$db" evaluate "$model" --device cuda --precision "$dtype" --batch-sizes "$bs" \
          --prompt-tokens "$prompt" --output-tokens 64 --trace-level kernel --leveled --tail-steps 8 $counts \
          > "$out/kernels-$model-$bs.log" 2>&1 || { tail -20 "$out/kernels-$model-$bs.log"; exit 1; }
        $xsp --store "$db" trace export 1 --trace-level kernel --format sqlite -o "$out/kernels-$model-$bs.sqlite" \
          >> "$out/kernels-$model-$bs.log" 2>&1
        $xsp --store "$db" show 1 > "$out/show-$model-$bs.txt" 2>&1
        $xsp --store "$db" analyze 1 > "$out/analyze-$model-$bs.txt" 2>&1
        echo "== $model batch $bs"
        python3 bench/generation_check.py tail "$out/kernels-$model-$bs.sqlite" | tee "$out/tail-$model-$bs.txt"
        python3 bench/generation_check.py torchprof "$zoo/$model.pt" --batch "$bs" --prompt-tokens "$prompt" \
          | tee "$out/torchprof-$model-$bs.json"
      done
    done
    ;;
  *)
    echo "usage: bench/gpu_generation.sh build|compare|kernels|all" >&2
    exit 2
    ;;
esac
