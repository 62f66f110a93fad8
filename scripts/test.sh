#!/usr/bin/env bash
# Installs what is missing, builds and runs the whole test suite (CTest). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j2
