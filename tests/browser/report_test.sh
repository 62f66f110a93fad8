#!/usr/bin/env bash
# The HTML report in a real browser (issue 13): `xsp report` on the recorded H200 kernel-level fixture and on CPU
# evaluations made here (a leveled framework sweep with accuracy, a scenario, a detection and a segmentation model),
# then each file opened in headless Chromium with the network cut off; every chart must render with its expected
# marks (tests/browser/report_check.mjs). Screenshots are left in OUT_DIR. Exit 77 (skipped) without node, Chromium
# or tools/browser-check/node_modules.
# Usage: report_test.sh XSP SOURCE_DIR OUT_DIR [TEST_ZOO]
set -euo pipefail
xsp=$1 src=$2 out=$3 zoo=${4:-}
source "$src/tests/browser/needs_browser.sh"

rm -rf "$out" && mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { timeout 300 node "$src/tests/browser/report_check.mjs" "$@"; }

# A GPU evaluation: the committed fixture, copied (opening a store may migrate it).
cp "$src/tests/fixtures/gpu/resnet18_bs1_kernel_h200.db" "$tmp/gpu.db"
"$xsp" --store "$tmp/gpu.db" report 1 -o "$out/gpu_report.html"
check "$out/gpu_report.html" "$out/gpu_report.png" 8 gpu

if [[ -n $zoo && -f $zoo/digits_cnn.yaml ]]; then
  store=$tmp/cpu.db
  common=(--zoo "$zoo" --store "$store")
  "$xsp" "${common[@]}" evaluate digits_cnn --synthetic --trace-level framework --leveled --batch-sizes 1,8 \
    --warmup-min-ms 50 --min-duration-ms 200 --no-progress >/dev/null
  "$xsp" "${common[@]}" evaluate digits_cnn --dataset digits --accuracy --batch-sizes 1,8 \
    --warmup-min-ms 50 --min-duration-ms 200 --no-progress >/dev/null
  "$xsp" "${common[@]}" evaluate digits_cnn --synthetic --scenario server --target-qps 200 --min-queries 100 \
    --min-duration-ms 300 --no-progress >/dev/null
  "$xsp" "${common[@]}" report 1 -o "$out/cpu_framework_report.html"
  check "$out/cpu_framework_report.html" "$out/cpu_framework_report.png" 5 sweep
  "$xsp" "${common[@]}" report 3 -o "$out/cpu_scenario_report.html"
  check "$out/cpu_scenario_report.html" "$out/cpu_scenario_report.png" 1 scenario
  # Two evaluations: the comparison section and both evaluations' sections.
  "$xsp" "${common[@]}" report 1 2 -o "$out/compare_report.html"
  check "$out/compare_report.html" "$out/compare_report.png" 6 compare
fi
# A generation run (gpt2_tiny, leveled to framework): G1–G3, the token distributions and the p99 decode step.
if [[ -n $zoo && -f $zoo/gpt2_tiny.yaml ]]; then
  "$xsp" --zoo "$zoo" --store "$tmp/gen.db" evaluate gpt2_tiny --trace-level framework --leveled --batch-sizes 1,2 \
    --warmup-min-ms 50 --min-duration-ms 200 --no-progress >/dev/null
  "$xsp" --store "$tmp/gen.db" report 1 -o "$out/generation_report.html"
  check "$out/generation_report.html" "$out/generation_report.png" 8 generation
fi
# Task models (docs/tasks.md) on the zoo's photos: the "Outputs" charts draw the detections' boxes (10 of the
# SSDlite's 100) and the LR-ASPP's mask (56x56 cells), each with its expected marks, after A1 (a MODEL-level run has
# no timeline: one bar);
# bert_tiny's (batch size 2) the bars of its top classes.
if [[ -n $zoo && -f $zoo/ssdlite_mobilenet_v3.yaml && -f $zoo/lraspp_mobilenet_v3.yaml ]]; then
  store=$tmp/tasks.db
  quick=(--iterations 2 --warmup 1 --warmup-min-ms 0 --warmup-max-ms 0 --min-duration-ms 0 --max-duration-ms 0
         --no-progress)
  for model in ssdlite_mobilenet_v3 lraspp_mobilenet_v3; do
    "$xsp" --zoo "$zoo" --store "$store" evaluate "$model" --batch-sizes 1 "${quick[@]}" >/dev/null
  done
  "$xsp" --store "$store" report 1 -o "$out/detection_report.html"
  check "$out/detection_report.html" "$out/detection_report.png" 2
  grep -q '<h3>Outputs</h3>' "$out/detection_report.html"
  "$xsp" --store "$store" report 2 -o "$out/segmentation_report.html"
  check "$out/segmentation_report.html" "$out/segmentation_report.png" 2
  grep -q '<h3>Outputs</h3>' "$out/segmentation_report.html"
  if [[ -f $zoo/bert_tiny.yaml ]]; then  # text classification: one bar per class, for each of the batch's 2 inputs
    "$xsp" --zoo "$zoo" --store "$store" evaluate bert_tiny --batch-sizes 2 "${quick[@]}" >/dev/null
    "$xsp" --store "$store" report 3 -o "$out/text_report.html"
    check "$out/text_report.html" "$out/text_report.png" 3
  fi
fi
# A serving benchmark (xsp bench-serve, built with its HTTP client: XSP_TEST_BENCH_SERVE=1) against the benchmark
# server's fake engine: a two-point sweep's sentences, tables, distributions (4 per point) and throughput-latency curve.
if [[ ${XSP_TEST_BENCH_SERVE:-0} == 1 ]]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 "$src/scripts/gpu/serve_hf.py" --port "$port" --fake-prefill-ms 5 --fake-decode-ms 1 >/dev/null 2>&1 &
  server=$!
  trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT
  for _ in $(seq 100); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=1)" \
      2>/dev/null && break
    sleep 0.1
  done
  "$xsp" --store "$tmp/serve.db" bench-serve --url "http://127.0.0.1:$port/v1" --model llama-bench --synthetic \
    --prompt-tokens 16:16 --output-tokens 8 --num-requests 8 --sweep request-rate=20,40 >/dev/null
  kill "$server"
  "$xsp" --store "$tmp/serve.db" report 1 -o "$out/serving_report.html"
  check "$out/serving_report.html" "$out/serving_report.png" 9
  grep -q 'At request-rate 20: 8 of 8 requests' "$out/serving_report.html"
fi
echo "screenshots in $out"
