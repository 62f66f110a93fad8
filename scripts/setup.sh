#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is missing, build, export the default model
# (ResNet-50) and evaluate it at trace level `framework` with leveled runs, stored in the default SQLite store.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --main
# Only what the main job runs: the test command (scripts/test.sh) builds the rest.
BUILD_TARGETS=xsp scripts/build.sh
/usr/bin/python3 scripts/export_zoo.py --models resnet50
./build/xsp evaluate resnet50 --batch-sizes 1,2 --trace-level framework --leveled --analysis A1,A2,A6
