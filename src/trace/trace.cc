#include "xsp/trace/trace.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <limits>
#include <stdexcept>

namespace xsp {

namespace {

std::int64_t read_clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Bumped in a forked child: its threads' cached ids (below) belong to the parent's threads.
std::atomic<std::uint64_t> g_fork_generation{0};
void after_fork_in_child() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }
[[maybe_unused]] const int g_atfork_registered = pthread_atfork(nullptr, nullptr, after_fork_in_child);

}  // namespace

std::int64_t now_ns() { return read_clock_ns(CLOCK_MONOTONIC); }

std::int64_t unix_offset_now_ns() {
  // Bracket the realtime read between two monotonic reads and keep the tightest bracket: a preemption between
  // the reads would otherwise skew the offset by the time the thread was descheduled.
  std::int64_t best_gap = std::numeric_limits<std::int64_t>::max();
  std::int64_t best_offset = 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::int64_t mono_before = read_clock_ns(CLOCK_MONOTONIC);
    const std::int64_t real = read_clock_ns(CLOCK_REALTIME);
    const std::int64_t mono_after = read_clock_ns(CLOCK_MONOTONIC);
    const std::int64_t gap = mono_after - mono_before;
    if (gap < best_gap) {
      best_gap = gap;
      best_offset = real - (mono_before + gap / 2);
    }
  }
  return best_offset;
}

std::uint64_t current_thread_id() {
  // gettid is a syscall; profilers call this per span, so cache it per thread, read again after a fork (the child's
  // forking thread inherits the parent's cache).
  thread_local std::uint64_t tid = 0;
  thread_local std::uint64_t generation = ~std::uint64_t{0};
  const std::uint64_t g = g_fork_generation.load(std::memory_order_relaxed);
  if (generation != g) {
    tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
    generation = g;
  }
  return tid;
}

TraceRecorder::TraceRecorder() { trace_.clock.unix_offset_ns = unix_offset_now_ns(); }

TraceRecorder::TraceRecorder(SpanId first_id) : TraceRecorder() {
  if (first_id == kNoSpan) throw std::invalid_argument("TraceRecorder: span ids start at 1, got 0");
  next_.store(first_id, std::memory_order_relaxed);
}

SpanId TraceRecorder::next_id() { return next_.fetch_add(1, std::memory_order_relaxed); }

SpanId TraceRecorder::reserve_ids(std::uint64_t n) { return next_.fetch_add(n, std::memory_order_relaxed); }

void TraceRecorder::add(Span span) {
  std::lock_guard lock(mu_);
  trace_.spans.push_back(std::move(span));
}

void TraceRecorder::add_all(std::vector<Span>&& spans) {
  std::lock_guard lock(mu_);
  if (trace_.spans.empty()) {
    trace_.spans = std::move(spans);
  } else {
    trace_.spans.insert(trace_.spans.end(), std::make_move_iterator(spans.begin()),
                        std::make_move_iterator(spans.end()));
  }
  spans.clear();
}

void TraceRecorder::count(const std::string& name, std::uint64_t delta) {
  std::lock_guard lock(mu_);
  trace_.counters[name] += delta;
}

Trace TraceRecorder::take() {
  std::lock_guard lock(mu_);
  Trace out = std::move(trace_);
  trace_ = Trace{};
  // The recorder keeps recording on the same clock; ids keep counting so they stay unique in the recorder.
  trace_.clock = out.clock;
  return out;
}

const TraceProcess* Trace::process_of_track(const Track& track) const {
  if (!track.is_device()) return process_of_thread(track.id);
  const std::uint32_t index = track.process_index();
  return index > 0 && index <= processes.size() ? &processes[index - 1] : nullptr;
}

const TraceProcess* Trace::process_of_thread(std::uint64_t thread_id) const {
  for (const TraceProcess& p : processes) {
    if (std::binary_search(p.thread_ids.begin(), p.thread_ids.end(), thread_id)) return &p;
  }
  return nullptr;
}

std::unordered_map<SpanId, SpanId> op_of_spans(const Trace& trace) {
  std::unordered_map<SpanId, const Span*> by_id;
  by_id.reserve(trace.spans.size());
  for (const Span& s : trace.spans) by_id.emplace(s.id, &s);
  std::unordered_map<SpanId, SpanId> op_of;
  op_of.reserve(trace.spans.size());
  std::vector<SpanId> path;
  for (const Span& start : trace.spans) {
    path.clear();
    SpanId found = kNoSpan;
    for (const Span* s = &start; s != nullptr && path.size() <= trace.spans.size();) {
      if (const auto it = op_of.find(s->id); it != op_of.end()) {
        found = it->second;
        break;
      }
      path.push_back(s->id);
      if (s->level == Level::kFramework) {
        found = s->id;
        break;
      }
      if (s->level < Level::kFramework || s->parent_id == kNoSpan) break;
      const auto p = by_id.find(s->parent_id);
      s = p == by_id.end() ? nullptr : p->second;
    }
    for (SpanId id : path) op_of[id] = found;
  }
  return op_of;
}

}  // namespace xsp
