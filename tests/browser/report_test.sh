#!/usr/bin/env bash
# The HTML report in a real browser (issue 13): `xsp report` on the recorded H200 kernel-level fixture and on CPU
# evaluations made here (a leveled framework sweep with accuracy, a scenario), then each file opened in headless
# Chromium with the network cut off; every chart must render with its expected marks (tests/browser/report_check.mjs).
# Screenshots are left in OUT_DIR. Exit 77 (skipped) without node, Chromium or tools/browser-check/node_modules.
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
check "$out/gpu_report.html" "$out/gpu_report.png" 8

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
  check "$out/cpu_framework_report.html" "$out/cpu_framework_report.png" 5
  "$xsp" "${common[@]}" report 3 -o "$out/cpu_scenario_report.html"
  check "$out/cpu_scenario_report.html" "$out/cpu_scenario_report.png" 1
  # Two evaluations: the comparison section and both evaluations' sections.
  "$xsp" "${common[@]}" report 1 2 -o "$out/compare_report.html"
  check "$out/compare_report.html" "$out/compare_report.png" 6
fi
echo "screenshots in $out"
