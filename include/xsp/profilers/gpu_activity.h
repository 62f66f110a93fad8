// GPU activity as XSP keeps it: plain structs mirroring the CUPTI activity records XSP uses, the conversion of
// those records into SYSTEM / KERNEL / LIBRARY spans (docs/spans.md), and their JSON form (the fixture format of
// tests/fixtures/gpu/). Nothing here includes a CUDA header, so the span logic is tested without a GPU; the
// CUPTI layer (src/profilers/cupti/) only copies CUPTI's records into these structs.
//
// Every time in this file is in nanoseconds on the trace's host clock (CLOCK_MONOTONIC, see now_ns()): the
// CUPTI layer maps device timestamps onto it before filling a GpuActivityLog.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/profilers/graph_nodes.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// Kind of a memory copy (CUPTI CUpti_ActivityMemcpyKind; H = host, D = device, A = CUDA array, P = peer).
enum class CopyKind : std::uint8_t { kUnknown, kHtoD, kDtoH, kHtoA, kAtoH, kAtoA, kAtoD, kDtoA, kDtoD, kHtoH, kPtoP };
/// Kind of the memory a copy reads or writes, or a memset writes (CUPTI CUpti_ActivityMemoryKind).
enum class MemoryKind : std::uint8_t {
  kUnknown,
  kPageable,
  kPinned,
  kDevice,
  kArray,
  kManaged,
  kDeviceStatic,
  kManagedStatic
};
/// Which CUDA API an ApiRecord comes from (CUPTI_ACTIVITY_KIND_RUNTIME / CUPTI_ACTIVITY_KIND_DRIVER).
enum class ApiDomain : std::uint8_t { kRuntime, kDriver };

/// "HtoD", "DtoH", ... ("unknown" for kUnknown).
std::string_view to_string(CopyKind kind);
/// "pageable", "pinned", "device", "array", "managed", "device_static", "managed_static", "unknown".
std::string_view to_string(MemoryKind kind);
/// "runtime" | "driver".
std::string_view to_string(ApiDomain domain);
/// Inverses of the to_string functions above; std::nullopt for any other text.
std::optional<CopyKind> parse_copy_kind(std::string_view text);
std::optional<MemoryKind> parse_memory_kind(std::string_view text);
std::optional<ApiDomain> parse_api_domain(std::string_view text);

/// A kernel as it ran (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUpti_ActivityKernel10).
struct KernelRecord {
  std::string name;  ///< demangled
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t queued_ns = 0;     ///< when the launch was queued; 0 = not reported (latency timestamps off)
  std::int64_t submitted_ns = 0;  ///< when it was submitted to the GPU; 0 = not reported
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation_id = 0;  ///< = the launching API call's
  std::int32_t grid_x = 0, grid_y = 0, grid_z = 0;
  std::int32_t block_x = 0, block_y = 0, block_z = 0;
  std::uint32_t registers_per_thread = 0;
  std::uint32_t static_shared_bytes = 0;
  std::uint32_t dynamic_shared_bytes = 0;
  std::uint32_t graph_id = 0;       ///< 0 = not launched from a CUDA graph
  std::uint64_t graph_node_id = 0;  ///< 0 = not launched from a CUDA graph
  bool operator==(const KernelRecord&) const = default;
};

/// A memory copy (CUPTI_ACTIVITY_KIND_MEMCPY, CUpti_ActivityMemcpy6; MEMCPY2 peer copies as kPtoP).
struct MemcpyRecord {
  std::uint64_t bytes = 0;
  CopyKind copy_kind = CopyKind::kUnknown;
  MemoryKind src_kind = MemoryKind::kUnknown;
  MemoryKind dst_kind = MemoryKind::kUnknown;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation_id = 0;
  /// CUPTI's runtimeCorrelationId: the runtime API call's id when it differs from correlation_id (0 = same or
  /// unknown). Used when correlation_id matches no API record.
  std::uint32_t runtime_correlation_id = 0;
  std::uint32_t graph_id = 0;
  std::uint64_t graph_node_id = 0;
  bool operator==(const MemcpyRecord&) const = default;
};

/// A memory set (CUPTI_ACTIVITY_KIND_MEMSET, CUpti_ActivityMemset4).
struct MemsetRecord {
  std::uint64_t bytes = 0;
  std::uint32_t value = 0;
  MemoryKind memory_kind = MemoryKind::kUnknown;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t graph_id = 0;
  std::uint64_t graph_node_id = 0;
  bool operator==(const MemsetRecord&) const = default;
};

/// A CUDA runtime or driver API call (CUPTI_ACTIVITY_KIND_RUNTIME / DRIVER, CUpti_ActivityAPI).
struct ApiRecord {
  ApiDomain domain = ApiDomain::kRuntime;
  std::uint32_t cbid = 0;  ///< CUPTI callback id (cupti_runtime_cbid.h / cupti_driver_cbid.h)
  std::string name;        ///< "cudaLaunchKernel" (cuptiGetCallbackName, version suffix "_v7000" removed)
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t thread_id = 0;  ///< OS thread id (gettid), as current_thread_id() reports it
  std::uint32_t correlation_id = 0;
  std::uint32_t return_value = 0;  ///< cudaError_t / CUresult
  bool operator==(const ApiRecord&) const = default;
};

/// Ties an API call to the framework op open on its thread (CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
/// CUpti_ActivityExternalCorrelation, kind CUSTOM0 only: the id XSP pushed).
struct ExternalCorrelationRecord {
  std::uint32_t correlation_id = 0;
  std::uint64_t external_id = 0;  ///< the framework op's span id
  bool operator==(const ExternalCorrelationRecord&) const = default;
};

/// An NVTX range or instantaneous mark (CUPTI_ACTIVITY_KIND_MARKER, CUpti_ActivityMarker2; the CUPTI layer pairs
/// the start and end records of a range by marker id). A mark has start_ns == end_ns.
struct MarkerRecord {
  std::string name;
  std::string domain;  ///< NVTX domain name; "" for the default domain
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t thread_id = 0;  ///< OS thread id of the thread that opened the range
  bool operator==(const MarkerRecord&) const = default;
};

/// A host wait on the device (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUpti_ActivitySynchronization2).
struct SyncRecord {
  /// "event_synchronize" | "stream_wait_event" | "stream_synchronize" | "context_synchronize" | "unknown".
  std::string type;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t correlation_id = 0;  ///< the API call that waited
  std::uint32_t context = 0;
  std::uint32_t stream = 0;  ///< 0xFFFFFFFF when not applicable (CUPTI_SYNCHRONIZATION_INVALID_VALUE)
  bool operator==(const SyncRecord&) const = default;
};

/// Time CUPTI, the driver or the compiler spent on their own work (CUPTI_ACTIVITY_KIND_OVERHEAD,
/// CUpti_ActivityOverhead3).
struct OverheadRecord {
  /// "cupti_buffer_flush", "cupti_instrumentation", "cupti_resource", "driver_compiler", "lazy_function_loading",
  /// "runtime_triggered_module_loading", "command_buffer_full", "activity_buffer_request", "unknown".
  std::string kind;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t thread_id = 0;  ///< OS thread id when CUPTI reports a thread, else 0
  bool operator==(const OverheadRecord&) const = default;
};

/// Everything one profiled run collected, in CUPTI's delivery order. Produced by the CUPTI layer, read back
/// from fixtures by gpu_activity_log_from_json().
struct GpuActivityLog {
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<ApiRecord> apis;
  std::vector<ExternalCorrelationRecord> external_correlations;
  std::vector<MarkerRecord> markers;
  std::vector<SyncRecord> syncs;
  std::vector<OverheadRecord> overheads;
  /// CUDA graph nodes created or cloned while collecting (CUPTI resource callbacks), for graph replay attribution.
  std::vector<GraphNodeRecord> graph_nodes;
  /// Collector counters (docs/spans.md "Counters"): "cupti.records", "cupti.unknown_records",
  /// "cupti.dropped_records", "cupti.buffers_completed", "cupti.filtered_api_records", ...
  std::map<std::string, std::uint64_t> counters;
  /// How device timestamps were put on the host clock (DeviceProfiler::clock_mapping()).
  std::string clock_mapping;
  bool operator==(const GpuActivityLog&) const = default;
};

/// Turns a log into spans in `recorder` (ids from recorder.reserve_ids) and adds the log's counters plus
/// "cupti.orphan_activities" and "cupti.overhead_ns" (docs/spans.md):
///  - each ApiRecord → a SYSTEM span; when an ExternalCorrelationRecord maps its correlation id, parent_id =
///    the external id (the framework op's span id, a context parent: assemble() keeps it if that op is in the
///    trace); otherwise no parent, and the assembler places it by containment on its thread. SyncRecords add
///    tags "sync" (and "sync_stream") to the API span with their correlation id.
///  - each kernel/memcpy/memset → a KERNEL span on its stream track with correlation_id set and no parent, so
///    assemble() joins it to the SYSTEM span with that correlation id (rule b). Records whose correlation id
///    matches no ApiRecord are kept and counted in "cupti.orphan_activities".
///  - each MarkerRecord → a LIBRARY span on its thread, placed by containment.
///  - CUDA graphs (docs/cuda-graphs.md): `nodes` takes the log's graph_nodes (nodes created in an earlier log stay
///    known). The API span a node was created in (capture_correlation_id, else the call on thread_id whose interval
///    holds time_ns) gets the int-list tag "graph_captured_node_ids"; a replayed device record gets
///    "graph_capture_node_id", the created node its node was cloned from, or "graph_capture" = "before-profiling"
///    when `nodes` never saw its node. The assembler's graph replay pass (xsp/trace/graph_replay.h) reads them.
/// Never throws on odd input (zero-length or reversed intervals are left to the assembler).
void append_spans(const GpuActivityLog& log, TraceRecorder& recorder, GraphNodeIndex& nodes);
/// append_spans() with the process's GraphNodeIndex (graphs captured in one run and replayed in later ones).
void append_spans(const GpuActivityLog& log, TraceRecorder& recorder);

/// The log as JSON: {"format": "xsp-gpu-activity-v1", "clock_mapping", "counters", "kernels": [...], ...},
/// one object per record with the struct's field names; enums as their to_string text. "graph_nodes" only when
/// the log has some.
nlohmann::json to_json(const GpuActivityLog& log);
/// Parses what to_json() writes. Missing optional record fields take their defaults; a wrong type, an unknown
/// enum text, a missing required field (name of a kernel/API/marker, start_ns, end_ns) or a wrong "format"
/// throws std::invalid_argument naming the field, e.g. "kernels[3].start_ns: expected an integer".
GpuActivityLog gpu_activity_log_from_json(const nlohmann::json& json);

/// The demangled form of a C++ symbol ("_Z3addPfS_S_i" → "add(float*, float*, float*, int)") through
/// abi::__cxa_demangle; the name unchanged when it is not a mangled name; "" for nullptr.
std::string demangle(const char* mangled);

}  // namespace xsp
