// Framework-level (FRAMEWORK spans) profiler for LibTorch, built on at::RecordFunction observers.
// Private to the libtorch predictor (and its benchmark); deliberately free of LibTorch headers so that
// including it costs nothing and the benchmark can use it without LibTorch's include paths.
#pragma once

#include <cstddef>
#include <memory>

#include "xsp/predictor/predictor.h"

namespace xsp::libtorch {

/// What the RecordFunctionProfiler collects.
struct RecordFunctionProfilerOptions {
  /// false: register an observer that returns at once and records nothing. Only for measuring what
  /// LibTorch's RecordFunction machinery costs by itself (bench_framework_overhead); stop() adds no spans.
  bool record = true;
  /// Tag "shapes" with the input tensors' sizes. Makes LibTorch box every op's arguments (needsInputs).
  bool record_shapes = true;
  /// Tag "module"/"module_type" from the TorchScript interpreter's module hierarchy (top-level ops only;
  /// nested ops inherit their enclosing op's module).
  bool record_modules = true;
  /// Tag "allocated_bytes" with the bytes the CPU allocator handed out while the op (children included) ran.
  bool record_memory = true;
  /// Shapes and module paths are read only during the first `detail_batches` batches (set_parent() calls)
  /// after start(); later batches run the same op sequence, so each of their ops copies them from the op at
  /// the same position of the first batch when the names agree (else it is left untagged and counted in
  /// "framework.detail_mismatches"). Boxing inputs and walking the interpreter's frames are most of the
  /// observer's cost, so this cuts the per-op cost of later batches to timestamps and a name copy.
  /// 0 = read them for every op.
  std::size_t detail_batches = 1;
  /// Most spans kept per thread per start()..stop(); further ops (and their children) are counted in
  /// "framework.dropped_spans" instead of being recorded.
  std::size_t max_spans_per_thread = 2'000'000;
};

/// Records one FRAMEWORK span per LibTorch operator (RecordScope::FUNCTION, e.g. "aten::conv2d") run on the
/// thread that called start(), and on helper threads that LibTorch hands that thread's observer state to
/// (inter-op tasks; OpenMP intra-op workers run no observers). Per span: name, start/end (now_ns(), ns),
/// thread id (current_thread_id()), parent (enclosing op on the same thread, or the start()/set_parent()
/// span for top-level ops of the start thread; top-level ops of helper threads are left for the assembler),
/// tags "module" (e.g. "layer1.0.conv1"), "module_type" ("Conv2d"), "shapes" ("[1,64,56,56],[64,64,3,3]"),
/// "allocated_bytes" (decimal).
///
/// The hot path (observer start/end, allocator reports) takes no lock and formats no string: it appends
/// plain records to thread-local buffers; stop() turns them into Spans. Only one profiler can observe a
/// given thread at a time. While started it occupies LibTorch's PROFILER_STATE debug-info slot of the
/// start thread, so it must not be nested inside torch::autograd::profiler / Kineto profiling.
class RecordFunctionProfiler final : public FrameworkProfiler {
 public:
  explicit RecordFunctionProfiler(RecordFunctionProfilerOptions options = {});
  /// Stops observing without flushing if still started (must then run on the start thread).
  ~RecordFunctionProfiler() override;

  RecordFunctionProfiler(const RecordFunctionProfiler&) = delete;
  RecordFunctionProfiler& operator=(const RecordFunctionProfiler&) = delete;

  /// See FrameworkProfiler::start. Throws std::logic_error if already started.
  void start(TraceRecorder& recorder, SpanId parent) override;
  /// See FrameworkProfiler::set_correlation_listener. The listener gets each recorded op's span id (taken
  /// from the recorder at op start) on enter and exit. Throws std::logic_error while started.
  void set_correlation_listener(OpCorrelationListener* listener) override;
  /// See FrameworkProfiler::set_parent (one relaxed atomic store; any thread).
  void set_parent(SpanId parent) override;
  /// See FrameworkProfiler::set_uniform_batches: false reads shapes and modules of every op, as detail_batches = 0.
  /// Throws std::logic_error while started.
  void set_uniform_batches(bool uniform) override;
  /// Must run on the start thread after the last predict returned. Flushes spans and the counters
  /// "framework.dropped_spans" (always written, also when 0) and "framework.unmatched_op_ends" (when > 0).
  /// No-op when not started.
  void stop() override;
  bool started() const;
  /// Whether a correlation listener (a device profiler) is set: the LibTorch predictor keeps CUDA graphs captured
  /// under one apart from those captured without, so that a kernel-level run replays graphs whose capture it saw.
  bool has_correlation_listener() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xsp::libtorch
