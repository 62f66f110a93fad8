// Chrome Trace Event JSON that reads like a Kineto trace (docs/exports.md): one process per GPU and one thread
// per stream, Kineto's categories and argument names beside XSP's, numbers as numbers.
#include <algorithm>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <unordered_map>

#include "xsp/trace/export.h"

namespace xsp {

std::string_view kineto_category(const Span& s) {
  // A range on a GPU stream (an op or range replayed from a CUDA graph, docs/cuda-graphs.md) is Kineto's
  // gpu_user_annotation, not a CPU op: HTA's CPU-op statistics must not count it.
  if (s.track.is_device() && s.level <= Level::kLibrary) return "gpu_user_annotation";
  switch (s.level) {
    case Level::kApplication:
    case Level::kModel:
      return "user_annotation";
    case Level::kFramework:
      return "cpu_op";
    case Level::kLibrary:
      return "user_annotation";
    case Level::kSystem:
      return s.tag("domain") == std::optional<std::string_view>("driver") ? "cuda_driver" : "cuda_runtime";
    case Level::kKernel: {
      const std::string_view kind = s.tag("kind").value_or("kernel");
      if (kind == "memcpy") return "gpu_memcpy";
      if (kind == "memset") return "gpu_memset";
      return "kernel";
    }
    case Level::kHardware:
      return "cuda_profiler_range";
  }
  return "user_annotation";
}

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
    case TagType::kIntList:
      return t.as_int_list();
    case TagType::kString:
      break;
  }
  return t.value;
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

/// One Chrome trace document, computed in parts so it can be written event by event: the indices over the spans
/// (tracks, devices, launching calls, ops) are O(spans) but far smaller than the document, which for a million
/// spans is ~420 MB of text and ~3 GB as a nlohmann::json tree.
class ChromeDocument {
 public:
  ChromeDocument(const Trace& trace, const TraceResource& resource)
      : trace_(trace), resource_(resource), op_of_(op_of_spans(trace)) {
    for (std::size_t p = 0; p < trace.processes.size(); ++p) {
      for (std::uint64_t t : trace.processes[p].thread_ids)
        process_pid_.emplace(t, kChromeHostPid + 1 + static_cast<std::uint32_t>(p));
    }
    by_id_.reserve(trace.spans.size());
    for (const Span& s : trace.spans) {
      by_id_.emplace(s.id, &s);
      tracks_.insert(s.track);
      if (s.track.is_device()) devices_.insert(s.track.device);
    }
    // Kineto gives one CPU event per correlation id: the call that launched the device work. CUPTI also reports
    // the driver calls a runtime call makes, under the same id; writing "correlation" on those too would make HTA
    // count every launch two or three times. So it goes on the launching call (the device work's parent, else the
    // runtime-domain call, else the first), and the others keep the id as "xsp.correlation_id" only.
    std::unordered_map<std::uint64_t, bool> chosen_by_device_work;
    for (const Span& s : trace.spans) {
      if (s.level >= Level::kKernel && s.correlation_id != 0 && s.parent_rule == ParentRule::kCorrelation) {
        launching_call_.emplace(s.correlation_id, s.parent_id);
        chosen_by_device_work[s.correlation_id] = true;
      }
    }
    for (const Span& s : trace.spans) {
      if (s.level != Level::kSystem || s.correlation_id == 0 || chosen_by_device_work.contains(s.correlation_id)) {
        continue;
      }
      const bool runtime = s.tag("domain") != std::optional<std::string_view>("driver");
      auto [it, inserted] = launching_call_.emplace(s.correlation_id, s.id);
      if (!inserted && runtime) {
        const auto holder = by_id_.find(it->second);
        if (holder != by_id_.end() && holder->second->tag("domain") == std::optional<std::string_view>("driver")) {
          it->second = s.id;
        }
      }
    }
  }

  /// Chrome's process id of a track: the GPU's ordinal for a stream; for a host thread, its process's id when the
  /// trace spans several processes (kChromeHostPid + 1 + the process's position), else kChromeHostPid.
  std::uint32_t pid_of(const Track& track) const {
    if (track.is_device()) return track.device;
    const auto it = process_pid_.find(track.id);
    return it == process_pid_.end() ? kChromeHostPid : it->second;
  }

  /// The document without "traceEvents": deviceProperties, displayTimeUnit, otherData, schemaVersion.
  json head() const {
    json attributes = json::object();
    for (const Tag& t : resource_.attributes) attributes[t.key] = tag_json(t);
    json counters = json::object();
    for (const auto& [name, value] : trace_.counters) counters[name] = value;
    const AssemblyReport& a = trace_.assembly;
    json other = {{"service_name", resource_.service_name},
                  {"service_version", resource_.service_version},
                  {"host_name", resource_.host_name},
                  {"instance_id", resource_.instance_id},
                  {"attributes", std::move(attributes)},
                  {"host_clock", trace_.clock.host_clock},
                  {"unix_offset_ns", trace_.clock.unix_offset_ns},
                  {"device_clock_mapping", trace_.clock.device_clock_mapping},
                  {"counters", std::move(counters)},
                  {"assembly",
                   {{"by_context", a.by_context},
                    {"by_correlation", a.by_correlation},
                    {"by_containment", a.by_containment},
                    {"roots", a.roots},
                    {"unparented", a.unparented},
                    {"dangling_parent_ids", a.dangling_parent_ids}}}};
    json device_properties = json::array();
    for (std::uint32_t d : devices_) {
      const auto it = resource_.device_names.find(d);
      device_properties.push_back({{"id", d}, {"name", it == resource_.device_names.end() ? "" : it->second}});
    }
    return {{"schemaVersion", 1},
            {"displayTimeUnit", "ns"},
            {"deviceProperties", std::move(device_properties)},
            {"otherData", std::move(other)}};
  }

  /// Calls `emit(json event)` for each element of "traceEvents" in order; stops early when `emit` returns false
  /// (the output stream failed, e.g. on a full disk: the rest would be formatted for nothing).
  template <class Emit>
  void events(Emit&& emit) const {
    // Process and thread names, sorted host first and then GPUs by ordinal, streams by id (Kineto's order).
    const std::string host_label =
        resource_.service_name + (resource_.host_name.empty() ? std::string() : " on " + resource_.host_name);
    if (!emit(json{{"ph", "M"},
                   {"name", "process_name"},
                   {"pid", kChromeHostPid},
                   {"tid", 0},
                   {"args", {{"name", host_label}}}}) ||
        !emit(json{{"ph", "M"},
                   {"name", "process_sort_index"},
                   {"pid", kChromeHostPid},
                   {"tid", 0},
                   {"args", {{"sort_index", 0}}}})) {
      return;
    }
    for (std::uint32_t d : devices_) {
      std::string name = "GPU " + std::to_string(d);
      if (const auto it = resource_.device_names.find(d); it != resource_.device_names.end()) {
        name += ": " + it->second;
      }
      if (!emit(json{{"ph", "M"}, {"name", "process_name"}, {"pid", d}, {"tid", 0}, {"args", {{"name", name}}}}) ||
          !emit(json{{"ph", "M"},
                     {"name", "process_sort_index"},
                     {"pid", d},
                     {"tid", 0},
                     {"args", {{"sort_index", static_cast<std::uint64_t>(d) + 1}}}})) {
        return;
      }
    }
    for (std::size_t p = 0; p < trace_.processes.size(); ++p) {
      const TraceProcess& process = trace_.processes[p];
      const std::uint32_t pid = kChromeHostPid + 1 + static_cast<std::uint32_t>(p);
      if (!emit(json{{"ph", "M"},
                     {"name", "process_name"},
                     {"pid", pid},
                     {"tid", 0},
                     {"args", {{"name", "process " + std::to_string(process.pid) + ": " + process.name}}}}) ||
          !emit(json{
              {"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", 0}}}})) {
        return;
      }
    }
    for (const Track& t : tracks_) {
      std::string name =
          t.is_device() ? "stream " + std::to_string(t.stream_number()) : "thread " + std::to_string(t.id);
      if (const TraceProcess* p = t.is_device() ? trace_.process_of_track(t) : nullptr)
        name += " of process " + std::to_string(p->pid);
      if (!emit(json{
              {"ph", "M"}, {"name", "thread_name"}, {"pid", pid_of(t)}, {"tid", t.id}, {"args", {{"name", name}}}}) ||
          !emit(json{{"ph", "M"},
                     {"name", "thread_sort_index"},
                     {"pid", pid_of(t)},
                     {"tid", t.id},
                     {"args", {{"sort_index", t.id}}}})) {
        return;
      }
    }

    // Measured batches: the MODEL spans of batch N span iteration N (HTA's and TensorBoard's "ProfilerStep#N").
    struct Step {
      std::int64_t start_ns, end_ns;
      Track track;
    };
    std::map<std::int64_t, Step> steps;
    for (const Span& s : trace_.spans) {
      if (!emit(span_event(s))) return;
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
      if (!emit(json{{"ph", "X"},
                     {"name", "ProfilerStep#" + std::to_string(batch)},
                     {"cat", "user_annotation"},
                     {"ts", to_us(step.start_ns)},
                     {"dur", to_us(step.end_ns - step.start_ns)},
                     {"pid", pid_of(step.track)},
                     {"tid", step.track.id},
                     {"args", {{"xsp.derived", true}, {"batch", batch}}}})) {
        return;
      }
    }

    // Flow arrows from the launching call to the asynchronous work it launched. The start binds to the slice
    // enclosing its ts on the parent's track; "bp":"e" binds the finish to the slice enclosing its ts.
    for (const Span& s : trace_.spans) {
      // Device work placed under the ops of its graph capture (rule context) still starts at its launch.
      SpanId from = kNoSpan;
      if (s.parent_rule == ParentRule::kCorrelation) {
        from = s.parent_id;
      } else if (s.level == Level::kKernel && s.correlation_id != 0) {
        if (const auto l = launching_call_.find(s.correlation_id); l != launching_call_.end()) from = l->second;
      }
      const auto it = by_id_.find(from);
      if (from == kNoSpan || it == by_id_.end()) continue;
      const Span& parent = *it->second;
      if (!emit(json{{"ph", "s"},
                     {"name", "ac2g"},
                     {"cat", "ac2g"},
                     {"id", s.id},
                     {"ts", to_us(parent.start_ns)},
                     {"pid", pid_of(parent.track)},
                     {"tid", parent.track.id}}) ||
          !emit(json{{"ph", "f"},
                     {"bp", "e"},
                     {"name", "ac2g"},
                     {"cat", "ac2g"},
                     {"id", s.id},
                     {"ts", to_us(s.start_ns)},
                     {"pid", pid_of(s.track)},
                     {"tid", s.track.id}})) {
        return;
      }
    }
  }

 private:
  json span_event(const Span& s) const {
    json args = json::object();
    for (const Tag& t : s.tags) args[t.key] = tag_json(t);
    add_kineto_args(s, args);
    if (s.correlation_id != 0) {
      const auto it = launching_call_.find(s.correlation_id);
      const bool host_call = s.level < Level::kKernel;
      if (!host_call || it == launching_call_.end() || it->second == s.id) {
        args["correlation"] = s.correlation_id;
      } else {
        args["xsp.correlation_id"] = s.correlation_id;
      }
    }
    if (s.level >= Level::kFramework) {
      // "External id": the op a span belongs to.
      if (const auto it = op_of_.find(s.id); it != op_of_.end() && it->second != kNoSpan) {
        args["External id"] = it->second;
      }
    }
    args["xsp.level"] = std::string(to_string(s.level));
    args["xsp.span_id"] = s.id;
    args["xsp.parent_id"] = s.parent_id;
    args["xsp.parent_rule"] = std::string(to_string(s.parent_rule));
    return {{"ph", "X"},
            {"name", s.name},
            {"cat", std::string(kineto_category(s))},
            {"ts", to_us(s.start_ns)},
            {"dur", to_us(s.end_ns - s.start_ns)},
            {"pid", pid_of(s.track)},
            {"tid", s.track.id},
            {"args", std::move(args)}};
  }

  const Trace& trace_;
  const TraceResource& resource_;
  const std::unordered_map<SpanId, SpanId> op_of_;
  std::unordered_map<SpanId, const Span*> by_id_;
  std::set<Track> tracks_;
  std::set<std::uint32_t> devices_;
  std::unordered_map<std::uint64_t, SpanId> launching_call_;
  std::unordered_map<std::uint64_t, std::uint32_t> process_pid_;  // host thread id -> Chrome pid of its process
};

}  // namespace

nlohmann::json to_chrome_trace(const Trace& trace, const TraceResource& resource) {
  const ChromeDocument doc(trace, resource);
  json events = json::array();
  doc.events([&](json e) {
    events.push_back(std::move(e));
    return true;
  });
  json out = doc.head();
  out["traceEvents"] = std::move(events);
  return out;
}

void write_chrome_trace(std::ostream& out, const Trace& trace, const TraceResource& resource) {
  const ChromeDocument doc(trace, resource);
  // nlohmann::json objects keep their keys sorted and "traceEvents" sorts after every key of the head, so writing
  // the head without its closing brace and the events after it gives exactly what to_chrome_trace(...).dump() does.
  std::string head = doc.head().dump();
  head.pop_back();
  out << head << ",\"traceEvents\":[";
  bool first = true;
  doc.events([&](const json& e) {
    if (!first) out.put(',');
    first = false;
    out << e;
    return static_cast<bool>(out);
  });
  out << "]}";
}

}  // namespace xsp
