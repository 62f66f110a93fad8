// The op table, analysis "ops" (include/xsp/analysis/op_table.h, docs/ops.md): self and total time per op over every
// FRAMEWORK span of the measured batches, and the kernel time of each op when a KERNEL-level run exists.
//
// Linear in the spans apart from one sort of the parent/child intervals: parent chains are resolved once with
// memoisation (as layers.cc does), and per-span values live in flat vectors indexed by span position.
#include "xsp/analysis/op_table.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "internal.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/stats/stats.h"

namespace xsp {
namespace {

using detail::IdIndex;
using detail::kNoIndex;
using detail::kOnPath;
using detail::kUnresolved;

constexpr const char* kNoModule = "(no module)";

// A span's "module" tag as the op table groups it.
std::string_view module_of(const Span& s) {
  const auto m = s.tag("module");
  return m && !m->empty() ? *m : std::string_view(kNoModule);
}

// Per span position: the position of the sample span at or above it (detail::is_sample_span), or kNoIndex when there
// is none (or the parent chain loops).
std::vector<std::uint32_t> samples_above(const std::vector<Span>& spans, const IdIndex& ids) {
  const auto n = static_cast<std::uint32_t>(spans.size());
  std::vector<std::uint32_t> sample(n, kUnresolved);
  std::vector<std::uint32_t> path;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (sample[i] != kUnresolved) continue;
    path.clear();
    std::uint32_t cur = i;
    std::uint32_t result = kNoIndex;
    for (;;) {
      if (sample[cur] != kUnresolved) {
        result = sample[cur] == kOnPath ? kNoIndex : sample[cur];
        break;
      }
      if (detail::is_sample_span(spans[cur])) {
        sample[cur] = cur;
        result = cur;
        break;
      }
      sample[cur] = kOnPath;
      path.push_back(cur);
      const std::uint32_t p = ids.find(spans[cur].parent_id);
      if (p == kNoIndex) break;
      cur = p;
    }
    for (std::uint32_t k : path) sample[k] = result;
  }
  return sample;
}

// One row of the table before rendering: per-batch sums of the host run (M/F) and of the kernel run (M/F/K).
struct Group {
  std::string name, shapes;
  std::vector<double> self_ns, total_ns, calls;              // per batch of the M/F run
  std::vector<double> self_cuda_ns, cuda_total_ns, kernels;  // per batch of the M/F/K run
};

class Groups {
 public:
  explicit Groups(OpGroupBy by) : by_(by) {}
  // The group of FRAMEWORK span `s`.
  Group& of(const Span& s) {
    std::string name, shapes;
    if (by_ == OpGroupBy::kModule) {
      name = std::string(module_of(s));
    } else {
      name = s.name;
      if (by_ == OpGroupBy::kShapes) shapes = std::string(s.tag("shapes").value_or(""));
    }
    std::string key = name;
    key += '\x1f';
    key += shapes;
    const auto [it, fresh] = index_.emplace(std::move(key), groups_.size());
    if (fresh) groups_.push_back(Group{std::move(name), std::move(shapes), {}, {}, {}, {}, {}, {}});
    return groups_[it->second];
  }
  std::vector<Group>& all() { return groups_; }

 private:
  OpGroupBy by_;
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<Group> groups_;
};

// What one run's scan saw besides the groups' values.
struct Scan {
  std::size_t batches = 0;             // sample spans with at least one FRAMEWORK span below them
  std::size_t framework_spans = 0;     // every FRAMEWORK span
  std::size_t outside = 0;             // FRAMEWORK spans under no sample span: not counted
  bool any_shapes = false;             // some FRAMEWORK span has a "shapes" tag
  std::size_t kernels = 0;             // KERNEL spans under a sample span
  std::size_t kernels_outside_op = 0;  // ... of which with no FRAMEWORK ancestor
};

// The trace indexed once: span positions, the sample above each span and the batch index of each sample.
struct Indexed {
  const std::vector<Span>& spans;
  IdIndex ids;
  std::vector<std::uint32_t> sample;    // per span: samples_above()
  std::vector<std::uint32_t> batch_of;  // per span position of a sample: its batch index, else kNoIndex
  Scan scan;

  explicit Indexed(const Trace& trace) : spans(trace.spans), ids(trace.spans), sample(samples_above(spans, ids)) {
    const auto n = static_cast<std::uint32_t>(spans.size());
    batch_of.assign(n, kNoIndex);
    std::vector<std::uint32_t> used;  // samples with FRAMEWORK spans, in batch order (start time, then id)
    for (std::uint32_t i = 0; i < n; ++i) {
      if (spans[i].level != Level::kFramework) continue;
      ++scan.framework_spans;
      if (!scan.any_shapes && spans[i].tag("shapes")) scan.any_shapes = true;
      const std::uint32_t smp = sample[i];
      if (smp == kNoIndex) {
        ++scan.outside;
      } else if (batch_of[smp] == kNoIndex) {
        batch_of[smp] = 0;
        used.push_back(smp);
      }
    }
    std::sort(used.begin(), used.end(), [&](std::uint32_t a, std::uint32_t b) {
      if (spans[a].start_ns != spans[b].start_ns) return spans[a].start_ns < spans[b].start_ns;
      return spans[a].id < spans[b].id;
    });
    for (std::uint32_t k = 0; k < used.size(); ++k) batch_of[used[k]] = k;
    scan.batches = used.size();
  }
  // The batch index of span `i`, or kNoIndex when it is under no counted sample.
  std::uint32_t batch(std::uint32_t i) const { return sample[i] == kNoIndex ? kNoIndex : batch_of[sample[i]]; }
  // The position of span i's parent when it is a FRAMEWORK span, else kNoIndex.
  std::uint32_t framework_parent(std::uint32_t i) const {
    const std::uint32_t p = ids.find(spans[i].parent_id);
    return p != kNoIndex && spans[p].level == Level::kFramework ? p : kNoIndex;
  }
};

void add_at(std::vector<double>& v, std::size_t batches, std::uint32_t batch, double value) {
  if (v.size() < batches) v.resize(batches, 0.0);
  v[batch] += value;
}

// Per FRAMEWORK span: the time covered by its direct FRAMEWORK children on the same track (union of their
// intervals clipped to the parent's), in ns.
std::vector<std::int64_t> covered_by_children(const Indexed& x) {
  struct Child {
    std::uint32_t parent;
    std::int64_t start, end;
  };
  std::vector<Child> children;
  const auto n = static_cast<std::uint32_t>(x.spans.size());
  for (std::uint32_t i = 0; i < n; ++i) {
    if (x.spans[i].level != Level::kFramework) continue;
    const std::uint32_t p = x.framework_parent(i);
    if (p == kNoIndex || x.spans[p].track != x.spans[i].track) continue;
    const std::int64_t start = std::max(x.spans[i].start_ns, x.spans[p].start_ns);
    const std::int64_t end = std::min(x.spans[i].end_ns, x.spans[p].end_ns);
    if (end > start) children.push_back({p, start, end});
  }
  std::sort(children.begin(), children.end(), [](const Child& a, const Child& b) {
    return a.parent != b.parent ? a.parent < b.parent : a.start < b.start;
  });
  std::vector<std::int64_t> covered(n, 0);
  for (std::size_t k = 0; k < children.size();) {
    const std::uint32_t p = children[k].parent;
    std::int64_t run_start = children[k].start, run_end = children[k].end;
    for (++k; k < children.size() && children[k].parent == p; ++k) {
      if (children[k].start > run_end) {
        covered[p] += run_end - run_start;
        run_start = children[k].start;
      }
      run_end = std::max(run_end, children[k].end);
    }
    covered[p] += run_end - run_start;
  }
  return covered;
}

// Self and total time and calls of every FRAMEWORK span under a sample, into its group. Grouped by module, only the
// module's outermost calls add to its total: its nested ops carry the same module, and counting each would add the
// module's time once per nesting level.
void scan_host(const Indexed& x, Groups& groups, OpGroupBy by) {
  const std::vector<std::int64_t> covered = covered_by_children(x);
  const auto n = static_cast<std::uint32_t>(x.spans.size());
  for (std::uint32_t i = 0; i < n; ++i) {
    const Span& s = x.spans[i];
    if (s.level != Level::kFramework) continue;
    const std::uint32_t b = x.batch(i);
    if (b == kNoIndex) continue;
    Group& g = groups.of(s);
    const std::int64_t self = std::max<std::int64_t>(0, s.duration_ns() - covered[i]);
    add_at(g.self_ns, x.scan.batches, b, static_cast<double>(self));
    const std::uint32_t p = x.framework_parent(i);
    const bool inner = by == OpGroupBy::kModule && p != kNoIndex && module_of(x.spans[p]) == module_of(s);
    add_at(g.total_ns, x.scan.batches, b, inner ? 0.0 : static_cast<double>(s.duration_ns()));
    add_at(g.calls, x.scan.batches, b, 1.0);
  }
}

// Kernel time of every FRAMEWORK span under a sample: its own kernels' (nearest FRAMEWORK ancestor) and those below
// it at any depth, into its group.
void scan_device(Indexed& x, Groups& groups) {
  const auto n = static_cast<std::uint32_t>(x.spans.size());
  std::vector<std::int64_t> self_ns(n, 0), total_ns(n, 0);
  std::vector<std::uint32_t> own(n, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    const Span& k = x.spans[i];
    if (k.level != Level::kKernel || x.batch(i) == kNoIndex) continue;
    ++x.scan.kernels;
    // Up through the launching call (SYSTEM) and any LIBRARY range to the op; bounded against parent cycles.
    std::uint32_t op = x.ids.find(k.parent_id);
    for (std::uint32_t steps = 0; op != kNoIndex && x.spans[op].level > Level::kFramework && steps < n; ++steps)
      op = x.ids.find(x.spans[op].parent_id);
    if (op == kNoIndex || x.spans[op].level != Level::kFramework) {
      ++x.scan.kernels_outside_op;
      continue;
    }
    self_ns[op] += k.duration_ns();
    ++own[op];
    std::uint32_t depth = 0;
    for (std::uint32_t a = op; a != kNoIndex && depth < n; a = x.framework_parent(a), ++depth)
      total_ns[a] += k.duration_ns();
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    if (x.spans[i].level != Level::kFramework) continue;
    const std::uint32_t b = x.batch(i);
    if (b == kNoIndex) continue;
    Group& g = groups.of(x.spans[i]);
    add_at(g.self_cuda_ns, x.scan.batches, b, static_cast<double>(self_ns[i]));
    add_at(g.cuda_total_ns, x.scan.batches, b, static_cast<double>(total_ns[i]));
    add_at(g.kernels, x.scan.batches, b, static_cast<double>(own[i]));
  }
}

// A row's values, per batch (ns and counts); nullopt = not measured (no kernel run, or no host run for the group).
struct Row {
  std::string name, shapes;
  std::optional<double> calls, self_ns, total_ns, avg_self_ns, avg_total_ns, percent;
  std::optional<double> self_cuda_ns, cuda_total_ns, kernels;
};

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// Trimmed mean over `batches` per-batch sums; batches without the group count 0.
double over_batches(std::vector<double> v, std::size_t batches) {
  v.resize(batches, 0.0);
  return trimmed_mean(std::move(v));
}

std::vector<Row> make_rows(std::vector<Group>& groups, std::size_t host_batches, std::size_t device_batches,
                           bool device) {
  std::vector<Row> rows;
  rows.reserve(groups.size());
  for (Group& g : groups) {
    Row r{std::move(g.name), std::move(g.shapes), {}, {}, {}, {}, {}, {}, {}, {}, {}};
    if (!g.calls.empty()) {
      const double calls = sum(g.calls);
      r.calls = calls / static_cast<double>(host_batches);
      r.avg_self_ns = sum(g.self_ns) / calls;
      r.avg_total_ns = sum(g.total_ns) / calls;
      r.self_ns = over_batches(std::move(g.self_ns), host_batches);
      r.total_ns = over_batches(std::move(g.total_ns), host_batches);
    }
    if (device) {
      r.self_cuda_ns = over_batches(std::move(g.self_cuda_ns), device_batches);
      r.cuda_total_ns = over_batches(std::move(g.cuda_total_ns), device_batches);
      g.kernels.resize(device_batches, 0.0);
      r.kernels = device_batches > 0 ? sum(g.kernels) / static_cast<double>(device_batches) : 0.0;
    }
    rows.push_back(std::move(r));
  }
  double framework_ns = 0;
  for (const Row& r : rows) framework_ns += r.self_ns.value_or(0);
  for (Row& r : rows)
    if (r.self_ns && framework_ns > 0) r.percent = 100.0 * *r.self_ns / framework_ns;
  return rows;
}

double sort_key(const Row& r, OpSort sort) {
  switch (sort) {
    case OpSort::kSelf:
      return r.self_ns.value_or(-1);
    case OpSort::kTotal:
      return r.total_ns.value_or(-1);
    case OpSort::kCalls:
      return r.calls.value_or(-1);
    case OpSort::kAvg:
      return r.avg_self_ns.value_or(-1);
    case OpSort::kSelfCuda:
      return r.self_cuda_ns.value_or(-1);
  }
  return 0;
}

void add(std::optional<double>& to, const std::optional<double>& v) {
  if (v) to = to.value_or(0) + *v;
}

// Rows past the first `top` summed into one "(other K ops)" row; averages from the sums. Self times and own kernels
// are disjoint and add up; totals are inclusive (aten::conv2d's holds aten::convolution's), so a sum of several would
// count nested time twice: with more than one row folded, the totals are left empty and a note says why.
void fold_top(std::vector<Row>& rows, std::size_t top, OpGroupBy by, std::vector<std::string>& notes) {
  if (top == 0 || rows.size() <= top) return;
  const std::size_t others = rows.size() - top;
  Row other;
  const char* what = by == OpGroupBy::kModule ? " module" : " op";
  other.name = "(other " + std::to_string(others) + what + (others == 1 ? ")" : "s)");
  for (std::size_t i = top; i < rows.size(); ++i) {
    const Row& r = rows[i];
    add(other.calls, r.calls);
    add(other.self_ns, r.self_ns);
    add(other.total_ns, r.total_ns);
    add(other.percent, r.percent);
    add(other.self_cuda_ns, r.self_cuda_ns);
    add(other.cuda_total_ns, r.cuda_total_ns);
    add(other.kernels, r.kernels);
  }
  if (other.calls && *other.calls > 0) {
    other.avg_self_ns = other.self_ns.value_or(0) / *other.calls;
    other.avg_total_ns = other.total_ns.value_or(0) / *other.calls;
  }
  if (others > 1) {
    other.total_ns.reset();
    other.avg_total_ns.reset();
    other.cuda_total_ns.reset();
    notes.push_back(other.name + ": no total times, as nested ops' totals hold each other's (self times add up)");
  }
  rows.resize(top);
  rows.push_back(std::move(other));
}

Cell scaled(const std::optional<double>& v, double divisor) { return v ? Cell{*v / divisor} : Cell{}; }

// Calls and kernels per batch are means over batches: whole in nearly every run, and then shown as "20", not "20.000".
Cell count(const std::optional<double>& v) {
  if (!v) return Cell{};
  if (std::abs(*v) < 1e15 && std::nearbyint(*v) == *v) return Cell{static_cast<std::int64_t>(*v)};
  return Cell{*v};
}

void fill(Table& t, const std::vector<Row>& rows) {
  t.rows.reserve(rows.size());
  for (const Row& r : rows) {
    RowBuilder row(t);
    row.set("op_name", r.name)
        .set("shapes", r.shapes.empty() ? Cell{} : Cell{r.shapes})
        .set("calls", count(r.calls))
        .set("self_ms", scaled(r.self_ns, 1e6))
        .set("total_ms", scaled(r.total_ns, 1e6))
        .set("avg_self_us", scaled(r.avg_self_ns, 1e3))
        .set("avg_total_us", scaled(r.avg_total_ns, 1e3))
        .set("self_percent", scaled(r.percent, 1))
        .set("self_cuda_ms", scaled(r.self_cuda_ns, 1e6))
        .set("cuda_total_ms", scaled(r.cuda_total_ns, 1e6))
        .set("kernels", count(r.kernels));
    t.rows.push_back(row.take());
  }
}

void note_scan(Table& t, const Scan& s, const char* run) {
  if (s.outside > 0)
    t.notes.push_back(std::to_string(s.outside) + " of " + std::to_string(s.framework_spans) +
                      " FRAMEWORK spans of the " + run + " run are not under a predict span; they are not counted");
  if (s.kernels_outside_op > 0)
    t.notes.push_back(std::to_string(s.kernels_outside_op) + " of " + std::to_string(s.kernels) +
                      " kernels have no FRAMEWORK op above them (no launching call joined them to an op); they are "
                      "in no CUDA column");
}

}  // namespace

std::optional<OpGroupBy> parse_op_group_by(std::string_view text) {
  if (text == "name") return OpGroupBy::kName;
  if (text == "shapes") return OpGroupBy::kShapes;
  if (text == "module") return OpGroupBy::kModule;
  return std::nullopt;
}

std::optional<OpSort> parse_op_sort(std::string_view text) {
  if (text == "self") return OpSort::kSelf;
  if (text == "total") return OpSort::kTotal;
  if (text == "calls") return OpSort::kCalls;
  if (text == "avg") return OpSort::kAvg;
  if (text == "self_cuda") return OpSort::kSelfCuda;
  return std::nullopt;
}

std::string_view to_string(OpGroupBy group_by) {
  switch (group_by) {
    case OpGroupBy::kName:
      return "name";
    case OpGroupBy::kShapes:
      return "shapes";
    case OpGroupBy::kModule:
      return "module";
  }
  return "unknown";
}

std::string_view to_string(OpSort sort) {
  switch (sort) {
    case OpSort::kSelf:
      return "self";
    case OpSort::kTotal:
      return "total";
    case OpSort::kCalls:
      return "calls";
    case OpSort::kAvg:
      return "avg";
    case OpSort::kSelfCuda:
      return "self_cuda";
  }
  return "unknown";
}

Table op_table(const EvaluationRecord& record, int batch_size, const OpTableOptions& options) {
  Table t = empty_table(analysis_spec("ops"), batch_size);
  const RunRecord* host_run = record.run_for_level(batch_size, Level::kFramework);
  if (host_run == nullptr) {
    t.notes.emplace_back(kNoFrameworkRun);
    return t;
  }
  const RunRecord* device_run = record.run_for_level(batch_size, Level::kKernel);
  Groups groups(options.group_by);
  Indexed host(host_run->trace);
  if (options.group_by == OpGroupBy::kShapes && host.scan.framework_spans > 0 && !host.scan.any_shapes)
    throw std::invalid_argument(
        "--group-by shapes: no FRAMEWORK span of the " + std::string(to_string(host_run->trace_level)) +
        "-level run of batch size " + std::to_string(batch_size) +
        " has a \"shapes\" tag (its framework profiler recorded no input shapes); use --group-by name or module");
  scan_host(host, groups, options.group_by);
  std::size_t device_batches = 0;
  if (device_run == host_run) {
    scan_device(host, groups);
    device_batches = host.scan.batches;
  } else if (device_run != nullptr) {
    Indexed device(device_run->trace);
    scan_device(device, groups);
    device_batches = device.scan.batches;
    note_scan(t, device.scan, "kernel-level");
  }
  std::vector<Row> rows = make_rows(groups.all(), host.scan.batches, device_batches, device_run != nullptr);
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    const double ka = sort_key(a, options.sort), kb = sort_key(b, options.sort);
    if (ka != kb) return ka > kb;
    return a.name != b.name ? a.name < b.name : a.shapes < b.shapes;
  });
  double framework_ns = 0;
  for (const Row& r : rows) framework_ns += r.self_ns.value_or(0);
  std::vector<std::string> fold_notes;
  fold_top(rows, options.top, options.group_by, fold_notes);
  fill(t, rows);

  t.notes.push_back(run_note(*host_run, Level::kFramework, host.scan.batches));
  t.notes.push_back("framework time " + detail::fixed(framework_ns / 1e6, 3) +
                    " ms per batch: the sum of the self times (the time covered by top-level ops); self % is of it");
  if (device_run != nullptr) {
    std::string note = run_note(*device_run, Level::kKernel, device_batches);
    note.replace(0, std::string("latencies").size(), "self CUDA, CUDA total and kernels");
    t.notes.push_back(note);
  }
  if (options.group_by == OpGroupBy::kModule) {
    t.columns[static_cast<std::size_t>(column_index(t, "op_name"))].title = "module";
    t.notes.emplace_back("grouped by module: op_name is the \"module\" tag (nested ops carry their layer's module)");
  }
  note_scan(t, host.scan, "framework-level");
  t.notes.insert(t.notes.end(), fold_notes.begin(), fold_notes.end());
  return t;
}

Table op_table(AnalysisContext& context, int batch_size) {
  const AnalysisOptions& o = context.options();
  return op_table(context.record(), batch_size, OpTableOptions{o.op_group_by, o.op_top, o.op_sort});
}

}  // namespace xsp
