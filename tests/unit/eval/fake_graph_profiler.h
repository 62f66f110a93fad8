// A fake CUPTI that captures a CUDA graph once and replays it at every step, for the runners' graph-mode tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xsp/profilers/device_profiler.h"
#include "xsp/trace/trace.h"

namespace xsp::testing {

/// Stands in for CUPTI at kernel level on a model whose step (a generator's decode step, a predictor's forward) runs as
/// a CUDA graph (docs/cuda-graphs.md): the first step it sees captures (a FRAMEWORK op "fake::attention" around a
/// launch that created graph node `node`) and every step replays (a cudaGraphLaunch and the kernel replayed from that
/// node on a GPU stream), with the tags the GPU layer writes.
class FakeGraphProfiler final : public DeviceProfiler {
 public:
  std::string name() const override { return "fake-graphs"; }
  void start(TraceRecorder& recorder, const DeviceProfilerOptions&) override { recorder_ = &recorder; }
  void stop() override { recorder_ = nullptr; }
  OpCorrelationListener* correlation_listener() override { return nullptr; }
  std::string clock_mapping() const override { return "fake"; }
  /// A step over [start, end) ns on the calling thread: capture (once) in its first half, the replay in its second.
  void step(std::int64_t start, std::int64_t end) {
    if (recorder_ == nullptr) return;
    const std::int64_t mid = start + (end - start) / 2;
    const Track host = Track::host_thread(current_thread_id());
    if (!captured) {
      captured = true;
      Span op = span(Level::kFramework, "fake::attention", start + 10, mid - 10, host);
      op.tags.emplace_back("module", "h.0.attn");
      recorder_->add(std::move(op));
      Span launch = span(Level::kSystem, "cudaLaunchKernel", start + 20, start + 30, host);
      launch.correlation_id = ++correlation_;
      launch.tags.emplace_back("graph_captured_node_ids", std::vector<std::int64_t>{node});
      recorder_->add(std::move(launch));
    }
    Span launch = span(Level::kSystem, "cudaGraphLaunch", mid + 10, mid + 20, host);
    launch.correlation_id = ++correlation_;
    recorder_->add(std::move(launch));
    Span kernel = span(Level::kKernel, "fake_attention_kernel", mid + 30, end - 10, Track::stream(0, 7));
    kernel.correlation_id = correlation_;
    kernel.tags = {{"graph_id", 5},
                   {"graph_node_id", node + 100},
                   {"graph_capture_node_id", node},
                   {"attribution", "graph-launch"}};
    recorder_->add(std::move(kernel));
    ++replays;
  }
  bool captured = false;
  int replays = 0;
  /// The captured node's id. The registry of capture contexts is the process's: each test takes its own node.
  std::int64_t node = 101;

 private:
  Span span(Level level, std::string name, std::int64_t start, std::int64_t end, Track track) {
    Span s;
    s.id = recorder_->next_id();
    s.level = level;
    s.name = std::move(name);
    s.start_ns = start;
    s.end_ns = end;
    s.track = track;
    return s;
  }
  TraceRecorder* recorder_ = nullptr;
  std::uint64_t correlation_ = 1000;
};

}  // namespace xsp::testing
