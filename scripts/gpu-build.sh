#!/usr/bin/env bash
# Builds XSP with CUDA (CUPTI) and LibTorch on CUDA, on a GPU machine whose Python has PyTorch (e.g. the
# lent H100/H200, Ubuntu 24.04). LibTorch is PyTorch's own (torch.utils.cmake_prefix_path).
#
#   scripts/gpu-build.sh [DEBS_DIR]
#
# DEBS_DIR (default .carry/debs) holds Debian .debs of the dev packages such a machine lacks (nlohmann-json,
# CLI11, yaml-cpp, spdlog, fmt, SQLite, zstd, OpenSSL headers, SentencePiece); each one whose package is not
# installed is unpacked into /. Fill it on a Debian 12 machine with:
#   mkdir -p .carry/debs && (cd .carry/debs && apt-get download nlohmann-json3-dev libcli11-dev \
#     libyaml-cpp-dev libyaml-cpp0.7 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libsqlite3-dev \
#     libzstd-dev libssl-dev libgtest-dev libsentencepiece-dev libsentencepiece0)
# (libsentencepiece0 0.1.97 depends on libc6, libgcc-s1 and libstdc++6 only: its protobuf-lite is built in.)
# OpenCV is not needed there: without it the build takes synthetic inputs only (--synthetic).
set -euo pipefail
cd "$(dirname "$0")/.."
debs=${1:-.carry/debs}
if [ -d "$debs" ]; then
  for deb in "$debs"/*.deb; do
    pkg=$(dpkg-deb -f "$deb" Package)
    if ! dpkg -s "$pkg" >/dev/null 2>&1; then dpkg -x "$deb" /; echo "gpu-build: unpacked $pkg"; fi
  done
  ldconfig
fi
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DXSP_BUILD_TESTS=ON -DXSP_BUILD_BENCH=ON
cmake --build build-gpu -j"$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS}  # BUILD_TARGETS="xsp bench_framework_overhead": only those
