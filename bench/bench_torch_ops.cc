// What one PyTorch op costs the profiled program with XSP's op observer (libxsp_torch_ops.so): OPS cheap ops
// (at::Tensor::view, which does no arithmetic, so the per-op cost of recording is most of what is timed) inside NVTX
// "step" ranges of 1000 ops, timed after a warm-up. bench/torch_ops.sh runs it without injection, with the injection
// library but ops from NVTX only (XSP_PROFILE_TORCH_OPS=nvtx), and with the observer, side by side.
//   bench_torch_ops [ops]      prints "ns_per_op <value>"
#include <ATen/ATen.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const long ops = argc > 1 ? std::atol(argv[1]) : 200000;
  const at::Tensor x = at::ones({8, 16});
  nvtxRangePushA("warm-up");  // the first NVTX call loads the injection library, which installs the observer
  for (int i = 0; i < 2000; ++i) (void)x.view({16, 8});
  nvtxRangePop();
  const auto t0 = std::chrono::steady_clock::now();
  for (long done = 0; done < ops; done += 1000) {
    nvtxRangePushA("step");
    for (int i = 0; i < 1000; ++i) (void)x.view({16, 8});
    nvtxRangePop();
  }
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("ns_per_op %.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(ops));
  return 0;
}
