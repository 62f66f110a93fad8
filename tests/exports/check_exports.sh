#!/usr/bin/env bash
# Users' own readers on XSP's exports (docs/exports.md), through the real CLI:
#   tests/exports/check_exports.sh devtools XSP   # Chrome JSON in DevTools' trace engine: one track per GPU stream
#   tests/exports/check_exports.sh otlp XSP       # OTLP/JSON parsed strictly against the OpenTelemetry protos
# on the two-stream H100 self-test trace and on a copy of the H200 ResNet-18 kernel-level store. Exit 77 (CTest
# skips) when the pinned readers are not installed (scripts/install-deps.sh installs them).
set -euo pipefail
mode=${1:?usage: check_exports.sh devtools|otlp XSP}
xsp=${2:?usage: check_exports.sh devtools|otlp XSP}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src/tests/fixtures/gpu/resnet18_bs1_kernel_h200.db" "$tmp/K.db"  # a copy: opening migrates a store
two="$src/tests/fixtures/gpu/two_streams_h100.xspt"
case $mode in
  devtools)
    command -v node > /dev/null || { echo "skipped: node is not installed"; exit 77; }
    "$xsp" trace convert "$two" --format chrome -o "$tmp/two.json"
    node "$src/tests/exports/devtools_tracks.mjs" "$tmp/two.json" 2
    "$xsp" --store "$tmp/K.db" trace export 1 --format chrome -o "$tmp/k.json"
    node "$src/tests/exports/devtools_tracks.mjs" "$tmp/k.json" 1
    # ResNet-18 replayed from a CUDA graph: its replayed ops nest above the kernels on the stream.
    cp "$src/tests/fixtures/cuda_graphs/resnet18_graphs_kernel_h200.db" "$tmp/G.db"
    "$xsp" --store "$tmp/G.db" trace export 1 --format chrome -o "$tmp/g.json"
    node "$src/tests/exports/devtools_tracks.mjs" "$tmp/g.json" 1
    ;;
  otlp)
    "$xsp" trace convert "$two" --format otlp -o "$tmp/two.otlp.json"
    /usr/bin/python3 "$src/scripts/otlp_check.py" "$tmp/two.otlp.json"
    "$xsp" --store "$tmp/K.db" trace export 1 --format otlp -o "$tmp/k.otlp.json"
    /usr/bin/python3 "$src/scripts/otlp_check.py" --stored-run "$tmp/k.otlp.json"
    # The ids are the run's: a second export is the same trace, a second store's "evaluation 1" is not.
    "$xsp" --store "$tmp/K.db" trace export 1 --format otlp -o "$tmp/k2.otlp.json"
    cmp -s "$tmp/k.otlp.json" "$tmp/k2.otlp.json" || { echo "FAIL: two exports of one run differ"; exit 1; }
    cp "$src/tests/fixtures/gpu/resnet18_bs1_kernel_h200.db" "$tmp/K2.db"
    "$xsp" --store "$tmp/K2.db" trace export 1 --format otlp -o "$tmp/other.otlp.json"
    id() { grep -o '"traceId":"[0-9a-f]*"' "$1" | sort -u; }
    [ "$(id "$tmp/k.otlp.json")" != "$(id "$tmp/other.otlp.json")" ] ||
      { echo "FAIL: two stores' evaluation 1 share a trace id"; exit 1; }
    echo "two stores' evaluation 1: trace ids $(id "$tmp/k.otlp.json" | cut -c12-43) and $(id "$tmp/other.otlp.json" | cut -c12-43)"
    ;;
  *) echo "unknown check '$mode': expected devtools or otlp" >&2; exit 2 ;;
esac
