// What one PyTorch op costs the profiled program with XSP's op observer (libxsp_torch_ops.so): OPS cheap ops
// (at::Tensor::view, which does no arithmetic, so the per-op cost of recording is most of what is timed) inside NVTX
// "step" ranges of 1000 ops, timed after a warm-up. bench/torch_ops.sh runs it without injection, with the injection
// library but ops from NVTX only (XSP_PROFILE_TORCH_OPS=nvtx), and with the observer, side by side. With THREADS > 1
// that many threads run OPS ops each at once (as autograd's and a program's own threads do), so that what the
// threads' recording shares shows as a higher cost per op.
// With "torch-profiler" the timed ops run under PyTorch's own profiler instead (the Kineto profiler torch.profiler
// drives, CPU ops only, no input shapes; one thread, whose RecordFunction callbacks it installs), so that its cost
// per op is measured by the same loop; it also prints "profiler_events <n>", the ops it recorded.
//   bench_torch_ops [ops] [threads] [torch-profiler]      prints "ns_per_op <value>": wall time over OPS, per thread
#include <ATen/ATen.h>
#include <nvtx3/nvToolsExt.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// OPS ops in NVTX "step" ranges of 1000 on the calling thread.
void run_ops(const at::Tensor& x, long ops) {
  for (long done = 0; done < ops; done += 1000) {
    nvtxRangePushA("step");
    for (int i = 0; i < 1000; ++i) (void)x.view({16, 8});
    nvtxRangePop();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const long ops = argc > 1 ? std::atol(argv[1]) : 200000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const bool torch_profiler = argc > 3 && std::string(argv[3]) == "torch-profiler";
  if (torch_profiler && threads != 1) {
    std::fprintf(stderr, "bench_torch_ops: torch-profiler takes one thread (its callbacks are the thread's)\n");
    return 2;
  }
  const at::Tensor x = at::ones({8, 16});
  nvtxRangePushA("warm-up");  // the first NVTX call loads the injection library, which installs the observer
  for (int i = 0; i < 2000; ++i) (void)x.view({16, 8});
  nvtxRangePop();
  namespace profiler = torch::profiler::impl;
  const profiler::ProfilerConfig config(profiler::ProfilerState::KINETO);
  const std::set<profiler::ActivityType> activities = {profiler::ActivityType::CPU};
  if (torch_profiler) {
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (threads <= 1) {
    run_ops(x, ops);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(run_ops, std::cref(x), ops);
    for (std::thread& t : pool) t.join();
  }
  const auto t1 = std::chrono::steady_clock::now();
  if (torch_profiler)
    std::printf("profiler_events %zu\n", torch::autograd::profiler::disableProfiler()->events().size());
  std::printf("ns_per_op %.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(ops));
  return 0;
}
