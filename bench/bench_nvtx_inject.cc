// What one NVTX range costs the profiled program: N push/pop pairs on one thread, timed, after a warm-up. Run it
// without and with NVTX_INJECTION64_PATH naming libxsp_inject.so (bench/nvtx_inject.sh alternates the two and
// reports medians with their ranges, BENCHMARKS.md). Without injection an NVTX call is a branch on a null function
// pointer; with it, a range is a span in the injection library's recorder (one mutex, no I/O).
//   bench_nvtx_inject [pairs]      prints "ns_per_range <value>"
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) : 200000;
  for (int i = 0; i < 1000; ++i) {  // warm-up: the first call loads and initializes the injection library
    nvtxRangePushA("warm-up");
    nvtxRangePop();
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < pairs; ++i) {
    nvtxRangePushA("step");
    nvtxRangePushA("aten::linear, seq = 3, sizes = [[8, 64], [128, 64], [128]]");
    nvtxRangePop();
    nvtxRangePop();
  }
  const auto t1 = std::chrono::steady_clock::now();
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  std::printf("ns_per_range %.1f\n", ns / static_cast<double>(2 * pairs));
  return 0;
}
