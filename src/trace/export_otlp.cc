#include <cstdio>
#include <stdexcept>

#include "xsp/trace/export.h"

namespace xsp {

namespace {

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

nlohmann::json string_attribute(const std::string& key, const std::string& value) {
  return {{"key", key}, {"value", {{"stringValue", value}}}};
}

// The OTLP JSON mapping writes 64-bit integers as decimal strings.
nlohmann::json int_attribute(const std::string& key, std::int64_t value) {
  return {{"key", key}, {"value", {{"intValue", std::to_string(value)}}}};
}

bool is_lower_hex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

nlohmann::json to_otlp_json(const Trace& trace, const TraceResource& resource, const std::string& trace_id_hex) {
  using nlohmann::json;
  if (trace_id_hex.size() != 32 || !is_lower_hex(trace_id_hex)) {
    throw std::invalid_argument("to_otlp_json: trace id must be 32 lower-case hex digits, got \"" + trace_id_hex +
                                "\"");
  }

  json resource_attributes = json::array();
  resource_attributes.push_back(string_attribute("service.name", resource.service_name));
  for (const Tag& t : resource.attributes) resource_attributes.push_back(string_attribute(t.key, t.value));

  const std::int64_t offset_ns = trace.clock.unix_offset_ns;
  json spans = json::array();
  for (const Span& s : trace.spans) {
    json attributes = json::array();
    attributes.push_back(string_attribute("xsp.level", std::string(to_string(s.level))));
    attributes.push_back(string_attribute("xsp.parent_rule", std::string(to_string(s.parent_rule))));
    attributes.push_back(int_attribute("xsp.thread_id", static_cast<std::int64_t>(s.thread_id)));
    if (s.correlation_id != 0) {
      attributes.push_back(int_attribute("xsp.correlation_id", static_cast<std::int64_t>(s.correlation_id)));
    }
    for (const Tag& t : s.tags) attributes.push_back(string_attribute(t.key, t.value));

    json span = {{"traceId", trace_id_hex},
                 {"spanId", hex16(s.id)},
                 {"name", s.name},
                 {"kind", 1},
                 {"startTimeUnixNano", std::to_string(s.start_ns + offset_ns)},
                 {"endTimeUnixNano", std::to_string(s.end_ns + offset_ns)},
                 {"attributes", std::move(attributes)}};
    // Roots carry no parentSpanId at all: the JSON mapping omits empty bytes fields.
    if (s.parent_id != kNoSpan) span["parentSpanId"] = hex16(s.parent_id);
    spans.push_back(std::move(span));
  }

  json scope_spans = json::array();
  scope_spans.push_back({{"scope", {{"name", "xsp"}}}, {"spans", std::move(spans)}});
  json resource_spans = json::array();
  resource_spans.push_back(
      {{"resource", {{"attributes", std::move(resource_attributes)}}}, {"scopeSpans", std::move(scope_spans)}});
  return {{"resourceSpans", std::move(resource_spans)}};
}

}  // namespace xsp
