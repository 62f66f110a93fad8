#include "xsp/profilers/counter_spans.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "xsp/profilers/hardware_counters.h"
#include "xsp/trace/run_statistics.h"

namespace xsp {

void append_counter_spans(const CounterCollection& collection, TraceRecorder& recorder) {
  const std::size_t n = std::min(collection.launches.size(), collection.ranges.size());
  std::vector<Span> spans;
  spans.reserve(n);
  const SpanId first = n > 0 ? recorder.reserve_ids(n) : kNoSpan;
  for (std::size_t i = 0; i < n; ++i) {
    const KernelLaunch& launch = collection.launches[i];
    const CounterRange& range = collection.ranges[i];
    Span s;
    s.id = first + i;
    s.level = Level::kHardware;
    s.name = launch.kernel_name;
    s.start_ns = launch.start_ns;
    s.end_ns = std::max(launch.end_ns, launch.start_ns);
    s.track = Track::host_thread(launch.thread_id);
    if (launch.op != kNoSpan) {
      s.parent_id = launch.op;
      s.parent_rule = ParentRule::kContext;
    }
    for (const auto& [name, value] : hw::evaluate_counters(range.metrics)) s.tags.emplace_back(name, value);
    s.tags.emplace_back("range_index", range.index);
    s.tags.push_back({"replay", collection.replay});
    spans.push_back(std::move(s));
  }
  recorder.add_all(std::move(spans));
  recorder.count(stat::kCountersRanges, collection.ranges.size());
  recorder.count(stat::kCountersPasses, collection.passes);
  if (collection.dropped_ranges > 0) recorder.count(stat::kCountersDroppedRanges, collection.dropped_ranges);
  if (collection.ranges.size() > n) recorder.count(stat::kCountersUnmatchedRanges, collection.ranges.size() - n);
  if (collection.launches.size() > n) recorder.count(stat::kCountersUnmatchedLaunches, collection.launches.size() - n);
}

nlohmann::json to_json(const CounterCollection& c) {
  nlohmann::json launches = nlohmann::json::array();
  for (const auto& l : c.launches)
    launches.push_back({{"kernel_name", l.kernel_name},
                        {"start_ns", l.start_ns},
                        {"end_ns", l.end_ns},
                        {"thread_id", l.thread_id},
                        {"op", l.op}});
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& r : c.ranges) ranges.push_back({{"index", r.index}, {"name", r.name}, {"metrics", r.metrics}});
  return {{"replay", c.replay},   {"dropped_ranges", c.dropped_ranges},
          {"passes", c.passes},   {"chip", c.chip},
          {"launches", launches}, {"ranges", ranges}};
}

CounterCollection counter_collection_from_json(const nlohmann::json& j) {
  const auto field = [](const nlohmann::json& o, const char* key, const char* where) -> const nlohmann::json& {
    if (!o.is_object() || !o.contains(key))
      throw std::invalid_argument(std::string("counter collection: ") + where + " has no field '" + key + "'");
    return o.at(key);
  };
  try {
    CounterCollection c;
    c.replay = field(j, "replay", "top level").get<std::string>();
    c.dropped_ranges = field(j, "dropped_ranges", "top level").get<std::uint64_t>();
    c.passes = field(j, "passes", "top level").get<std::size_t>();
    c.chip = field(j, "chip", "top level").get<std::string>();
    for (const auto& l : field(j, "launches", "top level")) {
      KernelLaunch k;
      k.kernel_name = field(l, "kernel_name", "launch").get<std::string>();
      k.start_ns = field(l, "start_ns", "launch").get<std::int64_t>();
      k.end_ns = field(l, "end_ns", "launch").get<std::int64_t>();
      k.thread_id = field(l, "thread_id", "launch").get<std::uint64_t>();
      k.op = field(l, "op", "launch").get<SpanId>();
      c.launches.push_back(std::move(k));
    }
    for (const auto& r : field(j, "ranges", "top level")) {
      CounterRange range;
      range.index = field(r, "index", "range").get<std::size_t>();
      range.name = field(r, "name", "range").get<std::string>();
      range.metrics = field(r, "metrics", "range").get<std::map<std::string, double>>();
      c.ranges.push_back(std::move(range));
    }
    return c;
  } catch (const nlohmann::json::type_error& e) {
    throw std::invalid_argument(std::string("counter collection: wrong field type: ") + e.what());
  }
}

}  // namespace xsp
