// CUPTI Activity API → GpuActivityLog → spans. Record layouts are those of CUDA 13's cupti_activity.h
// (CUPTI_API_VERSION 130001): CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4,
// CUpti_ActivityMemset4, CUpti_ActivityAPI, CUpti_ActivityExternalCorrelation, CUpti_ActivityMarker2,
// CUpti_ActivitySynchronization2, CUpti_ActivityOverhead3. A CUPTI that hands out another layout for a kind
// reports a different CUPTI_API_VERSION at build time; the static_asserts below catch a header change.
#include "cupti_profiler.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include "cupti_errors.h"
#include "xsp/trace/run_statistics.h"

namespace xsp {
namespace cupti {

/// Per-thread state of the callback-based API tracing: the API calls it made. Appended by its thread only; taken by
/// stop() or pause() while the thread may still run, so both hold `busy` (a spin flag: one atomic exchange per traced
/// call, contended only during a take; its cost is not measured separately yet) around their access.
struct ApiThread {
  std::vector<ApiRecord> calls;
  std::vector<ExternalCorrelationRecord> links;
  std::uint64_t thread_id = 0;
  std::atomic<bool> busy{false};
  void lock() noexcept {
    while (busy.exchange(true, std::memory_order_acquire)) {
    }
  }
  void unlock() noexcept { busy.store(false, std::memory_order_release); }
};

namespace {

static_assert(CUPTI_API_VERSION >= 130000, "XSP's CUPTI layer reads CUDA 13 activity records (CUpti_ActivityKernel10)");

// ---------------------------------------------------------------------------------------------------------------
// Host clock for CUPTI. CUPTI calls this for every CPU-side record and when it converts GPU timestamps, so every
// timestamp it writes is already CLOCK_MONOTONIC ns, the clock of every other span.

uint64_t CUPTIAPI host_timestamp() { return static_cast<uint64_t>(now_ns()); }

// ---------------------------------------------------------------------------------------------------------------
// Buffers. CUPTI asks for empty buffers and hands full ones back; each one returned is parsed at once and goes
// back to a free list, so a long run reuses a handful of buffers instead of stopping when they run out. Buffers
// live for the process: CUPTI may still hold one after a profiler is destroyed.

constexpr std::size_t kBufferBytes = 8u << 20;  // 8 MiB: ~50k kernel records
constexpr std::size_t kMaxBuffers = 64;         // 512 MiB at most, only reached if parsing falls behind
constexpr std::size_t kBufferAlign = 8;         // CUPTI requires 8-byte aligned buffers

struct BufferPool {
  std::mutex mu;
  std::vector<std::uint8_t*> free;
  std::size_t allocated = 0;
  std::uint64_t refused = 0;  // requests declined at the cap: CUPTI drops records, counted as dropped
};

BufferPool& pool() {
  static BufferPool* p = new BufferPool();  // never destroyed: CUPTI may call back during exit
  return *p;
}

std::atomic<CuptiProfiler*> g_active{nullptr};
std::atomic<std::uint64_t> g_buffers_completed{0};
std::atomic<std::uint64_t> g_dump_sequence{0};

/// Makes sure `n` buffers wait in the free list, written once so that their pages are mapped: a run's first
/// buffer requests then cost CUPTI no allocation or page faults inside the measured work.
void prefill_pool(std::size_t n) {
  BufferPool& p = pool();
  std::lock_guard lock(p.mu);
  while (p.free.size() < n && p.allocated < kMaxBuffers) {
    auto* b = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    if (b == nullptr) return;
    std::memset(b, 0, kBufferBytes);
    p.free.push_back(b);
    ++p.allocated;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  BufferPool& p = pool();
  std::lock_guard lock(p.mu);
  *max_records = 0;  // as many as fit
  if (!p.free.empty()) {
    *buffer = p.free.back();
    p.free.pop_back();
    *size = kBufferBytes;
    return;
  }
  if (p.allocated >= kMaxBuffers) {
    ++p.refused;
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  if (*buffer != nullptr) {
    std::memset(*buffer, 0, kBufferBytes);  // CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER promises zeroed buffers
    ++p.allocated;
  }
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size, size_t valid) {
  (void)size;
  g_buffers_completed.fetch_add(1, std::memory_order_relaxed);
  if (CuptiProfiler* profiler = g_active.load(std::memory_order_acquire); profiler != nullptr && valid > 0) {
    profiler->parse_buffer(buffer, valid);
  }
  (void)context;
  (void)stream_id;
  if (buffer != nullptr) {
    // Zeroed here, on CUPTI's worker thread, so that CUPTI need not zero the next buffer it asks for on the
    // application thread (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, set in start()).
    std::memset(buffer, 0, valid);
    BufferPool& p = pool();
    std::lock_guard lock(p.mu);
    p.free.push_back(buffer);
  }
}

/// Records dropped for lack of buffer space since the last call. Since CUDA 6 every buffer is global, so the
/// global queue (NULL context, stream 0) holds the count for all contexts and streams.
std::uint64_t take_dropped() {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) return 0;
  return dropped;
}

// ---------------------------------------------------------------------------------------------------------------
// Record conversion helpers

CopyKind copy_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return CopyKind::kHtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return CopyKind::kDtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return CopyKind::kHtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return CopyKind::kAtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return CopyKind::kAtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return CopyKind::kAtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return CopyKind::kDtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return CopyKind::kDtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return CopyKind::kHtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return CopyKind::kPtoP;
    default:
      return CopyKind::kUnknown;
  }
}

MemoryKind memory_kind(std::uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return MemoryKind::kPageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return MemoryKind::kPinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return MemoryKind::kDevice;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return MemoryKind::kArray;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return MemoryKind::kManaged;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return MemoryKind::kDeviceStatic;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return MemoryKind::kManagedStatic;
    default:
      return MemoryKind::kUnknown;
  }
}

const char* sync_type(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "event_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "stream_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "context_synchronize";
    default:
      return "unknown";
  }
}

const char* overhead_kind(CUpti_ActivityOverheadKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
      return "driver_compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "cupti_buffer_flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
      return "cupti_instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
      return "cupti_resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "runtime_triggered_module_loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
      return "lazy_function_loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
      return "command_buffer_full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
      return "activity_buffer_request";
    default:
      return "unknown";
  }
}

/// API calls that launch, copy, wait or allocate nothing: recording them only inflates the trace (PyTorch calls
/// cudaGetDevice around almost every op). They are counted in "cupti.filtered_api_records", never dropped silently.
bool is_noise_api(std::string_view name) {
  static constexpr std::array<std::string_view, 24> kNoise = {
      "cudaGetDevice", "cudaSetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetDeviceCount",
      "cudaDeviceGetAttribute", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo", "cudaGetDriverEntryPoint",
      "cudaGetDriverEntryPointByVersion", "cudaFuncGetAttributes", "cudaPointerGetAttributes", "cuCtxGetCurrent",
      "cuCtxSetCurrent", "cuCtxGetDevice", "cuDeviceGetAttribute", "cuDeviceGet", "cuDeviceGetCount",
      "cuGetProcAddress", "cuDevicePrimaryCtxGetState", "cuStreamIsCapturing", "cuStreamGetCaptureInfo",
      // CUDA 13's runtime looks each kernel up through the library API on its first launch.
      "cuLibraryGetKernel", "cuKernelGetName"};
  for (std::string_view n : kNoise) {
    if (n == name) return true;
  }
  return false;
}

/// APIs that launch, copy, set, wait, allocate or free: the SYSTEM spans XSP wants. Only these are traced (unless
/// CuptiOptions::all_apis): PyTorch makes thousands of bookkeeping calls per inference (cudaGetDevice,
/// cuCtxGetCurrent...), and recording each one costs more than the launches themselves.
bool is_traced_api(std::string_view name) {
  // cudaGraphAdd*/cuGraphAdd*: a node added by hand takes its capture context (the op open) from the call.
  static constexpr std::array<std::string_view, 15> kPrefixes = {
      "cudaLaunch",      "cudaMemcpy",      "cudaMemset",    "cudaMalloc",   "cudaFree",
      "cudaGraphLaunch", "cudaEventRecord", "cuLaunch",      "cuMemcpy",     "cuMemset",
      "cuMemAlloc",      "cuMemFree",       "cuGraphLaunch", "cudaGraphAdd", "cuGraphAdd"};
  for (std::string_view p : kPrefixes)
    if (name.starts_with(p)) return true;
  // cudaProfilerStart/Stop bound `xsp profile --capture cuda-profiler-api`; rare calls, so always traced.
  if (name.starts_with("cudaProfilerSt") || name.starts_with("cuProfilerSt")) return true;
  return name.find("Synchronize") != std::string_view::npos || name == "cudaStreamWaitEvent" ||
         name == "cuStreamWaitEvent" || name == "cuEventRecord" || name == "cudaHostAlloc" || name == "cuMemHostAlloc";
}

std::string clean_api_name(std::string name);

/// Callback ids of one domain's APIs that are traced (`traced`) or not (computed once: a few hundred
/// cuptiGetCallbackName calls).
const std::vector<CUpti_CallbackId>& api_cbids(bool runtime, bool traced) {
  static const auto build = [](bool rt, bool want) {
    std::vector<CUpti_CallbackId> ids;
    const CUpti_CallbackId size = rt ? static_cast<CUpti_CallbackId>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                     : static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE);
    for (CUpti_CallbackId cbid = 1; cbid < size; ++cbid) {
      const char* raw = nullptr;
      if (cuptiGetCallbackName(rt ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid, &raw) ==
              CUPTI_SUCCESS &&
          raw != nullptr && is_traced_api(clean_api_name(raw)) == want)
        ids.push_back(cbid);
    }
    return ids;
  };
  static const std::vector<CUpti_CallbackId> lists[2][2] = {{build(false, false), build(false, true)},
                                                            {build(true, false), build(true, true)}};
  return lists[runtime][traced];
}

constexpr int kMaxOpDepth = 256;
constexpr int kMaxCallDepth = 8;
struct ApiThreadCache {
  std::uint64_t generation = 0;
  ApiThread* thread = nullptr;
  int depth = 0;  ///< open ops; only the innermost kMaxOpDepth are remembered
  SpanId ops[kMaxOpDepth];
  /// Traced API calls in progress (a runtime call may enter the driver): a graph node created during one was
  /// captured by the innermost.
  int calls = 0;
  std::uint32_t call_ids[kMaxCallDepth];
};
thread_local ApiThreadCache t_api;
std::atomic<std::uint64_t> g_api_generation{1};

/// Resource callbacks of graph nodes: created (stream capture, cudaGraphAdd*Node, and inside an instantiation or
/// clone) and cloned. Rare (once per node and instantiation), so a lock is fine. Recorded also while paused: the
/// clone chains must stay whole for later replays.
void graph_node_callback(CuptiProfiler* profiler, CUpti_CallbackId cbid, const CUpti_ResourceData* data) {
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) return;
  const auto* g = static_cast<const CUpti_GraphData*>(data->resourceDescriptor);
  if (g == nullptr || g->node == nullptr) return;
  GraphNodeRecord r;
  if (cuptiGetGraphNodeId(g->node, &r.node_id) != CUPTI_SUCCESS) return;
  if (g->graph != nullptr) cuptiGetGraphId(g->graph, &r.graph_id);
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED && g->originalNode != nullptr) {
    cuptiGetGraphNodeId(g->originalNode, &r.original_node_id);
    if (g->originalGraph != nullptr) cuptiGetGraphId(g->originalGraph, &r.original_graph_id);
  }
  if (t_api.calls > 0) r.capture_correlation_id = t_api.call_ids[std::min(t_api.calls, kMaxCallDepth) - 1];
  r.thread_id = current_thread_id();
  r.time_ns = now_ns();
  profiler->add_graph_node(r);
}

/// CUPTI callback (cuptiSubscribe) for the traced runtime/driver APIs: times the call on the host clock and
/// ties its correlation id to the innermost framework op open on the thread. Allocation only when a
/// thread's vectors grow.
void CUPTIAPI api_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    graph_node_callback(static_cast<CuptiProfiler*>(userdata), cbid, static_cast<const CUpti_ResourceData*>(data));
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite == CUPTI_API_ENTER) {
    *cb->correlationData = static_cast<std::uint64_t>(now_ns());
    if (t_api.calls < kMaxCallDepth) t_api.call_ids[t_api.calls] = cb->correlationId;
    ++t_api.calls;
    return;
  }
  if (t_api.calls > 0) --t_api.calls;
  const std::int64_t end = now_ns();
  auto* profiler = static_cast<CuptiProfiler*>(userdata);
  if (!profiler->collecting()) return;
  ApiThread* t = profiler->api_thread();
  if (t == nullptr) return;
  std::lock_guard taking(*t);
  ApiRecord& r = t->calls.emplace_back();
  r.domain = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? ApiDomain::kRuntime : ApiDomain::kDriver;
  r.cbid = cbid;
  r.start_ns = static_cast<std::int64_t>(*cb->correlationData);
  r.end_ns = end;
  r.thread_id = t->thread_id;
  r.correlation_id = cb->correlationId;
  if (cb->functionReturnValue != nullptr) r.return_value = *static_cast<const std::uint32_t*>(cb->functionReturnValue);
  if (t_api.depth > 0) t->links.push_back({cb->correlationId, t_api.ops[std::min(t_api.depth, kMaxOpDepth) - 1]});
}

/// A callback subscriber named "XSP" (cuptiSubscribe_v2, CUDA 13): others see our name when they come second, and
/// when we do, the error names the holder. CUPTI 13.0 admits one subscriber per process; its later flag for several
/// is not in this toolkit's headers. Throws std::runtime_error as check() does.
CUpti_SubscriberHandle subscribe(CUpti_CallbackFunc callback, void* userdata) {
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "XSP";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof holder;
  CUpti_SubscriberHandle subscriber = nullptr;
  const CUptiResult r = cuptiSubscribe_v2(&subscriber, callback, userdata, &params);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && holder[0] != '\0')
    throw std::runtime_error("CUPTI profiler: cuptiSubscribe_v2 failed: " + result_text(r) + hint(r) +
                             "; the subscription is held by \"" + std::string(holder) + "\"");
  check(r, "cuptiSubscribe_v2");
  return subscriber;
}

/// "cudaLaunchKernel_v7000" → "cudaLaunchKernel", "cudaMemcpyAsync_ptsz_v7000" → "cudaMemcpyAsync",
/// "cuMemcpyHtoD_v2" → "cuMemcpyHtoD": the name the user wrote, not the ABI version CUPTI reports.
std::string clean_api_name(std::string name) {
  for (bool changed = true; changed;) {
    changed = false;
    const auto us = name.rfind('_');
    if (us == std::string::npos || us == 0) break;
    std::string_view tail(name.c_str() + us + 1);
    const bool version =
        tail.size() >= 2 && tail[0] == 'v' && tail.find_first_not_of("0123456789", 1) == std::string_view::npos;
    if (version || tail == "ptsz" || tail == "ptds") {
      name.resize(us);
      changed = true;
    }
  }
  return name;
}

/// Directory of the libcupti this process uses, for NVTX_INJECTION64_PATH ("" if unknown).
std::string loaded_cupti_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) == 0 || info.dli_fname == nullptr) return {};
  return info.dli_fname;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------

CuptiProfiler::CuptiProfiler(const CuptiOptions& options)
    : cupti_options_(options), api_callbacks_(options.api_source == CuptiOptions::ApiSource::kCallback) {}

CuptiProfiler::~CuptiProfiler() {
  if (running_) {
    try {
      stop();
    } catch (...) {
      // A destructor must not throw; stop() has already left CUPTI disabled on its error path.
    }
  }
}

std::string CuptiProfiler::clock_mapping() const { return clock_mapping_; }

void CuptiProfiler::set_up_clock() {
  // Clock::kOffset skips the callback (for measuring what it costs); the offset path below then runs.
  const bool offset_requested = cupti_options_.clock == CuptiOptions::Clock::kOffset;
  const CUptiResult ts =
      offset_requested ? CUPTI_ERROR_NOT_SUPPORTED : cuptiActivityRegisterTimestampCallback(&host_timestamp);
  if (ts == CUPTI_SUCCESS) {
    clock_offset_ns_ = 0;
    clock_mapping_ = "cupti timestamp callback: CLOCK_MONOTONIC";
  } else {
    // Measured offset: the sample with the narrowest host bracket bounds the error best.
    std::int64_t best_bracket = INT64_MAX;
    std::int64_t best_offset = 0;
    for (int i = 0; i < 16; ++i) {
      std::uint64_t cupti_ts = 0;
      const std::int64_t h0 = now_ns();
      check(cuptiGetTimestamp(&cupti_ts), "cuptiGetTimestamp");
      const std::int64_t h1 = now_ns();
      if (h1 - h0 < best_bracket) {
        best_bracket = h1 - h0;
        best_offset = h0 + (h1 - h0) / 2 - static_cast<std::int64_t>(cupti_ts);
      }
    }
    clock_offset_ns_ = best_offset;
    clock_mapping_ = "measured offset: CLOCK_MONOTONIC = cupti timestamp + " + std::to_string(best_offset) +
                     " ns (best of 16 samples, bracket " + std::to_string(best_bracket) + " ns); " +
                     (offset_requested ? std::string("cupti.clock = offset")
                                       : "cuptiActivityRegisterTimestampCallback failed: " + result_text(ts));
  }
}

void CuptiProfiler::start(TraceRecorder& recorder, const DeviceProfilerOptions& options) {
  if (running_) throw std::logic_error("CuptiProfiler::start: already started");
  CuptiProfiler* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this)) {
    throw std::logic_error("CuptiProfiler::start: another CUPTI profiler is running in this process");
  }
  recorder_ = &recorder;
  options_ = options;
  enabled_kinds_.clear();
  collecting_.store(!start_paused_, std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    log_ = GpuActivityLog{};
    open_markers_.clear();
  }
  std::vector<CUpti_ActivityKind> enabled;
  try {
    // NVTX ranges reach CUPTI only if NVTX loads libcupti as its injection library, which each NVTX client
    // (libtorch, cuDNN, this program) decides once, at its first NVTX call, from NVTX_INJECTION64_PATH.
    if (options.library && std::getenv("NVTX_INJECTION64_PATH") == nullptr) {
      if (const std::string path = loaded_cupti_path(); !path.empty()) setenv("NVTX_INJECTION64_PATH", path.c_str(), 0);
    }

    // Thread ids as gettid() reports them, so SYSTEM spans share tracks with the CPU spans (current_thread_id).
    check(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType(SYSTEM)");

    set_up_clock();  // before any kind is enabled, as CUPTI requires

    prefill_pool(2);
    // Buffers come zeroed (buffer_requested, buffer_completed), so CUPTI skips zeroing each new 8 MiB buffer on
    // the thread that launches kernels. zeroed_buffers = false turns this off (to measure what it saves).
    if (cupti_options_.zeroed_buffers) {
      std::uint8_t zeroed = 1;
      std::size_t zeroed_size = sizeof zeroed;
      check(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size, &zeroed),
            "cuptiActivitySetAttribute(ZEROED_OUT_ACTIVITY_BUFFER)");
    }
    check(cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed), "cuptiActivityRegisterCallbacks");

    if (options.kernel && cupti_options_.latency_timestamps) {
      check(cuptiActivityEnableLatencyTimestamps(1), "cuptiActivityEnableLatencyTimestamps");
    }

    // Is there a device at all? Asked after the CUPTI set-up, which must precede CUDA's initialization. Inside the
    // driver's initialization the driver is the one asking.
    int devices = 1;
    const cudaError_t dc = inside_driver_init_ ? cudaSuccess : cudaGetDeviceCount(&devices);
    if (dc != cudaSuccess || devices == 0) {
      throw std::runtime_error(std::string("CUPTI profiler: no CUDA device (cudaGetDeviceCount: ") +
                               (dc != cudaSuccess ? cudaGetErrorString(dc) : "0 devices") + ")");
    }

    auto enable = [&](CUpti_ActivityKind kind, const char* call) {
      if (kind != CUPTI_ACTIVITY_KIND_OVERHEAD) enabled_kinds_.push_back(static_cast<int>(kind));
      if (start_paused_ && kind != CUPTI_ACTIVITY_KIND_OVERHEAD) return;  // resume() enables it
      check(cuptiActivityEnable(kind), call);
      enabled.push_back(kind);
    };
    if (options.system && api_callbacks_) {
      subscriber_ = subscribe(reinterpret_cast<CUpti_CallbackFunc>(&api_callback), this);
      g_api_generation.fetch_add(1, std::memory_order_acq_rel);
      for (bool runtime : {true, false})
        for (CUpti_CallbackId cbid : api_cbids(runtime, true))
          check(cuptiEnableCallback(1, subscriber_, runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                                    cbid),
                "cuptiEnableCallback");
      enable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "cuptiActivityEnable(SYNCHRONIZATION)");
      if (options.kernel) enable_graph_node_callbacks();
    } else if (options.system) {
      if (cupti_options_.all_apis) {
        enable(CUPTI_ACTIVITY_KIND_RUNTIME, "cuptiActivityEnable(RUNTIME)");
        enable(CUPTI_ACTIVITY_KIND_DRIVER, "cuptiActivityEnable(DRIVER)");
      } else {
        // Enabling a callback id alone recorded nothing (CUPTI 13.0 on an H200), so every API of the kinds is
        // enabled and the uninteresting ones switched off: the documented "disable a small set" path.
        enable(CUPTI_ACTIVITY_KIND_RUNTIME, "cuptiActivityEnable(RUNTIME)");
        enable(CUPTI_ACTIVITY_KIND_DRIVER, "cuptiActivityEnable(DRIVER)");
        for (CUpti_CallbackId cbid : api_cbids(true, false))
          check(cuptiActivityEnableRuntimeApi(cbid, 0), "cuptiActivityEnableRuntimeApi");
        for (CUpti_CallbackId cbid : api_cbids(false, false))
          check(cuptiActivityEnableDriverApi(cbid, 0), "cuptiActivityEnableDriverApi");
      }
      enable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "cuptiActivityEnable(SYNCHRONIZATION)");
    }
    // External correlation joins API calls to framework ops; kernels reach their op through their API call, so
    // it is wanted whenever API records are (and harmless otherwise).
    if ((options.system || options.kernel) && !api_callbacks_) {
      enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "cuptiActivityEnable(EXTERNAL_CORRELATION)");
    }
    if (options.kernel) {
      // Never KIND_KERNEL: it serializes every kernel on the device.
      enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "cuptiActivityEnable(CONCURRENT_KERNEL)");
      enable(CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(MEMCPY)");
      enable(CUPTI_ACTIVITY_KIND_MEMCPY2, "cuptiActivityEnable(MEMCPY2)");
      enable(CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(MEMSET)");
    }
    if (options.library) enable(CUPTI_ACTIVITY_KIND_MARKER, "cuptiActivityEnable(MARKER)");
    enable(CUPTI_ACTIVITY_KIND_OVERHEAD, "cuptiActivityEnable(OVERHEAD)");
  } catch (const std::runtime_error& e) {
    for (CUpti_ActivityKind k : enabled) cuptiActivityDisable(k);
    unsubscribe();

    g_active.store(nullptr, std::memory_order_release);
    recorder_ = nullptr;
    if (inside_driver_init_) throw;
    // Without a GPU or driver CUPTI fails with an unhelpful CUPTI_ERROR_UNKNOWN on its first call: say why.
    int devices = 0;
    const cudaError_t dc = cudaGetDeviceCount(&devices);
    const bool said = std::string_view(e.what()).starts_with("CUPTI profiler: no CUDA device");
    if (!said && (dc != cudaSuccess || devices == 0)) {
      throw std::runtime_error(std::string("CUPTI profiler: no CUDA device (cudaGetDeviceCount: ") +
                               (dc != cudaSuccess ? cudaGetErrorString(dc) : "0 devices") + "); " + e.what());
    }
    throw;
  } catch (...) {
    for (CUpti_ActivityKind k : enabled) cuptiActivityDisable(k);
    unsubscribe();

    g_active.store(nullptr, std::memory_order_release);
    recorder_ = nullptr;
    throw;
  }
  take_dropped();  // start this run's count at zero
  g_buffers_completed.store(0, std::memory_order_relaxed);
  correlation_errors_.store(0, std::memory_order_relaxed);
  running_ = true;
}

void CuptiProfiler::stop() {
  if (!running_) return;
  running_ = false;
  std::string error;
  auto attempt = [&](auto&& step) {
    try {
      step();
    } catch (const std::exception& e) {
      if (error.empty()) error = e.what();
    }
  };

  // API tracing ends first so that the profiler's own cudaDeviceSynchronize is not a SYSTEM span of the run;
  // device kinds stay on until outstanding work has finished and its records are flushed.
  for (CUpti_ActivityKind k :
       {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}) {
    cuptiActivityDisable(k);
  }
  unsubscribe();

  if (!inside_driver_init_) attempt([] { check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); });
  attempt([] { check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll"); });
  static constexpr std::array<CUpti_ActivityKind, 10> kKinds = {CUPTI_ACTIVITY_KIND_RUNTIME,
                                                                CUPTI_ACTIVITY_KIND_DRIVER,
                                                                CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                                                CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                                                CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                                                CUPTI_ACTIVITY_KIND_MEMCPY,
                                                                CUPTI_ACTIVITY_KIND_MEMCPY2,
                                                                CUPTI_ACTIVITY_KIND_MEMSET,
                                                                CUPTI_ACTIVITY_KIND_MARKER,
                                                                CUPTI_ACTIVITY_KIND_OVERHEAD};
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);  // disabling a kind never enabled is harmless
  // Records written between the first flush and the disable.
  attempt([] { check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll"); });
  g_active.store(nullptr, std::memory_order_release);

  GpuActivityLog log = take_log();
  {
    // A thread still inside api_callback may hold its ApiThread (the unsubscribe above stops new ones), so none is
    // destroyed: emptied by take_log(), they are kept for the process (a few dozen bytes per thread and run).
    static auto* retired = new std::vector<std::unique_ptr<ApiThread>>();  // never destroyed
    std::lock_guard lock(mu_);
    for (auto& t : api_threads_) retired->push_back(std::move(t));
    api_threads_.clear();
  }
  log.clock_mapping = clock_mapping_;
  log.counters[stat::kCuptiDroppedRecords] += take_dropped();
  log.counters[stat::kCuptiBuffersCompleted] += g_buffers_completed.exchange(0, std::memory_order_relaxed);
  {
    BufferPool& p = pool();
    std::lock_guard lock(p.mu);
    if (p.refused > 0) log.counters[stat::kCuptiBufferRequestsRefused] += p.refused;
    p.refused = 0;
  }
  if (const std::uint64_t e = correlation_errors_.exchange(0); e > 0) {
    log.counters[stat::kCuptiExternalCorrelationErrors] += e;
  }
  log.counters.try_emplace(stat::kCuptiRecords, 0);
  log.counters.try_emplace(stat::kCuptiUnknownRecords, 0);

  if (const std::filesystem::path& dir = cupti_options_.dump_dir; !dir.empty()) {
    attempt([&] {
      std::filesystem::create_directories(dir);
      const auto path = dir / ("gpu_activity_" + std::to_string(g_dump_sequence.fetch_add(1)) + ".json");
      std::ofstream out(path);
      out << to_json(log).dump(1) << '\n';
      if (!out) throw std::runtime_error("CUPTI profiler: cannot write the activity dump " + path.string());
    });
  }

  append_spans(log, *recorder_);
  recorder_ = nullptr;
  if (!error.empty()) throw std::runtime_error(error);
}

GpuActivityLog CuptiProfiler::take_log() {
  GpuActivityLog log;
  std::lock_guard lock(mu_);
  finish_markers();
  log = std::move(log_);
  log_ = GpuActivityLog{};
  for (auto& t : api_threads_) {
    std::vector<ApiRecord> calls;
    std::vector<ExternalCorrelationRecord> links;
    {
      std::lock_guard taking(*t);
      calls.swap(t->calls);
      links.swap(t->links);
    }
    for (ApiRecord& r : calls) {
      r.name = api_name(r.domain == ApiDomain::kRuntime, r.cbid).first;
      log.apis.push_back(std::move(r));
    }
    log.external_correlations.insert(log.external_correlations.end(), links.begin(), links.end());
  }
  return log;
}

void CuptiProfiler::pause(std::chrono::milliseconds settle) {
  if (!running_) return;
  const bool was_collecting = collecting_.exchange(false, std::memory_order_relaxed);
  if (was_collecting && settle.count() > 0) std::this_thread::sleep_for(settle);
  std::string error;
  auto attempt = [&](CUptiResult r, const char* call) {
    if (r != CUPTI_SUCCESS && error.empty())
      error = "CUPTI profiler: " + std::string(call) + " failed: " + result_text(r);
  };
  attempt(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  if (was_collecting) {
    for (int k : enabled_kinds_) cuptiActivityDisable(static_cast<CUpti_ActivityKind>(k));
    // Records written between the flush and the disable.
    attempt(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  }
  GpuActivityLog log = take_log();
  log.clock_mapping = clock_mapping_;
  append_spans(log, *recorder_);
  if (!error.empty()) throw std::runtime_error(error);
}

void CuptiProfiler::resume() {
  if (!running_ || collecting_.load(std::memory_order_relaxed)) return;
  std::string error;
  for (int k : enabled_kinds_)
    if (const CUptiResult r = cuptiActivityEnable(static_cast<CUpti_ActivityKind>(k));
        r != CUPTI_SUCCESS && error.empty())
      error = "CUPTI profiler: cuptiActivityEnable(" + std::to_string(k) + ") failed: " + result_text(r);
  collecting_.store(true, std::memory_order_relaxed);
  if (!error.empty()) throw std::runtime_error(error);
}

ApiThread* CuptiProfiler::api_thread() {
  const std::uint64_t generation = g_api_generation.load(std::memory_order_acquire);
  if (t_api.generation == generation) return t_api.thread;
  t_api.generation = generation;
  t_api.thread = nullptr;
  if (g_active.load(std::memory_order_acquire) != this || subscriber_ == nullptr) return nullptr;
  auto t = std::make_unique<ApiThread>();
  t->thread_id = current_thread_id();
  t->calls.reserve(4096);
  t->links.reserve(4096);
  std::lock_guard lock(mu_);
  api_threads_.push_back(std::move(t));
  t_api.thread = api_threads_.back().get();
  return t_api.thread;
}

void CuptiProfiler::enable_graph_node_callbacks() {
  for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED})
    check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid), "cuptiEnableCallback(RESOURCE)");
}

void CuptiProfiler::add_graph_node(const GraphNodeRecord& node) {
  std::lock_guard lock(mu_);
  log_.graph_nodes.push_back(node);
}

void CuptiProfiler::unsubscribe() noexcept {
  if (subscriber_ == nullptr) return;
  cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
  cuptiEnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RESOURCE);
  cuptiUnsubscribe(subscriber_);
  subscriber_ = nullptr;
  g_api_generation.fetch_add(1, std::memory_order_acq_rel);
}

void CuptiProfiler::op_enter(SpanId op) noexcept {
  if (api_callbacks_) {
    if (t_api.depth < kMaxOpDepth) t_api.ops[t_api.depth] = op;
    ++t_api.depth;
    return;
  }
  if (cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, op) != CUPTI_SUCCESS) {
    correlation_errors_.fetch_add(1, std::memory_order_relaxed);
  }
}

void CuptiProfiler::op_exit(SpanId op) noexcept {
  (void)op;
  if (api_callbacks_) {
    if (t_api.depth > 0) --t_api.depth;
    return;
  }
  std::uint64_t last = 0;
  if (cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last) != CUPTI_SUCCESS) {
    correlation_errors_.fetch_add(1, std::memory_order_relaxed);
  }
}

const std::string& CuptiProfiler::kernel_name(const char* mangled) {
  static const std::string kUnknown = "(unknown kernel)";
  if (mangled == nullptr) return kUnknown;
  // CUPTI shares one name string among every record of a kernel, so the pointer is a cheap key; the string
  // compare guards against a module unload freeing it and a later name reusing the address.
  auto it = kernel_names_.find(mangled);
  if (it != kernel_names_.end() && it->second.mangled == mangled) return it->second.demangled;
  MangledName& entry = kernel_names_[mangled];
  entry.mangled = mangled;
  entry.demangled = demangle(mangled);
  return entry.demangled;
}

const std::pair<std::string, bool>& CuptiProfiler::api_name(bool runtime, std::uint32_t cbid) {
  const std::uint64_t key = (static_cast<std::uint64_t>(runtime) << 32) | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  const char* raw = nullptr;
  std::string name;
  if (cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid, &raw) ==
          CUPTI_SUCCESS &&
      raw != nullptr) {
    name = clean_api_name(raw);
  } else {
    name = std::string(runtime ? "cuda" : "cu") + " API cbid " + std::to_string(cbid);
  }
  const bool noise = is_noise_api(name);
  return api_names_.emplace(key, std::make_pair(std::move(name), noise)).first->second;
}

void CuptiProfiler::finish_markers() {
  // Ranges still open at stop(): kept as zero-length marks at their start, and counted.
  for (auto& [id, m] : open_markers_) {
    log_.markers.push_back({std::move(m.name), std::move(m.domain), m.start_ns, m.start_ns, m.thread_id});
    ++log_.counters[stat::kCuptiUnclosedMarkers];
  }
  open_markers_.clear();
}

// A kernel activity record as the log keeps it; `to_host_ns` maps CUPTI's timestamps to the host clock and `name_of`
// demangles the name (CuptiProfiler's clock offset and name cache).
template <typename ToHost, typename NameOf>
KernelRecord kernel_record(const CUpti_ActivityKernel10& k, const ToHost& to_host_ns, const NameOf& name_of) {
  KernelRecord out;
  out.name = name_of(k.name);
  out.start_ns = to_host_ns(k.start);
  out.end_ns = to_host_ns(k.end);
  out.queued_ns = to_host_ns(k.queued);
  out.submitted_ns = to_host_ns(k.submitted);
  out.device = k.deviceId;
  out.context = k.contextId;
  out.stream = k.streamId;
  out.correlation_id = k.correlationId;
  out.grid_x = k.gridX;
  out.grid_y = k.gridY;
  out.grid_z = k.gridZ;
  out.block_x = k.blockX;
  out.block_y = k.blockY;
  out.block_z = k.blockZ;
  out.registers_per_thread = k.registersPerThread;
  out.static_shared_bytes = static_cast<std::uint32_t>(k.staticSharedMemory);
  out.dynamic_shared_bytes = static_cast<std::uint32_t>(k.dynamicSharedMemory);
  out.graph_id = k.graphId;
  out.graph_node_id = k.graphNodeId;
  return out;
}

// A memset activity record as the log keeps it.
template <typename ToHost>
MemsetRecord memset_record(const CUpti_ActivityMemset4& m, const ToHost& to_host_ns) {
  MemsetRecord out;
  out.bytes = m.bytes;
  out.value = m.value;
  out.memory_kind = memory_kind(m.memoryKind);
  out.start_ns = to_host_ns(m.start);
  out.end_ns = to_host_ns(m.end);
  out.device = m.deviceId;
  out.context = m.contextId;
  out.stream = m.streamId;
  out.correlation_id = m.correlationId;
  out.graph_id = m.graphId;
  out.graph_node_id = m.graphNodeId;
  return out;
}

void CuptiProfiler::parse_buffer(std::uint8_t* buffer, std::size_t valid_bytes) {
  std::lock_guard lock(mu_);
  GpuActivityLog& log = log_;
  std::uint64_t records = 0;
  std::uint64_t unknown = 0;
  std::uint64_t filtered = 0;
  // Fields the host-to-device (CUpti_ActivityMemcpy6) and peer (CUpti_ActivityMemcpyPtoP4) records share.
  auto memcpy_record = [this](const auto& m) {
    MemcpyRecord out;
    out.bytes = m.bytes;
    out.src_kind = memory_kind(m.srcKind);
    out.dst_kind = memory_kind(m.dstKind);
    out.start_ns = to_host(m.start);
    out.end_ns = to_host(m.end);
    out.device = m.deviceId;
    out.context = m.contextId;
    out.stream = m.streamId;
    out.correlation_id = m.correlationId;
    out.graph_id = m.graphId;
    out.graph_node_id = m.graphNodeId;
    return out;
  };
  const auto to_host_ns = [this](std::uint64_t cupti_ns) { return to_host(cupti_ns); };
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (r != CUPTI_SUCCESS) {
      // An incomplete or invalid record ends the buffer; the rest of it cannot be walked.
      ++log.counters[stat::kCuptiInvalidBufferTails];
      break;
    }
    ++records;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        log.kernels.push_back(kernel_record(*reinterpret_cast<const CUpti_ActivityKernel10*>(record), to_host_ns,
                                            [this](const char* mangled) { return kernel_name(mangled); }));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        MemcpyRecord out = memcpy_record(*m);
        out.copy_kind = copy_kind(m->copyKind);
        out.runtime_correlation_id = m->runtimeCorrelationId != m->correlationId ? m->runtimeCorrelationId : 0;
        log.memcpys.push_back(out);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        MemcpyRecord out = memcpy_record(*reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record));
        out.copy_kind = CopyKind::kPtoP;
        log.memcpys.push_back(out);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        log.memsets.push_back(memset_record(*reinterpret_cast<const CUpti_ActivityMemset4*>(record), to_host_ns));
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
        const auto& [name, noise] = api_name(runtime, a->cbid);
        if (noise) {
          ++filtered;
          break;
        }
        ApiRecord out;
        out.domain = runtime ? ApiDomain::kRuntime : ApiDomain::kDriver;
        out.cbid = a->cbid;
        out.name = name;
        out.start_ns = to_host(a->start);
        out.end_ns = to_host(a->end);
        out.thread_id = a->threadId;
        out.correlation_id = a->correlationId;
        out.return_value = a->returnValue;
        log.apis.push_back(std::move(out));
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
          log.external_correlations.push_back({e->correlationId, e->externalId});
        } else {
          ++log.counters[stat::kCuptiForeignExternalCorrelations];  // another tool's ids, not XSP's ops
        }
        break;
      }
      case CUPTI_ACTIVITY_KIND_MARKER: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
        const std::uint64_t thread = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
        const std::int64_t ts = to_host(m->timestamp);
        if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
          log.markers.push_back({m->name ? m->name : "", m->domain ? m->domain : "", ts, ts, thread});
        } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
          open_markers_[m->id] = OpenMarker{m->name ? m->name : "", m->domain ? m->domain : "", ts, thread};
        } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
          auto it = open_markers_.find(m->id);
          if (it == open_markers_.end()) {
            ++log.counters[stat::kCuptiUnmatchedMarkerEnds];
          } else {
            log.markers.push_back({std::move(it->second.name), std::move(it->second.domain), it->second.start_ns, ts,
                                   it->second.thread_id});
            open_markers_.erase(it);
          }
        } else {
          ++log.counters[stat::kCuptiIgnoredMarkers];  // sync acquire/release markers: no range
        }
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
        log.syncs.push_back(
            {sync_type(s->type), to_host(s->start), to_host(s->end), s->correlationId, s->contextId, s->streamId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
        const std::uint64_t thread = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0;
        log.overheads.push_back({overhead_kind(o->overheadKind), to_host(o->start), to_host(o->end), thread});
        break;
      }
      default:
        ++unknown;
        break;
    }
  }
  log.counters[stat::kCuptiRecords] += records;
  if (unknown > 0) log.counters[stat::kCuptiUnknownRecords] += unknown;
  if (filtered > 0) log.counters[stat::kCuptiFilteredApiRecords] += filtered;
}

}  // namespace cupti

bool have_device_profiler() { return true; }

std::unique_ptr<DeviceProfiler> create_device_profiler(const CuptiOptions& options) {
  return std::make_unique<cupti::CuptiProfiler>(options);
}

}  // namespace xsp
