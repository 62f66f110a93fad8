#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan, build-fuzz/) and runs each for SECONDS
# (default 60) on a seed corpus made from the zoo and the test fixtures, after replaying the inputs of
# fuzz/regressions/TARGET/ (crashes found before). Usage: scripts/fuzz.sh [SECONDS] [SEED]
# SEED (default 1) makes a run repeatable; 0 lets libFuzzer pick one.
# Prints per target the executions, their rate and the coverage (libFuzzer's "cov" edges and "ft" features); a
# crash, a sanitizer report, a leak, a timeout (> 10 s on one input) or an out-of-memory (> 2 GB) fails it, with
# the input saved under build-fuzz/artifacts/ (turn it into a regression test).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
seed=${2:-1}
command -v clang++ > /dev/null || { echo "fuzz: clang++ is missing (Debian: clang, libclang-rt-14-dev)"; exit 1; }
mkdir -p build-fuzz
log_build=build-fuzz/build.log
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXSP_FUZZ=ON \
  -DXSP_BUILD_TESTS=OFF -DXSP_BUILD_BENCH=OFF -DXSP_WITH_LIBTORCH=OFF -DXSP_WITH_OPENCV_DNN=OFF \
  -DXSP_WITH_ONNXRUNTIME=OFF -DXSP_WITH_CUPTI=OFF -DXSP_WITH_OPENCV=OFF > $log_build 2>&1 ||
  { tail -30 $log_build; exit 1; }
targets=(semver manifest ceilings record request)
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >> $log_build 2>&1 ||
  { grep -E "error" $log_build | head -30; exit 1; }

# Seeds: what these parsers read in real use.
seeds=build-fuzz/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{semver,manifest,ceilings,record,request} build-fuzz/artifacts
for m in models/*.yaml tests/fixtures/manifests/*.yaml; do cp "$m" "$seeds/manifest/"; done
i=0
for m in models/*.yaml; do
  v=$(sed -n 's/^version: *//p' "$m" | head -1)
  c=$(sed -n 's/^ *version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$m" | sed -n 2p)
  printf '%s\n%s' "$v" "${c:->=1.0}" > "$seeds/semver/$((i++))"
done
cp tests/fixtures/counters/ceilings_h200.json "$seeds/ceilings/"
cp tests/fixtures/requests/*.json "$seeds/request/"
cp tests/fixtures/gpu/two_streams_h100.xspt "$seeds/record/"
for db in tests/fixtures/gpu/resnet18_bs1_kernel_h200.db tests/fixtures/counters/resnet18_bs1_hardware_h200.db \
          tests/fixtures/stability/zoo_kernel_leveled_h100.db; do
  base=$(basename "$db" .db)
  # Read-only and immutable: the committed fixture is never migrated or changed.
  sqlite3 "file:$db?immutable=1" "SELECT writefile('$seeds/record/${base}_trace_' || id || '.bin', trace)
                                  FROM runs WHERE length(trace) < 200000;" > /dev/null
  sqlite3 "file:$db?immutable=1" "SELECT writefile('$seeds/record/${base}_measurement_' || id || '.json', measurement)
                                  FROM runs WHERE measurement IS NOT NULL;" > /dev/null 2>&1 || true
done

status=0
printf '%-10s %10s %10s %8s %8s %7s %s\n' target executions exec/s cov ft corpus result
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  log=build-fuzz/$t.log
  set +e
  if compgen -G "fuzz/regressions/$t/*" > /dev/null; then
    if ! "build-fuzz/fuzz/fuzz_$t" -timeout=10 -rss_limit_mb=2048 fuzz/regressions/"$t"/* > "$log" 2>&1; then
      echo "$t: a regression input fails again (see $log)"; grep -m5 -E "ERROR|SUMMARY|Running:" "$log"; status=1
      continue
    fi
  fi
  "build-fuzz/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -seed="$seed" -artifact_prefix=build-fuzz/artifacts/"$t"- "$corpus" "$seeds/$t" > "$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  last=$(grep -E "^#[0-9]+" "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  files=$(find "$corpus" -type f | wc -l)
  result=ok
  if [ "$rc" -ne 0 ]; then result="FAILED (rc $rc, see $log)"; status=1; grep -m5 -E "ERROR|SUMMARY|==[0-9]+==" "$log" || true; fi
  printf '%-10s %10s %10s %8s %8s %7s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$files" "$result"
done
exit $status
