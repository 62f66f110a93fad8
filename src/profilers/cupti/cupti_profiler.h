// The CUPTI device profiler (private to xsp_cupti). Public face: xsp/profilers/device_profiler.h.
#pragma once

#include <cupti_callbacks.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "xsp/profilers/device_profiler.h"
#include "xsp/profilers/gpu_activity.h"

namespace xsp::cupti {

struct ApiThread;

/// SYSTEM / KERNEL / LIBRARY spans from the CUPTI Activity API (docs/spans.md).
///
/// One profiler may run at a time in a process (CUPTI's activity buffers and callbacks are process-wide);
/// start() throws std::logic_error otherwise. Records are copied out of CUPTI's buffers as soon as CUPTI hands a
/// buffer back (CUpti_BuffersCallbackCompleteFunc), into a GpuActivityLog on the host clock; stop() turns that
/// log into spans with append_spans().
///
/// Configured once, at construction, by CuptiOptions (xsp/profilers/profiler_options.h); it reads no XSP_*
/// environment variable. Among them:
///  - api_source = kActivity: SYSTEM spans from RUNTIME/DRIVER activity records tied to ops by CUPTI's external
///    correlation ids, instead of the default callback API (measured slower: BENCHMARKS.md).
///  - dump_dir: stop() also writes dump_dir/gpu_activity_<n>.json (to_json of the log; fixtures).
///  - latency_timestamps: collect kernels' queued/submitted times (cuptiActivityEnableLatencyTimestamps; off by
///    default because it adds launch overhead).
/// The one variable it does touch is CUDA's own: NVTX_INJECTION64_PATH. NVTX ranges reach CUPTI only through it;
/// start() sets it to the loaded libcupti.so when unset and DeviceProfilerOptions::library is on (see start()).
class CuptiProfiler final : public DeviceProfiler, private OpCorrelationListener {
 public:
  explicit CuptiProfiler(const CuptiOptions& options = {});
  ~CuptiProfiler() override;
  CuptiProfiler(const CuptiProfiler&) = delete;
  CuptiProfiler& operator=(const CuptiProfiler&) = delete;

  /// Started from inside the CUDA driver's initialization (the injection library's InitializeInjection, called by
  /// cuInit on the thread that initializes CUDA: docs/profile.md): start() then makes no CUDA runtime call (it would
  /// re-enter the driver's initialization), and stop() does not synchronize the device, since it runs at the process's
  /// exit, where the program has waited for its work or abandoned it. Set before start().
  void set_inside_driver_initialization(bool inside) { inside_driver_init_ = inside; }
  /// start() subscribes and sets everything up but enables no activity kind and records no API call until resume()
  /// (on-demand collection that begins off). Set before start().
  void set_start_paused(bool paused) { start_paused_ = paused; }

  std::string name() const override { return "cupti"; }
  /// Registers the timestamp and buffer callbacks and enables the activity kinds of `options`:
  /// system → callbacks (cuptiSubscribe/cuptiEnableCallback) on the traced APIs only plus SYNCHRONIZATION
  /// (or, with CuptiOptions::api_source = kActivity, RUNTIME, DRIVER, SYNCHRONIZATION, EXTERNAL_CORRELATION);
  /// kernel → CONCURRENT_KERNEL, MEMCPY,
  /// MEMCPY2, MEMSET; library → MARKER; always OVERHEAD. Throws std::runtime_error naming the CUPTI call and
  /// cuptiGetResultString's text (with a hint for "another profiler attached", "insufficient privileges",
  /// "no device"), std::logic_error if this or another CuptiProfiler is running.
  void start(TraceRecorder& recorder, const DeviceProfilerOptions& options) override;
  /// Disable the API kinds (so the profiler's own sync is not traced) → cudaDeviceSynchronize →
  /// cuptiActivityFlushAll(FORCED) → disable the other kinds → flush again → spans and counters into the
  /// recorder (and the CuptiOptions::dump_dir file). Idempotent. Throws std::runtime_error on a CUPTI/CUDA error,
  /// after leaving CUPTI disabled and adding what was collected.
  void stop() override;
  OpCorrelationListener* correlation_listener() override { return this; }

  /// On-demand collection while the profiler runs (windows of `xsp profile --signal`, docs/profile.md "Capture"):
  /// pause() stops recording API calls at once, waits `settle` for the work in flight to finish on the device,
  /// flushes CUPTI's buffers, disables the activity kinds start() enabled, and hands everything recorded since
  /// start() or the last pause() to the recorder as spans (append_spans), so a window's spans can be taken while the
  /// program runs on. resume() enables the kinds again and resumes recording. Between them the program pays only the
  /// API callback's entry, and memory does not grow. Call from one thread other than a CUPTI callback, while running;
  /// pause() on a paused profiler only flushes. Throws std::runtime_error on a CUPTI error (the spans collected are
  /// handed over first).
  void pause(std::chrono::milliseconds settle);
  void resume();
  /// Whether API calls are recorded now (false between pause() and resume()).
  bool collecting() const { return collecting_.load(std::memory_order_relaxed); }
  std::string clock_mapping() const override;

  /// Called from CUPTI's buffer-completed callback: copies every record of `buffer` into the log.
  void parse_buffer(std::uint8_t* buffer, std::size_t valid_bytes);
  /// The calling thread's API-call buffer for this run (registered on its first call), or nullptr when not
  /// running. Used by the API callback.
  ApiThread* api_thread();
  /// Called from the resource callback: keeps a graph node record for the log.
  void add_graph_node(const GraphNodeRecord& node);

 private:
  // OpCorrelationListener: hot path, one CUPTI call each, no allocation, no lock.
  void op_enter(SpanId op) noexcept override;
  void op_exit(SpanId op) noexcept override;

  std::int64_t to_host(std::uint64_t cupti_ns) const {
    return cupti_ns == 0 ? 0 : static_cast<std::int64_t>(cupti_ns) + clock_offset_ns_;
  }
  const std::string& kernel_name(const char* mangled);
  /// The API's name and whether it is a noise-only call ("cupti.filtered_api_records").
  const std::pair<std::string, bool>& api_name(bool runtime, std::uint32_t cbid);
  void finish_markers();
  /// Host clock for CUPTI's records: the timestamp callback, else a measured offset (clock_offset_ns_,
  /// clock_mapping_). Throws std::runtime_error when cuptiGetTimestamp fails.
  void set_up_clock();
  /// Moves the log and every thread's API calls out (each thread's under its lock: its thread may be appending).
  GpuActivityLog take_log();
  /// Graph node creation and cloning callbacks on the subscriber (graph replay attribution, docs/cuda-graphs.md).
  void enable_graph_node_callbacks();
  /// Stops the API callbacks (no-op without a subscription).
  void unsubscribe() noexcept;

  bool inside_driver_init_ = false;
  bool start_paused_ = false;
  const CuptiOptions cupti_options_;  // fixed for the profiler's life: every run behaves alike
  TraceRecorder* recorder_ = nullptr;
  DeviceProfilerOptions options_;
  bool running_ = false;
  std::atomic<bool> collecting_{true};
  std::vector<int> enabled_kinds_;  // CUpti_ActivityKind values start() enabled, for pause()/resume()
  std::string clock_mapping_;
  std::int64_t clock_offset_ns_ = 0;  // host = CUPTI + offset (0 with the timestamp callback)
  std::atomic<std::uint64_t> correlation_errors_{0};

  /// SYSTEM spans from the CUPTI callback API (api_source kCallback, the default) rather than RUNTIME/DRIVER
  /// activity records (kActivity): only the traced APIs are intercepted at all, and the op an API call belongs to is
  /// read from the listener's thread-local op stack instead of CUPTI's external-correlation stack.
  const bool api_callbacks_;
  CUpti_SubscriberHandle subscriber_ = nullptr;

  std::mutex mu_;  // guards everything below: buffers complete on CUPTI's worker thread
  std::vector<std::unique_ptr<ApiThread>> api_threads_;
  GpuActivityLog log_;
  struct MangledName {
    std::string mangled;
    std::string demangled;
  };
  std::unordered_map<const char*, MangledName> kernel_names_;
  std::unordered_map<std::uint64_t, std::pair<std::string, bool>> api_names_;
  struct OpenMarker {
    std::string name;
    std::string domain;
    std::int64_t start_ns;
    std::uint64_t thread_id;
  };
  std::unordered_map<std::uint32_t, OpenMarker> open_markers_;
};

}  // namespace xsp::cupti
