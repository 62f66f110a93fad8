// RecordFunction-based framework profiler. Design notes:
// - Observers are registered thread-locally (at::addThreadLocalCallback), so only the predict thread and
//   threads LibTorch propagates its ThreadLocalState to are observed, not every thread of the process.
// - The session object doubles as the PROFILER_STATE debug info (c10::MemoryReportingInfoBase): the CPU
//   allocator reports every allocation to it (c10::reportMemoryUsageToProfiler), and helper threads that
//   inherit the debug info find the session through it.
// - Per op the observer does: a generation check, an append to a thread-local vector, a name copy into a
//   fixed array, raw input sizes into an int64 pool, and (top-level ops only) one call to
//   torch::jit::currentModuleHierarchy(), whose result is moved, not formatted. Formatting happens in stop().
#include "record_function_profiler.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "xsp/trace/run_statistics.h"

namespace xsp::libtorch {
namespace {

constexpr std::size_t kNameCap = 56;  // op names are ~10-40 chars; longer ones go to ThreadBuffer::long_names
constexpr std::size_t kInitialOps = 8192;
constexpr std::size_t kNoSource = static_cast<std::size_t>(-1);  // a lean op whose details are unknown

/// One observed op, as raw as possible (formatted in stop()).
struct OpRecord {
  SpanId id = kNoSpan;  ///< final span id, taken at op start so listeners can use it
  std::int64_t start_ns = 0;
  std::int64_t end_ns = -1;         ///< -1 while open; still -1 at stop() = unfinished (dropped)
  SpanId context_parent = kNoSpan;  ///< for top-level ops of the start thread: the parent at op start
  std::int64_t alloc_bytes = 0;     ///< inclusive of children (children add theirs on end)
  std::int32_t parent = -1;         ///< index of the enclosing op in the same buffer, -1 = top-level
  std::int32_t module = -1;         ///< index into ThreadBuffer::modules, -1 = unknown
  std::int32_t long_name = -1;      ///< index into ThreadBuffer::long_names when the name did not fit
  std::uint32_t shapes_off = 0;     ///< offset into ThreadBuffer::shapes: per tensor ndim, then dims
  std::uint16_t n_tensors = 0;
  bool lean = false;  ///< recorded without shapes and module (after the detail batches)
  char name[kNameCap];
};

struct StackEntry {
  std::int32_t index;  ///< record index, -1 = op was dropped
  const void* rf;      ///< address of the RecordFunction, to match its end to its start
};

struct Session;

// c10::MemoryReportingInfoBase::reportMemoryUsage takes the totals as int64_t up to LibTorch 1.x and as size_t
// from 2.0 on.
#if TORCH_VERSION_MAJOR >= 2
using MemoryTotal = std::size_t;
#else
using MemoryTotal = std::int64_t;
#endif

/// Everything one thread records during one session. Touched only by its own thread until stop().
struct ThreadBuffer {
  Session* session = nullptr;
  std::uint64_t thread_id = 0;
  std::thread::id std_id;
  bool is_start_thread = false;
  std::vector<OpRecord> ops;
  std::vector<StackEntry> stack;
  std::vector<std::int64_t> shapes;
  std::vector<std::vector<std::string>> modules;
  std::vector<std::string> long_names;
  std::uint64_t dropped = 0;
  std::uint64_t unmatched_ends = 0;
};

/// Bumped by every start() and stop() of any profiler, so threads revalidate their cached buffer pointer.
std::atomic<std::uint64_t> g_generation{1};

struct TlsCache {
  std::uint64_t generation = 0;
  ThreadBuffer* buffer = nullptr;  ///< null: this thread records nothing in the current generation
};
thread_local TlsCache t_cache;

/// One start()..stop() session. Is the PROFILER_STATE debug info, hence the allocator's report target.
struct Session final : c10::MemoryReportingInfoBase {
  explicit Session(const RecordFunctionProfilerOptions& o) : opts(o) {}

  RecordFunctionProfilerOptions opts;
  TraceRecorder* recorder = nullptr;          ///< span ids come from it (lock-free)
  OpCorrelationListener* listener = nullptr;  ///< told of each recorded op (CUPTI external correlation)
  std::atomic<SpanId> parent{kNoSpan};
  std::atomic<bool> active{true};
  /// Shapes and module paths are read while true (the first opts.detail_batches batches); see flush().
  std::atomic<bool> detail{true};
  std::uint64_t batches = 0;  ///< set_parent() calls so far (start thread only)
  std::mutex mu;              // guards `threads` (registration is once per thread per session; never on the hot path)
  std::vector<std::unique_ptr<ThreadBuffer>> threads;

  ThreadBuffer* register_thread(bool start_thread) {
    std::lock_guard lock(mu);
    const auto id = std::this_thread::get_id();
    for (auto& t : threads)
      if (t->std_id == id) return t.get();
    auto b = std::make_unique<ThreadBuffer>();
    b->session = this;
    b->thread_id = current_thread_id();
    b->std_id = id;
    b->is_start_thread = start_thread;
    b->ops.reserve(std::min(kInitialOps, opts.max_spans_per_thread));
    b->stack.reserve(64);
    b->shapes.reserve(kInitialOps * 8);
    b->modules.reserve(kInitialOps / 4);
    threads.push_back(std::move(b));
    return threads.back().get();
  }

  void reportMemoryUsage(void* ptr, int64_t alloc_size, MemoryTotal total_allocated, MemoryTotal total_reserved,
                         c10::Device device) override;
  bool memoryProfilingEnabled() const override { return opts.record_memory; }
};

/// The calling thread's buffer in the current generation, or null. Fast path: one atomic load and compare.
ThreadBuffer* current_buffer() {
  const std::uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (t_cache.generation == gen) return t_cache.buffer;
  // Slow path (first op of a thread after any start/stop): find the session through the debug info this
  // thread runs under, which LibTorch propagates together with the thread-local observers.
  t_cache.generation = gen;
  t_cache.buffer = nullptr;
  auto* session = dynamic_cast<Session*>(c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE));
  if (session != nullptr && session->active.load(std::memory_order_acquire) && session->opts.record)
    t_cache.buffer = session->register_thread(/*start_thread=*/false);
  return t_cache.buffer;
}

void Session::reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, MemoryTotal /*total_allocated*/,
                                MemoryTotal /*total_reserved*/, c10::Device /*device*/) {
  // Frees arrive with a negative size; "allocated_bytes" counts gross allocation, so they are ignored.
  if (alloc_size <= 0) return;
  ThreadBuffer* b = current_buffer();
  if (b == nullptr || b->session != this || b->stack.empty()) return;
  const std::int32_t top = b->stack.back().index;
  // Only the innermost op is charged here; each op adds its total to its parent when it ends, which makes
  // the figure inclusive of children at O(1) per report.
  if (top >= 0) b->ops[static_cast<std::size_t>(top)].alloc_bytes += alloc_size;
}

void record_shapes(ThreadBuffer& b, OpRecord& r, const at::RecordFunction& rf) {
  r.shapes_off = static_cast<std::uint32_t>(b.shapes.size());
  std::uint16_t n = 0;
  auto push = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    const auto sizes = t.sizes();
    b.shapes.push_back(static_cast<std::int64_t>(sizes.size()));
    b.shapes.insert(b.shapes.end(), sizes.begin(), sizes.end());
    ++n;
  };
  for (const c10::IValue& v : rf.inputs()) {
    if (v.isTensor()) {
      push(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) push(t);
    }
  }
  r.n_tensors = n;
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& rf) {
  ThreadBuffer* b = current_buffer();
  if (b == nullptr) return nullptr;
  const std::int32_t parent = b->stack.empty() ? -1 : b->stack.back().index;
  // Children of a dropped op are dropped too: recorded alone they would look top-level.
  if ((!b->stack.empty() && parent < 0) || b->ops.size() >= b->session->opts.max_spans_per_thread) {
    ++b->dropped;
    b->stack.push_back({-1, &rf});
    return nullptr;
  }
  const auto index = static_cast<std::int32_t>(b->ops.size());
  OpRecord& r = b->ops.emplace_back();
  const char* name = rf.name();
  const std::size_t len = std::strlen(name);
  if (len < kNameCap) {
    std::memcpy(r.name, name, len + 1);
  } else {
    r.name[0] = '\0';
    r.long_name = static_cast<std::int32_t>(b->long_names.size());
    b->long_names.emplace_back(name, len);
  }
  r.parent = parent;
  const RecordFunctionProfilerOptions& opts = b->session->opts;
  const bool detail = b->session->detail.load(std::memory_order_relaxed);
  r.lean = !detail;
  if (parent < 0) {
    if (b->is_start_thread) r.context_parent = b->session->parent.load(std::memory_order_relaxed);
    if (opts.record_modules && detail) {
      // ~1 µs (walks the interpreter frames and builds strings); paid only by top-level ops, since an op
      // nested in another op runs inside a C++ kernel and cannot be in a different TorchScript module.
      std::vector<std::string> hierarchy = torch::jit::currentModuleHierarchy();
      if (!hierarchy.empty()) {
        r.module = static_cast<std::int32_t>(b->modules.size());
        b->modules.push_back(std::move(hierarchy));
      }
    }
  } else {
    r.module = b->ops[static_cast<std::size_t>(parent)].module;
  }
  if (opts.record_shapes && detail) record_shapes(*b, r, rf);
  b->stack.push_back({index, &rf});
  r.id = b->session->recorder->next_id();
  if (b->session->listener != nullptr) b->session->listener->op_enter(r.id);
  // Taken last so that the observer's own bookkeeping falls outside the op's interval.
  r.start_ns = now_ns();
  return nullptr;
}

void on_op_end(const at::RecordFunction& rf, at::ObserverContext* /*ctx*/) {
  const std::int64_t t = now_ns();
  ThreadBuffer* b = current_buffer();
  if (b == nullptr) return;
  auto& stack = b->stack;
  // Synchronous ops end in LIFO order; anything else (an async op ending elsewhere) is counted.
  auto it = std::find_if(stack.rbegin(), stack.rend(), [&](const StackEntry& e) { return e.rf == &rf; });
  if (it == stack.rend()) {
    ++b->unmatched_ends;
    return;
  }
  const StackEntry entry = *it;
  stack.erase(std::next(it).base(), stack.end());  // ops above it never ended: they stay unfinished
  if (entry.index < 0) return;
  OpRecord& r = b->ops[static_cast<std::size_t>(entry.index)];
  r.end_ns = t;
  if (b->session->listener != nullptr) b->session->listener->op_exit(r.id);
  if (r.parent >= 0) b->ops[static_cast<std::size_t>(r.parent)].alloc_bytes += r.alloc_bytes;
}

std::unique_ptr<at::ObserverContext> on_op_start_noop(const at::RecordFunction&) { return nullptr; }
void on_op_end_noop(const at::RecordFunction&, at::ObserverContext*) {}

/// "TOP(ResNet)::forward", "layer1(Sequential)::forward", "0(BasicBlock)::forward", "conv1(Conv2d)::forward",
/// "SELF(Conv2d)::_conv_forward" → path "layer1.0.conv1", type "Conv2d". Entries "::fn" are free functions.
void module_path(const std::vector<std::string>& hierarchy, std::string& path, std::string& type) {
  path.clear();
  type.clear();
  for (const std::string& entry : hierarchy) {
    const auto open = entry.find('(');
    if (open == std::string::npos) continue;  // free function
    const auto close = entry.find(')', open);
    if (close == std::string::npos) continue;
    const std::string_view instance(entry.data(), open);
    type.assign(entry, open + 1, close - open - 1);
    if (instance.empty() || instance == "TOP" || instance == "SELF") continue;
    if (!path.empty()) path += '.';
    path += instance;
  }
}

void format_shapes(const std::vector<std::int64_t>& pool, const OpRecord& r, std::string& out) {
  out.clear();
  std::size_t p = r.shapes_off;
  for (std::uint16_t i = 0; i < r.n_tensors; ++i) {
    if (i > 0) out += ',';
    out += '[';
    const auto ndim = pool[p++];
    for (std::int64_t d = 0; d < ndim; ++d) {
      if (d > 0) out += ',';
      out += std::to_string(pool[p++]);
    }
    out += ']';
  }
}

}  // namespace

struct RecordFunctionProfiler::Impl {
  RecordFunctionProfilerOptions options;
  bool uniform_batches = true;  // set_uniform_batches(); false behaves as options.detail_batches == 0
  OpCorrelationListener* listener = nullptr;
  std::atomic<SpanId> pending_parent{kNoSpan};
  TraceRecorder* recorder = nullptr;
  std::shared_ptr<Session> session;
  std::optional<c10::DebugInfoGuard> debug_info;
  at::CallbackHandle callback = 0;
  std::thread::id start_thread;

  void detach() {
    at::removeCallback(callback);
    debug_info.reset();
    session->active.store(false, std::memory_order_release);
    g_generation.fetch_add(1, std::memory_order_acq_rel);
  }

  void flush(TraceRecorder& rec);
};

RecordFunctionProfiler::RecordFunctionProfiler(RecordFunctionProfilerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
}

RecordFunctionProfiler::~RecordFunctionProfiler() {
  if (impl_ && impl_->session) impl_->detach();
}

bool RecordFunctionProfiler::started() const { return impl_->session != nullptr; }
bool RecordFunctionProfiler::has_correlation_listener() const { return impl_->listener != nullptr; }

void RecordFunctionProfiler::start(TraceRecorder& recorder, SpanId parent) {
  if (impl_->session) throw std::logic_error("RecordFunctionProfiler::start: already started");
  auto session = std::make_shared<Session>(impl_->options);
  session->recorder = &recorder;
  session->listener = impl_->listener;
  session->parent.store(parent, std::memory_order_relaxed);
  impl_->recorder = &recorder;
  impl_->start_thread = std::this_thread::get_id();
  impl_->debug_info.emplace(c10::DebugInfoKind::PROFILER_STATE, session);
  impl_->session = session;
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  if (impl_->options.record) {
    // Register the start thread eagerly so its first op takes the fast path.
    ThreadBuffer* b = session->register_thread(/*start_thread=*/true);
    t_cache.generation = g_generation.load(std::memory_order_acquire);
    t_cache.buffer = b;
    at::RecordFunctionCallback cb(&on_op_start, &on_op_end);
    cb.needsInputs(impl_->options.record_shapes).scopes({at::RecordScope::FUNCTION});
    impl_->callback = at::addThreadLocalCallback(cb);
  } else {
    at::RecordFunctionCallback cb(&on_op_start_noop, &on_op_end_noop);
    cb.scopes({at::RecordScope::FUNCTION});
    impl_->callback = at::addThreadLocalCallback(cb);
  }
}

void RecordFunctionProfiler::set_correlation_listener(OpCorrelationListener* listener) {
  if (impl_->session) throw std::logic_error("RecordFunctionProfiler::set_correlation_listener: call before start()");
  impl_->listener = listener;
}

void RecordFunctionProfiler::set_uniform_batches(bool uniform) {
  if (impl_->session) throw std::logic_error("RecordFunctionProfiler::set_uniform_batches while started");
  impl_->uniform_batches = uniform;
}

void RecordFunctionProfiler::set_parent(SpanId parent) {
  Session* session = impl_->session.get();
  if (!session) return;
  session->parent.store(parent, std::memory_order_relaxed);
  const std::size_t detail_batches = impl_->uniform_batches ? impl_->options.detail_batches : 0;
  if (detail_batches == 0 || !impl_->options.record || !session->detail.load(std::memory_order_relaxed)) return;
  if (++session->batches <= detail_batches) return;
  session->detail.store(false, std::memory_order_relaxed);
  // Thread-local callbacks can only be swapped on their own thread; elsewhere the lean path still skips the
  // work, LibTorch just keeps boxing the inputs.
  if (std::this_thread::get_id() == impl_->start_thread && impl_->options.record_shapes) {
    at::removeCallback(impl_->callback);
    at::RecordFunctionCallback cb(&on_op_start, &on_op_end);
    cb.needsInputs(false).scopes({at::RecordScope::FUNCTION});
    impl_->callback = at::addThreadLocalCallback(cb);
  }
}

void RecordFunctionProfiler::stop() {
  if (!impl_->session) return;
  if (std::this_thread::get_id() != impl_->start_thread)
    throw std::logic_error("RecordFunctionProfiler::stop: must run on the thread that called start()");
  impl_->detach();
  t_cache = TlsCache{};
  impl_->flush(*impl_->recorder);
  impl_->session.reset();
  impl_->recorder = nullptr;
}

void RecordFunctionProfiler::Impl::flush(TraceRecorder& rec) {
  std::lock_guard lock(session->mu);  // helper threads have finished; the lock only orders memory
  std::uint64_t dropped = 0, unmatched = 0, finished = 0;
  for (const auto& t : session->threads) {
    dropped += t->dropped;
    unmatched += t->unmatched_ends;
    for (const OpRecord& r : t->ops) (r.end_ns >= 0 ? finished : dropped) += 1;
  }
  std::vector<Span> spans;
  spans.reserve(finished);
  std::string path, type, shapes;
  std::uint64_t detail_mismatches = 0;
  for (const auto& t : session->threads) {
    // Lean ops take shapes and module from the op at the same position of the first detailed batch (same
    // model, same op sequence), checked by name; a mismatch leaves the op untagged and is counted.
    std::vector<std::size_t> source(t->ops.size());
    {
      auto name_of = [&](const OpRecord& r) {
        return r.long_name >= 0 ? std::string_view(t->long_names[static_cast<std::size_t>(r.long_name)])
                                : std::string_view(r.name);
      };
      std::vector<std::size_t> reference;  // op indices of the first detailed batch, in order
      enum { kBefore, kFilling, kFilled } state = kBefore;
      SpanId batch_parent = kNoSpan;
      std::size_t position = 0;
      for (std::size_t i = 0; i < t->ops.size(); ++i) {
        const OpRecord& r = t->ops[i];
        if (r.parent < 0 && r.context_parent != batch_parent) {  // a new batch (predict span) begins
          batch_parent = r.context_parent;
          position = 0;
          if (state == kFilling) state = kFilled;
          if (state == kBefore && !r.lean) state = kFilling;
        }
        if (!r.lean) {
          source[i] = i;
          if (state == kFilling) reference.push_back(i);
        } else if (position < reference.size() && name_of(t->ops[reference[position]]) == name_of(r)) {
          source[i] = reference[position];
        } else {
          source[i] = kNoSource;
          ++detail_mismatches;
        }
        ++position;
      }
    }
    // Module paths are shared by all ops of a module call: convert each hierarchy once.
    std::vector<std::pair<std::string, std::string>> modules(t->modules.size());
    for (std::size_t i = 0; i < t->modules.size(); ++i) module_path(t->modules[i], modules[i].first, modules[i].second);
    std::vector<SpanId> ids(t->ops.size(), kNoSpan);
    for (std::size_t i = 0; i < t->ops.size(); ++i)
      if (t->ops[i].end_ns >= 0) ids[i] = t->ops[i].id;
    for (std::size_t i = 0; i < t->ops.size(); ++i) {
      const OpRecord& r = t->ops[i];
      if (ids[i] == kNoSpan) continue;
      Span s;
      s.id = ids[i];
      s.level = Level::kFramework;
      s.name = r.long_name >= 0 ? t->long_names[static_cast<std::size_t>(r.long_name)] : std::string(r.name);
      s.start_ns = r.start_ns;
      s.end_ns = std::max(r.end_ns, r.start_ns);
      s.track = Track::host_thread(t->thread_id);
      const SpanId parent = r.parent >= 0 ? ids[static_cast<std::size_t>(r.parent)] : r.context_parent;
      if (parent != kNoSpan) {
        s.parent_id = parent;
        s.parent_rule = ParentRule::kContext;
      }
      const bool tagged = source[i] != kNoSource;
      const OpRecord& detail = tagged ? t->ops[source[i]] : r;
      if (tagged && detail.module >= 0) {
        const auto& [mpath, mtype] = modules[static_cast<std::size_t>(detail.module)];
        if (!mpath.empty()) s.tags.push_back({"module", mpath});
        if (!mtype.empty()) s.tags.push_back({"module_type", mtype});
      }
      if (options.record_shapes && tagged) {
        format_shapes(t->shapes, detail, shapes);
        s.tags.push_back({"shapes", shapes});
      }
      if (options.record_memory) s.tags.emplace_back("allocated_bytes", r.alloc_bytes);
      spans.push_back(std::move(s));
    }
  }
  rec.add_all(std::move(spans));
  rec.count(stat::kFrameworkDroppedSpans, dropped);
  if (unmatched > 0) rec.count(stat::kFrameworkUnmatchedOpEnds, unmatched);
  if (detail_mismatches > 0) rec.count(stat::kFrameworkDetailMismatches, detail_mismatches);
}

}  // namespace xsp::libtorch
