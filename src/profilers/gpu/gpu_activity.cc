// GpuActivityLog → spans (docs/spans.md: SYSTEM, KERNEL, LIBRARY), and the small helpers around it.
#include "xsp/profilers/gpu_activity.h"

#include <cxxabi.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "xsp/trace/run_statistics.h"

namespace xsp {

namespace {

constexpr std::array<std::string_view, 11> kCopyKindNames = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                             "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
constexpr std::array<std::string_view, 8> kMemoryKindNames = {"unknown", "pageable", "pinned",        "device",
                                                              "array",   "managed",  "device_static", "managed_static"};
constexpr std::array<std::string_view, 2> kApiDomainNames = {"runtime", "driver"};

template <typename Enum, std::size_t N>
std::optional<Enum> parse_enum(const std::array<std::string_view, N>& names, std::string_view text) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

void tag(Span& s, std::string key, std::string value) { s.tags.emplace_back(std::move(key), std::move(value)); }
// Numbers stay numbers (TagType::kInt) from here to the exporters.
template <std::integral Int>
void tag_num(Span& s, std::string key, Int value) {
  s.tags.emplace_back(std::move(key), value);
}

/// Tags shared by every KERNEL-level span, and the graph attribution (docs/spans.md, KERNEL).
void device_tags(Span& s, const char* kind, std::uint32_t device, std::uint32_t context, std::uint32_t stream) {
  tag(s, "kind", kind);
  tag_num(s, "device", device);
  tag_num(s, "context", context);
  tag_num(s, "stream", stream);
}
void graph_tags(Span& s, std::uint32_t graph_id, std::uint64_t graph_node_id, const GraphNodeIndex& nodes) {
  // A graph replay shares the graph launch's correlation id: the span lands under cudaGraphLaunch. The captured
  // node it comes from lets the assembler move it under the op of its capture ("graph-node"); until then, or when
  // the capture was never seen, it is attributed to the launch only, and says so.
  if (graph_id == 0 && graph_node_id == 0) return;
  tag_num(s, "graph_id", graph_id);
  tag_num(s, "graph_node_id", graph_node_id);
  tag(s, "attribution", "graph-launch");
  if (const auto origin = nodes.origin(graph_node_id)) {
    tag_num(s, "graph_capture_node_id", origin->node->node_id);
  } else {
    tag(s, "graph_capture", "before-profiling");
  }
}

/// The graph nodes each API call created while capturing (or adding nodes), by its correlation id: their capture
/// context is that call's. A record without a correlation id (API records from activity buffers) takes the call on its
/// thread whose interval holds its time. Clones are not captures (`nodes` has merged their created/cloned records).
std::unordered_map<std::uint32_t, std::vector<std::int64_t>> captured_nodes_by_call(const GpuActivityLog& log,
                                                                                    const GraphNodeIndex& nodes) {
  std::unordered_map<std::uint32_t, std::vector<std::int64_t>> captured;
  std::vector<const ApiRecord*> by_thread;  // for records without a correlation id: (thread, start) order
  for (const GraphNodeRecord& g : log.graph_nodes) {
    // A clone is reported created (inside the instantiation) and then cloned: the merged record tells.
    const GraphNodeRecord* merged = g.node_id == 0 ? nullptr : nodes.find(g.node_id);
    if (merged == nullptr || merged->original_node_id != 0) continue;
    std::uint32_t call = g.capture_correlation_id;
    if (call == 0 && g.time_ns != 0) {
      if (by_thread.empty()) {
        for (const ApiRecord& a : log.apis) by_thread.push_back(&a);
        std::sort(by_thread.begin(), by_thread.end(), [](const ApiRecord* a, const ApiRecord* b) {
          return std::tie(a->thread_id, a->start_ns) < std::tie(b->thread_id, b->start_ns);
        });
      }
      // The last call on the thread that started at or before the node's time, if it had not ended yet.
      auto it = std::upper_bound(by_thread.begin(), by_thread.end(), std::make_pair(g.thread_id, g.time_ns),
                                 [](const std::pair<std::uint64_t, std::int64_t>& key, const ApiRecord* a) {
                                   return key < std::make_pair(a->thread_id, a->start_ns);
                                 });
      if (it != by_thread.begin()) {
        const ApiRecord* a = *std::prev(it);
        if (a->thread_id == g.thread_id && a->end_ns >= g.time_ns) call = a->correlation_id;
      }
    }
    if (call != 0) captured[call].push_back(static_cast<std::int64_t>(g.node_id));
  }
  return captured;
}

std::mutex g_process_nodes_mu;
GraphNodeIndex& process_graph_nodes() {
  static auto* nodes = new GraphNodeIndex();  // never destroyed: graphs outlive any one run
  return *nodes;
}

}  // namespace

std::string_view to_string(CopyKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kCopyKindNames.size() ? kCopyKindNames[i] : "unknown";
}
std::string_view to_string(MemoryKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kMemoryKindNames.size() ? kMemoryKindNames[i] : "unknown";
}
std::string_view to_string(ApiDomain domain) {
  const auto i = static_cast<std::size_t>(domain);
  return i < kApiDomainNames.size() ? kApiDomainNames[i] : "runtime";
}
std::optional<CopyKind> parse_copy_kind(std::string_view text) { return parse_enum<CopyKind>(kCopyKindNames, text); }
std::optional<MemoryKind> parse_memory_kind(std::string_view text) {
  return parse_enum<MemoryKind>(kMemoryKindNames, text);
}
std::optional<ApiDomain> parse_api_domain(std::string_view text) {
  return parse_enum<ApiDomain>(kApiDomainNames, text);
}

std::string demangle(const char* mangled) {
  if (mangled == nullptr) return {};
  int status = 0;
  // __cxa_demangle allocates with malloc; the result is ours to free.
  char* out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return mangled;
  }
  std::string result(out);
  std::free(out);
  return result;
}

void append_spans(const GpuActivityLog& log, TraceRecorder& recorder) {
  std::lock_guard lock(g_process_nodes_mu);
  append_spans(log, recorder, process_graph_nodes());
}

void append_spans(const GpuActivityLog& log, TraceRecorder& recorder, GraphNodeIndex& nodes) {
  nodes.add(log.graph_nodes);
  const std::size_t n =
      log.apis.size() + log.kernels.size() + log.memcpys.size() + log.memsets.size() + log.markers.size();

  // correlation id → external id (the framework op). CUPTI emits one record per API call made while an id was
  // pushed; the first one wins if a log ever holds two for the same call.
  std::unordered_map<std::uint32_t, std::uint64_t> external;
  external.reserve(log.external_correlations.size());
  for (const ExternalCorrelationRecord& r : log.external_correlations) {
    if (r.correlation_id != 0 && r.external_id != 0) external.emplace(r.correlation_id, r.external_id);
  }
  std::unordered_set<std::uint32_t> api_ids;
  api_ids.reserve(log.apis.size());
  for (const ApiRecord& a : log.apis) api_ids.insert(a.correlation_id);
  const std::unordered_map<std::uint32_t, std::vector<std::int64_t>> captured = captured_nodes_by_call(log, nodes);
  // Synchronization records describe the wait of an API call; they become tags on that call's span.
  std::unordered_map<std::uint32_t, const SyncRecord*> syncs;
  for (const SyncRecord& r : log.syncs) syncs.emplace(r.correlation_id, &r);

  std::vector<Span> spans;
  spans.reserve(n);
  SpanId next = n > 0 ? recorder.reserve_ids(n) : kNoSpan;
  std::uint64_t orphans = 0;

  for (const ApiRecord& a : log.apis) {
    Span s;
    s.id = next++;
    s.level = Level::kSystem;
    s.name = a.name;
    s.start_ns = a.start_ns;
    s.end_ns = a.end_ns;
    s.track = Track::host_thread(a.thread_id);
    s.correlation_id = a.correlation_id;
    // The op's span id is known from the external correlation record: a parent known by the profiler, which
    // assemble() keeps (rule a) when that op is in the trace and re-places by containment when it is not.
    if (const auto it = external.find(a.correlation_id); it != external.end()) s.parent_id = it->second;
    tag(s, "domain", std::string(to_string(a.domain)));
    tag_num(s, "cbid", a.cbid);
    if (a.return_value != 0) tag_num(s, "return_value", a.return_value);
    if (const auto it = syncs.find(a.correlation_id); it != syncs.end()) {
      tag(s, "sync", it->second->type);
      if (it->second->stream != 0xFFFFFFFFu) tag_num(s, "sync_stream", it->second->stream);
    }
    if (const auto it = captured.find(a.correlation_id); it != captured.end()) {
      s.tags.emplace_back("graph_captured_node_ids", it->second);
    }
    spans.push_back(std::move(s));
  }

  // The API call a device record belongs to; 0 (and one more orphan) when none of the log's calls has its id.
  auto resolve = [&](std::uint32_t correlation_id, std::uint32_t runtime_correlation_id) -> std::uint64_t {
    if (api_ids.contains(correlation_id)) return correlation_id;
    if (runtime_correlation_id != 0 && api_ids.contains(runtime_correlation_id)) return runtime_correlation_id;
    ++orphans;
    return correlation_id;  // kept: a later merge with another log could still join it
  };

  for (const KernelRecord& k : log.kernels) {
    Span s;
    s.id = next++;
    s.level = Level::kKernel;
    s.name = k.name;
    s.start_ns = k.start_ns;
    s.end_ns = k.end_ns;
    s.track = Track::stream(k.device, k.stream);
    s.correlation_id = resolve(k.correlation_id, 0);
    device_tags(s, "kernel", k.device, k.context, k.stream);
    s.tags.emplace_back("grid", std::initializer_list<std::int64_t>{k.grid_x, k.grid_y, k.grid_z});
    s.tags.emplace_back("block", std::initializer_list<std::int64_t>{k.block_x, k.block_y, k.block_z});
    tag_num(s, "registers_per_thread", k.registers_per_thread);
    tag_num(s, "static_shared_bytes", k.static_shared_bytes);
    tag_num(s, "dynamic_shared_bytes", k.dynamic_shared_bytes);
    if (k.queued_ns != 0) tag_num(s, "queued_ns", k.queued_ns);
    if (k.submitted_ns != 0) tag_num(s, "submitted_ns", k.submitted_ns);
    graph_tags(s, k.graph_id, k.graph_node_id, nodes);
    spans.push_back(std::move(s));
  }

  for (const MemcpyRecord& m : log.memcpys) {
    Span s;
    s.id = next++;
    s.level = Level::kKernel;
    s.name = "Memcpy " + std::string(to_string(m.copy_kind));
    s.start_ns = m.start_ns;
    s.end_ns = m.end_ns;
    s.track = Track::stream(m.device, m.stream);
    s.correlation_id = resolve(m.correlation_id, m.runtime_correlation_id);
    device_tags(s, "memcpy", m.device, m.context, m.stream);
    tag_num(s, "bytes", m.bytes);
    tag(s, "copy_kind", std::string(to_string(m.copy_kind)));
    tag(s, "src_kind", std::string(to_string(m.src_kind)));
    tag(s, "dst_kind", std::string(to_string(m.dst_kind)));
    if (m.end_ns > m.start_ns) {
      // bytes / duration in seconds, rounded down: integral, as it was before tags had types.
      const double bw = static_cast<double>(m.bytes) * 1e9 / static_cast<double>(m.end_ns - m.start_ns);
      tag_num(s, "bandwidth_bytes_per_s", static_cast<std::int64_t>(bw));
    }
    graph_tags(s, m.graph_id, m.graph_node_id, nodes);
    spans.push_back(std::move(s));
  }

  for (const MemsetRecord& m : log.memsets) {
    Span s;
    s.id = next++;
    s.level = Level::kKernel;
    s.name = "Memset";
    s.start_ns = m.start_ns;
    s.end_ns = m.end_ns;
    s.track = Track::stream(m.device, m.stream);
    s.correlation_id = resolve(m.correlation_id, 0);
    device_tags(s, "memset", m.device, m.context, m.stream);
    tag_num(s, "bytes", m.bytes);
    tag_num(s, "value", m.value);
    graph_tags(s, m.graph_id, m.graph_node_id, nodes);
    spans.push_back(std::move(s));
  }

  for (const MarkerRecord& m : log.markers) {
    Span s;
    s.id = next++;
    s.level = Level::kLibrary;
    s.name = m.name;
    s.start_ns = m.start_ns;
    s.end_ns = m.end_ns;
    s.track = Track::host_thread(m.thread_id);
    tag(s, "domain", m.domain.empty() ? "default" : m.domain);
    spans.push_back(std::move(s));
  }

  std::uint64_t overhead_ns = 0;
  for (const OverheadRecord& o : log.overheads) {
    if (o.end_ns > o.start_ns) overhead_ns += static_cast<std::uint64_t>(o.end_ns - o.start_ns);
  }

  recorder.add_all(std::move(spans));
  for (const auto& [name, value] : log.counters) recorder.count(name, value);
  // Always present, zero included: a reader can tell "none" from "not measured".
  recorder.count(stat::kCuptiOrphanActivities, orphans);
  recorder.count(stat::kCuptiOverheadNs, overhead_ns);
}

}  // namespace xsp
