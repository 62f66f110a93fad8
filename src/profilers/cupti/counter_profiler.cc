// Counter runs (TraceLevel::kHardware): CUPTI Profiler Host API (metric configuration and evaluation,
// cupti_profiler_host.h) + Range Profiler (collection, cupti_range_profiler.h) of CUDA 13, auto ranges with
// kernel replay, plus the CUPTI callback API on kernel launches to name each range and tie it to its framework op.
// The CUDA-free half (ranges + launches → HARDWARE spans) is xsp/profilers/counter_spans.h.
//
// Replay. The metric set needs several passes (15 on GH100). Default, user replay: one pass per measured batch,
// the batches of an inference repeating identically; every pass's launches are recorded and compared by kernel
// name, and passes that differ are counted (counters.mismatched_passes), never silently mixed. CounterOptions::replay
// = kKernel: every kernel replayed once per pass inside its launch call, with CUPTI saving and restoring the device
// memory around each replay — measured ~100x slower on ResNet-50 (a framework's caching allocator holds GBs).
// Either way the counter run's timings are never used (SPEC §3).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupti_errors.h"
#include "injected_counters.h"
#include "xsp/profilers/counter_spans.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/profilers/gpu_activity.h"
#include "xsp/profilers/hardware_counters.h"
#include "xsp/trace/run_statistics.h"

namespace xsp::cupti {

namespace {

constexpr int kMaxCounterOpDepth = 64;

/// Per-thread op stack (from the framework profiler's listener) and launch-call state.
struct LaunchThreadState {
  int op_depth = 0;
  SpanId ops[kMaxCounterOpDepth];
  int runtime_depth = 0;   // inside a runtime launch: its nested driver launch is the same kernel
  bool recording = false;  // injected mode: the current launch is profiled
};
thread_local LaunchThreadState t_state;

/// Kernel launch APIs: every way a kernel is launched outside a CUDA graph.
bool is_launch_api(std::string_view name) {
  for (std::string_view prefix :
       {"cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cuLaunchKernel", "cuLaunchCooperativeKernel"})
    if (name.substr(0, prefix.size()) == prefix) return true;
  return false;
}
bool is_graph_launch_api(std::string_view name) {
  return name.substr(0, 15) == "cudaGraphLaunch" || name.substr(0, 13) == "cuGraphLaunch";
}
bool is_profiler_api(std::string_view name) {
  for (std::string_view api : {"cudaProfilerStart", "cudaProfilerStop", "cuProfilerStart", "cuProfilerStop"})
    if (name.substr(0, api.size()) == api) return true;
  return false;
}
CounterOptions kernel_replay(CounterOptions options) {
  options.replay = CounterOptions::Replay::kKernel;
  return options;
}

class CounterProfiler;
std::atomic<CounterProfiler*> g_counter_active{nullptr};

/// Configured once, at construction, by CounterOptions (xsp/profilers/profiler_options.h); reads no environment.
class CounterProfiler final : public DeviceProfiler, private OpCorrelationListener {
 public:
  explicit CounterProfiler(const CounterOptions& options)
      : options_(options), user_replay_(options.replay == CounterOptions::Replay::kUser) {
    // Checked here, not at start(): a bad value is the caller's mistake, reported before any run begins.
    if (options_.max_ranges == 0) throw std::invalid_argument("counter profiler: counters.max_ranges must be > 0");
  }
  /// Injected mode (injected_counters.h): kernel replay, set up at the first admitted launch.
  explicit CounterProfiler(const InjectedCounterOptions& injected)
      : options_(kernel_replay(injected.counters)),
        user_replay_(false),
        injected_(true),
        collecting_(injected.collecting),
        follow_profiler_api_(injected.follow_profiler_api) {
    if (options_.max_ranges == 0) throw std::invalid_argument("counter profiler: counters.max_ranges must be > 0");
  }
  ~CounterProfiler() override {
    try {
      stop();
    } catch (...) {
    }
  }
  CounterProfiler(const CounterProfiler&) = delete;
  CounterProfiler& operator=(const CounterProfiler&) = delete;

  std::string name() const override { return "cupti-range-profiler"; }
  OpCorrelationListener* correlation_listener() override { return this; }
  std::string clock_mapping() const override { return "none (counter run: HARDWARE spans span the launch call)"; }

  void start(TraceRecorder& recorder, const DeviceProfilerOptions&) override {
    if (running_) throw std::logic_error("CounterProfiler::start: already started");
    CounterProfiler* expected = nullptr;
    if (!g_counter_active.compare_exchange_strong(expected, this))
      throw std::logic_error("CounterProfiler::start: another counter profiler is running in this process");
    recorder_ = &recorder;
    started_ns_ = now_ns();
    collection_ = CounterCollection{};
    collection_.replay = std::string(to_string(options_.replay));
    passes_done_ = 0;
    all_passes_submitted_ = false;
    pass_launches_.clear();
    try {
      if (injected_)
        subscribe();  // no CUDA call here: inside cuInit; the range profiler is set up at the first admitted launch
      else
        setup();
    } catch (...) {
      teardown();
      g_counter_active.store(nullptr);
      throw;
    }
    running_ = true;
    recorder.count(stat::kCountersSetupNs, static_cast<std::uint64_t>(now_ns() - started_ns_));
  }

  void stop() override {
    if (!running_) return;
    running_ = false;
    std::string error;
    try {
      if (injected_) {
        std::lock_guard lock(session_mu_);
        last_mark_ns_ = now_ns();
        if (session_active_) harvest();
        disabled_ = true;
        error = injected_error_;
      } else {
        if (!user_replay_ || pass_active_) end_pass();
        CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
        decode.pRangeProfilerObject = range_profiler_;
        check(cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData");
        collection_.dropped_ranges = decode.numOfRangeDropped;
        read_ranges();
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    teardown();
    mark("teardown");
    {
      std::lock_guard lock(mu_);
      if (!user_replay_) pass_launches_.push_back(std::move(launches_));
      launches_.clear();
    }
    // Ranges follow the first pass's launches; every other pass must have launched the same kernels.
    if (!pass_launches_.empty()) collection_.launches = pass_launches_.front();
    std::uint64_t mismatched = 0;
    for (std::size_t p = 1; p < pass_launches_.size(); ++p) {
      const auto& a = pass_launches_.front();
      const auto& b = pass_launches_[p];
      bool same = a.size() == b.size();
      for (std::size_t i = 0; same && i < a.size(); ++i) same = a[i].kernel_name == b[i].kernel_name;
      if (!same) ++mismatched;
    }
    if (mismatched > 0) recorder_->count(stat::kCountersMismatchedPasses, mismatched);
    if (user_replay_ && !all_passes_submitted_)
      recorder_->count(stat::kCountersMissingPasses,
                       collection_.passes > passes_done_ ? collection_.passes - passes_done_ : 1);
    if (graph_launches_ > 0) recorder_->count(stat::kCountersGraphLaunchesNotProfiled, graph_launches_);
    if (other_context_launches_ > 0) recorder_->count(stat::kCountersOtherContextLaunches, other_context_launches_);
    append_counter_spans(collection_, *recorder_);
    mark("HARDWARE spans");
    // What counters cost, shown rather than hidden: start() to here, replays and metric evaluation included.
    recorder_->count(stat::kCountersCollectionNs, static_cast<std::uint64_t>(now_ns() - started_ns_));
    if (!options_.dump_dir.empty()) dump(options_.dump_dir);
    g_counter_active.store(nullptr);
    if (!error.empty()) throw std::runtime_error("counter profiler: " + error);
  }

  int batches_needed() const override { return user_replay_ ? static_cast<int>(collection_.passes) : 0; }

  /// User replay: the next metric pass covers this batch (nothing once every pass was submitted).
  void begin_batch() override {
    if (!running_ || !user_replay_ || all_passes_submitted_ || pass_active_) return;
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = range_profiler_;
    check(cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
    pass_active_.store(true, std::memory_order_release);
  }
  void end_batch() override {
    if (running_ && user_replay_ && pass_active_) end_pass();
  }

  /// Called from the CUPTI callback on kernel launch APIs.
  void on_launch(CUpti_CallbackDomain domain, const CUpti_CallbackData* cb, const std::string& api) {
    if (user_replay_ && !pass_active_.load(std::memory_order_acquire)) return;
    const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (follow_profiler_api_ && is_profiler_api(api)) {
      // cudaProfilerStart opens the capture once it returned, cudaProfilerStop closes it as it is called.
      const bool start = api.find("Start") != std::string::npos;
      if (start == (cb->callbackSite == CUPTI_API_EXIT)) profiler_api_on_.store(start, std::memory_order_relaxed);
      return;
    }
    if (is_graph_launch_api(api)) {
      if (cb->callbackSite == CUPTI_API_EXIT) graph_launches_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (cb->callbackSite == CUPTI_API_ENTER) {
      const bool outer = runtime || t_state.runtime_depth == 0;
      if (runtime) ++t_state.runtime_depth;
      // Injected mode: whether this launch is profiled is decided before the kernel runs (a session may have to
      // start, stop or be harvested first), once per launch (a runtime launch's driver half follows its decision).
      if (injected_ && outer) t_state.recording = admit(cb->context);
      *cb->correlationData = static_cast<std::uint64_t>(now_ns());
      return;
    }
    if (runtime)
      --t_state.runtime_depth;
    else if (t_state.runtime_depth > 0)
      return;  // the driver half of a runtime launch: already counted
    if (injected_ && !t_state.recording) return;
    KernelLaunch l;
    l.start_ns = static_cast<std::int64_t>(*cb->correlationData);
    l.end_ns = now_ns();
    l.thread_id = current_thread_id();
    if (t_state.op_depth > 0) l.op = t_state.ops[std::min(t_state.op_depth, kMaxCounterOpDepth) - 1];
    std::lock_guard lock(mu_);
    l.kernel_name = kernel_name(cb->symbolName);
    launches_.push_back(std::move(l));
  }

 private:
  void op_enter(SpanId op) noexcept override {
    if (t_state.op_depth < kMaxCounterOpDepth) t_state.ops[t_state.op_depth] = op;
    ++t_state.op_depth;
  }
  void op_exit(SpanId) noexcept override {
    if (t_state.op_depth > 0) --t_state.op_depth;
  }

  const std::string& kernel_name(const char* mangled) {  // under mu_
    static const std::string kUnknown = "(unknown kernel)";
    if (mangled == nullptr) return kUnknown;
    auto it = names_.find(mangled);
    if (it != names_.end()) return it->second;
    return names_.emplace(mangled, demangle(mangled)).first->second;
  }

  /// CounterOptions::timing: each setup step's duration on stderr (where the seconds of a counter run's start go).
  void mark(const char* step) {
    const std::int64_t now = now_ns();
    if (options_.timing) std::fprintf(stderr, "counter profiler: %-48s %9.3f ms\n", step, (now - last_mark_ns_) / 1e6);
    last_mark_ns_ = now;
  }

  void setup() {
    last_mark_ns_ = now_ns();
    check_cuda(cudaFree(nullptr), "cudaFree(0) (context creation)");
    mark("cudaFree");
    // The driver's cuCtxGetCurrent through the runtime, so xsp_cupti links no libcuda (absent on CI machines).
    using CtxGetCurrent = CUresult (*)(CUcontext*);
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    check_cuda(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 4000, cudaEnableDefault, &found),
               "cudaGetDriverEntryPointByVersion(cuCtxGetCurrent)");
    CUcontext ctx = nullptr;
    if (fn == nullptr || reinterpret_cast<CtxGetCurrent>(fn)(&ctx) != CUDA_SUCCESS || ctx == nullptr)
      throw std::runtime_error("counter profiler: no current CUDA context on the calling thread");
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    mark("cudaGetDevice");
    configure(ctx, device);
    subscribe();
    if (!user_replay_) {  // kernel replay: one session over the whole run
      CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
      start.pRangeProfilerObject = range_profiler_;
      check(cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
      mark("cuptiRangeProfilerStart");
    }
  }

  /// Metric configuration, the range profiler on `ctx` (device index `device`) and its counter data image; makes no
  /// CUDA runtime call (the injected mode runs it inside a launch callback).
  void configure(CUcontext ctx, int device) {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    check(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize");
    mark("cuptiProfilerInitialize");
    profiler_initialized_ = true;

    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = static_cast<std::size_t>(device);
    check(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");
    mark("cuptiDeviceGetChipName");
    collection_.chip = chip.pChipName;

    // Counter availability filters out counters a virtualized or restricted GPU does not expose.
    CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = ctx;
    check(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability (size)");
    mark("cuptiProfilerGetCounterAvailability");
    availability_.assign(avail.counterAvailabilityImageSize, 0);
    avail.pCounterAvailabilityImage = availability_.data();
    check(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
    mark("cuptiProfilerGetCounterAvailability");

    CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = collection_.chip.c_str();
    host.pCounterAvailabilityImage = availability_.data();
    check(cuptiProfilerHostInitialize(&host), "cuptiProfilerHostInitialize");
    mark("cuptiProfilerHostInitialize");
    host_ = host.pHostObject;

    metric_storage_ = hw::metric_names();
    metrics_.clear();
    for (const auto& m : metric_storage_) metrics_.push_back(m.c_str());
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = host_;
    add.ppMetricNames = metrics_.data();
    add.numMetrics = metrics_.size();
    check(cuptiProfilerHostConfigAddMetrics(&add),
          ("cuptiProfilerHostConfigAddMetrics (metrics of xsp/profilers/hardware_counters.h, chip " + collection_.chip +
           ")")
              .c_str());
    CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = host_;
    check(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
    mark("cuptiProfilerHostGetConfigImageSize");
    config_.assign(size.configImageSize, 0);
    CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    image.pHostObject = host_;
    image.pConfigImage = config_.data();
    image.configImageSize = config_.size();
    check(cuptiProfilerHostGetConfigImage(&image), "cuptiProfilerHostGetConfigImage");
    mark("cuptiProfilerHostGetConfigImage");
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    passes.pConfigImage = config_.data();
    passes.configImageSize = config_.size();
    check(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses");
    mark("cuptiProfilerHostGetNumOfPasses");
    collection_.passes = passes.numOfPasses;

    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = ctx;
    check(cuptiRangeProfilerEnable(&enable), "cuptiRangeProfilerEnable");
    mark("cuptiRangeProfilerEnable");
    range_profiler_ = enable.pRangeProfilerObject;

    // One range per kernel of a pass (a batch with user replay, the whole run with kernel replay): beyond that
    // CUPTI drops ranges (counted). Initializing the image costs ~0.9 ms per range on an H200 (7.6 s for 8192),
    // so the default covers large models' batches without paying for more; CounterOptions::max_ranges raises it.
    const std::size_t max_ranges = options_.max_ranges;
    CUpti_RangeProfiler_GetCounterDataSize_Params data_size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    data_size.pRangeProfilerObject = range_profiler_;
    data_size.pMetricNames = metrics_.data();
    data_size.numMetrics = metrics_.size();
    data_size.maxNumOfRanges = max_ranges;
    data_size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(max_ranges);
    check(cuptiRangeProfilerGetCounterDataSize(&data_size), "cuptiRangeProfilerGetCounterDataSize");
    mark("cuptiRangeProfilerGetCounterDataSize");
    counter_data_.assign(data_size.counterDataSize, 0);
    arm_image();
  }

  /// Initializes the counter data image and hands it and the metric configuration to the range profiler: before
  /// the first session, and in the injected mode again before each next one (the image of the session before was
  /// decoded and read).
  void arm_image() {
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params data_init{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    data_init.pRangeProfilerObject = range_profiler_;
    data_init.counterDataSize = counter_data_.size();
    data_init.pCounterData = counter_data_.data();
    check(cuptiRangeProfilerCounterDataImageInitialize(&data_init), "cuptiRangeProfilerCounterDataImageInitialize");
    mark("cuptiRangeProfilerCounterDataImageInitialize");

    CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    config.pRangeProfilerObject = range_profiler_;
    config.configSize = config_.size();
    config.pConfig = config_.data();
    config.counterDataImageSize = counter_data_.size();
    config.pCounterDataImage = counter_data_.data();
    config.range = CUPTI_AutoRange;
    config.replayMode = user_replay_ ? CUPTI_UserReplay : CUPTI_KernelReplay;
    config.maxRangesPerPass = options_.max_ranges;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    check(cuptiRangeProfilerSetConfig(&config), "cuptiRangeProfilerSetConfig");
    mark("cuptiRangeProfilerSetConfig");
  }

  // ---- Injected mode: sessions of at most max_ranges kernels, opened and closed with the capture ----

  /// Whether the launch about to be made on `ctx` is profiled: sets the range profiler up on the first one the
  /// capture admits, starts a session when the capture opens, harvests it when the capture closes or the session's
  /// counter data image is full (so a long run needs one image's memory, not one per kernel). A failure stops
  /// collection for the rest of the run (said on stderr, and by stop()).
  bool admit(CUcontext ctx) {
    std::lock_guard lock(session_mu_);
    if (disabled_ || !running_) return false;
    const bool want = (!collecting_ || collecting_(now_ns())) &&
                      (!follow_profiler_api_ || profiler_api_on_.load(std::memory_order_relaxed));
    try {
      if (ctx_ == nullptr) {
        if (!want) return false;
        std::uint32_t device = 0;
        check(cuptiGetDeviceId(ctx, &device), "cuptiGetDeviceId");
        configure(ctx, static_cast<int>(device));
        ctx_ = ctx;
        image_fresh_ = true;
        started_ns_ = now_ns();
      }
      if (ctx != ctx_) {
        if (want) other_context_launches_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      if (!want) {
        if (session_active_) harvest();
        return false;
      }
      if (session_active_ && session_ranges_ >= options_.max_ranges) harvest();
      if (!session_active_) start_session();
      ++session_ranges_;
      return true;
    } catch (const std::exception& e) {
      disabled_ = true;
      injected_error_ = e.what();
      std::fprintf(stderr, "xsp inject: hardware counters stopped: %s\n", e.what());
      return false;
    }
  }

  void start_session() {  // under session_mu_
    if (!image_fresh_) arm_image();
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = range_profiler_;
    check(cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
    image_fresh_ = false;
    session_active_ = true;
    session_ranges_ = 0;
    ++sessions_;
  }

  /// Ends the session and reads its ranges (kernel replay finished each kernel inside its launch: nothing to wait
  /// for). Under session_mu_.
  void harvest() {
    session_active_ = false;
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = range_profiler_;
    check(cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
    mark("harvest: cuptiRangeProfilerStop");
    ++passes_done_;
    CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    decode.pRangeProfilerObject = range_profiler_;
    check(cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData");
    mark("harvest: cuptiRangeProfilerDecodeData");
    collection_.dropped_ranges += decode.numOfRangeDropped;
    read_ranges();
    mark("harvest: ranges read");
  }

  /// The program destroys its context: its session is harvested first (the range profiler dies with it).
  void on_context_destroy(CUcontext ctx) {
    std::lock_guard lock(session_mu_);
    if (ctx == nullptr || ctx != ctx_ || disabled_) return;
    mark("the program destroys its context");
    try {
      if (session_active_) harvest();
    } catch (const std::exception& e) {
      injected_error_ = e.what();
    }
    disabled_ = true;
    disable_range_profiler();
    mark("range profiler disabled with its context");
  }

  void subscribe();

  /// Waits for the pass's kernels, stops the range profiler and files the pass's launches.
  void end_pass() {
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = range_profiler_;
    pass_active_.store(false, std::memory_order_release);
    check(cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
    all_passes_submitted_ = stop.isAllPassSubmitted != 0;
    ++passes_done_;
    if (user_replay_) {
      std::lock_guard lock(mu_);
      pass_launches_.push_back(std::move(launches_));
      launches_.clear();
    }
  }

  void read_ranges() {
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = counter_data_.data();
    info.counterDataImageSize = counter_data_.size();
    check(cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");
    std::vector<double> values(metrics_.size());
    for (std::size_t i = 0; i < info.numTotalRanges; ++i) {
      CounterRange range;
      range.index = collection_.ranges.size();  // across the sessions of the injected mode
      CUpti_RangeProfiler_CounterData_GetRangeInfo_Params name{
          CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
      name.pCounterDataImage = counter_data_.data();
      name.counterDataImageSize = counter_data_.size();
      name.rangeIndex = i;
      name.rangeDelimiter = "/";
      if (cuptiRangeProfilerCounterDataGetRangeInfo(&name) == CUPTI_SUCCESS && name.rangeName != nullptr) {
        range.name = name.rangeName;
        std::free(const_cast<char*>(name.rangeName));  // CUPTI allocates it; the caller frees it
      }
      CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
      eval.pHostObject = host_;
      eval.pCounterDataImage = counter_data_.data();
      eval.counterDataImageSize = counter_data_.size();
      eval.rangeIndex = i;
      eval.ppMetricNames = metrics_.data();
      eval.numMetrics = metrics_.size();
      eval.pMetricValues = values.data();
      check(cuptiProfilerHostEvaluateToGpuValues(&eval), "cuptiProfilerHostEvaluateToGpuValues");
      for (std::size_t m = 0; m < metrics_.size(); ++m) range.metrics.emplace(metric_storage_[m], values[m]);
      collection_.ranges.push_back(std::move(range));
    }
  }

  void disable_range_profiler() noexcept {
    if (range_profiler_ == nullptr) return;
    CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    disable.pRangeProfilerObject = range_profiler_;
    cuptiRangeProfilerDisable(&disable);
    range_profiler_ = nullptr;
  }

  /// Releases every CUPTI object still held, in reverse order of setup; never throws.
  void teardown() noexcept {
    if (subscriber_ != nullptr) {
      cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
      cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
      cuptiUnsubscribe(subscriber_);
      subscriber_ = nullptr;
    }
    disable_range_profiler();
    if (host_ != nullptr) {
      CUpti_Profiler_Host_Deinitialize_Params deinit{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
      deinit.pHostObject = host_;
      cuptiProfilerHostDeinitialize(&deinit);
      host_ = nullptr;
    }
    if (profiler_initialized_) {
      CUpti_Profiler_DeInitialize_Params deinit{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
      cuptiProfilerDeInitialize(&deinit);
      profiler_initialized_ = false;
    }
  }

  void dump(const std::filesystem::path& dir) const {
    static std::atomic<int> sequence{0};
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const auto path = std::filesystem::path(dir) / ("counters_" + std::to_string(sequence++) + ".json");
    std::ofstream out(path);
    out << to_json(collection_).dump(1) << "\n";
  }

  const CounterOptions options_;  // fixed for the profiler's life: every run behaves alike
  TraceRecorder* recorder_ = nullptr;
  std::int64_t started_ns_ = 0;
  std::int64_t last_mark_ns_ = 0;
  bool running_ = false;
  const bool user_replay_;
  bool all_passes_submitted_ = false;
  std::size_t passes_done_ = 0;
  std::atomic<bool> pass_active_{false};
  std::vector<std::vector<KernelLaunch>> pass_launches_;  // launches of each pass, in pass order
  bool profiler_initialized_ = false;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  CUpti_RangeProfiler_Object* range_profiler_ = nullptr;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::vector<std::uint8_t> availability_, config_, counter_data_;
  std::vector<std::string> metric_storage_;
  std::vector<const char*> metrics_;
  CounterCollection collection_;
  std::atomic<std::uint64_t> graph_launches_{0};

  // Injected mode (injected_counters.h).
  const bool injected_ = false;
  const std::function<bool(std::int64_t)> collecting_;
  const bool follow_profiler_api_ = false;
  std::atomic<bool> profiler_api_on_{false};
  std::mutex session_mu_;  // launches may come from several threads; guards the session state below
  CUcontext ctx_ = nullptr;
  bool disabled_ = false;
  bool session_active_ = false;
  bool image_fresh_ = false;
  std::size_t session_ranges_ = 0;
  std::size_t sessions_ = 0;
  std::string injected_error_;
  std::atomic<std::uint64_t> other_context_launches_{0};

  std::mutex mu_;  // launches may come from several threads
  std::vector<KernelLaunch> launches_;
  std::unordered_map<const char*, std::string> names_;
  std::unordered_map<std::uint64_t, std::string> api_names_;

  friend void CUPTIAPI launch_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*);
};

/// Names of the enabled callbacks, looked up once at subscribe() (the callback must not call CUPTI for them).
std::unordered_map<std::uint64_t, std::string> g_launch_apis;

void CUPTIAPI launch_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    static_cast<CounterProfiler*>(userdata)->on_context_destroy(static_cast<const CUpti_ResourceData*>(data)->context);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto it = g_launch_apis.find((static_cast<std::uint64_t>(domain) << 32) | cbid);
  if (it == g_launch_apis.end()) return;
  static_cast<CounterProfiler*>(userdata)->on_launch(domain, static_cast<const CUpti_CallbackData*>(data), it->second);
}

void CounterProfiler::subscribe() {
  check(cuptiSubscribe(&subscriber_, launch_callback, this), "cuptiSubscribe");
  g_launch_apis.clear();
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    const CUpti_CallbackId size = domain == CUPTI_CB_DOMAIN_RUNTIME_API
                                      ? static_cast<CUpti_CallbackId>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                      : static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE);
    for (CUpti_CallbackId cbid = 1; cbid < size; ++cbid) {
      const char* raw = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &raw) != CUPTI_SUCCESS || raw == nullptr) continue;
      const std::string_view name(raw);
      if (!is_launch_api(name) && !is_graph_launch_api(name) && !(follow_profiler_api_ && is_profiler_api(name)))
        continue;
      g_launch_apis.emplace((static_cast<std::uint64_t>(domain) << 32) | cbid, std::string(name));
      check(cuptiEnableCallback(1, subscriber_, domain, cbid), "cuptiEnableCallback");
    }
  }
  if (injected_)
    check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
          "cuptiEnableCallback(CONTEXT_DESTROY_STARTING)");
}

}  // namespace

std::unique_ptr<DeviceProfiler> make_counter_profiler(const CounterOptions& options) {
  return std::make_unique<CounterProfiler>(options);
}

std::unique_ptr<DeviceProfiler> make_injected_counter_profiler(const InjectedCounterOptions& options) {
  return std::make_unique<CounterProfiler>(options);
}

}  // namespace xsp::cupti

namespace xsp {
std::unique_ptr<DeviceProfiler> create_counter_profiler(const CounterOptions& options) {
  return cupti::make_counter_profiler(options);
}
}  // namespace xsp
