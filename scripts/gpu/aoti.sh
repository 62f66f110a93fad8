#!/usr/bin/env bash
# AOTInductor packages and Hugging Face static-cache LLMs on a lent GPU (issue 26; docs/models.md, BENCHMARKS.md
# "AOTInductor packages"). Run from the repository root with .carry/debs and .carry/zoo (gpt2_tokenizer.model,
# gpt2_prompts.txt). PARTS picks sections (default: all, in this order):
#   build     scripts/gpu-build.sh (xsp, the SentencePiece tokenizer library)
#   export    TorchScript resnet50 (export_zoo.py) and the .pt2 packages of $MODELS (export_hf.py), into $ZOO
#   smoke     each exported model once through xsp evaluate
#   classify  ResNet-50 .pt2 vs TorchScript: M runs and kernel-level runs at batch 1 and 32; the plain loops on the
#             same two files (bench/aoti_reference classify for the package, torch_reference.py for TorchScript) with
#             their profiler's kernels per inference (Kineto in C++ for the package, torch.profiler for TorchScript)
#   generate  $LLM: XSP's M run vs the plain C++ loop over the same package (bench/aoti_reference generate; Python's
#             loader crashed on packages), alternating, $REPS pairs per batch size; Kineto's kernels per step
#   hfgen     $LLM: XSP's M run vs transformers' own generate() on the same model and static cache
#             (scripts/gpu/hf_generate_reference.py, modes eager and compiled), alternating, $REPS pairs per batch size
#   kernels   $LLM at kernel level (G3, G4)
#   fixture   small kernel-level fixture stores of llama_tiny_hf (prefill and decode steps) and resnet18
# Everything lands in $OUT/aoti.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
ART=$OUT/aoti
mkdir -p "$ART"
ZOO=${ZOO:-build-gpu/zoo}
MODELS=${MODELS:-resnet18,resnet50,llama_tiny_hf,llama_1b_hf}
LLM=${LLM:-llama_1b_hf}
PREC=${PREC:-bf16}  # the precision $LLM was compiled for (its manifest's precisions)
REPS=${REPS:-3}
PROMPT=${PROMPT:-512}
OUTPUT=${OUTPUT:-128}
X="./build-gpu/xsp --zoo $ZOO"
want() { [[ " ${PARTS:-build export smoke classify generate hfgen kernels fixture} " == *" $1 "* ]]; }
PIN=${PIN-taskset -c 2-5}  # both sides of a comparison on the same cores
stamp() { echo "$(date +%T) $*" | tee -a "$ART/report.txt"; }
counts="--warmup 3 --warmup-min-ms 0 --warmup-max-ms 0 --iterations 10 --min-duration-ms 0 --max-duration-ms 0"

if want build; then
  BUILD_TARGETS="xsp xsp_sentencepiece" scripts/gpu-build.sh > "$ART/build.log" 2>&1
  stamp "build rc=$? $(grep -o 'aotinductor predictor [A-Z]*' build-gpu/CMakeCache.txt "$ART/build.log" | head -1)"
  cmake --build build-gpu -j"$(nproc)" --target aoti_reference > "$ART/build_ref.log" 2>&1
  stamp "build aoti_reference rc=$?"
fi
if want export; then
  mkdir -p "$ZOO" && cp models/*.yaml models/*.txt "$ZOO/" && cp .carry/zoo/* "$ZOO/"
  [ -n "${SKIP_ZOO:-}" ] || python3 scripts/export_zoo.py --models resnet18,resnet50 --out "$ZOO" --record > "$ART/export_zoo.log" 2>&1
  stamp "export_zoo rc=$?"
  python3 scripts/export_hf.py --models "$MODELS" --device cuda --out "$ZOO" --manifests "$ZOO" --record \
    > "$ART/export_hf.json" 2> "$ART/export_hf.log"
  stamp "export_hf rc=$? $(tail -1 "$ART/export_hf.log")"
  cp "$ZOO"/*_hf.yaml "$ZOO"/resnet18.yaml "$ZOO"/resnet50.yaml "$ART/" 2>/dev/null
fi
if want smoke; then
  for m in ${MODELS//,/ }; do
    case $m in
      llama_1b_hf) args="--precision bf16 --synthetic --batch-sizes 1 --prompt-tokens 16 --output-tokens 8 --iterations 2 --warmup 1" ;;
      *_hf) args="--synthetic --batch-sizes 1 --prompt-tokens 16 --output-tokens 8 --iterations 2 --warmup 1" ;;
      *) args="--synthetic --batch-sizes 1,8 --iterations 5 --warmup 2" ;;
    esac
    XSP_STORE=$ART/smoke.db $X evaluate "$m" --framework aotinductor --device cuda $args --no-progress \
      > "$ART/smoke_$m.txt" 2>&1
    stamp "smoke $m rc=$? $(grep -m1 -i 'error' "$ART/smoke_$m.txt")"
  done
fi
if want classify; then
  for fw in aotinductor libtorch; do
    XSP_STORE=$ART/classify.db $X evaluate resnet50 --framework $fw --device cuda --synthetic --batch-sizes 1,32 \
      --iterations 50 --warmup 10 --no-progress > "$ART/classify_m_$fw.txt" 2>&1
    stamp "classify M $fw rc=$?"
    XSP_STORE=$ART/classify.db $X evaluate resnet50 --framework $fw --device cuda --synthetic --batch-sizes 1,32 \
      --trace-level kernel --iterations 10 --warmup 5 --no-progress > "$ART/classify_k_$fw.txt" 2>&1
    stamp "classify K $fw rc=$?"
  done
  for b in 1 32; do
    ./build-gpu/bench/aoti_reference classify "$ZOO/resnet50.pt2" --batch $b --iterations 200 --warmup 20 \
      > "$ART/ref_pt2_$b.json" 2>> "$ART/ref.err"
    ./build-gpu/bench/aoti_reference classify "$ZOO/resnet50.pt2" --batch $b --iterations 10 --warmup 5 --kineto \
      > "$ART/kineto_pt2_$b.json" 2>> "$ART/ref.err"
    python3 scripts/gpu/torch_reference.py "$ZOO/resnet50.pt" $b 50 > "$ART/ref_pt_$b.json" 2>> "$ART/ref.err"
    stamp "references batch $b: $(cat "$ART/kineto_pt2_$b.json")"
  done
  XSP_STORE=$ART/classify.db $X analyze 3 --analysis A8 > "$ART/analyze_k_aoti.txt" 2>&1
fi
if want generate; then
  refs=()
  for bs in 1 8; do
    for rep in $(seq "$REPS"); do
      XSP_STORE=$ART/generate.db $PIN $X evaluate "$LLM" --device cuda --precision "$PREC" --synthetic --batch-sizes $bs \
        --prompt-tokens "$PROMPT" --output-tokens "$OUTPUT" $counts --no-progress > "$ART/gen_xsp_${bs}_$rep.txt" 2>&1 \
        || stamp "xsp $LLM $bs rc=$?"
      $PIN ./build-gpu/bench/aoti_reference generate "$ZOO/$LLM.pt2" --batch $bs \
        --prompt-tokens "$PROMPT" --output-tokens "$OUTPUT" --requests 10 --warmup 3 \
        > "$ART/gen_ref_${bs}_$rep.json" 2> "$ART/gen_ref_${bs}_$rep.err" || stamp "ref $LLM $bs rc=$?"
      refs+=("$ART/gen_ref_${bs}_$rep.json")
    done
  done
  python3 bench/generation_check.py compare "$ART/generate.db" "${refs[@]}" > "$ART/generate_compare.md" 2>&1
  stamp "generate compare rc=$?"
  for bs in 1 8; do
    [ "${KINETO:-1}" = 1 ] || break
    ./build-gpu/bench/aoti_reference generate "$ZOO/$LLM.pt2" --batch $bs --prompt-tokens "$PROMPT" \
      --output-tokens 32 --requests 3 --warmup 2 --kineto > "$ART/kineto_gen_$bs.json" 2>> "$ART/ref.err"
    stamp "kineto $LLM batch $bs: $(cat "$ART/kineto_gen_$bs.json")"
  done
  XSP_STORE=$ART/generate.db $X analyze 1 --analysis G3 > "$ART/g3.txt" 2>&1
fi
if want hfgen; then
  for mode in eager compiled; do eval "refs_$mode=()"; done
  for bs in 1 8; do
    for rep in $(seq "$REPS"); do
      XSP_STORE=$ART/hfgen.db $PIN $X evaluate "$LLM" --device cuda --precision "$PREC" --synthetic --batch-sizes $bs \
        --prompt-tokens "$PROMPT" --output-tokens "$OUTPUT" $counts --no-progress > "$ART/hfgen_xsp_${bs}_$rep.txt" 2>&1 \
        || stamp "xsp $LLM $bs rc=$?"
      $PIN python3 scripts/gpu/hf_generate_reference.py "$LLM" --batch $bs --prompt-tokens "$PROMPT" \
        --output-tokens "$OUTPUT" --requests 10 --warmup 3 --out-prefix "$ART/hfgen_ref_${bs}_$rep" \
        > "$ART/hfgen_ref_${bs}_$rep.log" 2>&1
      stamp "hfgen $bs rep $rep rc=$? $(tail -2 "$ART/hfgen_ref_${bs}_$rep.log" | tr '\n' ' ')"
      refs_eager+=("$ART/hfgen_ref_${bs}_${rep}_eager.json")
      refs_compiled+=("$ART/hfgen_ref_${bs}_${rep}_compiled.json")
    done
  done
  python3 bench/generation_check.py compare "$ART/hfgen.db" "${refs_eager[@]}" > "$ART/hfgen_compare_eager.md" 2>&1
  stamp "hfgen compare eager rc=$?"
  python3 bench/generation_check.py compare "$ART/hfgen.db" "${refs_compiled[@]}" > "$ART/hfgen_compare_compiled.md" 2>&1
  stamp "hfgen compare compiled rc=$?"
fi
if want kernels; then
  XSP_STORE=$ART/gen_kernel.db $X evaluate "$LLM" --device cuda --precision "$PREC" --synthetic --batch-sizes 1,8 --prompt-tokens "$PROMPT" \
    --output-tokens 32 --trace-level kernel --leveled --iterations 3 --warmup 2 --warmup-max-ms 0 --no-progress \
    > "$ART/gen_kernel.txt" 2>&1
  stamp "gen kernel rc=$?"
  XSP_STORE=$ART/gen_kernel.db $X analyze 1 > "$ART/gen_kernel_analyze.txt" 2>&1
fi
if want fixture; then
  XSP_STORE=$ART/llama_tiny_hf_kernel_h200.db $X evaluate llama_tiny_hf --device cuda --synthetic --batch-sizes 1 \
    --prompt-tokens 16 --output-tokens 4 --trace-level kernel --iterations 2 --warmup 1 --warmup-max-ms 0 \
    --no-progress > "$ART/fixture_llama.txt" 2>&1
  stamp "fixture llama rc=$?"
  XSP_STORE=$ART/resnet18_aoti_kernel_h200.db $X evaluate resnet18 --framework aotinductor --device cuda --synthetic \
    --batch-sizes 1 --trace-level kernel --iterations 2 --warmup 2 --warmup-max-ms 0 --no-progress \
    > "$ART/fixture_resnet18.txt" 2>&1
  stamp "fixture resnet18 rc=$?"
fi
ls -la "$ART" >> "$ART/report.txt"
