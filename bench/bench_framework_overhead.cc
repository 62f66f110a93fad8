// Cost of the LibTorch framework profiler per observed op.
//
//   bench_framework_overhead MODEL.pt [WARMUP=20] [ITERS=50] [BATCH=1] [SIDE=224]
//
// Runs the TorchScript model on the CPU in three modes, interleaved per iteration so that machine noise hits
// all modes alike: plain (no observer), noop (a RecordFunction observer that records nothing: what LibTorch's
// own RecordFunction machinery costs) and full (RecordFunctionProfiler with shapes, modules and memory).
// Each timed predict is bracketed by its own start()/stop(); the flush in stop() is reported separately.
// Prints the median predict time per mode, ops per forward and (mode - plain) / ops in µs per op.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "xsp/predictor/predictor.h"
#include "xsp/trace/trace.h"

#ifdef XSP_WITH_LIBTORCH
#include "../src/predictors/libtorch/record_function_profiler.h"
#include "xsp/predictors/libtorch.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.pt [WARMUP=20] [ITERS=50] [BATCH=1] [SIDE=224]\n", argv[0]);
    return 2;
  }
  const std::string model = argv[1];
  const int warmup = argc > 2 ? std::atoi(argv[2]) : 20;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 50;
  const long batch = argc > 4 ? std::atol(argv[4]) : 1;
  const long side = argc > 5 ? std::atol(argv[5]) : 224;

  xsp::register_libtorch_predictor();
  auto predictor = xsp::create_predictor("libtorch");
  xsp::Manifest manifest;
  manifest.path = model;
  manifest.graphs.push_back(xsp::GraphSpec{"libtorch", "*", model, "", 0});
  manifest.inputs.push_back(xsp::InputSpec{});
  manifest.inputs[0].dimensions = {3, side, side};
  predictor->load(manifest, xsp::DeviceSpec{});

  xsp::Tensor input;
  input.shape = {batch, 3, side, side};
  input.data.assign(static_cast<std::size_t>(input.numel()), 0.5f);

  for (int i = 0; i < warmup; ++i) predictor->predict(input);

  xsp::libtorch::RecordFunctionProfiler full;
  xsp::libtorch::RecordFunctionProfilerOptions noop_options;
  noop_options.record = false;
  xsp::libtorch::RecordFunctionProfiler noop(noop_options);

  enum Mode { kPlain, kNoop, kFull, kModes };
  const char* names[kModes] = {"plain", "noop observer", "full profiler"};
  std::vector<double> ms[kModes];
  std::vector<double> flush_ms;
  std::size_t spans = 0, top_level = 0;
  for (int i = 0; i < iters; ++i) {
    for (int k = 0; k < kModes; ++k) {
      const Mode mode = static_cast<Mode>((i + k) % kModes);  // rotate the order against drift
      xsp::TraceRecorder rec;
      const xsp::SpanId parent = rec.next_id();
      xsp::FrameworkProfiler* prof = mode == kFull ? &full : mode == kNoop ? &noop : nullptr;
      if (prof) prof->start(rec, parent);
      const std::int64_t t0 = xsp::now_ns();
      predictor->predict(input);
      const std::int64_t t1 = xsp::now_ns();
      if (prof) prof->stop();
      const std::int64_t t2 = xsp::now_ns();
      ms[mode].push_back((t1 - t0) / 1e6);
      if (mode == kFull) {
        flush_ms.push_back((t2 - t1) / 1e6);
        const xsp::Trace trace = rec.take();
        spans += trace.spans.size();
        for (const auto& s : trace.spans) top_level += s.parent_id == parent;
        if (auto it = trace.counters.find("framework.dropped_spans"); it != trace.counters.end() && it->second)
          std::fprintf(stderr, "warning: %llu dropped spans\n", static_cast<unsigned long long>(it->second));
      }
    }
  }
  const double ops = static_cast<double>(spans) / iters;
  const double plain = median(ms[kPlain]);
  std::printf("model %s, batch %ld, %d warm-up + %d timed forwards per mode (interleaved)\n", model.c_str(),
              batch, warmup, iters);
  std::printf("ops per forward: %.1f (top-level %.1f)\n", ops, static_cast<double>(top_level) / iters);
  std::printf("%-15s %12s %12s %14s\n", "mode", "median ms", "vs plain", "us per op");
  for (int m = 0; m < kModes; ++m) {
    const double med = median(ms[m]);
    std::printf("%-15s %12.3f %11.3fx %14.3f\n", names[m], med, med / plain,
                m == kPlain ? 0.0 : (med - plain) * 1e3 / ops);
  }
  std::printf("stop() flush: median %.3f ms per forward (%.3f us per span, outside the timed forward)\n",
              median(flush_ms), median(flush_ms) * 1e3 / ops);
  return 0;
}

#else
int main() {
  std::printf("bench_framework_overhead: built without LibTorch; nothing to measure\n");
  return 0;
}
#endif
