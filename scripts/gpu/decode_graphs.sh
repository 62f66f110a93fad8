#!/usr/bin/env bash
# Decode steps under CUDA graphs on a lent GPU (issue 25; docs/cuda-graphs.md, BENCHMARKS.md "Decode steps under CUDA
# graphs"). Run from the repository root after scripts/gpu-build.sh (xsp, xsp_sentencepiece), with .carry/zoo.
# PARTS picks sections (default: all, in this order):
#   export    GPT-2 tiny and $MODEL TorchScript (scripts/export_zoo.py, with decode_static) into $ZOO
#   smoke     gpt2_tiny eager and --cuda-graphs: the same tokens (greedy, same prompts), and the refusals
#   compare   $MODEL: XSP eager, XSP --cuda-graphs, generate_reference.py eager and --cuda-graphs, alternating,
#             $REPS rounds per batch size; TTFT/TPOT of each XSP run against its reference
#   kernels   $MODEL at kernel level, eager and graphs (G4 kernels per decode step, layer attribution) and
#             torch.profiler's kernels per decode step in both modes (bench/generation_check.py torchprof)
#   fixture   a small gpt2_tiny --cuda-graphs kernel-level store for tests/fixtures/cuda_graphs
# Everything lands in $OUT/decode_graphs.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
ART=$OUT/decode_graphs
mkdir -p "$ART"
ZOO=${ZOO:-build-gpu/zoo}
MODEL=${MODEL:-gpt2_small}
REPS=${REPS:-2}
PROMPT=${PROMPT:-128}
OUTPUT=${OUTPUT:-64}
BATCHES=${BATCHES:-1 8}
X="./build-gpu/xsp --zoo $ZOO"
pin=${PIN-taskset -c 2-5}
want() { [[ " ${PARTS:-export smoke compare kernels fixture} " == *" $1 "* ]]; }
stamp() { echo "$(date +%T) $*" | tee -a "$ART/report.txt"; }
counts="--warmup 3 --warmup-min-ms 0 --warmup-max-ms 0 --iterations 10 --min-duration-ms 0 --max-duration-ms 0"

if want export; then
  mkdir -p "$ZOO" && cp .carry/zoo/* "$ZOO/"
  python3 scripts/export_zoo.py --models "gpt2_tiny,$MODEL" --out "$ZOO" --record > "$ART/export.log" 2>&1
  stamp "export rc=$? $(grep -c 'KV cache check passed' "$ART/export.log") cache checks passed"
fi
if want smoke; then
  for mode in eager graphs; do
    flag=""; [ $mode = graphs ] && flag=--cuda-graphs
    XSP_STORE=$ART/smoke.db $X evaluate gpt2_tiny --device cuda --batch-sizes 1,4 --prompt-tokens 16 --output-tokens 12 \
      --iterations 2 --warmup 1 --warmup-max-ms 0 --no-progress $flag > "$ART/smoke_$mode.txt" 2>&1
    stamp "smoke $mode rc=$?"
  done
  XSP_STORE=$ART/smoke.db $X show 1 > "$ART/smoke_show_1.txt" 2>&1
  XSP_STORE=$ART/smoke.db $X show 2 > "$ART/smoke_show_2.txt" 2>&1
  # Greedy tokens must not depend on the mode: the generation settings record each request's first tokens.
  python3 - "$ART/smoke.db" >> "$ART/report.txt" 2>&1 <<'EOF'
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = con.execute("SELECT id, settings FROM evaluations ORDER BY id").fetchall()
for i, s in rows:
    g = json.loads(s).get("generation", {})
    print("eval", i, "cuda_graphs", json.loads(s).get("request", {}).get("cuda_graphs"),
          "tokens", json.dumps(g.get("sample_tokens", g.get("first_tokens", "?")))[:300])
EOF
fi
if want compare; then
  for bs in $BATCHES; do
    for rep in $(seq "$REPS"); do
      for mode in eager graphs; do
        flag=""; [ $mode = graphs ] && flag=--cuda-graphs
        $pin $X --store "$ART/compare_$mode.db" evaluate "$MODEL" --device cuda --synthetic --batch-sizes "$bs" \
          --prompt-tokens "$PROMPT" --output-tokens "$OUTPUT" $counts --no-progress $flag \
          > "$ART/xsp_${mode}_${bs}_$rep.txt" 2>&1 || stamp "xsp $mode $bs rc=$?"
        $pin python3 scripts/generate_reference.py "$ZOO/$MODEL.pt" --device cuda --synthetic --batch "$bs" \
          --prompt-tokens "$PROMPT" --output-tokens "$OUTPUT" --requests 10 --warmup 3 $flag \
          > "$ART/ref_${mode}_${bs}_$rep.json" 2> "$ART/ref_${mode}_${bs}_$rep.err" || stamp "ref $mode $bs rc=$?"
      done
    done
  done
  for mode in eager graphs; do
    refs=()
    for bs in $BATCHES; do for rep in $(seq "$REPS"); do refs+=("$ART/ref_${mode}_${bs}_$rep.json"); done; done
    python3 bench/generation_check.py compare "$ART/compare_$mode.db" "${refs[@]}" > "$ART/compare_$mode.md" 2>&1
    stamp "compare $mode rc=$?"
  done
fi
if want kernels; then
  for mode in eager graphs; do
    flag=""; [ $mode = graphs ] && flag=--cuda-graphs
    for bs in $BATCHES; do
      db=$ART/kernels_${mode}_$bs.db
      XSP_STORE=$db $X evaluate "$MODEL" --device cuda --synthetic --batch-sizes "$bs" --prompt-tokens "$PROMPT" \
        --output-tokens 32 --trace-level kernel --leveled --tail-steps 8 --iterations 3 --warmup 2 --warmup-max-ms 0 \
        --no-progress $flag > "$ART/kernels_${mode}_$bs.txt" 2>&1
      stamp "kernels $mode $bs rc=$?"
      XSP_STORE=$db $X analyze 1 > "$ART/analyze_${mode}_$bs.txt" 2>&1
      XSP_STORE=$db $X trace export 1 --trace-level kernel --format sqlite -o "$ART/kernels_${mode}_$bs.sqlite" \
        > /dev/null 2>&1 && python3 bench/generation_check.py tail "$ART/kernels_${mode}_$bs.sqlite" \
        > "$ART/tail_${mode}_$bs.txt" 2>&1
      # Issue 25's bar: >= 99% of replayed kernels under a layer (an op that runs directly in a predict span).
      python3 - "$ART/kernels_${mode}_$bs.sqlite" >> "$ART/report.txt" 2>&1 <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
replayed = con.execute("SELECT COUNT(*), COUNT(k.layer_op_id) FROM kernels k WHERE k.span_id IN "
                       "(SELECT span_id FROM tags WHERE key = 'graph_id')").fetchone()
every = con.execute("SELECT COUNT(*), COUNT(layer_op_id) FROM kernels").fetchone()
print(f"{sys.argv[1]}: replayed {replayed[0]}, under a layer {replayed[1]}"
      f" ({100 * replayed[1] / max(replayed[0], 1):.2f}%); all device activities {every[0]}, under a layer {every[1]}")
PY
      XSP_STORE=$db $X show 1 > "$ART/show_${mode}_$bs.txt" 2>&1
      rm -f "$ART/kernels_${mode}_$bs.sqlite"
      python3 bench/generation_check.py torchprof "$ZOO/$MODEL.pt" --batch "$bs" --prompt-tokens "$PROMPT" \
        --output-tokens 32 $flag > "$ART/torchprof_${mode}_$bs.json" 2>&1
      stamp "torchprof $mode $bs: $(cat "$ART/torchprof_${mode}_$bs.json" | tail -1)"
    done
  done
fi
if want fixture; then
  XSP_STORE=$ART/gpt2_tiny_decode_graphs_h200.db $X evaluate gpt2_tiny --device cuda --synthetic --batch-sizes 1 \
    --prompt-tokens 8 --output-tokens 6 --trace-level kernel --iterations 2 --warmup 1 --warmup-max-ms 0 \
    --cuda-graphs --no-progress > "$ART/fixture.txt" 2>&1
  stamp "fixture rc=$? $(ls -la "$ART/gpt2_tiny_decode_graphs_h200.db" | awk '{print $5}') bytes"
  XSP_STORE=$ART/gpt2_tiny_decode_graphs_h200.db $X show 1 > "$ART/fixture_show.txt" 2>&1
fi
