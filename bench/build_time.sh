#!/usr/bin/env bash
# The main job's build (`BUILD_TARGETS=xsp scripts/build.sh`, what scripts/setup.sh runs) from a clean copy of the
# working tree, as unity batches and source by source (XSP_UNITY_BUILD ON/OFF), alternating, ROUNDS times each:
# wall time of configure + build, and each source's compile time (a compiler launcher records it) so the slowest
# sources are named. Needs what scripts/install-deps.sh --main installs; builds in a temporary folder, removed after.
#   bench/build_time.sh [ROUNDS]      default 1 (a round is two builds: about 15 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-1}
work=$(mktemp -d /tmp/xsp-build-time.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The launcher: run the compiler, append "seconds object" to the log.
cat > "$work/launch.sh" << 'EOF'
#!/usr/bin/env bash
start=$(date +%s.%N)
"$@"
rc=$?
out=""
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
echo "$(echo "$(date +%s.%N) - $start" | bc) $out" >> "$XSP_BUILD_TIME_LOG"
exit $rc
EOF
chmod +x "$work/launch.sh"
mkdir "$work/src"
git ls-files -z | xargs -0 cp --parents -t "$work/src"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F)"
for round in $(seq 1 "$rounds"); do
  for unity in ON OFF; do
    rm -rf "$work/src/build"
    export XSP_BUILD_TIME_LOG="$work/times-$unity-$round.txt"
    : > "$XSP_BUILD_TIME_LOG"
    start=$(date +%s.%N)
    (cd "$work/src" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DXSP_UNITY_BUILD=$unity \
      -DCMAKE_CXX_COMPILER_LAUNCHER="$work/launch.sh" > "$work/configure.log" 2>&1 &&
      cmake --build build -j"$(nproc)" --target xsp > "$work/build.log" 2>&1) ||
      { tail -20 "$work/build.log"; exit 1; }
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    cpu=$(awk '{s += $1} END {printf "%.0f", s}' "$XSP_BUILD_TIME_LOG")
    printf 'round %d  unity build %-3s  wall %6.1f s  compile time summed %5s s over %d objects\n' \
      "$round" "$unity" "$wall" "$cpu" "$(wc -l < "$XSP_BUILD_TIME_LOG")"
    sort -rn "$XSP_BUILD_TIME_LOG" | head -5 | awk '{printf "    %6.1f s  %s\n", $1, $2}'
  done
done
