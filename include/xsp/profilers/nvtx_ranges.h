// NVTX ranges as spans (docs/profile.md "What NVTX ranges become"): what an annotated program's ranges mean at which
// trace level, PyTorch's op ranges read into the tags the LibTorch profiler gives its ops, and the recorder that turns
// push/pop and start/end events into spans with their nesting. No CUDA and no NVTX library: the injection library
// (src/inject/) feeds it, and tests drive it directly.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "xsp/trace/span.h"

namespace xsp::nvtx {

/// One PyTorch op as `torch.autograd.profiler.emit_nvtx()` names its NVTX range. PyTorch's getNvtxStr()
/// (torch/csrc/profiler/util.cpp) writes "<op>[, seq = <n>][, op_id = <n>][, sizes = <shapes>][, input_op_ids =
/// [(<op_id>,<output_nr>), ...]]", shapes as "[[1, 3, 224, 224], [64, 3, 7, 7], []]": one list per input, a
/// tensor-list input nested one level deeper.
struct TorchOpRange {
  std::string op;                        ///< "aten::conv2d"
  std::optional<std::int64_t> sequence;  ///< autograd sequence number (pairs a forward op with its backward)
  std::optional<std::int64_t> op_id;     ///< the RecordFunction handle
  /// The input shapes in the LibTorch profiler's "shapes" tag form, "[1,3,224,224],[64,3,7,7],[]"; nullopt without
  /// a sizes field.
  std::optional<std::string> shapes;
  std::vector<std::pair<std::int64_t, std::int64_t>> input_op_ids;  ///< (op_id, output_nr) of each input's producer
  bool operator==(const TorchOpRange&) const = default;
};

/// Reads `message` as a PyTorch op range. nullopt when it is not one: it has none of the fields above and its name is
/// not a namespaced op ("ns::name", e.g. "aten::add_", "prim::Constant"), or a field's value is malformed (a user's
/// range may hold any text; it then stays a user range).
std::optional<TorchOpRange> parse_torch_op_range(std::string_view message);

/// The trace level of an NVTX range: LIBRARY for the domains of NVIDIA's libraries (cuDNN, cuBLAS, cuBLASLt, NCCL,
/// cuFFT, cuSPARSE, cuSOLVER, cuTENSOR; matched without case), FRAMEWORK for PyTorch op ranges
/// (parse_torch_op_range() succeeds) and TensorRT's layer ranges (domain "TensorRT"), MODEL for everything else: the
/// program's own ranges ("infer", "step", "decode").
Level range_level(std::string_view domain, std::string_view message);

/// Turns NVTX range events into spans. Push/pop ranges nest per thread: a range's context parent is the range open
/// below it on its thread (SPEC §2 rule 1), whatever its domain and level; as in NVTX, each domain pops its own ranges
/// (nvtxDomainRangePop ends the innermost open range of that domain). Start/end ranges may end on another thread
/// and are placed by the assembler (containment on the thread that started them). Thread-safe (NVTX calls come from
/// any thread of the profiled program): push/pop ranges are held per thread, each thread's behind a lock of its own
/// that only take() shares, so that threads recording at once do not wait on each other (bench_torch_ops THREADS);
/// start/end ranges, which may end on another thread, share one mutex. Timestamps are on one clock of the caller's (ns,
/// or the injection library's HostTicks ticks, made ns after take()).
///
/// Each span carries the tags "domain" (when not the default domain), "category" (when non-zero), "nvtx" ("push" or
/// "start") and, for PyTorch op ranges, "sequence", "op_id" and "shapes" as TorchOpRange gives them; a PyTorch op's
/// span is named by its op alone.
class RangeRecorder {
 public:
  /// `next_id` hands out span ids (e.g. TraceRecorder::next_id). `max_ranges` bounds the ranges held between two
  /// take() calls (open and closed; each holds its domain and message strings): past it, new
  /// ranges are not recorded and are counted ("nvtx.dropped_ranges"), so that a long-running program's memory does
  /// not grow without end. A dropped push still pairs with its pop (the ranges around it stay intact). Threads take
  /// room in blocks of up to 1,024 ranges, so that a push shares no counter with other threads: a thread may be
  /// refused while others hold room they have not used (at most 1,023 each). `reserve_ids(n)`, when given, hands out
  /// n consecutive span ids and returns the first (e.g. TraceRecorder::reserve_ids): push/pop ranges then take their
  /// ids from a block of the thread's own instead of calling `next_id` for each.
  explicit RangeRecorder(std::function<SpanId()> next_id, std::size_t max_ranges = SIZE_MAX,
                         std::function<SpanId(std::size_t)> reserve_ids = {});
  ~RangeRecorder();
  RangeRecorder(const RangeRecorder&) = delete;
  RangeRecorder& operator=(const RangeRecorder&) = delete;

  /// One thread's push/pop ranges: its stack of open ranges and the ranges it closed since the last take().
  class Thread;
  /// The ranges of thread `thread_id`, made on its first call and kept as long as the recorder (the same object for
  /// the same id), so that a caller can keep the reference per thread and skip the lookup (one lock of the recorder).
  Thread& thread(std::uint64_t thread_id);

  /// nvtxRangePush / nvtxDomainRangePushEx on `thread_id` ("" is the default domain). `domain`'s characters must
  /// outlive the recorder (a literal, or a name interned as NVTX domain handles are): ranges keep the view. Returns
  /// the 0-based level of the range in its domain on this thread, as nvtxRangePush does (0 for an outermost range).
  int push(std::uint64_t thread_id, std::string_view domain, std::string message, std::uint32_t category,
           std::int64_t ts_ns) {
    return push(thread(thread_id), domain, std::move(message), category, ts_ns);
  }
  /// push() on a thread's ranges from thread().
  int push(Thread& thread, std::string_view domain, std::string message, std::uint32_t category, std::int64_t ts_ns);
  /// A framework op reported by a RecordFunction callback (libxsp_torch_ops.so), pushed as push() pushes a range of
  /// `domain` but without building its text on the program's path: `name` is the interned op name ("aten::mm"),
  /// which must outlive the recorder; `sequence` its autograd sequence number (-1: none); `shapes` its inputs' sizes
  /// as emit_nvtx writes them after "sizes = " ("[[8, 32], [32, 16]]"; "" when not recorded). Its span is a PyTorch
  /// op range's (FRAMEWORK whatever the name, named by the op, tags "sequence" and "shapes"); pop() closes it.
  /// Returns as push().
  int push_op(std::uint64_t thread_id, std::string_view domain, const std::string* name, std::int64_t sequence,
              std::string shapes, std::int64_t ts_ns) {
    return push_op(thread(thread_id), domain, name, sequence, std::move(shapes), ts_ns);
  }
  /// push_op() on a thread's ranges from thread().
  int push_op(Thread& thread, std::string_view domain, const std::string* name, std::int64_t sequence,
              std::string shapes, std::int64_t ts_ns);
  /// nvtxRangePop / nvtxDomainRangePop: closes the innermost open push range of `domain` on `thread_id`. Returns its
  /// 0-based level, or -1 when none was open (counted as "nvtx.unmatched_pops").
  int pop(std::uint64_t thread_id, std::string_view domain, std::int64_t ts_ns) {
    return pop(thread(thread_id), domain, ts_ns);
  }
  /// pop() on a thread's ranges from thread().
  int pop(Thread& thread, std::string_view domain, std::int64_t ts_ns);
  /// nvtxRangeStart / nvtxDomainRangeStartEx (`domain` as for push()): returns the range id nvtxRangeEnd will be
  /// given; 0 when the range is dropped (max_ranges held), whose end is then ignored.
  std::uint64_t start(std::uint64_t thread_id, std::string_view domain, std::string message, std::uint32_t category,
                      std::int64_t ts_ns);
  /// nvtxRangeEnd: closes range `id` (from any thread). An id not open is counted ("nvtx.unmatched_ends"); 0 is
  /// ignored.
  void end(std::uint64_t id, std::int64_t ts_ns);

  /// What take() hands out: the spans, and the counters (name, value).
  using Taken = std::pair<std::vector<Span>, std::vector<std::pair<std::string, std::uint64_t>>>;
  /// Moves out the closed ranges as spans, and the ranges still open closed at `now_ns` (tag "open_at_end" true,
  /// counted as "nvtx.open_at_end"; a crashed or stopped program leaves some). Counters: "nvtx.ranges" (spans
  /// returned), "nvtx.unmatched_pops", "nvtx.unmatched_ends", "nvtx.open_at_end", "nvtx.dropped_ranges". The
  /// recorder is empty after.
  Taken take(std::int64_t now_ns);
  /// take() for a window of on-demand collection that ends while the program runs on (`xsp profile --stop`): the
  /// closed ranges, and the ranges still open as copies closed at `now_ns` (tag "open_at_end", counted as
  /// "nvtx.open_at_end"). The open ones stay open in the recorder without a span of their own, so that their pops and
  /// ends still pair, and are not handed out again when they close: every range is in at most one take. Counters as
  /// take(). The ranges taken no longer count against max_ranges.
  Taken take_window(std::int64_t now_ns);
  /// take() for a fatal-signal handler: std::nullopt when the recorder's lock or a thread's is still held after `wait`
  /// (a thread that died holding it never lets go), instead of blocking for ever.
  std::optional<Taken> try_take(std::int64_t now_ns, std::chrono::milliseconds wait);

 private:
  // A thread's lock: taken by the thread's own push and pop, and by take() only, so it is almost never contended; a
  // flag costs the thread one atomic exchange per call where a std::mutex costs two (bench_torch_ops).
  class SpinLock {
   public:
    void lock() noexcept;
    bool try_lock() noexcept { return !held_.exchange(true, std::memory_order_acquire); }
    void unlock() noexcept { held_.store(false, std::memory_order_release); }

   private:
    std::atomic<bool> held_{false};
  };
  // What a call records: the raw range. Classification, parsing and tags wait for take(), off the program's path.
  struct Range {
    SpanId id = kNoSpan, parent = kNoSpan;
    std::uint64_t thread_id = 0;
    std::string_view domain;  // interned by the caller (push())
    std::string message;
    std::uint32_t category = 0;
    std::int64_t start_ns = 0, end_ns = 0;
    bool pushed = true;  // push/pop, or start/end
    bool open_at_end = false;
    bool dropped = false;                  // a push past max_ranges: only holds its place on the stack for its pop
    const std::string* op_name = nullptr;  // push_op(): the op; `message` then holds its shapes
    std::int64_t sequence = -1;
  };
  // push() and push_op() once their range is made.
  int push_range(Thread& thread, Range&& r);
  // Whether one more range may be held (max_ranges); counts a refusal as dropped. The thread's own room first (no
  // atomic), then a block of kRoomBlock more from held_.
  bool admit(Thread& thread);
  bool admit();  // for start/end ranges, under mu_
  static constexpr std::size_t kRoomBlock = 1024;
  static Span span_of(Range&& r);
  // A span id for a range of `thread` (from its block when reserve_ids_ is set).
  SpanId next_id(Thread& thread);
  static constexpr std::size_t kIdBlock = 1024;
  std::function<SpanId()> next_id_;
  std::function<SpanId(std::size_t)> reserve_ids_;
  std::size_t max_ranges_;
  // Ranges recorded since the last take(), and those refused: shared by every thread, so atomics rather than a lock
  // (a push checks the bound without waiting on another thread; threads racing at the bound may each add one).
  std::atomic<std::size_t> held_{0};
  std::atomic<std::uint64_t> dropped_{0};
  // take() under the recorder's lock; `threads` the threads' locks, held, in threads_' order. `window`: take_window()
  // (the open ranges stay open, without a span).
  Taken take_locked(std::unique_lock<std::mutex>& lock, std::vector<std::unique_lock<SpinLock>>& threads,
                    std::int64_t now_ns, bool window = false);
  std::mutex mu_;  // threads_, and the start/end ranges below
  std::unordered_map<std::uint64_t, std::unique_ptr<Thread>> threads_;
  std::unordered_map<std::uint64_t, Range> started_;  // by range id
  std::unordered_set<std::uint64_t> retired_;  // start/end ranges a window took while open: their end is no error
  std::uint64_t next_range_id_ = 1;
  // Closed ranges in blocks of kBlock, each reserved when it is begun: appending never moves a range (a vector's
  // doubling copied them all, on the program's path: most of the cost of a recorded op, bench_torch_ops) and
  // allocates once a block (a std::deque of ranges this size allocates a block of 3).
  static constexpr std::size_t kBlock = 4096;
  using Log = std::vector<std::vector<Range>>;
  static void append(Log& log, Range&& r);
  Log closed_;  // start/end ranges
  std::uint64_t unmatched_ends_ = 0;
};

}  // namespace xsp::nvtx
