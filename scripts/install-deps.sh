#!/usr/bin/env bash
# Installs the Debian 12 packages XSP needs, only those missing.
# Usage: scripts/install-deps.sh [--main]
#   --main: only what the main job (scripts/setup.sh) builds and runs: the compiler, the libraries `xsp` links,
#           PyTorch for the model export and the report's Vega; not the test suite's tools (GoogleTest, Chromium,
#           PostgreSQL, clang, pandas, ...), which the test command (scripts/test.sh) installs.
set -euo pipefail
main_only=false
if [[ ${1:-} == --main ]]; then main_only=true; fi
packages=(
  build-essential cmake git pkg-config ca-certificates
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev sqlite3 libzstd-dev libssl-dev
  libopencv-dev
  libstb-dev                          # stb_image: an input image's size read from its header, refused before decoding
  libtorch-dev python3-torch python3-torchvision
  python3-onnx python3-sklearn
  libcpp-httplib-dev                  # `xsp serve`: the HTTP server (docs/server.md); without it XSP builds without serve
  libcurl4-openssl-dev                # `xsp bench-serve`: the HTTP client (docs/serving.md); without it no bench-serve
  libpqxx-dev                         # the PostgreSQL store and job queue (docs/deploy.md); without it SQLite only
  sentencepiece libsentencepiece-dev  # GPT-2's tokenizer: spm_train (scripts/export_zoo.py) and the C++ tokenizer
)
$main_only || packages+=(
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-protobuf protobuf-compiler  # scripts/otlp_check.py, tests/exports/check_pftrace.py: OTLP and .pftrace exports parsed
  librsvg2-bin                        # rsvg-convert: the roofline chart's SVG to PNG (tests/roofline_chart_test.sh)
  python3-pandas                      # tests/tables/pandas_tables.py: CSV/JSON tables as pandas reads them
  clang libclang-rt-14-dev            # scripts/fuzz.sh: libFuzzer, ASan and UBSan runtimes
  clang-format clang-tidy             # scripts/check_style.sh (CI): .clang-format layout, .clang-tidy function size
  chromium                            # tests/browser: the HTML report and web UI in a real, headless browser
  wrk                                 # bench/server_load.sh (CTest server_load): the server under load and slow clients
  postgresql-15                       # tests/pg: a throw-away PostgreSQL server the tests start as a non-root user
  slurmctld slurmd slurm-client munge # tests/slurm: a throw-away single-host Slurm 22.05 for `--engine slurm` (issue 28)
  python3-sentencepiece               # scripts/generate_reference.py: the prompts tokenized as XSP does
)
# Node.js and npm run the pinned JavaScript readers (tools/*/package-lock.json); a Node.js that brings its own npm
# (NodeSource's) is kept.
command -v npm > /dev/null || packages+=(nodejs npm)
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

# The npm packages, at the versions package-lock.json pins, when missing or older than the lock file:
# tools/trace-check (DevTools' trace engine, OpenTelemetry's protos), tools/vega (vega, vega-lite, vega-embed,
# vega-cli: inlined into the HTML report at build time) and tools/browser-check (puppeteer-core, which drives Debian's
# Chromium and downloads no browser).
# --ignore-scripts: vega-cli's optional PNG backend (the `canvas` native module) is not built; SVG comes from
# vg2svg and PNG from rsvg-convert.
cd "$(dirname "$0")/.."
npm_dirs=(tools/vega)
$main_only || npm_dirs+=(tools/trace-check tools/browser-check)
for dir in "${npm_dirs[@]}"; do
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "install-deps: npm ci in $dir"
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
done
