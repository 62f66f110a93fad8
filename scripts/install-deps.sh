#!/usr/bin/env bash
# Installs the Debian 12 packages XSP needs, only those missing. Usage: scripts/install-deps.sh
set -euo pipefail
packages=(
  build-essential cmake git pkg-config ca-certificates
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev sqlite3 libzstd-dev libssl-dev
  libopencv-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev python3-torch python3-torchvision
  python3-onnx python3-sklearn
  librsvg2-bin
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Chart rendering (tests/roofline_chart_test.sh, docs/roofline.md): vega, vega-lite and vega-cli at the exact
# versions of tools/vega/package-lock.json. --ignore-scripts: vega-cli's optional PNG backend (the `canvas` native
# module) is not built; SVG comes from vg2svg and PNG from rsvg-convert (librsvg2-bin above).
vega_dir="$(cd "$(dirname "$0")/.." && pwd)/tools/vega"
if [ -d "$vega_dir/node_modules" ]; then
  echo "install-deps: $vega_dir/node_modules present"
elif command -v npm > /dev/null; then
  npm ci --prefix "$vega_dir" --ignore-scripts --no-audit --no-fund
else
  echo "install-deps: npm not found: the roofline chart rendering test will be skipped"
fi
