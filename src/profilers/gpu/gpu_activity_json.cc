// JSON form of a GpuActivityLog: the fixture format of tests/fixtures/gpu/ (recorded on a GPU machine with
// XSP_DUMP_GPU_ACTIVITY, replayed in CI). Errors name the offending field so a hand-edited fixture is easy to fix.
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "xsp/profilers/gpu_activity.h"

namespace xsp {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "xsp-gpu-activity-v1";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::invalid_argument("gpu activity log: " + path + ": " + what);
}

/// Reads the fields of one JSON object, each error naming "<array>[<i>].<field>".
class Fields {
 public:
  Fields(const json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_object()) fail(path_, "expected an object");
  }

  template <typename Int>
  void integer(const char* key, Int& out, bool required = false) const {
    const json* v = find(key, required);
    if (v == nullptr) return;
    if (!v->is_number_integer()) fail(at(key), "expected an integer");
    if constexpr (std::is_signed_v<Int>) {
      const auto x = v->get<std::int64_t>();
      if (v->is_number_unsigned() &&
          v->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<Int>::max()))
        fail(at(key), "out of range");
      if (x < std::numeric_limits<Int>::min() || x > std::numeric_limits<Int>::max()) fail(at(key), "out of range");
      out = static_cast<Int>(x);
    } else {
      if (!v->is_number_unsigned()) fail(at(key), "expected a non-negative integer");
      const auto x = v->get<std::uint64_t>();
      if (x > std::numeric_limits<Int>::max()) fail(at(key), "out of range");
      out = static_cast<Int>(x);
    }
  }

  void string(const char* key, std::string& out, bool required = false) const {
    const json* v = find(key, required);
    if (v == nullptr) return;
    if (!v->is_string()) fail(at(key), "expected a string");
    out = v->get<std::string>();
  }

  template <typename Enum, typename Parse>
  void enumeration(const char* key, Enum& out, Parse parse) const {
    std::string text;
    string(key, text);
    if (text.empty()) return;
    const std::optional<Enum> e = parse(text);
    if (!e) fail(at(key), "unknown value \"" + text + "\"");
    out = *e;
  }

 private:
  const json* find(const char* key, bool required) const {
    const auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) {
      if (required) fail(at(key), "missing");
      return nullptr;
    }
    return &*it;
  }
  std::string at(const char* key) const { return path_ + "." + key; }

  const json& object_;
  std::string path_;
};

template <typename Record, typename Read>
void read_array(const json& root, const char* key, std::vector<Record>& out, Read read) {
  const auto it = root.find(key);
  if (it == root.end() || it->is_null()) return;
  if (!it->is_array()) fail(key, "expected an array");
  out.reserve(it->size());
  for (std::size_t i = 0; i < it->size(); ++i) {
    Record r;
    read(Fields((*it)[i], std::string(key) + "[" + std::to_string(i) + "]"), r);
    out.push_back(std::move(r));
  }
}

}  // namespace

json to_json(const GpuActivityLog& log) {
  json j;
  j["format"] = kFormat;
  j["clock_mapping"] = log.clock_mapping;
  j["counters"] = log.counters;
  json& kernels = j["kernels"] = json::array();
  for (const KernelRecord& k : log.kernels) {
    kernels.push_back({{"name", k.name},
                       {"start_ns", k.start_ns},
                       {"end_ns", k.end_ns},
                       {"queued_ns", k.queued_ns},
                       {"submitted_ns", k.submitted_ns},
                       {"device", k.device},
                       {"context", k.context},
                       {"stream", k.stream},
                       {"correlation_id", k.correlation_id},
                       {"grid_x", k.grid_x},
                       {"grid_y", k.grid_y},
                       {"grid_z", k.grid_z},
                       {"block_x", k.block_x},
                       {"block_y", k.block_y},
                       {"block_z", k.block_z},
                       {"registers_per_thread", k.registers_per_thread},
                       {"static_shared_bytes", k.static_shared_bytes},
                       {"dynamic_shared_bytes", k.dynamic_shared_bytes},
                       {"graph_id", k.graph_id},
                       {"graph_node_id", k.graph_node_id}});
  }
  json& memcpys = j["memcpys"] = json::array();
  for (const MemcpyRecord& m : log.memcpys) {
    memcpys.push_back({{"bytes", m.bytes},
                       {"copy_kind", to_string(m.copy_kind)},
                       {"src_kind", to_string(m.src_kind)},
                       {"dst_kind", to_string(m.dst_kind)},
                       {"start_ns", m.start_ns},
                       {"end_ns", m.end_ns},
                       {"device", m.device},
                       {"context", m.context},
                       {"stream", m.stream},
                       {"correlation_id", m.correlation_id},
                       {"runtime_correlation_id", m.runtime_correlation_id},
                       {"graph_id", m.graph_id},
                       {"graph_node_id", m.graph_node_id}});
  }
  json& memsets = j["memsets"] = json::array();
  for (const MemsetRecord& m : log.memsets) {
    memsets.push_back({{"bytes", m.bytes},
                       {"value", m.value},
                       {"memory_kind", to_string(m.memory_kind)},
                       {"start_ns", m.start_ns},
                       {"end_ns", m.end_ns},
                       {"device", m.device},
                       {"context", m.context},
                       {"stream", m.stream},
                       {"correlation_id", m.correlation_id},
                       {"graph_id", m.graph_id},
                       {"graph_node_id", m.graph_node_id}});
  }
  json& apis = j["apis"] = json::array();
  for (const ApiRecord& a : log.apis) {
    apis.push_back({{"domain", to_string(a.domain)},
                    {"cbid", a.cbid},
                    {"name", a.name},
                    {"start_ns", a.start_ns},
                    {"end_ns", a.end_ns},
                    {"thread_id", a.thread_id},
                    {"correlation_id", a.correlation_id},
                    {"return_value", a.return_value}});
  }
  json& ext = j["external_correlations"] = json::array();
  for (const ExternalCorrelationRecord& e : log.external_correlations) {
    ext.push_back({{"correlation_id", e.correlation_id}, {"external_id", e.external_id}});
  }
  json& markers = j["markers"] = json::array();
  for (const MarkerRecord& m : log.markers) {
    markers.push_back({{"name", m.name},
                       {"domain", m.domain},
                       {"start_ns", m.start_ns},
                       {"end_ns", m.end_ns},
                       {"thread_id", m.thread_id}});
  }
  json& syncs = j["syncs"] = json::array();
  for (const SyncRecord& s : log.syncs) {
    syncs.push_back({{"type", s.type},
                     {"start_ns", s.start_ns},
                     {"end_ns", s.end_ns},
                     {"correlation_id", s.correlation_id},
                     {"context", s.context},
                     {"stream", s.stream}});
  }
  json& overheads = j["overheads"] = json::array();
  for (const OverheadRecord& o : log.overheads) {
    overheads.push_back({{"kind", o.kind}, {"start_ns", o.start_ns}, {"end_ns", o.end_ns}, {"thread_id", o.thread_id}});
  }
  // Written only when there are some: fixtures recorded before graphs were attributed stay byte-identical.
  if (!log.graph_nodes.empty()) {
    json& nodes = j["graph_nodes"] = json::array();
    for (const GraphNodeRecord& n : log.graph_nodes) {
      nodes.push_back({{"graph_id", n.graph_id},
                       {"node_id", n.node_id},
                       {"original_node_id", n.original_node_id},
                       {"original_graph_id", n.original_graph_id},
                       {"capture_correlation_id", n.capture_correlation_id},
                       {"thread_id", n.thread_id},
                       {"time_ns", n.time_ns}});
    }
  }
  return j;
}

GpuActivityLog gpu_activity_log_from_json(const json& j) {
  if (!j.is_object()) fail("(root)", "expected an object");
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != kFormat) {
    fail("format", std::string("expected \"") + kFormat + "\"");
  }
  GpuActivityLog log;
  Fields root(j, "(root)");
  root.string("clock_mapping", log.clock_mapping);
  if (const auto c = j.find("counters"); c != j.end() && !c->is_null()) {
    if (!c->is_object()) fail("counters", "expected an object");
    Fields counters(*c, "counters");
    for (const auto& [name, value] : c->items()) counters.integer(name.c_str(), log.counters[name], true);
  }

  read_array(j, "kernels", log.kernels, [](const Fields& f, KernelRecord& k) {
    f.string("name", k.name, true);
    f.integer("start_ns", k.start_ns, true);
    f.integer("end_ns", k.end_ns, true);
    f.integer("queued_ns", k.queued_ns);
    f.integer("submitted_ns", k.submitted_ns);
    f.integer("device", k.device);
    f.integer("context", k.context);
    f.integer("stream", k.stream);
    f.integer("correlation_id", k.correlation_id);
    f.integer("grid_x", k.grid_x);
    f.integer("grid_y", k.grid_y);
    f.integer("grid_z", k.grid_z);
    f.integer("block_x", k.block_x);
    f.integer("block_y", k.block_y);
    f.integer("block_z", k.block_z);
    f.integer("registers_per_thread", k.registers_per_thread);
    f.integer("static_shared_bytes", k.static_shared_bytes);
    f.integer("dynamic_shared_bytes", k.dynamic_shared_bytes);
    f.integer("graph_id", k.graph_id);
    f.integer("graph_node_id", k.graph_node_id);
  });
  read_array(j, "memcpys", log.memcpys, [](const Fields& f, MemcpyRecord& m) {
    f.integer("bytes", m.bytes);
    f.enumeration("copy_kind", m.copy_kind, parse_copy_kind);
    f.enumeration("src_kind", m.src_kind, parse_memory_kind);
    f.enumeration("dst_kind", m.dst_kind, parse_memory_kind);
    f.integer("start_ns", m.start_ns, true);
    f.integer("end_ns", m.end_ns, true);
    f.integer("device", m.device);
    f.integer("context", m.context);
    f.integer("stream", m.stream);
    f.integer("correlation_id", m.correlation_id);
    f.integer("runtime_correlation_id", m.runtime_correlation_id);
    f.integer("graph_id", m.graph_id);
    f.integer("graph_node_id", m.graph_node_id);
  });
  read_array(j, "memsets", log.memsets, [](const Fields& f, MemsetRecord& m) {
    f.integer("bytes", m.bytes);
    f.integer("value", m.value);
    f.enumeration("memory_kind", m.memory_kind, parse_memory_kind);
    f.integer("start_ns", m.start_ns, true);
    f.integer("end_ns", m.end_ns, true);
    f.integer("device", m.device);
    f.integer("context", m.context);
    f.integer("stream", m.stream);
    f.integer("correlation_id", m.correlation_id);
    f.integer("graph_id", m.graph_id);
    f.integer("graph_node_id", m.graph_node_id);
  });
  read_array(j, "apis", log.apis, [](const Fields& f, ApiRecord& a) {
    f.enumeration("domain", a.domain, parse_api_domain);
    f.integer("cbid", a.cbid);
    f.string("name", a.name, true);
    f.integer("start_ns", a.start_ns, true);
    f.integer("end_ns", a.end_ns, true);
    f.integer("thread_id", a.thread_id);
    f.integer("correlation_id", a.correlation_id);
    f.integer("return_value", a.return_value);
  });
  read_array(j, "external_correlations", log.external_correlations, [](const Fields& f, ExternalCorrelationRecord& e) {
    f.integer("correlation_id", e.correlation_id, true);
    f.integer("external_id", e.external_id, true);
  });
  read_array(j, "markers", log.markers, [](const Fields& f, MarkerRecord& m) {
    f.string("name", m.name, true);
    f.string("domain", m.domain);
    f.integer("start_ns", m.start_ns, true);
    f.integer("end_ns", m.end_ns, true);
    f.integer("thread_id", m.thread_id);
  });
  read_array(j, "syncs", log.syncs, [](const Fields& f, SyncRecord& s) {
    f.string("type", s.type);
    f.integer("start_ns", s.start_ns, true);
    f.integer("end_ns", s.end_ns, true);
    f.integer("correlation_id", s.correlation_id);
    f.integer("context", s.context);
    f.integer("stream", s.stream);
  });
  read_array(j, "overheads", log.overheads, [](const Fields& f, OverheadRecord& o) {
    f.string("kind", o.kind);
    f.integer("start_ns", o.start_ns, true);
    f.integer("end_ns", o.end_ns, true);
    f.integer("thread_id", o.thread_id);
  });
  read_array(j, "graph_nodes", log.graph_nodes, [](const Fields& f, GraphNodeRecord& n) {
    f.integer("graph_id", n.graph_id);
    f.integer("node_id", n.node_id, true);
    f.integer("original_node_id", n.original_node_id);
    f.integer("original_graph_id", n.original_graph_id);
    f.integer("capture_correlation_id", n.capture_correlation_id);
    f.integer("thread_id", n.thread_id);
    f.integer("time_ns", n.time_ns);
  });
  return log;
}

}  // namespace xsp
