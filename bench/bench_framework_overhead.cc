// Cost of the LibTorch framework profiler per observed op.
//
//   bench_framework_overhead MODEL.pt [DEVICE=cpu|cuda] [ROUNDS=5] [BLOCK=40] [BATCH=1] [SIDE=224]
//
// Runs the TorchScript model through XSP's LibTorch predictor in blocks of BLOCK forwards per mode, the modes
// alternating ROUNDS times so that drift hits all alike (after 20 warm-up forwards):
//   plain     no observer: the reference a user's own timing loop would give
//   plain+input  plain, but a fresh synthetic batch is made between forwards (outside the timing) as the
//             runner's pipeline does: the loop the M run must match (the CPU work between forwards cools caches)
//   M run     XSP's runner at trace level model (synthetic inputs): its predict latencies, to compare with plain
//   noop      a RecordFunction observer that records nothing (LibTorch's own machinery)
//   detailed  XSP's framework profiler reading shapes and module paths for every op (detail_batches = 0)
//   framework XSP's framework profiler as the runner uses it (details from the block's first forward only)
//   kernel    framework + the CUPTI device profiler (device cuda, CUPTI build): an M/F/K run
//   kernel-only  framework + CUPTI with device activity only (no API records): splits the per-kernel cost
// A profiler is started once per block and told each forward as a new batch (set_parent), as in a run. The
// kernel blocks come after all others: once CUPTI has been attached to a process it is never fully gone.
// Prints per mode the median ms with its 95% interval, the ratio to plain with its 95% interval (block medians
// paired by round; xsp/stats/stability.h), ops and kernels per forward, µs per op ((framework − plain) / ops)
// and µs per kernel ((kernel − framework) / kernels).
// The CUPTI profiler's options come from the XSP_* variables of env_overrides() (xsp/profilers/profiler_options.h):
// scripts/gpu/cost_split.sh and overhead.sh compare XSP_CUPTI_CLOCK=offset, XSP_CUPTI_API_SOURCE=activity... with
// the defaults. The options in effect are printed with the results; a bad value exits 2.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "xsp/eval/runner.h"
#include "xsp/eval/session.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/profilers/profiler_options.h"
#include "xsp/stats/stability.h"
#include "xsp/trace/trace.h"

#ifdef XSP_WITH_LIBTORCH
#include "../src/predictors/libtorch/record_function_profiler.h"
#include "xsp/predictors/libtorch.h"

namespace {

using xsp::median;

// "1.029x [1.012, 1.047]": a ratio of block medians with its 95% interval (xsp/stats/stability.h).
std::string ratio_text(const xsp::PairedOverhead& o) {
  char buf[96];
  if (o.rounds >= 2)
    std::snprintf(buf, sizeof buf, "%.3fx [%.3f, %.3f]", 1 + o.overhead_fraction, 1 + o.ci95_fraction.low,
                  1 + o.ci95_fraction.high);
  else
    std::snprintf(buf, sizeof buf, "%.3fx", 1 + o.overhead_fraction);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.pt [DEVICE=cpu|cuda] [ROUNDS=5] [BLOCK=40] [BATCH=1] [SIDE=224]\n", argv[0]);
    return 2;
  }
  const std::string model = argv[1];
  const std::string device = argc > 2 ? argv[2] : "cpu";
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  const int block = argc > 4 ? std::atoi(argv[4]) : 40;
  const long batch = argc > 5 ? std::atol(argv[5]) : 1;
  const long side = argc > 6 ? std::atol(argv[6]) : 224;

  xsp::register_libtorch_predictor();
  auto predictor = xsp::create_predictor("libtorch");
  xsp::Manifest manifest;
  manifest.path = model;
  manifest.graphs.push_back(xsp::GraphSpec{"libtorch", "*", model, "", 0});
  manifest.inputs.push_back(xsp::InputSpec{});
  manifest.inputs[0].dimensions = {3, side, side};
  manifest.inputs[0].type = "tensor";
  manifest.outputs.push_back(xsp::OutputSpec{});
  manifest.outputs[0].type = "classification";
  predictor->load(manifest, xsp::DeviceSpec{device, 0});

  xsp::Tensor input;
  input.shape = {batch, 3, side, side};
  input.data.assign(static_cast<std::size_t>(input.numel()), 0.5f);
  for (int i = 0; i < 20; ++i) predictor->predict(input);

  xsp::libtorch::RecordFunctionProfilerOptions noop_options, detailed_options;
  noop_options.record = false;
  detailed_options.detail_batches = 0;
  xsp::libtorch::RecordFunctionProfiler noop(noop_options), detailed(detailed_options), framework;
  xsp::CuptiOptions cupti_options;
  try {
    xsp::CounterOptions unused;
    xsp::apply_env_overrides(cupti_options, unused);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  std::unique_ptr<xsp::DeviceProfiler> cupti;
  if (device == "cuda" && xsp::have_device_profiler()) cupti = xsp::create_device_profiler(cupti_options);

  enum Mode { kPlain, kPlainInput, kMRun, kNoop, kDetailed, kFramework, kKernel, kKernelOnly, kModes };
  const char* names[kModes] = {"plain",    "plain+input", "M run",          "noop observer",
                               "detailed", "framework",   "kernel (CUPTI)", "kernel-only (CUPTI)"};
  std::vector<double> ms[kModes];
  std::vector<double> block_medians[kModes];  // one per round: modes of one round are paired
  double ops = 0, kernels = 0;
  xsp::RunPlan m_run;
  m_run.batch_sizes = {static_cast<int>(batch)};
  m_run.inputs.synthetic = true;
  // A fixed block of `block` measured batches (no adaptive warm-up or stopping): the bench alternates modes itself.
  m_run.measurement.warmup_min_batches = 0;
  m_run.measurement.warmup_min_ms = m_run.measurement.warmup_max_ms = 0;
  m_run.measurement.min_batches = block;
  m_run.measurement.min_duration_ms = m_run.measurement.max_duration_ms = 0;
  xsp::SessionOptions m_session;
  m_session.record_machine_state = false;
  xsp::RunSession m_run_session(m_session);
  for (int r = 0; r < 2 * rounds; ++r) {
    for (int m = 0; m < kModes; ++m) {
      const Mode mode = static_cast<Mode>(m);
      // Rounds 0..R-1: every mode but kernel; rounds R..2R-1: kernel only (see the header comment).
      const bool device_mode = mode == kKernel || mode == kKernelOnly;
      if (device_mode != (r >= rounds) || (device_mode && !cupti)) continue;
      if (mode == kMRun) {
        const auto record = xsp::run_batch_sweep(manifest, *predictor, m_run, m_run_session);
        std::vector<double> block_ms;
        for (double ns : record.runs.at(0).predict_latency_ns) block_ms.push_back(ns / 1e6);
        ms[kMRun].insert(ms[kMRun].end(), block_ms.begin(), block_ms.end());
        block_medians[kMRun].push_back(median(block_ms));
        continue;
      }
      xsp::TraceRecorder rec;
      xsp::FrameworkProfiler* prof = mode == kNoop        ? static_cast<xsp::FrameworkProfiler*>(&noop)
                                     : mode == kDetailed  ? &detailed
                                     : mode >= kFramework ? &framework
                                                          : nullptr;
      if (device_mode) {
        xsp::DeviceProfilerOptions device_options;
        device_options.system = device_options.library = mode == kKernel;
        framework.set_correlation_listener(cupti->correlation_listener());
        cupti->start(rec, device_options);
      }
      if (prof) prof->start(rec, xsp::kNoSpan);
      std::vector<double> block_ms;
      for (int i = 0; i < block; ++i) {
        if (prof) prof->set_parent(rec.next_id());
        if (mode == kPlainInput) input = xsp::synthetic_batch({3, side, side}, static_cast<int>(batch), i);
        const std::int64_t t0 = xsp::now_ns();
        predictor->predict(input);
        block_ms.push_back((xsp::now_ns() - t0) / 1e6);
      }
      ms[mode].insert(ms[mode].end(), block_ms.begin(), block_ms.end());
      block_medians[mode].push_back(median(block_ms));
      if (device_mode) cupti->stop();
      if (prof) prof->stop();
      if (device_mode) framework.set_correlation_listener(nullptr);
      const xsp::Trace trace = rec.take();
      std::size_t n_ops = 0, n_kernels = 0;
      for (const auto& s : trace.spans) {
        n_ops += s.level == xsp::Level::kFramework;
        n_kernels += s.level == xsp::Level::kKernel;
      }
      if (mode == kFramework) ops = static_cast<double>(n_ops) / block;
      if (mode == kKernel) kernels = static_cast<double>(n_kernels) / block;
      for (const auto& [name, value] : trace.counters)
        if (value > 0 && name.find("dropped") != std::string::npos)
          std::fprintf(stderr, "warning: %s = %llu\n", name.c_str(), static_cast<unsigned long long>(value));
    }
  }
  const double plain = median(ms[kPlain]), fw = median(ms[kFramework]);
  std::printf("model %s on %s, batch %ld, %d rounds x %d forwards per mode\n", model.c_str(), device.c_str(), batch,
              rounds, block);
  std::printf("ops per forward: %.1f; kernels (incl. memcpy/memset) per forward: %.1f\n", ops, kernels);
  if (cupti) {
    std::printf("CUPTI: api source %s, clock %s, zeroed buffers %d, latency timestamps %d, all apis %d\n",
                std::string(xsp::to_string(cupti_options.api_source)).c_str(),
                std::string(xsp::to_string(cupti_options.clock)).c_str(), cupti_options.zeroed_buffers,
                cupti_options.latency_timestamps, cupti_options.all_apis);
  }
  // Ratios to plain: paired by round (geometric mean of per-round ratios of block medians, t interval) for the
  // modes that share plain's rounds; the CUPTI modes ran in later rounds, so theirs is unpaired (Welch).
  std::printf("%-16s %11s %21s %28s %11s %13s\n", "mode", "median ms", "95% CI of median", "vs plain [95% CI]",
              "us per op", "us per kernel");
  for (int m = 0; m < kModes; ++m) {
    if (ms[m].empty()) continue;
    const double med = median(ms[m]);
    const xsp::Interval ci = xsp::median_ci95(ms[m]);
    const bool device_mode = m == kKernel || m == kKernelOnly;
    const bool per_kernel = device_mode && kernels > 0;
    const auto vs_plain = device_mode ? xsp::unpaired_change(block_medians[m], block_medians[kPlain])
                                      : xsp::paired_overhead(block_medians[m], block_medians[kPlain]);
    char ci_text[48];
    std::snprintf(ci_text, sizeof ci_text, "[%.3f, %.3f]", ci.low, ci.high);
    std::printf("%-16s %11.3f %21s %28s %11.3f %13s\n", names[m], med, ci_text, ratio_text(vs_plain).c_str(),
                m <= kMRun || m >= kKernel ? 0.0 : (med - plain) * 1e3 / ops,
                per_kernel ? std::to_string((med - fw) * 1e3 / kernels).substr(0, 6).c_str() : "");
  }
  if (!ms[kMRun].empty() && !ms[kPlainInput].empty()) {
    std::printf("M run / plain+input: %s (paired over %d rounds)\n",
                ratio_text(xsp::paired_overhead(block_medians[kMRun], block_medians[kPlainInput])).c_str(), rounds);
    std::printf("M run / plain: %s\n",
                ratio_text(xsp::paired_overhead(block_medians[kMRun], block_medians[kPlain])).c_str());
  }
  return 0;
}

#else
int main() {
  std::printf("bench_framework_overhead: built without LibTorch; nothing to measure\n");
  return 0;
}
#endif
