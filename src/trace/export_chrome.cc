#include <map>
#include <optional>
#include <unordered_map>

#include "xsp/trace/export.h"

namespace xsp {

namespace {

constexpr int kPid = 1;

double to_us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace

nlohmann::json to_chrome_trace(const Trace& trace, const TraceResource& resource) {
  using nlohmann::json;
  json events = json::array();

  json process_args = {{"name", resource.service_name}};
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", kPid}, {"tid", 0}, {"args", process_args}});

  // A track with only device work (kernels, counters) is a stream, not a host thread; naming it so keeps
  // the two apart in the viewer.
  std::map<std::uint64_t, bool> track_is_device;
  for (const Span& s : trace.spans) {
    const bool device = s.level >= Level::kKernel;
    auto [it, inserted] = track_is_device.emplace(s.thread_id, device);
    if (!inserted) it->second = it->second && device;
  }
  for (const auto& [tid, device] : track_is_device) {
    std::optional<std::string> known = resource.track_name ? resource.track_name(tid) : std::nullopt;
    const std::string name = known ? *known : (device ? "device track " : "thread ") + std::to_string(tid);
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", kPid}, {"tid", tid}, {"args", {{"name", name}}}});
  }

  std::unordered_map<SpanId, const Span*> by_id;
  by_id.reserve(trace.spans.size());
  for (const Span& s : trace.spans) by_id.emplace(s.id, &s);

  for (const Span& s : trace.spans) {
    json args = json::object();
    for (const Tag& t : s.tags) args[t.key] = t.value;
    args["xsp.span_id"] = s.id;
    args["xsp.parent_id"] = s.parent_id;
    args["xsp.parent_rule"] = std::string(to_string(s.parent_rule));
    if (s.correlation_id != 0) args["xsp.correlation_id"] = s.correlation_id;
    events.push_back({{"ph", "X"},
                      {"name", s.name},
                      {"cat", std::string(to_string(s.level))},
                      {"ts", to_us(s.start_ns)},
                      {"dur", to_us(s.end_ns - s.start_ns)},
                      {"pid", kPid},
                      {"tid", s.thread_id},
                      {"args", std::move(args)}});
  }

  // Flow arrows from the launching call to the asynchronous work it launched. The start binds to the slice
  // enclosing its ts on the parent's track; "bp":"e" binds the finish to the slice enclosing its ts.
  for (const Span& s : trace.spans) {
    if (s.parent_rule != ParentRule::kCorrelation) continue;
    const auto it = by_id.find(s.parent_id);
    if (it == by_id.end()) continue;
    const Span& parent = *it->second;
    events.push_back({{"ph", "s"},
                      {"name", "correlation"},
                      {"cat", "flow"},
                      {"id", s.id},
                      {"ts", to_us(parent.start_ns)},
                      {"pid", kPid},
                      {"tid", parent.thread_id}});
    events.push_back({{"ph", "f"},
                      {"bp", "e"},
                      {"name", "correlation"},
                      {"cat", "flow"},
                      {"id", s.id},
                      {"ts", to_us(s.start_ns)},
                      {"pid", kPid},
                      {"tid", s.thread_id}});
  }

  json attributes = json::object();
  for (const Tag& t : resource.attributes) attributes[t.key] = t.value;
  json counters = json::object();
  for (const auto& [name, value] : trace.counters) counters[name] = value;
  const AssemblyReport& a = trace.assembly;
  json other = {{"service_name", resource.service_name},
                {"attributes", std::move(attributes)},
                {"host_clock", trace.clock.host_clock},
                {"unix_offset_ns", trace.clock.unix_offset_ns},
                {"device_clock_mapping", trace.clock.device_clock_mapping},
                {"counters", std::move(counters)},
                {"assembly",
                 {{"by_context", a.by_context},
                  {"by_correlation", a.by_correlation},
                  {"by_containment", a.by_containment},
                  {"roots", a.roots},
                  {"unparented", a.unparented},
                  {"dangling_parent_ids", a.dangling_parent_ids}}}};

  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", std::move(other)}};
}

}  // namespace xsp
