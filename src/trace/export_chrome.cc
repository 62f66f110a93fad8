// Chrome Trace Event JSON that reads like a Kineto trace (docs/exports.md): one process per GPU and one thread
// per stream, Kineto's categories and argument names beside XSP's, numbers as numbers.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "xsp/trace/export.h"

namespace xsp {

namespace {

using nlohmann::json;

double to_us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

json tag_json(const Tag& t) {
  switch (t.type) {
    case TagType::kInt:
      if (const auto v = t.as_int()) return *v;
      break;
    case TagType::kReal:
      if (const auto v = t.as_real()) return *v;
      break;
    case TagType::kIntList: return t.as_int_list();
    case TagType::kString: break;
  }
  return t.value;
}

std::uint32_t pid_of(const Track& track) { return track.is_device() ? track.device : kChromeHostPid; }

// Kineto's event categories (libkineto ActivityType names), which HTA and TensorBoard select on.
std::string category(const Span& s) {
  switch (s.level) {
    case Level::kApplication:
    case Level::kModel: return "user_annotation";
    case Level::kFramework: return "cpu_op";
    case Level::kLibrary: return s.track.is_device() ? "gpu_user_annotation" : "user_annotation";
    case Level::kSystem: return s.tag("domain") == std::optional<std::string_view>("driver") ? "cuda_driver"
                                                                                              : "cuda_runtime";
    case Level::kKernel: {
      const std::string_view kind = s.tag("kind").value_or("kernel");
      if (kind == "memcpy") return "gpu_memcpy";
      if (kind == "memset") return "gpu_memset";
      return "kernel";
    }
    case Level::kHardware: return "cuda_profiler_range";
  }
  return "user_annotation";
}

// Kineto's names for what XSP already records under its own (libkineto output_json.cpp; HTA default_event_args).
void add_kineto_args(const Span& s, json& args) {
  if (s.level != Level::kKernel) return;
  if (const auto r = s.tag_int("registers_per_thread")) args["registers per thread"] = *r;
  const auto st = s.tag_int("static_shared_bytes"), dyn = s.tag_int("dynamic_shared_bytes");
  if (st || dyn) args["shared memory"] = st.value_or(0) + dyn.value_or(0);
  if (const auto q = s.tag_int("queued_ns")) args["queued"] = *q;
  if (const Tag* bw = s.find_tag("bandwidth_bytes_per_s")) {
    if (const auto v = bw->as_real()) args["memory bandwidth (GB/s)"] = *v / 1e9;
  }
}

}  // namespace

nlohmann::json to_chrome_trace(const Trace& trace, const TraceResource& resource) {
  json events = json::array();

  std::unordered_map<SpanId, const Span*> by_id;
  by_id.reserve(trace.spans.size());
  std::set<Track> tracks;
  std::set<std::uint32_t> devices;
  for (const Span& s : trace.spans) {
    by_id.emplace(s.id, &s);
    tracks.insert(s.track);
    if (s.track.is_device()) devices.insert(s.track.device);
  }

  // Process and thread names, sorted host first and then GPUs by ordinal, streams by id (Kineto's order).
  const std::string host_label =
      resource.service_name + (resource.host_name.empty() ? std::string() : " on " + resource.host_name);
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", kChromeHostPid}, {"tid", 0},
                    {"args", {{"name", host_label}}}});
  events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", kChromeHostPid}, {"tid", 0},
                    {"args", {{"sort_index", 0}}}});
  for (std::uint32_t d : devices) {
    std::string name = "GPU " + std::to_string(d);
    if (const auto it = resource.device_names.find(d); it != resource.device_names.end()) name += ": " + it->second;
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", d}, {"tid", 0}, {"args", {{"name", name}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", d}, {"tid", 0},
                      {"args", {{"sort_index", static_cast<std::uint64_t>(d) + 1}}}});
  }
  for (const Track& t : tracks) {
    const std::string name = t.is_device() ? "stream " + std::to_string(t.id) : "thread " + std::to_string(t.id);
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid_of(t)}, {"tid", t.id},
                      {"args", {{"name", name}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid_of(t)}, {"tid", t.id},
                      {"args", {{"sort_index", t.id}}}});
  }

  // "External id": the op a span belongs to.
  const std::unordered_map<SpanId, SpanId> op_of = op_of_spans(trace);
  auto external_id = [&](const Span& s) -> SpanId {
    const auto it = op_of.find(s.id);
    return it == op_of.end() ? kNoSpan : it->second;
  };

  // Measured batches: the MODEL spans of batch N span iteration N (HTA's and TensorBoard's "ProfilerStep#N").
  struct Step {
    std::int64_t start_ns, end_ns;
    Track track;
  };
  std::map<std::int64_t, Step> steps;

  // Kineto gives one CPU event per correlation id: the call that launched the device work. CUPTI also reports
  // the driver calls a runtime call makes, under the same id; writing "correlation" on those too would make HTA
  // count every launch two or three times. So it goes on the launching call (the device work's parent, else the
  // runtime-domain call, else the first), and the others keep the id as "xsp.correlation_id" only.
  std::unordered_map<std::uint64_t, SpanId> launching_call;
  std::unordered_map<std::uint64_t, bool> chosen_by_device_work;
  for (const Span& s : trace.spans) {
    if (s.level >= Level::kKernel && s.correlation_id != 0 && s.parent_rule == ParentRule::kCorrelation) {
      launching_call.emplace(s.correlation_id, s.parent_id);
      chosen_by_device_work[s.correlation_id] = true;
    }
  }
  for (const Span& s : trace.spans) {
    if (s.level != Level::kSystem || s.correlation_id == 0 || chosen_by_device_work.contains(s.correlation_id)) {
      continue;
    }
    const bool runtime = s.tag("domain") != std::optional<std::string_view>("driver");
    auto [it, inserted] = launching_call.emplace(s.correlation_id, s.id);
    if (!inserted && runtime) {
      const auto holder = by_id.find(it->second);
      if (holder != by_id.end() && holder->second->tag("domain") == std::optional<std::string_view>("driver")) {
        it->second = s.id;
      }
    }
  }

  for (const Span& s : trace.spans) {
    json args = json::object();
    for (const Tag& t : s.tags) args[t.key] = tag_json(t);
    add_kineto_args(s, args);
    if (s.correlation_id != 0) {
      const auto it = launching_call.find(s.correlation_id);
      const bool host_call = s.level < Level::kKernel;
      if (!host_call || it == launching_call.end() || it->second == s.id) {
        args["correlation"] = s.correlation_id;
      } else {
        args["xsp.correlation_id"] = s.correlation_id;
      }
    }
    if (s.level >= Level::kFramework) {
      if (const SpanId op = external_id(s); op != kNoSpan) args["External id"] = op;
    }
    args["xsp.level"] = std::string(to_string(s.level));
    args["xsp.span_id"] = s.id;
    args["xsp.parent_id"] = s.parent_id;
    args["xsp.parent_rule"] = std::string(to_string(s.parent_rule));
    events.push_back({{"ph", "X"},
                      {"name", s.name},
                      {"cat", category(s)},
                      {"ts", to_us(s.start_ns)},
                      {"dur", to_us(s.end_ns - s.start_ns)},
                      {"pid", pid_of(s.track)},
                      {"tid", s.track.id},
                      {"args", std::move(args)}});
    if (s.level == Level::kModel) {
      if (const auto batch = s.tag_int("batch")) {
        auto [it, inserted] = steps.emplace(*batch, Step{s.start_ns, s.end_ns, s.track});
        if (!inserted) {
          it->second.start_ns = std::min(it->second.start_ns, s.start_ns);
          it->second.end_ns = std::max(it->second.end_ns, s.end_ns);
        }
      }
    }
  }
  for (const auto& [batch, step] : steps) {
    events.push_back({{"ph", "X"},
                      {"name", "ProfilerStep#" + std::to_string(batch)},
                      {"cat", "user_annotation"},
                      {"ts", to_us(step.start_ns)},
                      {"dur", to_us(step.end_ns - step.start_ns)},
                      {"pid", pid_of(step.track)},
                      {"tid", step.track.id},
                      {"args", {{"xsp.derived", true}, {"batch", batch}}}});
  }

  // Flow arrows from the launching call to the asynchronous work it launched. The start binds to the slice
  // enclosing its ts on the parent's track; "bp":"e" binds the finish to the slice enclosing its ts.
  for (const Span& s : trace.spans) {
    if (s.parent_rule != ParentRule::kCorrelation) continue;
    const auto it = by_id.find(s.parent_id);
    if (it == by_id.end()) continue;
    const Span& parent = *it->second;
    events.push_back({{"ph", "s"}, {"name", "ac2g"}, {"cat", "ac2g"}, {"id", s.id}, {"ts", to_us(parent.start_ns)},
                      {"pid", pid_of(parent.track)}, {"tid", parent.track.id}});
    events.push_back({{"ph", "f"}, {"bp", "e"}, {"name", "ac2g"}, {"cat", "ac2g"}, {"id", s.id},
                      {"ts", to_us(s.start_ns)}, {"pid", pid_of(s.track)}, {"tid", s.track.id}});
  }

  json attributes = json::object();
  for (const Tag& t : resource.attributes) attributes[t.key] = tag_json(t);
  json counters = json::object();
  for (const auto& [name, value] : trace.counters) counters[name] = value;
  const AssemblyReport& a = trace.assembly;
  json other = {{"service_name", resource.service_name},
                {"service_version", resource.service_version},
                {"host_name", resource.host_name},
                {"instance_id", resource.instance_id},
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
  json device_properties = json::array();
  for (std::uint32_t d : devices) {
    const auto it = resource.device_names.find(d);
    device_properties.push_back({{"id", d}, {"name", it == resource.device_names.end() ? "" : it->second}});
  }

  return {{"schemaVersion", 1},
          {"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"deviceProperties", std::move(device_properties)},
          {"otherData", std::move(other)}};
}

}  // namespace xsp
