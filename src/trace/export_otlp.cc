// OTLP/JSON (ExportTraceServiceRequest) with ids that are unique across stores (docs/exports.md).
#include <cstdio>
#include <ostream>
#include <stdexcept>

#include "xsp/trace/export.h"

namespace xsp {

namespace {

using nlohmann::json;

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// OTLP's JSON mapping writes 64-bit integers as decimal strings (proto3 JSON), doubles as numbers.
json any_value(const Tag& t) {
  switch (t.type) {
    case TagType::kInt:
      if (const auto v = t.as_int()) return {{"intValue", std::to_string(*v)}};
      break;
    case TagType::kReal:
      if (const auto v = t.as_real()) return {{"doubleValue", *v}};
      break;
    case TagType::kIntList: {
      json values = json::array();
      for (std::int64_t x : t.as_int_list()) values.push_back({{"intValue", std::to_string(x)}});
      return {{"arrayValue", {{"values", std::move(values)}}}};
    }
    case TagType::kString:
      break;
  }
  return {{"stringValue", t.value}};
}

json attribute(const Tag& t) { return {{"key", t.key}, {"value", any_value(t)}}; }

bool is_lower_hex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::uint64_t parse_hex64(const std::string& s) { return std::stoull(s, nullptr, 16); }

}  // namespace

std::string otlp_span_id(const std::string& trace_id_hex, std::uint64_t span_id) {
  // XOR with a per-trace salt, then splitmix64's finalizer: each step is a bijection on 64 bits, so distinct
  // span ids of one trace stay distinct, while the salt makes ids of different traces unrelated.
  std::uint64_t z = span_id ^ parse_hex64(trace_id_hex.substr(0, 16)) ^ parse_hex64(trace_id_hex.substr(16, 16));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z = z ^ (z >> 31);
  // OTLP reserves the all-zero span id for "invalid"; one input in 2^64 maps to it.
  return hex16(z == 0 ? 1 : z);
}

namespace {

void check_trace_id(const char* function, const std::string& trace_id_hex) {
  if (trace_id_hex.size() != 32 || !is_lower_hex(trace_id_hex) ||
      trace_id_hex.find_first_not_of('0') == std::string::npos) {
    throw std::invalid_argument(std::string(function) +
                                ": trace id must be 32 lower-case hex digits, not all zero, got \"" + trace_id_hex +
                                "\"");
  }
}

json resource_attributes(const TraceResource& resource) {
  json attributes = json::array();
  attributes.push_back(attribute(Tag("service.name", resource.service_name)));
  if (!resource.service_version.empty()) {
    attributes.push_back(attribute(Tag("service.version", resource.service_version)));
  }
  if (!resource.host_name.empty()) attributes.push_back(attribute(Tag("host.name", resource.host_name)));
  if (!resource.instance_id.empty()) {
    attributes.push_back(attribute(Tag("service.instance.id", resource.instance_id)));
  }
  for (const Tag& t : resource.attributes) attributes.push_back(attribute(t));
  return attributes;
}

json scope_of(const TraceResource& resource) {
  json scope = {{"name", "xsp"}};
  if (!resource.service_version.empty()) scope["version"] = resource.service_version;
  return scope;
}

json span_json(const Span& s, const Trace& trace, const std::string& trace_id_hex) {
  json attributes = json::array();
  attributes.push_back(attribute(Tag("xsp.level", std::string(to_string(s.level)))));
  attributes.push_back(attribute(Tag("xsp.parent_rule", std::string(to_string(s.parent_rule)))));
  attributes.push_back(attribute(Tag("xsp.track", to_string(s.track))));
  attributes.push_back(attribute(Tag("xsp.span_id", s.id)));
  if (s.track.is_device()) {
    attributes.push_back(attribute(Tag("xsp.device", s.track.device)));
    attributes.push_back(attribute(Tag("xsp.stream", s.track.stream_number())));
    if (const TraceProcess* p = trace.process_of_track(s.track))
      attributes.push_back(attribute(Tag("process.pid", p->pid)));  // OpenTelemetry semantic convention
  } else {
    attributes.push_back(attribute(Tag("thread.id", s.track.id)));  // OpenTelemetry semantic convention
    if (const TraceProcess* p = trace.process_of_thread(s.track.id))
      attributes.push_back(attribute(Tag("process.pid", p->pid)));  // OpenTelemetry semantic convention
  }
  if (s.correlation_id != 0) attributes.push_back(attribute(Tag("xsp.correlation_id", s.correlation_id)));
  for (const Tag& t : s.tags) attributes.push_back(attribute(t));

  json span = {{"traceId", trace_id_hex},
               {"spanId", otlp_span_id(trace_id_hex, s.id)},
               {"name", s.name},
               {"kind", 1},
               {"startTimeUnixNano", std::to_string(s.start_ns + trace.clock.unix_offset_ns)},
               {"endTimeUnixNano", std::to_string(s.end_ns + trace.clock.unix_offset_ns)},
               {"attributes", std::move(attributes)}};
  // Roots carry no parentSpanId at all: the JSON mapping omits empty bytes fields.
  if (s.parent_id != kNoSpan) span["parentSpanId"] = otlp_span_id(trace_id_hex, s.parent_id);
  return span;
}

}  // namespace

nlohmann::json to_otlp_json(const Trace& trace, const TraceResource& resource, const std::string& trace_id_hex) {
  check_trace_id("to_otlp_json", trace_id_hex);
  json spans = json::array();
  for (const Span& s : trace.spans) spans.push_back(span_json(s, trace, trace_id_hex));
  json scope_spans = json::array();
  scope_spans.push_back({{"scope", scope_of(resource)}, {"spans", std::move(spans)}});
  json resource_spans = json::array();
  resource_spans.push_back(
      {{"resource", {{"attributes", resource_attributes(resource)}}}, {"scopeSpans", std::move(scope_spans)}});
  return {{"resourceSpans", std::move(resource_spans)}};
}

void write_otlp_json(std::ostream& out, const Trace& trace, const TraceResource& resource,
                     const std::string& trace_id_hex) {
  check_trace_id("write_otlp_json", trace_id_hex);
  // Keys in nlohmann::json's sorted order ("resource" < "scopeSpans", "scope" < "spans"), so the bytes are those of
  // to_otlp_json(...).dump(); the spans, the bulk of the document, go out one at a time.
  out << "{\"resourceSpans\":[{\"resource\":{\"attributes\":" << resource_attributes(resource)
      << "},\"scopeSpans\":[{\"scope\":" << scope_of(resource) << ",\"spans\":[";
  bool first = true;
  for (const Span& s : trace.spans) {
    if (!out) return;  // a failed stream (a full disk): the caller reports it; formatting the rest is wasted
    if (!first) out.put(',');
    first = false;
    out << span_json(s, trace, trace_id_hex);
  }
  out << "]}]}]}";
}

}  // namespace xsp
