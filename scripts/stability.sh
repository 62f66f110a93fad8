#!/usr/bin/env bash
# Stability verification (BENCHMARKS.md "Stable latencies"), on a lent GPU machine by default: every zoo model at
# batch 1 and 32, leveled down to the kernel level, in separate processes; the same evaluations with the old fixed-count,
# sequential defaults (time to a result); the M run against a plain LibTorch loop in the same process
# (bench_framework_overhead). Stages, run in order in one call or split over calls that follow each other:
#
#   scripts/stability.sh build          # build-gpu/ and the exported zoo in /tmp/zoo
#   scripts/stability.sh evals 1 [2 3]  # one evaluation process per model and index
#   scripts/stability.sh old            # the pre-stability defaults, one process per model
#   scripts/stability.sh bench          # M run vs plain loop, interleaved blocks
#   scripts/stability.sh fixture        # small stores for CI (tests/fixtures/stability)
#   scripts/stability.sh report         # tables from the store (scripts/stability_report.py)
#
# On a CPU machine: DEVICE=cpu LEVEL=framework BATCHES=1,8 XSP=build/xsp BENCH=build/bench ZOO=build/test-zoo
# MODELS=digits_cnn,resnet18,mobilenet_v2 scripts/stability.sh evals 1 2 3 (zoo from scripts/export_zoo.py).
# Logs and results under $OUT/stab (the store itself is large: traces; the report carries the figures).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/xsp-out}
A=$OUT/stab
mkdir -p "$A"
ZOO=${ZOO:-/tmp/zoo}
STORE=${STORE:-/tmp/stab.db}
MODELS=${MODELS:-resnet18,resnet50,mobilenet_v2,vgg16,inception_v3,densenet121,vit_b_16,digits_cnn}
XSP=${XSP:-./build-gpu/xsp}
BENCH=${BENCH:-./build-gpu/bench}
DEVICE=${DEVICE:-cuda}
LEVEL=${LEVEL:-kernel}
BATCHES=${BATCHES:-1,32}

now() { date +%s.%N; }
elapsed() { python3 -c "print(round($(now) - $1, 2))"; }

stage=${1:-all}
shift || true
case $stage in
  build)
    { nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE | head -60; nproc; } > "$A/env.txt" 2>&1
    t0=$(now)
    if [ ! -x $XSP ]; then
      BUILD_TARGETS="xsp bench_framework_overhead" scripts/gpu-build.sh > "$A/build.log" 2>&1 || { tail -60 "$A/build.log"; exit 1; }
    fi
    echo "build_s=$(elapsed $t0)" | tee -a "$A/timing.txt"
    t0=$(now)
    if [ ! -f $ZOO/vit_b_16.pt ]; then
      # One exporter per model, in parallel (each starts its own interpreter anyway).
      for m in ${MODELS//,/ }; do
        python3 scripts/export_zoo.py --models $m --out $ZOO --record > "$A/export_$m.log" 2>&1 &
      done
      wait
      cat "$A"/export_*.log > "$A/export.log"; rm -f "$A"/export_*.log
      for m in ${MODELS//,/ }; do [ -f $ZOO/$m.pt ] || { tail -30 "$A/export.log"; exit 1; }; done
    fi
    echo "export_s=$(elapsed $t0)" | tee -a "$A/timing.txt"
    $XSP machine state > "$A/machine_state.txt" 2>&1
    $XSP machine state --json > "$A/machine_state.json" 2>&1
    ;;
  evals)
    # A machine that went cold between calls: continue the store carried back from the last call.
    [ -f $STORE ] || [ ! -f .carry/stab_stripped.db ] || cp .carry/stab_stripped.db $STORE
    for p in "$@"; do
      for m in ${MODELS//,/ }; do
        t0=$(now)
        $XSP --store $STORE --zoo $ZOO evaluate $m --device $DEVICE --synthetic --batch-sizes $BATCHES \
          --trace-level $LEVEL --leveled --trace-batches 3 --no-progress > "$A/eval_${m}_$p.txt" 2>&1
        echo "new $m $p rc=$? wall_s=$(elapsed $t0)" | tee -a "$A/timing.txt"
      done
    done
    ;;
  old)
    for m in ${MODELS//,/ }; do
      t0=$(now)
      $XSP --store $OUT/old.db --zoo $ZOO evaluate $m --device $DEVICE --synthetic --batch-sizes $BATCHES \
        --trace-level $LEVEL --leveled --warmup 3 --min-batches 10 --warmup-max-ms 0 --min-duration-ms 0 --max-duration-ms 0 \
        --level-order sequential --trace-batches 3 --no-progress > "$A/old_${m}.txt" 2>&1
      echo "old $m 1 rc=$? wall_s=$(elapsed $t0)" | tee -a "$A/timing.txt"
    done
    rm -f $OUT/old.db
    ;;
  bench)
    for m in ${BENCH_MODELS:-resnet50 mobilenet_v2 vit_b_16}; do
      timeout 300 $BENCH/bench_framework_overhead $ZOO/$m.pt $DEVICE ${BENCH_ROUNDS:-5} ${BENCH_BLOCK:-40} 1 \
        > "$A/bench_$m.txt" 2>&1
      echo "bench $m rc=$?" | tee -a "$A/timing.txt"
    done
    ;;
  fixture)
    mkdir -p "$A/fixture"
    rm -f "$A/fixture/"*.db
    $XSP --store "$A/fixture/resnet18_kernel_leveled_h100.db" --zoo $ZOO evaluate resnet18 --device cuda --synthetic \
      --batch-sizes 1 --trace-level kernel --leveled --trace-batches 1 --min-batches 12 --min-duration-ms 0 \
      --max-duration-ms 2000 --warmup-min-ms 300 \
      --no-progress > "$A/fixture/eval.txt" 2>&1
    echo "fixture rc=$?" | tee -a "$A/timing.txt"
    ;;
  report)
    python3 scripts/stability_report.py $STORE "$A/timing.txt" > "$A/report.md" 2>&1
    cat "$A/report.md"
    # The figures without the traces, small enough to come back (and to be carried to a fresh machine).
    python3 - "$STORE" "$A/stab_stripped.db" <<'PY'
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
db = sqlite3.connect(sys.argv[2])
db.execute("UPDATE runs SET trace = x''")
db.commit()
db.execute("VACUUM")
PY
    ;;
  *)
    echo "usage: $0 build|evals N...|old|bench|fixture|report" >&2
    exit 2
    ;;
esac
