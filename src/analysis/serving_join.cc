// The join of a serving benchmark's slow tokens to the server's trace (serving_join.h, docs/serving-join.md).
#include "xsp/analysis/serving_join.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "internal.h"
#include "xsp/analysis/registry.h"

namespace xsp {
// A named namespace around the anonymous one: the analysis sources are built in unity batches, where another
// source's anonymous helpers share this translation unit.
namespace serving_join_detail {
namespace {

using detail::kNoIndex;
constexpr std::uint32_t kPending = kNoIndex - 1;  // on the path being resolved (meeting it again: a parent cycle)
constexpr std::string_view kTorchOpsDomain = "torch.ops";

// ---- client intervals ----

std::int64_t int_field(const nlohmann::json& o, const char* key, std::size_t i) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return 0;
  if (!it->is_number())
    throw std::invalid_argument("serving request " + std::to_string(i) + ": \"" + key + "\" is not a number");
  return it->get<std::int64_t>();
}

// Sorts slowest first: longer first, then request id, then token index.
bool slower_interval(const SlowInterval& a, const SlowInterval& b) {
  if (a.duration_ns() != b.duration_ns()) return a.duration_ns() > b.duration_ns();
  if (a.request_id != b.request_id) return a.request_id < b.request_id;
  return a.token_index < b.token_index;
}

void keep_slowest(std::vector<SlowInterval>& all, std::size_t n, std::vector<SlowInterval>& out) {
  const std::size_t population = all.size();
  const std::size_t k = std::min(n, population);
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(), slower_interval);
  for (std::size_t r = 0; r < k; ++r) {
    all[r].rank = r;
    all[r].population = population;
    out.push_back(std::move(all[r]));
  }
}

// ---- text ----

std::string with_commas(std::size_t v) {
  std::string digits = std::to_string(v);
  for (std::size_t i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, ",");
  return digits;
}

std::string duration_text(std::int64_t ns) {
  char buf[64];
  const double v = static_cast<double>(ns);
  if (ns < 1'000) {
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  } else if (ns < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.0f µs", v / 1e3);
  } else if (ns < 10'000'000) {
    std::snprintf(buf, sizeof buf, "%.1f ms", v / 1e6);
  } else if (ns < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.0f ms", v / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", v / 1e9);
  }
  return buf;
}

// "2,113–2,115, 2,118": ascending ordinals, consecutive ones as one range.
std::string ordinal_ranges(std::vector<std::size_t> ordinals) {
  std::sort(ordinals.begin(), ordinals.end());
  ordinals.erase(std::unique(ordinals.begin(), ordinals.end()), ordinals.end());
  std::string out;
  for (std::size_t i = 0; i < ordinals.size();) {
    std::size_t j = i;
    while (j + 1 < ordinals.size() && ordinals[j + 1] == ordinals[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += with_commas(ordinals[i]);
    if (j > i) out += "–" + with_commas(ordinals[j]);
    i = j + 1;
  }
  return out;
}

std::pair<const char*, const char*> step_nouns(StepSource source) {
  switch (source) {
    case StepSource::kNvtxRanges:
      return {"step", "steps"};
    case StepSource::kFrameworkOps:
      return {"op", "ops"};
    case StepSource::kCudaLaunches:
      return {"launch", "launches"};
    case StepSource::kNone:
      break;
  }
  return {"step", "steps"};
}

// ---- the server index ----

// A sorted union of intervals with prefix lengths: how much of [a, b) it covers in O(log n).
struct IntervalUnion {
  std::vector<std::int64_t> starts, ends, before;  // before[i]: covered length of intervals 0..i−1

  void build(std::vector<std::pair<std::int64_t, std::int64_t>> v) {
    std::sort(v.begin(), v.end());
    for (const auto& [s, e] : v) {
      if (e <= s) continue;
      if (!ends.empty() && s <= ends.back()) {
        ends.back() = std::max(ends.back(), e);
      } else {
        starts.push_back(s);
        ends.push_back(e);
      }
    }
    before.assign(starts.size() + 1, 0);
    for (std::size_t i = 0; i < starts.size(); ++i) before[i + 1] = before[i] + (ends[i] - starts[i]);
  }

  std::int64_t covered(std::int64_t a, std::int64_t b) const {
    if (b <= a) return 0;
    const auto i0 = static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), a) - ends.begin());
    const auto i1 = static_cast<std::size_t>(std::lower_bound(starts.begin(), starts.end(), b) - starts.begin());
    if (i0 >= i1) return 0;
    return before[i1] - before[i0] - std::max<std::int64_t>(0, a - starts[i0]) -
           std::max<std::int64_t>(0, ends[i1 - 1] - b);
  }
};

// How many of a set of intervals overlap [a, b): those starting before b less those ending at or before a (which all
// start before b too).
struct OverlapCounter {
  std::vector<std::int64_t> starts, ends;
  void add(std::int64_t s, std::int64_t e) {
    starts.push_back(s);
    ends.push_back(e);
  }
  void sort() {
    std::sort(starts.begin(), starts.end());
    std::sort(ends.begin(), ends.end());
  }
  std::size_t count(std::int64_t a, std::int64_t b) const {
    const auto opened = std::lower_bound(starts.begin(), starts.end(), b) - starts.begin();
    const auto closed = std::upper_bound(ends.begin(), ends.end(), a) - ends.begin();
    return opened > closed ? static_cast<std::size_t>(opened - closed) : 0;
  }
};

struct JoinStep {
  const Span* span = nullptr;
  std::uint32_t trace = 0;
  std::size_t ordinal = 0;
  std::size_t kernels = 0;
  std::int64_t kernel_ns = 0;
  std::string_view top_kernel;
  std::int64_t top_kernel_ns = 0;
};

// For every span of `spans`, the value of its nearest ancestor-or-self that `own` gives a value (kNoIndex: none),
// following `parent`. One memoised walk: O(spans); a parent cycle ends the walk with kNoIndex.
template <typename Own, typename Parent>
std::vector<std::uint32_t> nearest_up(std::size_t n, Own own, Parent parent) {
  std::vector<std::uint32_t> value(n, kNoIndex);
  std::vector<char> done(n, 0);
  std::vector<std::uint32_t> path;
  for (std::size_t start = 0; start < n; ++start) {
    if (done[start]) continue;
    std::uint32_t i = static_cast<std::uint32_t>(start);
    std::uint32_t found = kNoIndex;
    while (true) {
      if (done[i]) {
        found = value[i] == kPending ? kNoIndex : value[i];
        break;
      }
      const std::uint32_t mine = own(i);
      if (mine != kNoIndex) {
        found = mine;
        value[i] = mine;
        done[i] = 1;
        break;
      }
      value[i] = kPending;
      done[i] = 1;
      path.push_back(i);
      const std::uint32_t p = parent(i);
      if (p == kNoIndex) break;
      i = p;
    }
    for (std::uint32_t j : path) value[j] = found;
    path.clear();
  }
  return value;
}

// Parent positions of one trace's spans: the parent id, else (an unparented kernel) the shallowest non-kernel span
// with the same correlation id (SPEC §2 rule b).
std::vector<std::uint32_t> parent_positions(const Trace& trace) {
  const std::vector<Span>& spans = trace.spans;
  const detail::IdIndex index(spans);
  std::unordered_map<std::uint64_t, std::uint32_t> by_correlation;
  for (std::uint32_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    if (s.correlation_id == 0 || s.level == Level::kKernel) continue;
    auto [it, added] = by_correlation.emplace(s.correlation_id, i);
    if (!added && spans[it->second].level > s.level) it->second = i;
  }
  std::vector<std::uint32_t> parent(spans.size(), kNoIndex);
  for (std::uint32_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    parent[i] = index.find(s.parent_id);
    if (parent[i] == kNoIndex && s.level == Level::kKernel && s.correlation_id != 0) {
      const auto it = by_correlation.find(s.correlation_id);
      if (it != by_correlation.end()) parent[i] = it->second;
    }
    if (parent[i] == i) parent[i] = kNoIndex;
  }
  return parent;
}

bool is_nvtx_range(const Span& s) {
  if (s.track.is_device() || s.duration_ns() <= 0 || s.find_tag("nvtx") == nullptr) return false;
  // An op seen by the op observer is a range of domain torch.ops at FRAMEWORK level: an op, not the program's range.
  return !(s.level == Level::kFramework && s.tag("domain") == kTorchOpsDomain);
}
bool is_framework_op(const Span& s) {
  return !s.track.is_device() && s.duration_ns() > 0 && s.level == Level::kFramework;
}
bool names_launch(const Span& s) {
  return s.name.find("Launch") != std::string::npos || s.name.find("launch") != std::string::npos;
}

}  // namespace
}  // namespace serving_join_detail

namespace sj = serving_join_detail;

// ---- client requests ----

std::vector<ClientRequestTimes> client_requests_from_json(const nlohmann::json& requests) {
  using namespace serving_join_detail;  // NOLINT(google-build-using-namespace): block scope only
  if (!requests.is_array()) throw std::invalid_argument("settings[\"serving\"][\"requests\"] is not an array");
  std::vector<ClientRequestTimes> out;
  out.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const nlohmann::json& o = requests[i];
    const std::string where = "serving request " + std::to_string(i);
    if (!o.is_object()) throw std::invalid_argument(where + " is not an object");
    ClientRequestTimes r;
    if (const auto id = o.find("request_id"); id != o.end()) {
      if (id->is_string()) {
        r.request_id = id->get<std::string>();
      } else if (id->is_number_integer()) {
        r.request_id = std::to_string(id->get<std::int64_t>());
      } else if (!id->is_null()) {
        throw std::invalid_argument(where + ": \"request_id\" is neither text nor an integer");
      }
    }
    r.arrival_ns = int_field(o, "arrival_ns", i);
    r.sent_ns = int_field(o, "sent_ns", i);
    r.output_tokens = int_field(o, "output_tokens", i);
    if (const auto t = o.find("token_ns"); t != o.end() && !t->is_null()) {
      if (!t->is_array()) throw std::invalid_argument(where + ": \"token_ns\" is not an array");
      r.token_ns.reserve(t->size());
      for (const nlohmann::json& v : *t) {
        if (!v.is_number()) throw std::invalid_argument(where + ": \"token_ns\" holds a value that is not a number");
        r.token_ns.push_back(v.get<std::int64_t>());
      }
    }
    if (const auto ok = o.find("ok"); ok != o.end() && !ok->is_null()) {
      if (!ok->is_boolean()) throw std::invalid_argument(where + ": \"ok\" is not true or false");
      r.ok = ok->get<bool>();
    }
    if (const auto e = o.find("error"); e != o.end() && e->is_string()) r.error = e->get<std::string>();
    if (const auto t = o.find("trace_id"); t != o.end() && t->is_string()) r.trace_id = t->get<std::string>();
    r.point = static_cast<int>(int_field(o, "point", i));
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json client_requests_to_json(const std::vector<ClientRequestTimes>& requests) {
  nlohmann::json out = nlohmann::json::array();
  for (const ClientRequestTimes& r : requests) {
    nlohmann::json o = {{"request_id", r.request_id}, {"arrival_ns", r.arrival_ns},       {"sent_ns", r.sent_ns},
                        {"token_ns", r.token_ns},     {"output_tokens", r.output_tokens}, {"ok", r.ok}};
    if (!r.error.empty()) o["error"] = r.error;
    if (r.point != 0) o["point"] = r.point;
    if (!r.trace_id.empty()) o["trace_id"] = r.trace_id;
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<SlowInterval> slowest_intervals(const std::vector<ClientRequestTimes>& requests, std::size_t n) {
  using namespace serving_join_detail;  // NOLINT(google-build-using-namespace): block scope only
  std::vector<SlowInterval> ttft, itl;
  for (const ClientRequestTimes& r : requests) {
    if (!r.ok || r.token_ns.empty()) continue;
    const std::int64_t issued = r.arrival_ns != 0 ? r.arrival_ns : r.sent_ns;
    if (r.token_ns[0] >= issued) {
      ttft.push_back({r.request_id, "ttft", 0, issued, r.token_ns[0]});
      ttft.back().point = r.point;
      ttft.back().trace_id = r.trace_id;
    }
    for (std::size_t k = 1; k < r.token_ns.size(); ++k)
      if (r.token_ns[k] >= r.token_ns[k - 1]) {
        itl.push_back({r.request_id, "itl", static_cast<int>(k), r.token_ns[k - 1], r.token_ns[k]});
        itl.back().point = r.point;
        itl.back().trace_id = r.trace_id;
      }
  }
  std::vector<SlowInterval> out;
  keep_slowest(ttft, n, out);
  keep_slowest(itl, n, out);
  return out;
}

std::string percentile_label(std::size_t rank, std::size_t population) {
  if (rank >= population) return "";
  if (rank == 0) return "max";
  // Hundredths of a percent, in integers: a double would put rank 120 of 12,000 at 98.99999... and floor it to p98.
  const std::uint64_t hundredths = (std::uint64_t{10000} * (population - rank)) / population;
  std::uint64_t kept = hundredths;
  if (hundredths < 9900) {
    kept = hundredths / 100 * 100;
  } else if (hundredths < 9990) {
    kept = hundredths / 10 * 10;
  }
  std::string text = std::to_string(kept / 100);
  if (kept % 100 != 0) {
    const std::uint64_t frac = kept % 100;
    text += frac % 10 == 0 ? "." + std::to_string(frac / 10) : (frac < 10 ? ".0" : ".") + std::to_string(frac);
  }
  return "p" + text;
}

std::string_view to_string(StepSource source) {
  switch (source) {
    case StepSource::kNvtxRanges:
      return "NVTX ranges";
    case StepSource::kFrameworkOps:
      return "framework ops";
    case StepSource::kCudaLaunches:
      return "CUDA launches";
    case StepSource::kNone:
      break;
  }
  return "none";
}

// ---- the index ----

struct ServerTraceIndex::Impl {
  StepSource source = StepSource::kNone;
  std::vector<sj::JoinStep> steps;        // by start, end, trace, span id
  std::vector<std::int64_t> step_starts;  // steps[i].span->start_ns
  std::vector<std::int64_t> max_end;      // segment tree of the steps' ends (size 2 × leaves)
  std::size_t leaves = 0;
  sj::IntervalUnion gpu, windows;
  sj::OverlapCounter kernel_count, host_count;
  std::size_t kernels = 0;

  void choose_source(const std::vector<const Trace*>& traces);
  void index_trace(const Trace& trace, std::uint32_t t);
  void finish();
  void collect(std::size_t node, std::size_t lo, std::size_t hi, std::size_t ub, std::int64_t a,
               std::vector<std::size_t>& out) const;
};

void ServerTraceIndex::Impl::choose_source(const std::vector<const Trace*>& traces) {
  using namespace serving_join_detail;  // NOLINT(google-build-using-namespace): block scope only
  const std::function<bool(const Span&)> tiers[] = {
      is_nvtx_range, is_framework_op, [](const Span& s) { return !s.track.is_device() && s.level == Level::kSystem; }};
  const StepSource sources[] = {StepSource::kNvtxRanges, StepSource::kFrameworkOps, StepSource::kCudaLaunches};
  for (std::size_t k = 0; k < 3; ++k)
    for (const Trace* t : traces)
      if (std::any_of(t->spans.begin(), t->spans.end(), tiers[k])) {
        source = sources[k];
        return;
      }
}

void ServerTraceIndex::Impl::index_trace(const Trace& trace, std::uint32_t t) {
  using namespace serving_join_detail;  // NOLINT(google-build-using-namespace): block scope only
  const std::vector<Span>& spans = trace.spans;
  if (spans.empty()) return;
  const std::vector<std::uint32_t> parent = parent_positions(trace);
  // Launches: SYSTEM calls named *Launch*, or that a kernel hangs under.
  std::vector<char> launches(spans.size(), 0);
  if (source == StepSource::kCudaLaunches) {
    for (std::uint32_t i = 0; i < spans.size(); ++i) {
      const Span& s = spans[i];
      if (s.track.is_device() || s.level != Level::kSystem) continue;
      if (names_launch(s)) launches[i] = 1;
    }
    for (std::uint32_t i = 0; i < spans.size(); ++i)
      if (spans[i].level == Level::kKernel && parent[i] != kNoIndex && spans[parent[i]].level == Level::kSystem &&
          !spans[parent[i]].track.is_device())
        launches[parent[i]] = 1;
  }
  auto candidate = [&](std::uint32_t i) {
    switch (source) {
      case StepSource::kNvtxRanges:
        return is_nvtx_range(spans[i]);
      case StepSource::kFrameworkOps:
        return is_framework_op(spans[i]);
      case StepSource::kCudaLaunches:
        return launches[i] != 0;
      case StepSource::kNone:
        break;
    }
    return false;
  };
  // Outermost candidates: no candidate among their ancestors.
  const std::vector<std::uint32_t> nearest = nearest_up(
      spans.size(), [&](std::uint32_t i) { return candidate(i) ? i : kNoIndex; },
      [&](std::uint32_t i) { return parent[i]; });
  std::vector<std::uint32_t> step_of(spans.size(), kNoIndex);
  const std::size_t first = steps.size();
  for (std::uint32_t i = 0; i < spans.size(); ++i) {
    if (!candidate(i)) continue;
    if (parent[i] != kNoIndex && nearest[parent[i]] != kNoIndex) continue;
    step_of[i] = static_cast<std::uint32_t>(steps.size() - first);
    steps.push_back(JoinStep{&spans[i], t});
  }
  // Kernels under each step, through the parent chain.
  const std::vector<std::uint32_t> owner = nearest_up(
      spans.size(), [&](std::uint32_t i) { return step_of[i]; }, [&](std::uint32_t i) { return parent[i]; });
  std::vector<std::vector<std::uint32_t>> under(steps.size() - first);
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  for (std::uint32_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    lo = std::min(lo, s.start_ns);
    hi = std::max(hi, s.end_ns);
    if (s.level == Level::kKernel) {
      ++kernels;
      kernel_count.add(s.start_ns, s.end_ns);
      gpu.starts.push_back(s.start_ns);  // merged into a union over every trace in finish()
      gpu.ends.push_back(s.end_ns);
      if (owner[i] != kNoIndex) under[owner[i]].push_back(i);
    } else if (!s.track.is_device() && s.level != Level::kApplication) {
      host_count.add(s.start_ns, s.end_ns);
    }
  }
  windows.starts.push_back(lo);
  windows.ends.push_back(hi);
  for (std::size_t k = 0; k < under.size(); ++k) {
    JoinStep& step = steps[first + k];
    std::vector<std::uint32_t>& ks = under[k];
    step.kernels = ks.size();
    std::sort(ks.begin(), ks.end(), [&](std::uint32_t a, std::uint32_t b) { return spans[a].name < spans[b].name; });
    for (std::size_t i = 0; i < ks.size();) {
      std::int64_t sum = 0;
      std::size_t j = i;
      for (; j < ks.size() && spans[ks[j]].name == spans[ks[i]].name; ++j) sum += spans[ks[j]].duration_ns();
      step.kernel_ns += sum;
      if (sum > step.top_kernel_ns || step.top_kernel.empty()) {
        step.top_kernel = spans[ks[i]].name;
        step.top_kernel_ns = sum;
      }
      i = j;
    }
  }
}

void ServerTraceIndex::Impl::finish() {
  using namespace serving_join_detail;  // NOLINT(google-build-using-namespace): block scope only
  auto pairs = [](IntervalUnion& u) {
    std::vector<std::pair<std::int64_t, std::int64_t>> v;
    v.reserve(u.starts.size());
    for (std::size_t i = 0; i < u.starts.size(); ++i) v.emplace_back(u.starts[i], u.ends[i]);
    u = IntervalUnion{};
    u.build(std::move(v));
  };
  pairs(gpu);
  pairs(windows);
  kernel_count.sort();
  host_count.sort();
  std::sort(steps.begin(), steps.end(), [](const JoinStep& a, const JoinStep& b) {
    if (a.span->start_ns != b.span->start_ns) return a.span->start_ns < b.span->start_ns;
    if (a.span->end_ns != b.span->end_ns) return a.span->end_ns < b.span->end_ns;
    if (a.trace != b.trace) return a.trace < b.trace;
    return a.span->id < b.span->id;
  });
  std::unordered_map<std::string_view, std::size_t> seen;
  step_starts.reserve(steps.size());
  for (JoinStep& s : steps) {
    s.ordinal = ++seen[s.span->name];
    step_starts.push_back(s.span->start_ns);
  }
  leaves = 1;
  while (leaves < steps.size()) leaves *= 2;
  max_end.assign(2 * leaves, std::numeric_limits<std::int64_t>::min());
  for (std::size_t i = 0; i < steps.size(); ++i) max_end[leaves + i] = steps[i].span->end_ns;
  for (std::size_t i = leaves; i-- > 1;) max_end[i] = std::max(max_end[2 * i], max_end[2 * i + 1]);
}

// The steps among positions [0, ub) ending after `a`, in position order: only subtrees whose latest end is after `a`
// are entered, so a query costs O((k + 1) log S) for k steps found.
void ServerTraceIndex::Impl::collect(std::size_t node, std::size_t lo, std::size_t hi, std::size_t ub, std::int64_t a,
                                     std::vector<std::size_t>& out) const {
  if (lo >= ub || max_end[node] <= a) return;
  if (hi - lo == 1) {
    out.push_back(lo);
    return;
  }
  const std::size_t mid = (lo + hi) / 2;
  collect(2 * node, lo, mid, ub, a, out);
  collect(2 * node + 1, mid, hi, ub, a, out);
}

ServerTraceIndex::ServerTraceIndex(const std::vector<const Trace*>& traces) : impl_(std::make_unique<Impl>()) {
  impl_->choose_source(traces);
  for (std::uint32_t t = 0; t < traces.size(); ++t) impl_->index_trace(*traces[t], t);
  impl_->finish();
}

ServerTraceIndex::~ServerTraceIndex() = default;

StepSource ServerTraceIndex::source() const { return impl_->source; }
std::size_t ServerTraceIndex::steps() const { return impl_->steps.size(); }
std::size_t ServerTraceIndex::kernels() const { return impl_->kernels; }
std::int64_t ServerTraceIndex::window_start_ns() const {
  return impl_->windows.starts.empty() ? 0 : impl_->windows.starts.front();
}
std::int64_t ServerTraceIndex::window_end_ns() const {
  return impl_->windows.ends.empty() ? 0 : impl_->windows.ends.back();
}

IntervalJoin ServerTraceIndex::join(const SlowInterval& interval) const {
  using namespace serving_join_detail;  // NOLINT(google-build-using-namespace): block scope only
  const Impl& x = *impl_;
  IntervalJoin j;
  j.interval = interval;
  j.tail = percentile_label(interval.rank, interval.population);
  const std::int64_t a = interval.start_ns, b = interval.end_ns;
  const std::int64_t length = std::max<std::int64_t>(0, b - a);
  j.outside_window_ns = length - x.windows.covered(a, b);
  j.gpu_busy_ns = x.gpu.covered(a, b);
  j.gpu_idle_ns = std::max<std::int64_t>(0, length - j.outside_window_ns - j.gpu_busy_ns);
  j.kernels = x.kernel_count.count(a, b);
  j.host_spans = x.host_count.count(a, b);
  const auto ub =
      static_cast<std::size_t>(std::lower_bound(x.step_starts.begin(), x.step_starts.end(), b) - x.step_starts.begin());
  std::vector<std::size_t> found;
  if (!x.steps.empty() && b > a) x.collect(1, 0, x.leaves, ub, a, found);
  for (std::size_t i : found) {
    const JoinStep& s = x.steps[i];
    StepOverlap o;
    o.name = s.span->name;
    o.ordinal = s.ordinal;
    o.start_ns = s.span->start_ns;
    o.end_ns = s.span->end_ns;
    o.overlap_ns = std::min(b, o.end_ns) - std::max(a, o.start_ns);
    o.kernels = s.kernels;
    o.kernel_ns = s.kernel_ns;
    o.top_kernel = std::string(s.top_kernel);
    o.top_kernel_ns = s.top_kernel_ns;
    o.track = s.span->track;
    j.steps.push_back(std::move(o));
  }
  j.sentence = join_sentence(j, x.source);
  return j;
}

// ---- the sentence ----

std::string join_sentence(const IntervalJoin& joined, StepSource source) {
  using namespace serving_join_detail;  // NOLINT(google-build-using-namespace): block scope only
  const SlowInterval& in = joined.interval;
  std::string kind = in.kind == "ttft" ? "TTFT" : in.kind == "itl" ? "ITL" : in.kind;
  std::string out = "the " + (joined.tail.empty() ? std::string() : joined.tail + " ") + kind + " of request " +
                    in.request_id + " (" + duration_text(in.duration_ns()) + ")";
  const std::int64_t length = std::max<std::int64_t>(0, in.duration_ns());
  if (length > 0 && joined.outside_window_ns >= length) return out + " lies outside the server's trace window";
  const auto [one, many] = step_nouns(source);
  if (joined.steps.empty()) {
    out += source == StepSource::kNone ? " overlaps no server step" : std::string(" overlaps no ") + many;
  } else {
    // Groups by name, in order of first start.
    std::vector<std::string> names;
    std::map<std::string, std::vector<const StepOverlap*>> groups;
    for (const StepOverlap& s : joined.steps) {
      auto& g = groups[s.name];
      if (g.empty()) names.push_back(s.name);
      g.push_back(&s);
    }
    out += " overlaps ";
    for (std::size_t n = 0; n < names.size(); ++n) {
      const auto& g = groups[names[n]];
      std::vector<std::size_t> ordinals;
      std::int64_t total = 0, kernel_total = 0;
      std::size_t kernel_count = 0;
      std::map<std::string, std::int64_t> top;  // the group's top kernel: the steps' top kernels summed by name
      for (const StepOverlap* s : g) {
        ordinals.push_back(s->ordinal);
        total += s->duration_ns();
        kernel_count += s->kernels;
        kernel_total += s->kernel_ns;
        if (!s->top_kernel.empty()) top[s->top_kernel] += s->top_kernel_ns;
      }
      if (n > 0) out += "; ";
      out += std::string(g.size() == 1 ? one : many) + " " + ordinal_ranges(ordinals) + ": " + names[n];
      if (g.size() > 1) out += " ×" + std::to_string(g.size());
      out += " (" + duration_text(total) + ", ";
      out += kernel_count == 0 ? std::string("no kernels") : detail::plural(kernel_count, "kernel", "kernels");
      const auto best = std::max_element(top.begin(), top.end(), [](const auto& p, const auto& q) {
        return p.second < q.second || (p.second == q.second && p.first > q.first);
      });
      if (best != top.end()) out += ", top " + short_symbol(best->first) + " " + duration_text(best->second);
      out += ")";
    }
  }
  // Without a step, busy time is work launched before the interval (or by no step): say it, or idle reads alone.
  if (joined.steps.empty() && joined.gpu_busy_ns > 0) out += "; GPU busy " + duration_text(joined.gpu_busy_ns) + ",";
  out += joined.steps.empty() && joined.gpu_busy_ns > 0 ? " idle " : "; GPU idle ";
  out += duration_text(joined.gpu_idle_ns);
  if (joined.outside_window_ns > 0)
    out += "; " + duration_text(joined.outside_window_ns) + " of it outside the server's trace window";
  return out;
}

// ---- the evaluation ----

bool is_serving_evaluation(const EvaluationRecord& record) {
  if (record.scenario == "serving") return true;
  const auto s = record.settings.find("serving");
  return s != record.settings.end() && s->is_object() && s->contains("requests");
}

std::vector<const RunRecord*> server_runs(const EvaluationRecord& record) {
  std::vector<const RunRecord*> out;
  for (const RunRecord& r : record.runs) {
    const Trace& t = r.trace;
    const bool server = !t.processes.empty() || std::any_of(t.spans.begin(), t.spans.end(), [](const Span& s) {
      return s.level == Level::kSystem || s.level == Level::kKernel || s.find_tag("nvtx") != nullptr;
    });
    if (server) out.push_back(&r);
  }
  return out;
}

namespace serving_join_detail {
namespace {

void add_rows(Table& t, const IntervalJoin& j) {
  const SlowInterval& in = j.interval;
  auto interval_cells = [&](RowBuilder& row, bool first) {
    row.set("point", static_cast<std::int64_t>(in.point));
    row.set("kind", in.kind).set("tail", j.tail).set("request_id", in.request_id);
    row.set("token_index", static_cast<std::int64_t>(in.token_index));
    if (!in.trace_id.empty()) row.set("trace_id", in.trace_id);
    row.set("interval_ms", detail::ms_cell(static_cast<double>(in.duration_ns())));
    row.set("start_ns", in.start_ns).set("end_ns", in.end_ns);
    row.set("gpu_busy_ms", detail::ms_cell(static_cast<double>(j.gpu_busy_ns)));
    row.set("gpu_idle_ms", detail::ms_cell(static_cast<double>(j.gpu_idle_ns)));
    row.set("outside_window_ms", detail::ms_cell(static_cast<double>(j.outside_window_ns)));
    row.set("interval_kernels", static_cast<std::int64_t>(j.kernels));
    row.set("host_spans", static_cast<std::int64_t>(j.host_spans));
    row.set("steps", static_cast<std::int64_t>(j.steps.size()));
    if (first) row.set("sentence", j.sentence);
  };
  if (j.steps.empty()) {
    RowBuilder row(t);
    interval_cells(row, true);
    t.rows.push_back(row.take());
    return;
  }
  // A long TTFT under load can overlap hundreds of decode steps: the rows keep the kServingTailStepsPerInterval steps
  // with the largest overlap (in start order) and sum the others into one row; the sentence still names them all.
  std::vector<std::size_t> kept(j.steps.size());
  for (std::size_t k = 0; k < kept.size(); ++k) kept[k] = k;
  if (kept.size() > kServingTailStepsPerInterval) {
    std::stable_sort(kept.begin(), kept.end(),
                     [&](std::size_t a, std::size_t b) { return j.steps[a].overlap_ns > j.steps[b].overlap_ns; });
    kept.resize(kServingTailStepsPerInterval);
    std::sort(kept.begin(), kept.end());
  }
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const StepOverlap& s = j.steps[kept[k]];
    RowBuilder row(t);
    interval_cells(row, k == 0);
    row.set("step_name", s.name).set("step_ordinal", static_cast<std::int64_t>(s.ordinal));
    row.set("step_track", to_string(s.track));
    row.set("step_start_ns", s.start_ns).set("step_end_ns", s.end_ns);
    row.set("step_ms", detail::ms_cell(static_cast<double>(s.duration_ns())));
    row.set("overlap_ms", detail::ms_cell(static_cast<double>(s.overlap_ns)));
    row.set("step_kernels", static_cast<std::int64_t>(s.kernels));
    row.set("step_kernel_ms", detail::ms_cell(static_cast<double>(s.kernel_ns)));
    if (!s.top_kernel.empty()) {
      row.set("top_kernel", s.top_kernel);
      row.set("top_kernel_ms", detail::ms_cell(static_cast<double>(s.top_kernel_ns)));
    }
    t.rows.push_back(row.take());
  }
  if (kept.size() == j.steps.size()) return;
  std::int64_t step_ns = 0, overlap_ns = 0, kernel_ns = 0, kernels = 0;
  std::vector<char> is_kept(j.steps.size(), 0);
  for (std::size_t k : kept) is_kept[k] = 1;
  for (std::size_t k = 0; k < j.steps.size(); ++k) {
    if (is_kept[k]) continue;
    step_ns += j.steps[k].duration_ns();
    overlap_ns += j.steps[k].overlap_ns;
    kernel_ns += j.steps[k].kernel_ns;
    kernels += static_cast<std::int64_t>(j.steps[k].kernels);
  }
  RowBuilder row(t);
  interval_cells(row, false);
  row.set("step_name", "(other " + std::to_string(j.steps.size() - kept.size()) + " steps)");
  row.set("step_ms", detail::ms_cell(static_cast<double>(step_ns)));
  row.set("overlap_ms", detail::ms_cell(static_cast<double>(overlap_ns)));
  row.set("step_kernels", kernels);
  row.set("step_kernel_ms", detail::ms_cell(static_cast<double>(kernel_ns)));
  t.rows.push_back(row.take());
}

std::string step_source_note(const ServerTraceIndex& index, std::size_t runs) {
  std::string note = "server: " + detail::plural(runs, "run", "runs") + ", window " +
                     duration_text(index.window_end_ns() - index.window_start_ns()) + " (CLOCK_MONOTONIC " +
                     std::to_string(index.window_start_ns()) + "–" + std::to_string(index.window_end_ns()) + " ns), " +
                     detail::plural(index.steps(), "step", "steps") + ", " +
                     detail::plural(index.kernels(), "kernel", "kernels") + "; steps are ";
  switch (index.source()) {
    case StepSource::kNvtxRanges:
      return note + "the outermost NVTX ranges of each thread";
    case StepSource::kFrameworkOps:
      return note + "the outermost framework ops (fallback: the server trace has no NVTX range)";
    case StepSource::kCudaLaunches:
      return note + "the CUDA launch calls (fallback: the server trace has no NVTX range and no framework op)";
    case StepSource::kNone:
      break;
  }
  return note + "none (the server trace has no NVTX range, framework op or CUDA call): GPU busy and idle only";
}

}  // namespace
}  // namespace serving_join_detail

Table serving_tail(const EvaluationRecord& record, std::size_t n) {
  using namespace serving_join_detail;  // NOLINT(google-build-using-namespace): block scope only
  Table t = empty_table(analysis_spec("serving-tail"));
  if (!is_serving_evaluation(record)) {
    t.notes.push_back(kNotServing);
    return t;
  }
  const std::vector<const RunRecord*> runs = server_runs(record);
  if (runs.empty()) {
    t.notes.push_back(kNoServerTrace);
    return t;
  }
  const nlohmann::json& serving = record.settings.contains("serving") ? record.settings["serving"] : nlohmann::json();
  std::vector<ClientRequestTimes> requests;
  try {
    if (serving.is_object() && serving.contains("requests")) requests = client_requests_from_json(serving["requests"]);
  } catch (const std::invalid_argument& e) {
    // A report runs every analysis: one unreadable record must not take the others' tables with it.
    t.notes.push_back(std::string("the client's request times cannot be read: ") + e.what());
    return t;
  }
  std::vector<const Trace*> traces;
  for (const RunRecord* r : runs) traces.push_back(&r->trace);
  const ServerTraceIndex index(traces);
  std::map<int, std::vector<ClientRequestTimes>> by_point;
  std::size_t outside = 0, failed = 0;
  for (const ClientRequestTimes& r : requests) {
    failed += r.ok ? 0 : 1;
    by_point[r.point].push_back(r);
  }
  std::size_t ttft = 0, itl = 0;
  std::vector<std::string> readings;
  for (const auto& [point, point_requests] : by_point) {
    for (const SlowInterval& in : slowest_intervals(point_requests, n)) {
      const bool read_out = in.rank < kServingTailSentencesInNotes;
      // One population per kind and point: the first interval of each kind carries it.
      if (in.rank == 0) (in.kind == "ttft" ? ttft : itl) += in.population;
      IntervalJoin j = index.join(in);
      if (by_point.size() > 1) j.sentence += " (sweep point " + std::to_string(point) + ")";
      outside += j.outside_window_ns > 0 ? 1 : 0;
      if (read_out) readings.push_back(j.sentence);
      add_rows(t, j);
    }
  }
  t.notes.push_back("the " + std::to_string(n) + " slowest of " + with_commas(ttft) + " TTFTs and of " +
                    with_commas(itl) + " ITLs over " + with_commas(requests.size() - failed) +
                    " successful requests (" + detail::plural(failed, "failed request", "failed requests") +
                    " left out)" + (by_point.size() > 1 ? ", per sweep point (each ranked on its own)" : "") +
                    "; tail = the share of intervals of its kind no slower, rounded down (max = the slowest)");
  t.notes.push_back(step_source_note(index, runs.size()));
  for (std::string& r : readings) t.notes.push_back(std::move(r));
  if (outside > 0)
    t.notes.push_back(detail::plural(outside, "interval lies", "intervals lie") +
                      " partly or wholly outside the server's trace window: the server was not recorded there "
                      "(outside_window_ms), so that time is neither GPU busy nor idle");
  return t;
}

}  // namespace xsp
