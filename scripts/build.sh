#!/usr/bin/env bash
# Configures and builds XSP into build/ (Release). Extra arguments go to cmake's configure step.
# BUILD_TARGETS="xsp": build only those targets (the main job, scripts/setup.sh); unset: everything, tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
# shellcheck disable=SC2086  # BUILD_TARGETS is a list of target names
cmake --build build -j"$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
