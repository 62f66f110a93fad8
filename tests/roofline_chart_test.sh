#!/usr/bin/env bash
# The roofline chart through the real CLI, rendered with the pinned vega tools (tools/vega/package-lock.json):
#  1. `xsp analyze 1 --analysis A9 --chart` on a copy of the recorded H200 ResNet-18 run writes a Vega-Lite spec
#     and says how many kernels it drew and left out (84 drawn, 18 without FLOPs);
#  2. vl2vg + vg2svg render it to SVG (vega-cli without its native `canvas` module), rsvg-convert to PNG; the PNG
#     must be a real picture (PNG signature, at least 600x400 pixels, over 20 KB) and the SVG must carry every
#     ceiling's label and no "table" legend;
#  3. on an evaluation without counters (the recorded kernel-level run) --chart fails: non-zero exit, an error
#     naming the evaluation and why, and no file.
# Usage: roofline_chart_test.sh XSP_BINARY SOURCE_DIR WORK_DIR [PNG_COPY]
# PNG_COPY (optional): where to copy the rendered PNG (docs/img/roofline_resnet18_h200.png).
# Exit 77 (CTest SKIP_RETURN_CODE) when tools/vega/node_modules or rsvg-convert is missing.
set -euo pipefail
xsp=$1 src=$2 work=$3 png_copy=${4:-}
vega="$src/tools/vega/node_modules/.bin"
if [ ! -x "$vega/vl2vg" ] || [ ! -x "$vega/vg2svg" ]; then
  echo "SKIP: $src/tools/vega/node_modules is missing (vl2vg, vg2svg): run scripts/install-deps.sh, which runs" \
       "npm ci --prefix tools/vega"
  exit 77
fi
if ! command -v rsvg-convert > /dev/null; then
  echo "SKIP: rsvg-convert not found: install librsvg2-bin (scripts/install-deps.sh)"
  exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
# A copy: opening a store migrates it, and the committed fixture must stay as it is.
cp "$src/tests/fixtures/counters/resnet18_bs1_hardware_h200.db" "$work/H.db"
"$xsp" --store "$work/H.db" analyze 1 --analysis A9 --format csv --chart "$work/roofline.vl.json" \
  > "$work/a9.csv" 2> "$work/stderr" || fail "xsp analyze --chart exited $?: $(cat "$work/stderr")"
cat "$work/stderr"
grep -q "84 of 102 kernels drawn" "$work/stderr" || fail "stderr does not say 84 of 102 kernels drawn"
grep -q "18 of 102 kernels left out (log axes have no place for them): 18 with no FLOPs" "$work/stderr" ||
  fail "stderr does not say which kernels were left out"
grep -q "18 of 102 kernels left out" "$work/roofline.vl.json" || fail "the chart's subtitle lacks the left-out note"

"$vega/vl2vg" "$work/roofline.vl.json" > "$work/roofline.vg.json"
"$vega/vg2svg" "$work/roofline.vg.json" > "$work/roofline.svg"
rsvg-convert --background-color=white -o "$work/roofline.png" "$work/roofline.svg"

# PNG: signature, then IHDR width and height (big-endian, bytes 16..23).
[ "$(od -An -tx1 -N8 "$work/roofline.png" | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "not a PNG"
read -r w0 w1 w2 w3 h0 h1 h2 h3 < <(od -An -tu1 -j16 -N8 "$work/roofline.png")
width=$(( (w0 << 24) | (w1 << 16) | (w2 << 8) | w3 )) height=$(( (h0 << 24) | (h1 << 16) | (h2 << 8) | h3 ))
size=$(stat -c %s "$work/roofline.png")
echo "roofline.png: ${width}x${height}, $size bytes"
[ "$width" -ge 600 ] && [ "$height" -ge 400 ] || fail "PNG is ${width}x${height}, expected at least 600x400"
[ "$size" -gt 20000 ] || fail "PNG is $size bytes: too small to hold the chart"

# SVG: every ceiling labelled (H200 ceilings of the fixture), the left-out note, no "table" legend entry.
for label in "L1 25.2 TB/s" "L2 7.33 TB/s" "DRAM 4.01 TB/s" "fp32 peak 64.7 TFLOP/s" "arithmetic intensity at DRAM" \
             "performance (FLOP/s)" "18 of 102 kernels left out"; do
  grep -qF "$label" "$work/roofline.svg" || fail "SVG lacks '$label'"
done
if grep -qE ">table<" "$work/roofline.svg"; then fail "SVG has a 'table' legend"; fi
# Consistent SI ticks on the FLOP/s axis: no 1e+14 or 200,000,000,000 style labels.
if grep -qE ">[0-9.]+e\+[0-9]+<|>[0-9]{1,3}(,[0-9]{3}){2,}<" "$work/roofline.svg"; then
  fail "SVG has exponent or comma-grouped tick labels"
fi

# No point to draw: an error naming the evaluation and why, a non-zero exit, and no file.
cp "$src/tests/fixtures/gpu/resnet18_bs1_kernel_h200.db" "$work/K.db"
if "$xsp" --store "$work/K.db" analyze 1 --analysis A9 --chart "$work/empty.vl.json" > /dev/null 2> "$work/empty.err"; then
  fail "--chart on an evaluation without counters succeeded"
fi
cat "$work/empty.err"
grep -q "evaluation 1 (ResNet18): no kernel to draw on the A9 roofline" "$work/empty.err" || fail "error lacks the evaluation"
grep -q "hardware counters were not collected" "$work/empty.err" || fail "error does not say why"
[ ! -e "$work/empty.vl.json" ] || fail "a chart file was written for an evaluation without points"

if [ -n "$png_copy" ]; then cp "$work/roofline.png" "$png_copy"; echo "copied to $png_copy"; fi
echo "PASS"
