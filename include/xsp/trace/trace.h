// A trace: all spans of one run, with the clock they are on and the counters of anything lost (SPEC §1, §2).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "xsp/trace/span.h"

namespace xsp {

/// Which host clock span times are on and how to convert them to Unix time (for OTLP export).
struct ClockInfo {
  std::string host_clock = "CLOCK_MONOTONIC";
  /// unix_time_ns = host_ns + unix_offset_ns (measured when the run started).
  std::int64_t unix_offset_ns = 0;
  /// How device timestamps were mapped onto the host clock ("" when the run had no device spans).
  std::string device_clock_mapping;
  bool operator==(const ClockInfo&) const = default;
};

/// Span-assembly outcome (SPEC §2): how many spans each rule placed and how many no rule placed.
struct AssemblyReport {
  std::size_t by_context = 0;
  std::size_t by_correlation = 0;
  std::size_t by_containment = 0;
  std::size_t roots = 0;                ///< APPLICATION-level spans without a parent (expected)
  std::size_t unparented = 0;           ///< deeper spans that no rule placed: kept, counted, reported
  std::size_t dangling_parent_ids = 0;  ///< context parents naming an id absent from the trace (then re-placed)
  bool operator==(const AssemblyReport&) const = default;
};

/// One process of a trace recorded across processes (`xsp profile`: the profiled command and the children it
/// started). Host tracks whose thread id is in `thread_ids` ran in it; exporters draw one track group per process
/// (Chrome: one pid per process, named `name`; OTLP: the span attribute `process.pid`).
struct TraceProcess {
  std::int64_t pid = 0;                   ///< the OS process id when it ran
  std::string name;                       ///< its command line, arguments joined by spaces
  std::vector<std::uint64_t> thread_ids;  ///< its host tracks' ids (Linux tids), sorted
  bool operator==(const TraceProcess&) const = default;
};

/// All spans of one run.
struct Trace {
  std::vector<Span> spans;
  ClockInfo clock;
  /// "Nothing is silent" counters: dropped records, full buffers, profiler errors... keyed by a stable name
  /// such as "framework.dropped_spans". Zero-valued counters may be omitted.
  std::map<std::string, std::uint64_t> counters;
  AssemblyReport assembly;
  /// The processes whose threads the host tracks are, when the trace spans several (xsp profile); empty when every
  /// host track is a thread of the one process that recorded it (xsp evaluate).
  std::vector<TraceProcess> processes;
  bool operator==(const Trace&) const = default;

  /// The process that ran `track`: for a host thread process_of_thread(), for a stream the process its id names
  /// (Track::process_index()); nullptr when none does (or processes is empty).
  const TraceProcess* process_of_track(const Track& track) const;
  /// The process whose threads include host thread `thread_id`; nullptr when none does (or processes is empty).
  const TraceProcess* process_of_thread(std::uint64_t thread_id) const;
};

/// The op each span belongs to, by span id: the span itself when it is a FRAMEWORK span, else its nearest FRAMEWORK
/// ancestor; spans above the FRAMEWORK level, or with no FRAMEWORK ancestor, map to kNoSpan. Kineto's
/// "External id" and the relational export's op_id. One memoized walk up the parents: O(spans) overall, and a
/// parent cycle in a malformed trace ends the walk instead of looping.
std::unordered_map<SpanId, SpanId> op_of_spans(const Trace& trace);

/// Host clock used for every CPU span (CLOCK_MONOTONIC, ns).
std::int64_t now_ns();
/// Current unix_offset_ns for ClockInfo (CLOCK_REALTIME - CLOCK_MONOTONIC, ns).
std::int64_t unix_offset_now_ns();
/// A small stable id for the calling OS thread (Linux tid).
std::uint64_t current_thread_id();

/// Collects spans from profilers of one run; thread-safe. Ids are unique within the recorder and start at 1.
class TraceRecorder {
 public:
  TraceRecorder();
  /// Ids start at `first_id` (>= 1): recorders that take turns filling one trace (one per block of batches)
  /// keep ids unique across the trace by starting where the previous one stopped (peek_next_id()).
  explicit TraceRecorder(SpanId first_id);
  /// The id next_id() would return now.
  SpanId peek_next_id() const { return next_.load(std::memory_order_relaxed); }
  /// A fresh span id (lock-free).
  SpanId next_id();
  /// Reserves `n` consecutive ids and returns the first (lock-free); for profilers that batch their spans.
  SpanId reserve_ids(std::uint64_t n);
  /// Adds a finished span (its id must come from this recorder).
  void add(Span span);
  /// Adds many finished spans at once.
  void add_all(std::vector<Span>&& spans);
  /// Adds `delta` to counter `name` (see Trace::counters).
  void count(const std::string& name, std::uint64_t delta);
  /// Moves the collected spans and counters out into a Trace (not yet assembled). The recorder is empty after.
  Trace take();

 private:
  std::atomic<SpanId> next_{1};
  std::mutex mu_;
  Trace trace_;
};

}  // namespace xsp
