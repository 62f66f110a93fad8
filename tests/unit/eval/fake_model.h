// A predictor whose latency the test chooses, on a fake clock: base latency × drift over time × (1 + the
// framework profiler's overhead while it is on) × seeded noise. It advances the clock by that latency, so the
// runner measures exactly what was injected.
#pragma once

#include <cmath>
#include <functional>
#include <random>

#include "fake_clock.h"
#include "xsp/manifest/manifest.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"

namespace xsp::testing {

/// A framework profiler that records one FRAMEWORK span per batch (an "op" covering the predict call's start) and
/// tells the predictor whether it is on.
class FakeFrameworkProfiler final : public FrameworkProfiler {
 public:
  explicit FakeFrameworkProfiler(const FakeClock& clock) : clock_(clock) {}
  void start(TraceRecorder& recorder, SpanId) override {
    recorder_ = &recorder;
    on = true;
  }
  void set_parent(SpanId parent) override {
    if (!recorder_) return;
    Span s;
    s.id = recorder_->next_id();
    s.parent_id = parent;
    s.parent_rule = ParentRule::kContext;
    s.level = Level::kFramework;
    s.name = "fake::op";
    s.start_ns = s.end_ns = clock_.now_ns();
    s.track = Track::host_thread(current_thread_id());
    recorder_->add(std::move(s));
  }
  void stop() override {
    recorder_ = nullptr;
    on = false;
  }
  bool on = false;

 private:
  const FakeClock& clock_;
  TraceRecorder* recorder_ = nullptr;
};

/// A device profiler (stands in for CUPTI) that makes the fake model slower while on, and leaves a residue once it
/// has been started, as CUPTI's tracing never fully leaves a process. Records one KERNEL span per batch.
class FakeDeviceProfiler final : public DeviceProfiler {
 public:
  explicit FakeDeviceProfiler(const FakeClock& clock, int batches_needed = 0)
      : clock_(clock), batches_needed_(batches_needed) {}
  std::string name() const override { return "fake-device"; }
  void start(TraceRecorder& recorder, const DeviceProfilerOptions&) override {
    recorder_ = &recorder;
    on = true;
    ever_started = true;
    ++starts;
  }
  void stop() override {
    if (recorder_) recorder_->count("fake.stops", 1);
    recorder_ = nullptr;
    on = false;
  }
  OpCorrelationListener* correlation_listener() override { return nullptr; }
  std::string clock_mapping() const override { return "fake"; }
  int batches_needed() const override { return batches_needed_; }
  void begin_batch() override { ++batches; }
  bool on = false, ever_started = false;
  int starts = 0, batches = 0;

 private:
  const FakeClock& clock_;
  int batches_needed_;
  TraceRecorder* recorder_ = nullptr;
};

struct LatencyModel {
  double base_ns = 10e6;
  double drift_per_s = 0;         ///< relative increase per second of fake time (0.3 / T: +30% over T)
  double framework_overhead = 0;  ///< 0.10: the framework profiler adds 10%
  double noise_cv = 0;            ///< normal noise, relative
  std::uint64_t seed = 1;
  double device_overhead = 0;  ///< added while the fake device profiler is on
  double device_residue = 0;   ///< added to every batch once it was ever started
};

class FakePredictor final : public Predictor {
 public:
  FakePredictor(FakeClock& clock, LatencyModel model, const FakeDeviceProfiler* device = nullptr)
      : clock_(clock), model_(model), profiler_(clock), device_(device), rng_(model.seed), t0_(clock.now_ns()) {}
  std::string framework_name() const override { return "fake"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest&, const DeviceSpec&) override { ++loads; }
  Tensor predict(const Tensor& input) override {
    const double age_s = static_cast<double>(clock_.now_ns() - t0_) / 1e9;
    double ns = model_.base_ns * (1 + model_.drift_per_s * age_s) * (profiler_.on ? 1 + model_.framework_overhead : 1);
    if (device_ && device_->on) ns *= 1 + model_.device_overhead;
    if (device_ && device_->ever_started) ns *= 1 + model_.device_residue;
    if (model_.noise_cv > 0) ns *= std::max(0.5, 1 + model_.noise_cv * noise_(rng_));
    clock_.advance(ns);
    const auto batch = input.shape.at(0);
    return Tensor{{batch, 2}, std::vector<float>(static_cast<std::size_t>(batch) * 2, 0.5f)};
  }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return &profiler_; }
  double age_s() const { return static_cast<double>(clock_.now_ns() - t0_) / 1e9; }
  int loads = 0;

 private:
  FakeClock& clock_;
  LatencyModel model_;
  FakeFrameworkProfiler profiler_;
  const FakeDeviceProfiler* device_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> noise_{0.0, 1.0};
  std::int64_t t0_;
};

inline Manifest fake_manifest() {
  Manifest m;
  m.name = "fake_model";
  m.version = "1.0.0";
  InputSpec in;
  in.type = "tensor";
  in.dimensions = {4};
  m.inputs.push_back(in);
  OutputSpec out;
  out.type = "classification";
  m.outputs.push_back(out);
  return m;
}

}  // namespace xsp::testing
