#!/usr/bin/env bash
# Splits CUPTI's per-kernel cost on a lent GPU (after or including scripts/gpu-build.sh): the bench's
# kernel-only mode (device activity records only) vs the full M/F/K mode, with the timestamp callback (default)
# and with XSP_CUPTI_CLOCK=offset, and with API activity records (XSP_CUPTI_API_SOURCE=activity).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
A=$OUT/split
mkdir -p "$A"
[ -x build-gpu/xsp ] || scripts/gpu-build.sh > "$A/build.log" 2>&1 || { tail -40 "$A/build.log"; exit 1; }
python3 scripts/export_zoo.py --models resnet50 --out /tmp/zoo --record > "$A/export.log" 2>&1
B="./build-gpu/bench/bench_framework_overhead /tmp/zoo/resnet50.pt cuda 5 40 1"
$B > "$A/default.txt" 2>&1
XSP_CUPTI_CLOCK=offset $B > "$A/offset_clock.txt" 2>&1
XSP_CUPTI_API_SOURCE=activity $B > "$A/activity_api.txt" 2>&1
$B > "$A/default_again.txt" 2>&1
for f in default offset_clock activity_api default_again; do echo "### $f"; cat "$A/$f.txt"; done
