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
  python3-pandas
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
