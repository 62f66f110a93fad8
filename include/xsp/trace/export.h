// Trace exporters (SPEC §7): Chrome Trace Event JSON (Perfetto, chrome://tracing) and OTLP/JSON (Jaeger, Tempo).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "xsp/trace/trace.h"

namespace xsp {

/// Descriptive attributes of the trace's process (evaluation id, model, framework, batch size...).
struct TraceResource {
  std::string service_name = "xsp";
  std::vector<Tag> attributes;
  /// Names a track (span thread_id) the producer knows, e.g. "GPU 0 stream 7" for a CUDA stream track;
  /// std::nullopt or no function: "thread N" / "device track N".
  std::function<std::optional<std::string>(std::uint64_t)> track_name;
};

/// Chrome Trace Event Format ("JSON Object Format"): {"traceEvents":[...], "displayTimeUnit":"ns",
/// "otherData":{...}}. One complete event ("ph":"X") per span with ts/dur in microseconds (fractional),
/// pid 1, tid = span.thread_id, cat = level name, args = tags + span id, parent id, parent rule; thread-name
/// metadata events ("ph":"M"). Spans with a correlation id and a parent of another thread get flow events
/// ("ph":"s"/"f", bp "e") from parent to child. Format reference: "Trace Event Format" (Google, 2016).
nlohmann::json to_chrome_trace(const Trace& trace, const TraceResource& resource);

/// OTLP/JSON as in opentelemetry-proto (ExportTraceServiceRequest, JSON mapping): resourceSpans[0].resource
/// .attributes, scopeSpans[0].scope{name:"xsp"}, spans[] with traceId (32 hex), spanId/parentSpanId
/// (16 hex), name, kind 1 (INTERNAL), startTimeUnixNano/endTimeUnixNano as decimal strings (host clock +
/// clock.unix_offset_ns), attributes [{key, value:{stringValue|intValue}}] including "xsp.level".
/// `trace_id_hex` must be 32 lower-case hex digits (throws std::invalid_argument otherwise).
nlohmann::json to_otlp_json(const Trace& trace, const TraceResource& resource, const std::string& trace_id_hex);

}  // namespace xsp
