// NVTX ranges as spans: see include/xsp/profilers/nvtx_ranges.h.
#include "xsp/profilers/nvtx_ranges.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <thread>

#include "xsp/trace/run_statistics.h"

namespace xsp::nvtx {
namespace {

constexpr std::string_view kSeq = ", seq = ";
constexpr std::string_view kOpId = ", op_id = ";
constexpr std::string_view kSizes = ", sizes = ";
constexpr std::string_view kInputOpIds = ", input_op_ids = ";

// A cursor over the text after the op name; each reader consumes what it recognizes or fails.
struct Cursor {
  std::string_view s;
  bool eat(std::string_view prefix) {
    if (s.substr(0, prefix.size()) != prefix) return false;
    s.remove_prefix(prefix.size());
    return true;
  }
  void skip_spaces() {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  }
  std::optional<std::int64_t> integer() {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data()) return std::nullopt;
    s.remove_prefix(static_cast<std::size_t>(p - s.data()));
    return v;
  }
  // A bracketed list of integers or of such lists, written compactly ("[1,3,[2,2]]" style without spaces) into out.
  bool nested_list(std::string& out, int depth) {
    if (depth > 8 || !eat("[")) return false;
    out += '[';
    skip_spaces();
    for (bool first = true;; first = false) {
      skip_spaces();
      if (eat("]")) {
        out += ']';
        return true;
      }
      if (!first) {
        if (!eat(",")) return false;
        out += ',';
        skip_spaces();
      }
      if (!s.empty() && s.front() == '[') {
        if (!nested_list(out, depth + 1)) return false;
      } else if (auto v = integer()) {
        out += std::to_string(*v);
      } else {
        return false;
      }
    }
  }
};

// "[[1, 3], [64, 3, 7, 7], []]" → "[1,3],[64,3,7,7],[]": the outer list is the inputs, as the LibTorch profiler's
// "shapes" tag lists them without an enclosing bracket.
std::optional<std::string> read_shapes(Cursor& c) {
  std::string all;
  if (!c.nested_list(all, 0)) return std::nullopt;
  return all.substr(1, all.size() - 2);
}

std::optional<std::vector<std::pair<std::int64_t, std::int64_t>>> read_input_op_ids(Cursor& c) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (!c.eat("[")) return std::nullopt;
  if (c.eat("]")) return out;
  for (bool first = true;; first = false) {
    if (!first) {
      if (c.eat("]")) return out;
      if (!c.eat(", ")) return std::nullopt;
    }
    if (!c.eat("(")) return std::nullopt;
    const auto id = c.integer();
    if (!id || !c.eat(",")) return std::nullopt;
    c.skip_spaces();
    const auto nr = c.integer();
    if (!nr || !c.eat(")")) return std::nullopt;
    out.emplace_back(*id, *nr);
  }
}

// "ns::name" with an identifier on both sides: how PyTorch names every op (aten::, prim::, c10d::, quantized::...).
bool namespaced_op(std::string_view name) {
  const auto colons = name.find("::");
  if (colons == 0 || colons == std::string_view::npos || colons + 2 >= name.size()) return false;
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '.'; };
  const std::string_view ns = name.substr(0, colons);
  return std::all_of(ns.begin(), ns.end(), ident) && std::isalpha(static_cast<unsigned char>(ns.front())) != 0 &&
         name.find(' ') == std::string_view::npos;
}

bool equals_no_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<TorchOpRange> parse_torch_op_range(std::string_view message) {
  std::size_t first_field = std::string_view::npos;
  for (std::string_view f : {kSeq, kOpId, kSizes, kInputOpIds}) first_field = std::min(first_field, message.find(f));
  TorchOpRange r;
  r.op = std::string(message.substr(0, first_field));
  if (r.op.empty()) return std::nullopt;
  if (first_field == std::string_view::npos) {
    if (!namespaced_op(r.op)) return std::nullopt;
    return r;
  }
  // The fields, in the order getNvtxStr() writes them; each at most once.
  Cursor c{message.substr(first_field)};
  if (c.eat(kSeq) && !(r.sequence = c.integer())) return std::nullopt;
  if (c.eat(kOpId) && !(r.op_id = c.integer())) return std::nullopt;
  if (c.eat(kSizes) && !(r.shapes = read_shapes(c))) return std::nullopt;
  if (c.eat(kInputOpIds)) {
    auto ids = read_input_op_ids(c);
    if (!ids) return std::nullopt;
    r.input_op_ids = std::move(*ids);
  }
  if (!c.s.empty()) return std::nullopt;
  return r;
}

namespace {
// The level a range's domain alone decides; nullopt for the default domain and the program's own.
std::optional<Level> domain_level(std::string_view domain) {
  static constexpr std::array<std::string_view, 8> kLibraries = {"cuDNN", "cuBLAS",   "cuBLASLt", "NCCL",
                                                                 "cuFFT", "cuSPARSE", "cuSOLVER", "cuTENSOR"};
  for (std::string_view lib : kLibraries)
    if (equals_no_case(domain, lib)) return Level::kLibrary;
  if (equals_no_case(domain, "TensorRT")) return Level::kFramework;
  return std::nullopt;
}
}  // namespace

Level range_level(std::string_view domain, std::string_view message) {
  return domain_level(domain).value_or(parse_torch_op_range(message) ? Level::kFramework : Level::kModel);
}

// One thread's push/pop ranges. Its lock is taken by the thread's own calls and by take(), so it is uncontended
// while the program runs.
class RangeRecorder::Thread {
 public:
  using Lock = SpinLock;
  explicit Thread(std::uint64_t thread_id) : id(thread_id) {}
  const std::uint64_t id;
  Lock mu;
  std::vector<Range> stack;  // innermost last
  Log closed;
  std::uint64_t unmatched_pops = 0;
  std::size_t room = 0;             // ranges it may still record before it asks held_ for more (max_ranges)
  SpanId next_id = 0, last_id = 0;  // its block of ids [next_id, last_id) (reserve_ids_)
};

void RangeRecorder::SpinLock::lock() noexcept {
  // take() holds a thread's lock while it moves the thread's ranges out (microseconds): spin briefly, then yield.
  for (int spins = 0; held_.exchange(true, std::memory_order_acquire); ++spins) {
    while (held_.load(std::memory_order_relaxed)) {
      if (++spins > 64) std::this_thread::yield();
    }
  }
}

RangeRecorder::RangeRecorder(std::function<SpanId()> next_id, std::size_t max_ranges,
                             std::function<SpanId(std::size_t)> reserve_ids)
    : next_id_(std::move(next_id)), reserve_ids_(std::move(reserve_ids)), max_ranges_(max_ranges) {}

RangeRecorder::~RangeRecorder() = default;

void RangeRecorder::append(Log& log, Range&& r) {
  if (log.empty() || log.back().size() == kBlock) log.emplace_back().reserve(kBlock);
  log.back().push_back(std::move(r));
}

RangeRecorder::Thread& RangeRecorder::thread(std::uint64_t thread_id) {
  std::lock_guard lock(mu_);
  std::unique_ptr<Thread>& t = threads_[thread_id];
  if (!t) t = std::make_unique<Thread>(thread_id);
  return *t;
}

bool RangeRecorder::admit() {
  if (held_.load(std::memory_order_relaxed) >= max_ranges_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  held_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool RangeRecorder::admit(Thread& thread) {
  if (thread.room == 0) {
    std::size_t held = held_.load(std::memory_order_relaxed);
    std::size_t block = 0;
    do {
      block = held < max_ranges_ ? std::min(kRoomBlock, max_ranges_ - held) : 0;
    } while (block != 0 && !held_.compare_exchange_weak(held, held + block, std::memory_order_relaxed));
    if (block == 0) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    thread.room = block;
  }
  --thread.room;
  return true;
}

SpanId RangeRecorder::next_id(Thread& thread) {
  if (!reserve_ids_) return next_id_();
  if (thread.next_id == thread.last_id) {
    thread.next_id = reserve_ids_(kIdBlock);
    thread.last_id = thread.next_id + kIdBlock;
  }
  return thread.next_id++;
}

Span RangeRecorder::span_of(Range&& r) {
  Span s;
  s.id = r.id;
  s.parent_id = r.parent;
  s.parent_rule = r.parent != kNoSpan ? ParentRule::kContext : ParentRule::kNone;
  s.track = Track::host_thread(r.thread_id);
  s.start_ns = r.start_ns;
  s.end_ns = std::max(r.end_ns, r.start_ns);
  if (!r.domain.empty()) s.tags.emplace_back("domain", std::string(r.domain));
  if (r.category != 0) s.tags.emplace_back("category", static_cast<std::int64_t>(r.category));
  s.tags.emplace_back("nvtx", r.pushed ? "push" : "start");
  if (r.op_name != nullptr) {  // push_op(): its text is built here, off the program's path
    std::string text = *r.op_name;
    if (r.sequence >= 0) text += std::string(kSeq) + std::to_string(r.sequence);
    if (!r.message.empty()) text += std::string(kSizes) + r.message;
    r.message = std::move(text);
  }
  // range_level(), parsing the text once for the level and the tags. An observed op is FRAMEWORK whatever its name
  // ("autograd::engine::evaluate_function: MmBackward0" without a sequence number is no namespaced name).
  std::optional<TorchOpRange> op = parse_torch_op_range(r.message);
  s.level = r.op_name != nullptr ? Level::kFramework
                                 : domain_level(r.domain).value_or(op ? Level::kFramework : Level::kModel);
  if (s.level == Level::kFramework && op) {
    r.message = std::move(op->op);
    if (op->sequence) s.tags.emplace_back("sequence", *op->sequence);
    if (op->op_id) s.tags.emplace_back("op_id", *op->op_id);
    if (op->shapes) s.tags.emplace_back("shapes", std::move(*op->shapes));
  }
  if (r.open_at_end) s.tags.emplace_back("open_at_end", true);
  s.name = std::move(r.message);
  return s;
}

namespace {
// Domains are interned (push()): the same domain is almost always the same characters, so the pointers decide first.
bool same_domain(std::string_view a, std::string_view b) {
  return (a.data() == b.data() && a.size() == b.size()) || a == b;
}
}  // namespace

int RangeRecorder::push(Thread& thread, std::string_view domain, std::string message, std::uint32_t category,
                        std::int64_t ts_ns) {
  return push_range(thread, {kNoSpan, kNoSpan, thread.id, domain, std::move(message), category, ts_ns, ts_ns});
}

int RangeRecorder::push_op(Thread& thread, std::string_view domain, const std::string* name, std::int64_t sequence,
                           std::string shapes, std::int64_t ts_ns) {
  Range r{kNoSpan, kNoSpan, thread.id, domain, std::move(shapes), 0, ts_ns, ts_ns};
  r.op_name = name;
  r.sequence = sequence;
  return push_range(thread, std::move(r));
}

int RangeRecorder::push_range(Thread& thread, Range&& r) {
  std::lock_guard lock(thread.mu);
  auto& stack = thread.stack;
  const auto level =
      std::count_if(stack.begin(), stack.end(), [&](const Range& o) { return same_domain(o.domain, r.domain); });
  if (!admit(thread)) {
    Range placeholder{kNoSpan, kNoSpan, thread.id, r.domain, {}, 0, r.start_ns, r.start_ns, true};
    placeholder.dropped = true;
    stack.push_back(std::move(placeholder));
    return static_cast<int>(level);
  }
  r.id = next_id(thread);
  // The innermost recorded range below is the parent (a dropped one has no span).
  for (auto o = stack.rbegin(); o != stack.rend() && r.parent == kNoSpan; ++o)
    if (!o->dropped) r.parent = o->id;
  stack.push_back(std::move(r));
  return static_cast<int>(level);
}

int RangeRecorder::pop(Thread& thread, std::string_view domain, std::int64_t ts_ns) {
  std::lock_guard lock(thread.mu);
  auto& stack = thread.stack;
  for (auto o = stack.rbegin(); o != stack.rend(); ++o) {
    if (!same_domain(o->domain, domain)) continue;
    const auto entry = std::next(o).base();  // the entry itself, as a forward iterator
    const auto level =
        std::count_if(stack.begin(), entry, [&](const Range& x) { return same_domain(x.domain, domain); });
    entry->end_ns = ts_ns;
    if (!entry->dropped) append(thread.closed, std::move(*entry));
    stack.erase(entry);
    return static_cast<int>(level);
  }
  ++thread.unmatched_pops;
  return -1;
}

std::uint64_t RangeRecorder::start(std::uint64_t thread_id, std::string_view domain, std::string message,
                                   std::uint32_t category, std::int64_t ts_ns) {
  const SpanId id = next_id_();
  std::lock_guard lock(mu_);
  if (!admit()) return 0;
  const std::uint64_t range = next_range_id_++;
  started_.emplace(range, Range{id, kNoSpan, thread_id, domain, std::move(message), category, ts_ns, ts_ns, false});
  return range;
}

void RangeRecorder::end(std::uint64_t id, std::int64_t ts_ns) {
  if (id == 0) return;  // a dropped range
  std::lock_guard lock(mu_);
  auto it = started_.find(id);
  if (it == started_.end()) {
    if (retired_.erase(id) == 0) ++unmatched_ends_;
    return;
  }
  it->second.end_ns = ts_ns;
  append(closed_, std::move(it->second));
  started_.erase(it);
}

namespace {

// Every thread's lock, in the map's order, taken while the recorder's lock is held (push and pop take only their
// thread's, so no order inverts). With a deadline, gives up and releases what it took once it passes.
template <typename Threads>
std::optional<std::vector<std::unique_lock<typename Threads::mapped_type::element_type::Lock>>> lock_threads(
    Threads& threads, std::optional<std::chrono::steady_clock::time_point> deadline) {
  using Lock = typename Threads::mapped_type::element_type::Lock;
  std::vector<std::unique_lock<Lock>> locks;
  locks.reserve(threads.size());
  for (auto& [id, t] : threads) {
    if (!deadline) {
      locks.emplace_back(t->mu);
      continue;
    }
    std::unique_lock<Lock> l(t->mu, std::defer_lock);
    while (!l.try_lock()) {
      if (std::chrono::steady_clock::now() >= *deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    locks.push_back(std::move(l));
  }
  return locks;
}

}  // namespace

RangeRecorder::Taken RangeRecorder::take(std::int64_t now_ns) {
  std::unique_lock lock(mu_);
  auto threads = lock_threads(threads_, std::nullopt);
  return take_locked(lock, *threads, now_ns);
}

RangeRecorder::Taken RangeRecorder::take_window(std::int64_t now_ns) {
  std::unique_lock lock(mu_);
  auto threads = lock_threads(threads_, std::nullopt);
  return take_locked(lock, *threads, now_ns, true);
}

std::optional<RangeRecorder::Taken> RangeRecorder::try_take(std::int64_t now_ns, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_, std::defer_lock);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!lock.try_lock()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto threads = lock_threads(threads_, deadline);
  if (!threads) return std::nullopt;
  return take_locked(lock, *threads, now_ns);
}

RangeRecorder::Taken RangeRecorder::take_locked(std::unique_lock<std::mutex>& lock,
                                                std::vector<std::unique_lock<SpinLock>>& threads, std::int64_t now_ns,
                                                bool window) {
  // The closed ranges move out whole (a log each); they become spans once every lock is let go.
  std::vector<Log> batches;
  batches.reserve(threads_.size() + 2);
  batches.push_back(std::exchange(closed_, {}));
  Log& open_ranges = batches.emplace_back();
  std::uint64_t open = 0, unmatched_pops = 0;
  auto close_open = [&](Range&& r) {
    r.end_ns = now_ns;
    r.open_at_end = true;
    append(open_ranges, std::move(r));
    ++open;
  };
  for (auto& [thread_id, t] : threads_) {
    batches.push_back(std::exchange(t->closed, {}));
    unmatched_pops += std::exchange(t->unmatched_pops, 0);
    t->room = 0;  // held_ starts again from 0 below
    for (Range& r : t->stack)
      if (!r.dropped) {
        if (!window) {
          close_open(std::move(r));
          continue;
        }
        // The copy is the window's; what stays only pairs the pop (a placeholder, as for a dropped range).
        close_open(Range(r));
        r.dropped = true;
        r.message.clear();
      }
    if (!window) t->stack.clear();
  }
  for (auto& [id, r] : started_) {
    if (window) retired_.insert(id);
    close_open(std::move(r));
  }
  started_.clear();
  const std::uint64_t unmatched_ends = std::exchange(unmatched_ends_, 0);
  const std::uint64_t dropped = dropped_.exchange(0);
  held_.store(0);
  threads.clear();
  lock.unlock();

  std::vector<Span> out;
  std::size_t n = 0;
  for (const Log& log : batches)
    for (const auto& block : log) n += block.size();
  out.reserve(n);
  for (Log& log : batches)
    for (auto& block : log)
      for (Range& r : block) out.push_back(span_of(std::move(r)));
  // Time order, as every profiler hands its spans over.
  std::sort(out.begin(), out.end(), [](const Span& a, const Span& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.id < b.id;
  });
  std::vector<std::pair<std::string, std::uint64_t>> counters = {{stat::kNvtxRanges, out.size()},
                                                                 {stat::kNvtxUnmatchedPops, unmatched_pops},
                                                                 {stat::kNvtxUnmatchedEnds, unmatched_ends},
                                                                 {stat::kNvtxOpenAtEnd, open},
                                                                 {stat::kNvtxDroppedRanges, dropped}};
  return {std::move(out), std::move(counters)};
}

}  // namespace xsp::nvtx
