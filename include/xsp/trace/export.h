// Trace exporters (SPEC §7): Chrome Trace Event JSON (Perfetto, chrome://tracing) and OTLP/JSON (Jaeger, Tempo).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/trace/trace.h"

namespace xsp {

/// Who made a trace and where (OpenTelemetry resource semantic conventions; Kineto's process metadata).
struct TraceResource {
  std::string service_name = "xsp";
  std::string service_version;  ///< XSP's version (OTLP service.version)
  std::string host_name;        ///< machine that recorded the trace (OTLP host.name)
  std::string instance_id;      ///< the evaluation's UUID (OTLP service.instance.id)
  /// Further descriptive attributes (evaluation id, model, framework, batch size...), typed like span tags.
  std::vector<Tag> attributes;
  /// GPU names by CUDA device ordinal ("NVIDIA H100 80GB HBM3"), for the per-GPU process names.
  std::map<std::uint32_t, std::string> device_names;
};

/// Chrome Trace Event process id of the host's tracks. GPUs take their CUDA ordinal as process id, as Kineto
/// does; 2^22 is Linux's PID_MAX_LIMIT, so no device ordinal or real pid equals it.
inline constexpr std::uint32_t kChromeHostPid = 4194304;

/// Kineto's event category of `s` (libkineto's ActivityType names, which HTA and TensorBoard select on, and which
/// the Chrome and Perfetto exports both write): user_annotation (application, model, library), cpu_op (framework),
/// gpu_user_annotation (a span up to library level on a GPU stream: an op replayed from a CUDA graph), cuda_runtime /
/// cuda_driver (system, by its "domain" tag), kernel / gpu_memcpy / gpu_memset (kernel level, by "kind"),
/// cuda_profiler_range (hardware).
std::string_view kineto_category(const Span& s);

/// Chrome Trace Event Format ("JSON Object Format", Google 2016), written to read like a PyTorch/Kineto trace so
/// that Perfetto, chrome://tracing, DevTools and Holistic Trace Analysis (HTA) read it correctly (docs/exports.md):
/// - tracks: host threads are (pid kChromeHostPid, tid = OS thread id); GPU d stream s is (pid d, tid s); every
///   process and thread gets "process_name"/"thread_name" and sort-index metadata ("ph":"M");
/// - one complete event ("ph":"X") per span, ts/dur in microseconds (fractional), "cat" = Kineto's category
///   (user_annotation, cpu_op, gpu_user_annotation, cuda_runtime, cuda_driver, kernel, gpu_memcpy, gpu_memset,
///   cuda_profiler_range) and args = the span's tags with their types (numbers as JSON numbers, int lists as
///   arrays), Kineto's "correlation", "External id" (the span id of the nearest FRAMEWORK span: the op itself, or
///   the op that issued a call or kernel), "registers per thread", "shared memory", "queued", "memory bandwidth
///   (GB/s)", and XSP's "xsp.level", "xsp.span_id", "xsp.parent_id", "xsp.parent_rule";
/// - one "ProfilerStep#N" user_annotation per measured batch N (the extent of the MODEL spans tagged batch=N), the
///   iteration marker HTA and TensorBoard look for, with arg "xsp.derived": true;
/// - flow events ("ph":"s"/"f", cat "ac2g", bp "e") from each call to the device work it launched;
/// - "otherData" with the resource, clock, counters and assembly report; "deviceProperties" with the GPU names.
/// The whole document is held in memory (~3.2 KB per span as a nlohmann::json tree, BENCHMARKS.md "Export
/// memory"): for tests and small traces; files are written with write_chrome_trace.
nlohmann::json to_chrome_trace(const Trace& trace, const TraceResource& resource);

/// Writes to_chrome_trace(trace, resource).dump() to `out`, byte for byte, one event at a time: besides the trace,
/// memory is O(spans) for the indices the events need (tracks, ops, launching calls; ~0.1 KB per span) and one
/// event's JSON, never the document. Stops early once `out` fails (e.g. a full disk) and leaves the failure in
/// `out`'s state for the caller to report; throws nlohmann::json::type_error (316) when a name or tag is not UTF-8.
void write_chrome_trace(std::ostream& out, const Trace& trace, const TraceResource& resource);

/// The OTLP span id of span `span_id` in the trace `trace_id_hex`: a bijective 64-bit mix (splitmix64's
/// finalizer, Steele et al. 2014) of the span id XOR the trace id's two halves, as 16 hex digits. Unique within a
/// trace, unrelated across traces, and the same at every export of a stored run.
std::string otlp_span_id(const std::string& trace_id_hex, std::uint64_t span_id);

/// OTLP/JSON as in opentelemetry-proto (ExportTraceServiceRequest, JSON mapping of the OTLP specification):
/// resourceSpans[0].resource.attributes (service.name, service.version, host.name, service.instance.id, then
/// `resource.attributes`), scopeSpans[0].scope{name:"xsp", version}, spans[] with traceId (32 hex), spanId /
/// parentSpanId (otlp_span_id), name, kind 1 (INTERNAL), startTimeUnixNano/endTimeUnixNano as decimal strings
/// (host clock + clock.unix_offset_ns), attributes with typed values (stringValue, intValue as a decimal string,
/// doubleValue, arrayValue) including "xsp.level", "xsp.track", "xsp.span_id".
/// `trace_id_hex` must be 32 lower-case hex digits, not all zero (throws std::invalid_argument otherwise).
/// The whole document is held in memory (~8 KB per span): for tests and small traces; files are written with
/// write_otlp_json.
nlohmann::json to_otlp_json(const Trace& trace, const TraceResource& resource, const std::string& trace_id_hex);

/// Writes to_otlp_json(trace, resource, trace_id_hex).dump() to `out`, byte for byte, one span at a time (memory:
/// one span's JSON besides the trace). Throws std::invalid_argument for a bad trace id before writing anything;
/// stops early once `out` fails and leaves the failure in `out`'s state; nlohmann::json::type_error for non-UTF-8.
void write_otlp_json(std::ostream& out, const Trace& trace, const TraceResource& resource,
                     const std::string& trace_id_hex);

}  // namespace xsp
