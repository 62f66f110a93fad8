// The Perfetto trace protobuf writer (docs/exports.md "Perfetto protobuf"): protobuf's wire format written by hand,
// one TracePacket at a time. Every field number below is declared, with the upstream file it comes from, in
// tests/fixtures/perfetto/xsp_pftrace_subset.proto, which the tests compile to parse what this writes.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "xsp/trace/perfetto.h"

namespace xsp {

namespace {

// The export's own count of strings it repaired, written beside the trace's run statistics (run_statistics.h) in the
// "xsp.counters" instant.
constexpr const char* kInvalidUtf8Replaced = "perfetto.invalid_utf8_replaced";

// Field numbers and enum values of perfetto.protos (see xsp_pftrace_subset.proto).
namespace pb {
constexpr std::uint32_t kTracePacket = 1;  // Trace.packet

// TracePacket
constexpr std::uint32_t kClockSnapshot = 6;
constexpr std::uint32_t kTimestamp = 8;
constexpr std::uint32_t kTrustedPacketSequenceId = 10;
constexpr std::uint32_t kTrackEvent = 11;
constexpr std::uint32_t kInternedData = 12;
constexpr std::uint32_t kSequenceFlags = 13;
constexpr std::uint32_t kTracePacketDefaults = 59;
constexpr std::uint32_t kTrackDescriptor = 60;
constexpr std::uint64_t kSeqIncrementalStateCleared = 1;
constexpr std::uint64_t kSeqNeedsIncrementalState = 2;

// TracePacketDefaults, TrackEventDefaults
constexpr std::uint32_t kDefaultsTimestampClockId = 58;
constexpr std::uint32_t kDefaultsTrackEventDefaults = 11;
constexpr std::uint32_t kTrackEventDefaultsTrackUuid = 11;
constexpr std::uint32_t kTrackEventDefaultsExtraCounterTrackUuids = 31;
constexpr std::uint32_t kTrackEventDefaultsExtraDoubleCounterTrackUuids = 45;

// ClockSnapshot / ClockSnapshot.Clock
constexpr std::uint32_t kClockSnapshotClocks = 1;
constexpr std::uint32_t kClockSnapshotPrimaryTraceClock = 2;
constexpr std::uint32_t kClockId = 1;
constexpr std::uint32_t kClockTimestamp = 2;
constexpr std::uint32_t kClockIsIncremental = 3;
constexpr std::uint64_t kBuiltinClockRealtime = 1;
constexpr std::uint64_t kBuiltinClockMonotonic = 3;
constexpr std::uint64_t kBuiltinClockBoottime = 6;
/// The sequence-scoped clock (ids 64-127 are the writer's own) of every event timestamp: incremental, so each
/// packet's timestamp is the delta from the previous one on this clock (1-3 bytes instead of 6), re-anchored by a
/// ClockSnapshot at each incremental-state reset. It ticks in ns and equals the host clock.
constexpr std::uint64_t kIncrementalClock = 64;

// TrackDescriptor, ProcessDescriptor, ThreadDescriptor, CounterDescriptor
constexpr std::uint32_t kTrackUuid = 1;
constexpr std::uint32_t kTrackName = 2;
constexpr std::uint32_t kTrackProcess = 3;
constexpr std::uint32_t kTrackThread = 4;
constexpr std::uint32_t kTrackParentUuid = 5;
constexpr std::uint32_t kTrackCounter = 8;
constexpr std::uint32_t kProcessPid = 1;
constexpr std::uint32_t kProcessName = 6;
constexpr std::uint32_t kThreadPid = 1;
constexpr std::uint32_t kThreadTid = 2;
constexpr std::uint32_t kThreadName = 5;
constexpr std::uint32_t kCounterUnit = 3;
constexpr std::uint64_t kUnitTimeNs = 1;
constexpr std::uint64_t kUnitSizeBytes = 3;

// TrackEvent
constexpr std::uint32_t kEventCategoryIids = 3;
constexpr std::uint32_t kEventDebugAnnotations = 4;
constexpr std::uint32_t kEventType = 9;
constexpr std::uint32_t kEventNameIid = 10;
constexpr std::uint32_t kEventTrackUuid = 11;
constexpr std::uint32_t kEventCounterValue = 30;
constexpr std::uint32_t kEventDoubleCounterValue = 44;
constexpr std::uint32_t kEventExtraCounterValues = 12;
constexpr std::uint32_t kEventExtraCounterTrackUuids = 31;
constexpr std::uint32_t kEventExtraDoubleCounterTrackUuids = 45;
constexpr std::uint32_t kEventExtraDoubleCounterValues = 46;
constexpr std::uint32_t kEventFlowIds = 47;
constexpr std::uint64_t kTypeSliceBegin = 1;
constexpr std::uint64_t kTypeSliceEnd = 2;
constexpr std::uint64_t kTypeInstant = 3;
constexpr std::uint64_t kTypeCounter = 4;

// DebugAnnotation
constexpr std::uint32_t kAnnotationNameIid = 1;
constexpr std::uint32_t kAnnotationIntValue = 4;
constexpr std::uint32_t kAnnotationDoubleValue = 5;
constexpr std::uint32_t kAnnotationStringValue = 6;
constexpr std::uint32_t kAnnotationArrayValues = 12;
constexpr std::uint32_t kAnnotationStringValueIid = 17;

// InternedData; EventCategory, EventName, DebugAnnotationName and InternedString (its `str`) all have iid = 1,
// name = 2.
constexpr std::uint32_t kInternedEventCategories = 1;
constexpr std::uint32_t kInternedEventNames = 2;
constexpr std::uint32_t kInternedDebugAnnotationNames = 3;
constexpr std::uint32_t kInternedDebugAnnotationStringValues = 29;
constexpr std::uint32_t kInternedIid = 1;
constexpr std::uint32_t kInternedName = 2;
}  // namespace pb

/// An append-only protobuf message: fields are written in the order they are added (any order is valid protobuf).
class Proto {
 public:
  void varint(std::uint32_t field, std::uint64_t v) {
    key(field, 0);
    raw_varint(v);
  }
  /// int32/int64 fields: negative values take ten bytes, as protobuf's int64 encoding does.
  void int64(std::uint32_t field, std::int64_t v) { varint(field, static_cast<std::uint64_t>(v)); }
  void fixed64(std::uint32_t field, std::uint64_t v) {
    key(field, 1);
    for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void dbl(std::uint32_t field, double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    fixed64(field, bits);
  }
  void bytes(std::uint32_t field, std::string_view v) {
    key(field, 2);
    raw_varint(v.size());
    buf_.append(v);
  }
  void message(std::uint32_t field, const Proto& m) { bytes(field, m.buf_); }
  bool empty() const { return buf_.empty(); }
  const std::string& data() const { return buf_; }
  void clear() { buf_.clear(); }

 private:
  void key(std::uint32_t field, std::uint32_t wire_type) {
    raw_varint((static_cast<std::uint64_t>(field) << 3) | wire_type);
  }
  void raw_varint(std::uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<char>(v));
  }
  std::string buf_;
};

// splitmix64's finalizer (Steele et al. 2014): track uuids and flow ids are mixes of what identifies them, so the
// same track or flow gets the same id in every file of a sharded export, and ids from different keys rarely meet.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
std::uint64_t mix(std::uint64_t kind, std::uint64_t a, std::uint64_t b = 0) {
  const std::uint64_t h = mix(mix(mix(kind) ^ a) ^ b);
  return h == 0 ? 1 : h;  // 0 is Perfetto's implicit global track / "no flow"
}
/// A track's uuid: 40 bits of the mix. Every event names its track, and a 40-bit varint takes 6 bytes where 64 bits
/// take 10 (about 10% of a span's bytes); a trace has at most thousands of tracks, so a collision stays below 1e-5.
std::uint64_t track_uuid(std::uint64_t kind, std::uint64_t a, std::uint64_t b = 0) {
  const std::uint64_t h = mix(kind, a, b) & ((std::uint64_t{1} << 40) - 1);
  return h == 0 ? 1 : h;
}
/// FNV-1a: unlike std::hash, the same in every build, so counter tracks keep their uuid across XSP versions.
std::uint64_t hash_string(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

enum UuidKind : std::uint64_t {
  kHostProcess = 1,
  kGpuProcess,
  kThread,
  kStream,
  kOverlap,
  kCounter,
  kFlow,
  kCounterSequence,
};

/// The bits of a flow id that are its correlation id (PerfettoWriter::Impl::flow_id).
constexpr std::uint64_t kFlowCorrelationMask = 0xffffffffULL;

/// trace_processor keeps at most this many extra counter values per event (TrackEventData::kMaxNumExtraCounters)
/// and drops the event's values past it.
constexpr std::size_t kMaxExtraCounters = 8;

/// Length of the valid UTF-8 sequence at s[i], or 0 when none starts there (RFC 3629: no overlongs, no surrogates).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xbf) return 0;
  }
  return n;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

/// `s` with every byte that starts no valid UTF-8 sequence replaced by U+FFFD.
std::string replace_invalid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

/// The level an event of category `cat` has unless its "xsp.level" says otherwise: the one level the category stands
/// for, or for the user annotations the commonest of theirs (MODEL on the host, FRAMEWORK on a GPU stream, where
/// graph replays put the ops they replay).
Level implied_level(std::string_view cat) {
  if (cat == "user_annotation") return Level::kModel;
  if (cat == "gpu_user_annotation" || cat == "cpu_op") return Level::kFramework;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return Level::kSystem;
  if (cat == "cuda_profiler_range") return Level::kHardware;
  return Level::kKernel;  // kernel, gpu_memcpy, gpu_memset
}

/// The position of `key` in `names`, or -1 when it is not there.
template <std::size_t N>
int position(const std::string_view (&names)[N], std::string_view key) {
  const auto it = std::find(std::begin(names), std::end(names), key);
  return it == std::end(names) ? -1 : static_cast<int>(it - std::begin(names));
}

/// The categories of KERNEL-level spans (device activities: kernels, memcpys, memsets).
constexpr std::string_view kKernelCategories[] = {"kernel", "gpu_memcpy", "gpu_memset"};
bool is_kernel_category(std::string_view cat) { return position(kKernelCategories, cat) >= 0; }

/// Tags of a KERNEL-level span that say where it ran (and what it is): the same on most device activities of a
/// stream, so a slice leaves them out where the previous slice of its category on its sequence had the same.
constexpr std::string_view kRepeatedKernelTags[] = {"kind", "device", "context", "stream"};
/// A slice's kRepeatedKernelTags, by position (none: the slice has no such tag).
using KernelTags = std::array<std::optional<Tag>, std::size(kRepeatedKernelTags)>;
/// The annotation that lists (comma-separated) the repeated kernel tags a slice lacks though the previous slice of its
/// category had them, so that a reader does not carry them over.
constexpr const char* kUnsetAnnotation = "xsp.unset";

constexpr std::string_view kMetadataCategory = "xsp_metadata";
constexpr std::size_t kMaxInternedValueBytes = 64;

std::uint64_t builtin_clock(const std::string& host_clock) {
  if (host_clock == "CLOCK_BOOTTIME") return pb::kBuiltinClockBoottime;
  if (host_clock == "CLOCK_REALTIME") return pb::kBuiltinClockRealtime;
  return pb::kBuiltinClockMonotonic;  // XSP's host clock (now_ns())
}

/// Tags of HARDWARE spans that are bookkeeping, not counter values.
bool is_counter_tag(const Tag& t) {
  if (t.type != TagType::kInt && t.type != TagType::kReal) return false;
  return t.key != "range_index" && t.key != "device" && t.key != "stream" && t.key != "batch";
}

/// The value of a HARDWARE span's tag that goes to a counter track (and not into the slice's annotations).
std::optional<double> counter_value(const Tag& t) {
  const auto v = is_counter_tag(t) ? t.as_real() : std::nullopt;
  return v && std::isfinite(*v) ? v : std::nullopt;
}

/// The put_in_order key (assembler.cc): start ascending, level ascending, end descending, id ascending.
bool in_order_before(const Span& a, const Span& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.level != b.level) return a.level < b.level;
  if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
  return a.id < b.id;
}

}  // namespace

struct PerfettoWriter::Impl {
  /// One slice stack of a track: the track itself (lane 0) or its "(overlap N)" sibling N.
  struct Lane {
    std::uint64_t uuid = 0;
    std::vector<std::int64_t> open_end_ns;  // ends of the open slices, outermost first (non-increasing)
    std::vector<SpanId> open_span_ids;      // their span ids, likewise
    /// Of each open slice, what a cuda_driver slice directly inside it implies: its parent and rule when it is a
    /// cuda_runtime slice (the driver call of a runtime call has the runtime call's parent and rule).
    struct Enclosing {
      bool runtime = false;
      SpanId parent = kNoSpan;
      ParentRule rule = ParentRule::kContext;
    };
    std::vector<Enclosing> open_info;
    std::int64_t last_end_ns = std::numeric_limits<std::int64_t>::min();
  };
  struct TrackState {
    Track track;
    std::uint64_t base_uuid = 0;
    std::uint64_t parent_uuid = 0;  // the process track the overlap siblings hang under
    std::string name;
    std::vector<Lane> lanes;
  };
  /// An open slice in the min-heap of ends; `seq` breaks ties so the inner of two slices ending together ends first.
  struct Open {
    std::int64_t end_ns;
    std::uint64_t seq;
    TrackState* track;
    std::size_t lane;
    bool operator>(const Open& o) const { return end_ns != o.end_ns ? end_ns > o.end_ns : seq < o.seq; }
  };
  struct Interned {
    std::unordered_map<std::string, std::uint64_t> iids;
    // Each table numbers its own entries (Perfetto keys interned data by table and iid): the few annotation names
    // and categories keep 1-byte iids however many event names a trace has.
    std::uint64_t next_iid = 1;
    void clear() {
      iids.clear();
      next_iid = 1;
    }
  };

  Impl(std::ostream& o, const TraceResource& r, const ClockInfo& c, std::vector<TraceProcess> p, PerfettoOptions opt)
      : out(o), resource(r), clock(c), processes(std::move(p)), options(opt) {
    for (std::size_t i = 0; i < processes.size(); ++i) {
      for (std::uint64_t t : processes[i].thread_ids) thread_process.emplace(t, static_cast<std::uint32_t>(i + 1));
    }
    if (options.reset_interval_packets == 0) options.reset_interval_packets = 1;
  }

  std::ostream& out;
  TraceResource resource;
  ClockInfo clock;
  std::vector<TraceProcess> processes;
  PerfettoOptions options;
  std::unordered_map<std::uint64_t, std::uint32_t> thread_process;  // host thread id -> position + 1 in processes

  bool started = false;
  bool finished = false;
  std::uint64_t bytes = 0;
  std::uint64_t spans = 0;
  std::uint64_t invalid_utf8 = 0;
  std::int64_t last_start_ns = std::numeric_limits<std::int64_t>::min();
  SpanId last_span = kNoSpan;
  std::int64_t last_ts_ns = 0;  // the latest timestamp written

  /// A packet sequence: one per track that has events (its TrackEventDefaults.track_uuid, so that its events leave
  /// their track_uuid out), with its own incremental state, and one per such track whose HARDWARE spans have more
  /// counter values than their BEGIN carries (no default track: its TYPE_COUNTER events name theirs). `generation`
  /// counts its resets; a track descriptor is written again after a reset (before the track's next event) so a
  /// reader that starts at a reset still names every track.
  struct Sequence {
    std::uint32_t id = 0;
    std::uint64_t default_track = 0;  // 0: none
    bool started = false;
    std::uint64_t generation = 0;
    std::uint64_t packets_since_reset = 0;
    bool reset_pending = false;
    bool defaults_changed = false;  // the extra counter track lists changed: TracePacketDefaults written again
    std::int64_t clock_ns = 0;      // kIncrementalClock's value: its anchor, or the last timestamp written on it
    Interned names, categories, annotation_names, string_values;
    std::unordered_map<std::uint64_t, std::uint64_t> described;  // track uuid -> generation it was last described in
    // TrackEventDefaults.extra_counter_track_uuids and extra_double_counter_track_uuids as last written (cleared at
    // each reset): an event whose counter tracks are the first entries of a list leaves its own list out.
    std::vector<std::uint64_t> int_counter_tracks, double_counter_tracks;
    // Per category, the ids of this generation's latest slice and of the one before (its stride from it): the
    // next slice of the category leaves "xsp.span_id" out when its id continues that progression.
    struct IdRun {
      SpanId last = kNoSpan;
      SpanId stride = 1;  // id - previous id, modulo 2^64; 1 after the category's first slice
    };
    std::map<std::string, IdRun, std::less<>> span_ids;
    // Per KERNEL-level category, the repeated kernel tags (kRepeatedKernelTags) of this generation's latest slice,
    // as a reader has them: the next slice leaves out those it has with the same type and value.
    // By position in kKernelCategories; none before the category's first slice.
    std::array<std::optional<KernelTags>, std::size(kKernelCategories)> kernel_tags;
  };
  std::unordered_map<std::uint64_t, std::unique_ptr<Sequence>> sequences;  // by default track (or counter-sequence key)
  Sequence* seq = nullptr;                                                 // the sequence of the event being written
  bool clock_named = false;  // the file's first ClockSnapshot, which names the trace's clock, is written
  // Counter track -> timestamp of its last value: a second value at the same time (two HARDWARE spans starting
  // together) could not be told apart, so that span keeps its values as annotations too.
  std::unordered_map<std::uint64_t, std::int64_t> counter_last_ns;
  Proto interned;  // the InternedData entries the packet being built introduces

  std::map<Track, TrackState> tracks;
  std::priority_queue<Open, std::vector<Open>, std::greater<>> open;
  std::uint64_t open_seq = 0;
  std::map<std::pair<std::uint64_t, std::string>, std::uint64_t> counter_tracks;  // (parent uuid, name) -> uuid

  // Flows whose launch is written, which later device activities of its correlation id step on: flow id -> insertion
  // number, the oldest evicted past options.max_pending_flows, so the map stays bounded however long the run.
  std::unordered_map<std::uint64_t, std::uint64_t> pending_flows;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> pending_order;
  std::uint64_t flow_seq = 0;

  std::map<std::string, std::uint64_t> trace_counters;

  // ---- strings

  /// `s` as protobuf requires strings: UTF-8. Invalid bytes become U+FFFD (counted), or with replace_invalid_utf8
  /// off, an error naming `what()`, which is called only then so that valid strings cost no message.
  template <class What>
  std::string utf8(std::string_view s, What&& what) {
    if (valid_utf8(s)) return std::string(s);
    if (!options.replace_invalid_utf8) {
      throw std::invalid_argument("perfetto export: " + what() + " is not valid UTF-8");
    }
    ++invalid_utf8;
    return replace_invalid_utf8(s);
  }

  std::uint64_t intern(Interned& table, std::uint32_t interned_field, const std::string& s) {
    const auto [it, inserted] = table.iids.emplace(s, table.next_iid);
    if (inserted) {
      ++table.next_iid;
      Proto entry;
      entry.varint(pb::kInternedIid, it->second);
      entry.bytes(pb::kInternedName, s);
      interned.message(interned_field, entry);
    }
    return it->second;
  }

  // ---- packets

  /// Called before the packets of one event on track `uuid` (the descriptors its tracks need, then the event):
  /// selects the track's sequence, starting it on first use, and once its reset interval is reached clears its
  /// incremental state, so that the event's tracks and interned ids all belong to the new generation.
  void begin_event(std::uint64_t uuid, bool has_default_track = true) {
    auto& entry = sequences[uuid];
    if (!entry) {
      entry = std::make_unique<Sequence>();
      entry->id = options.sequence_id + static_cast<std::uint32_t>(sequences.size() - 1);
      entry->default_track = has_default_track ? uuid : 0;
    }
    seq = entry.get();
    if (seq->started && seq->packets_since_reset < options.reset_interval_packets) return;
    const bool first = !clock_named;
    clock_named = true;
    seq->started = true;
    seq->reset_pending = true;
    seq->packets_since_reset = 0;
    ++seq->generation;
    seq->names.clear();
    seq->categories.clear();
    seq->annotation_names.clear();
    seq->string_values.clear();
    seq->int_counter_tracks.clear();
    seq->double_counter_tracks.clear();
    seq->span_ids.clear();
    seq->kernel_tags = {};
    write_clock_snapshot(last_ts_ns, first);
  }

  /// The ClockSnapshot that opens each generation (SEQ_INCREMENTAL_STATE_CLEARED): kIncrementalClock restarts at
  /// `anchor_ns` on the host clock, so a reader that starts here needs nothing earlier. The first one also names the
  /// host clock as the trace's clock and gives CLOCK_REALTIME.
  void write_clock_snapshot(std::int64_t anchor_ns, bool first) {
    begin_packet();
    Proto snapshot, host, incremental;
    host.varint(pb::kClockId, builtin_clock(clock.host_clock));
    host.varint(pb::kClockTimestamp, static_cast<std::uint64_t>(anchor_ns));
    snapshot.message(pb::kClockSnapshotClocks, host);
    if (first && clock.unix_offset_ns != 0 && builtin_clock(clock.host_clock) != pb::kBuiltinClockRealtime &&
        anchor_ns + clock.unix_offset_ns >= 0) {
      // Lets the viewer show wall-clock time (unix_time_ns = host_ns + unix_offset_ns).
      Proto realtime;
      realtime.varint(pb::kClockId, pb::kBuiltinClockRealtime);
      realtime.varint(pb::kClockTimestamp, static_cast<std::uint64_t>(anchor_ns + clock.unix_offset_ns));
      snapshot.message(pb::kClockSnapshotClocks, realtime);
    }
    incremental.varint(pb::kClockId, pb::kIncrementalClock);
    incremental.varint(pb::kClockTimestamp, static_cast<std::uint64_t>(anchor_ns));
    incremental.varint(pb::kClockIsIncremental, 1);
    snapshot.message(pb::kClockSnapshotClocks, incremental);
    // The host clock is the trace's clock: no conversion, even without a BOOTTIME snapshot.
    if (first) snapshot.varint(pb::kClockSnapshotPrimaryTraceClock, builtin_clock(clock.host_clock));
    Proto body;
    body.message(pb::kClockSnapshot, snapshot);
    seq->clock_ns = anchor_ns;
    end_packet(body, false);
  }

  /// A packet's timestamp on kIncrementalClock: the delta from the previous one. Timestamps never decrease (spans
  /// come sorted by start, slices end in order), so the delta is never negative.
  void timestamp(Proto& body, std::int64_t ts_ns) {
    if (ts_ns < seq->clock_ns) throw std::logic_error("perfetto export: timestamps out of order");
    body.varint(pb::kTimestamp, static_cast<std::uint64_t>(ts_ns - seq->clock_ns));
    seq->clock_ns = ts_ns;
  }

  /// An event's track: left out when it is its sequence's default track.
  void track(Proto& event, std::uint64_t uuid) {
    if (uuid != seq->default_track) event.varint(pb::kEventTrackUuid, uuid);
  }

  void begin_packet() { interned.clear(); }

  /// Writes one TracePacket: `body` holds its data fields (timestamp, track_event, ...).
  void end_packet(Proto& body, bool needs_incremental_state) {
    std::uint64_t flags = 0;
    if (seq->reset_pending) flags |= pb::kSeqIncrementalStateCleared;
    if (seq->reset_pending || seq->defaults_changed) {
      // Defaults replace the sequence's previous ones whole (and apply to this packet already): all of them again.
      Proto defaults, track_event_defaults;
      defaults.varint(pb::kDefaultsTimestampClockId, pb::kIncrementalClock);
      if (seq->default_track != 0) track_event_defaults.varint(pb::kTrackEventDefaultsTrackUuid, seq->default_track);
      for (std::uint64_t uuid : seq->int_counter_tracks) {
        track_event_defaults.varint(pb::kTrackEventDefaultsExtraCounterTrackUuids, uuid);
      }
      for (std::uint64_t uuid : seq->double_counter_tracks) {
        track_event_defaults.varint(pb::kTrackEventDefaultsExtraDoubleCounterTrackUuids, uuid);
      }
      defaults.message(pb::kDefaultsTrackEventDefaults, track_event_defaults);
      body.message(pb::kTracePacketDefaults, defaults);
      seq->reset_pending = false;
      seq->defaults_changed = false;
    }
    if (needs_incremental_state) flags |= pb::kSeqNeedsIncrementalState;
    if (!interned.empty()) body.message(pb::kInternedData, interned);
    body.varint(pb::kTrustedPacketSequenceId, seq->id);
    if (flags != 0) body.varint(pb::kSequenceFlags, flags);
    Proto packet;
    packet.message(pb::kTracePacket, body);
    if (out) {
      out.write(packet.data().data(), static_cast<std::streamsize>(packet.data().size()));
      if (out) bytes += packet.data().size();
    }
    ++seq->packets_since_reset;
  }

  void write_descriptor(std::uint64_t uuid, const Proto& descriptor) {
    begin_packet();
    Proto body;
    body.message(pb::kTrackDescriptor, descriptor);
    end_packet(body, false);
    seq->described[uuid] = seq->generation;
  }

  bool needs_description(std::uint64_t uuid) const {
    const auto it = seq->described.find(uuid);
    return it == seq->described.end() || it->second != seq->generation;
  }

  // ---- tracks

  std::string host_label() const {
    return resource.service_name + (resource.host_name.empty() ? std::string() : " on " + resource.host_name);
  }

  /// The process track of host process `p` (position + 1 in processes; 0: the recording process).
  std::uint64_t host_process(std::uint32_t p) {
    const std::uint64_t uuid = track_uuid(kHostProcess, p);
    if (needs_description(uuid)) {
      Proto process;
      process.int64(pb::kProcessPid, process_pid(p));
      process.bytes(pb::kProcessName, utf8(p == 0 ? host_label() : processes[p - 1].name,
                                           [&] { return "the name of process #" + std::to_string(p); }));
      Proto d;
      d.varint(pb::kTrackUuid, uuid);
      d.message(pb::kTrackProcess, process);
      write_descriptor(uuid, d);
    }
    return uuid;
  }

  std::int32_t process_pid(std::uint32_t p) const {
    return p == 0 ? static_cast<std::int32_t>(kChromeHostPid) : static_cast<std::int32_t>(processes[p - 1].pid);
  }

  std::uint64_t gpu_process(std::uint32_t device) {
    const std::uint64_t uuid = track_uuid(kGpuProcess, device);
    if (needs_description(uuid)) {
      std::string name = "GPU " + std::to_string(device);
      if (const auto it = resource.device_names.find(device); it != resource.device_names.end()) {
        name += ": " + it->second;
      }
      Proto process;
      process.int64(pb::kProcessPid, static_cast<std::int64_t>(kPerfettoGpuPidBase) + device);
      process.bytes(pb::kProcessName, utf8(name, [&] { return "the name of GPU " + std::to_string(device); }));
      Proto d;
      d.varint(pb::kTrackUuid, uuid);
      d.message(pb::kTrackProcess, process);
      write_descriptor(uuid, d);
    }
    return uuid;
  }

  std::uint32_t process_of(const Track& t) const {
    if (t.is_device()) return t.process_index() <= processes.size() ? t.process_index() : 0;
    const auto it = thread_process.find(t.id);
    return it == thread_process.end() ? 0 : it->second;
  }

  TrackState& track_state(const Track& t) {
    auto [it, inserted] = tracks.try_emplace(t);
    TrackState& st = it->second;
    if (inserted) {
      st.track = t;
      if (t.is_device()) {
        st.base_uuid = track_uuid(kStream, t.device, t.id);
        st.name = "stream " + std::to_string(t.stream_number());
        if (const std::uint32_t p = process_of(t); p != 0) st.name += " of process " + std::to_string(process_pid(p));
      } else {
        st.base_uuid = track_uuid(kThread, t.id, process_of(t));
        st.name = "thread " + std::to_string(t.id);
      }
      st.lanes.push_back(Lane{st.base_uuid, {}, {}, {}, std::numeric_limits<std::int64_t>::min()});
    }
    return st;
  }

  /// Writes the descriptors lane `lane` of a track needs (its process first) unless this generation has them.
  void describe_lane(TrackState& st, std::size_t lane) {
    const Track& t = st.track;
    st.parent_uuid = t.is_device() ? gpu_process(t.device) : host_process(process_of(t));
    const std::uint64_t uuid = st.lanes[lane].uuid;
    if (!needs_description(uuid)) return;
    Proto d;
    d.varint(pb::kTrackUuid, uuid);
    if (lane == 0 && !t.is_device() && t.id <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
      // A thread track: the viewer groups it under its process by pid and names it.
      Proto thread;
      thread.int64(pb::kThreadPid, process_pid(process_of(t)));
      thread.int64(pb::kThreadTid, static_cast<std::int64_t>(t.id));
      thread.bytes(pb::kThreadName, st.name);
      d.message(pb::kTrackThread, thread);
    } else {
      d.varint(pb::kTrackParentUuid, st.parent_uuid);
      d.bytes(pb::kTrackName, lane == 0 ? st.name : st.name + " (overlap " + std::to_string(lane) + ")");
    }
    write_descriptor(uuid, d);
  }

  std::uint64_t counter_track(std::uint64_t parent_uuid, const std::string& name) {
    auto [it, inserted] = counter_tracks.try_emplace({parent_uuid, name}, 0);
    if (inserted) it->second = track_uuid(kCounter, parent_uuid, hash_string(name));
    const std::uint64_t uuid = it->second;
    if (needs_description(uuid)) {
      Proto counter;
      if (name.ends_with("_ns")) counter.varint(pb::kCounterUnit, pb::kUnitTimeNs);
      if (name.ends_with("_bytes")) counter.varint(pb::kCounterUnit, pb::kUnitSizeBytes);
      Proto d;
      d.varint(pb::kTrackUuid, uuid);
      d.varint(pb::kTrackParentUuid, parent_uuid);
      d.bytes(pb::kTrackName, name);
      d.message(pb::kTrackCounter, counter);
      write_descriptor(uuid, d);
    }
    return uuid;
  }

  // ---- events

  void start(std::int64_t first_ns) {
    started = true;
    last_ts_ns = first_ns;  // the anchor of the first ClockSnapshot

    std::vector<Tag> meta = {{"service.name", resource.service_name},
                             {"service.version", resource.service_version},
                             {"host.name", resource.host_name},
                             {"service.instance.id", resource.instance_id},
                             {"host_clock", clock.host_clock},
                             {"unix_offset_ns", clock.unix_offset_ns},
                             {"device_clock_mapping", clock.device_clock_mapping}};
    for (const auto& [device, name] : resource.device_names)
      meta.emplace_back("device." + std::to_string(device), name);
    meta.insert(meta.end(), resource.attributes.begin(), resource.attributes.end());
    write_instant("xsp.resource", first_ns, meta);
  }

  /// A TYPE_INSTANT on the recording process's track carrying `tags` (the resource, the trace's counters).
  void write_instant(const std::string& name, std::int64_t ts_ns, const std::vector<Tag>& tags) {
    begin_event(track_uuid(kHostProcess, 0));
    const std::uint64_t track = host_process(0);
    begin_packet();
    Proto event;
    event.varint(pb::kEventType, pb::kTypeInstant);
    this->track(event, track);
    event.varint(pb::kEventCategoryIids,
                 intern(seq->categories, pb::kInternedEventCategories, std::string(kMetadataCategory)));
    event.varint(pb::kEventNameIid, intern(seq->names, pb::kInternedEventNames, name));
    for (const Tag& t : tags) annotate(event, t, [&] { return "event " + name; });
    Proto body;
    timestamp(body, ts_ns);
    body.message(pb::kTrackEvent, event);
    end_packet(body, true);
  }

  template <class What>
  void annotate(Proto& event, const Tag& t, What&& what) {
    Proto a;
    a.varint(pb::kAnnotationNameIid, intern(seq->annotation_names, pb::kInternedDebugAnnotationNames,
                                            utf8(t.key, [&] { return "a tag key of " + what(); })));
    bool done = false;
    switch (t.type) {
      case TagType::kInt:
        if (const auto v = t.as_int()) {
          a.int64(pb::kAnnotationIntValue, *v);
          done = true;
        }
        break;
      case TagType::kReal:
        if (const auto v = t.as_real()) {
          a.dbl(pb::kAnnotationDoubleValue, *v);
          done = true;
        }
        break;
      case TagType::kIntList:
        for (std::int64_t v : t.as_int_list()) {
          Proto element;
          element.int64(pb::kAnnotationIntValue, v);
          a.message(pb::kAnnotationArrayValues, element);
        }
        done = true;
        break;
      case TagType::kString:
        break;
    }
    if (!done) string_value(a, utf8(t.value, [&] { return "tag '" + t.key + "' of " + what(); }));
    event.message(pb::kEventDebugAnnotations, a);
  }

  /// Short string values repeat (a level, a parent rule, a kernel's kind): they are interned, a 1-2 byte id per use
  /// instead of the text (about 20 bytes per span). Long ones, mostly unique, stay inline.
  void string_value(Proto& annotation, std::string_view v) {
    if (v.size() > kMaxInternedValueBytes) {
      annotation.bytes(pb::kAnnotationStringValue, v);
    } else {
      annotation.varint(pb::kAnnotationStringValueIid,
                        intern(seq->string_values, pb::kInternedDebugAnnotationStringValues, std::string(v)));
    }
  }

  void annotate_int(Proto& event, const std::string& key, std::int64_t v) {
    Proto a;
    a.varint(pb::kAnnotationNameIid, intern(seq->annotation_names, pb::kInternedDebugAnnotationNames, key));
    a.int64(pb::kAnnotationIntValue, v);
    event.message(pb::kEventDebugAnnotations, a);
  }

  void annotate_string(Proto& event, const std::string& key, std::string_view v) {
    Proto a;
    a.varint(pb::kAnnotationNameIid, intern(seq->annotation_names, pb::kInternedDebugAnnotationNames, key));
    string_value(a, v);
    event.message(pb::kEventDebugAnnotations, a);
  }

  /// Writes the END of every open slice that ends at or before `ts_ns`, earliest first.
  void close_until(std::int64_t ts_ns) {
    while (!open.empty() && open.top().end_ns <= ts_ns) {
      const Open o = open.top();
      open.pop();
      Lane& lane = o.track->lanes[o.lane];
      if (lane.open_end_ns.empty() || lane.open_end_ns.back() != o.end_ns || o.end_ns < lane.last_end_ns) {
        throw std::logic_error("perfetto export: slice ends out of order on track " + o.track->name);
      }
      lane.open_end_ns.pop_back();
      lane.open_span_ids.pop_back();
      lane.open_info.pop_back();
      lane.last_end_ns = o.end_ns;
      begin_event(lane.uuid);
      describe_lane(*o.track, o.lane);
      begin_packet();
      Proto event;
      event.varint(pb::kEventType, pb::kTypeSliceEnd);
      track(event, lane.uuid);
      Proto body;
      timestamp(body, o.end_ns);
      body.message(pb::kTrackEvent, event);
      end_packet(body, true);
      last_ts_ns = std::max(last_ts_ns, o.end_ns);
    }
  }

  /// Correlation ids are per process: the flow id holds the process when the trace has several. With one, a
  /// stream says process 0 ("the only one") while its launching thread is listed as processes[0]: the same process.
  /// A correlation id below 2^32 (CUPTI's are 32-bit) is the flow id's low 32 bits, the process position + 1 its high
  /// ones, so that a reader recovers it from the flow (kFlowCorrelationMask) and the event leaves "correlation" out;
  /// a larger one is mixed in (and its "correlation" written).
  std::uint64_t flow_id(const Span& s) const {
    const std::uint64_t process = processes.size() > 1 ? process_of(s.track) : 0;
    if (s.correlation_id <= kFlowCorrelationMask) return ((process + 1) << 32) | s.correlation_id;
    return mix(kFlow, s.correlation_id, process);
  }

  void open_flow(std::uint64_t id) {
    if (pending_flows.contains(id)) return;
    pending_flows.emplace(id, ++flow_seq);
    pending_order.emplace_back(id, flow_seq);
    while (pending_flows.size() > options.max_pending_flows && !pending_order.empty()) {
      const auto [old, seq] = pending_order.front();
      pending_order.pop_front();
      if (const auto it = pending_flows.find(old); it != pending_flows.end() && it->second == seq) {
        pending_flows.erase(it);
      }
    }
    // Entries of flows opened again (a launch's driver call) stay in the queue until they reach its front: compact it
    // before it outgrows the live entries by much.
    if (pending_order.size() > 2 * pending_flows.size() + 1024) {
      std::erase_if(pending_order, [&](const auto& e) {
        const auto it = pending_flows.find(e.first);
        return it == pending_flows.end() || it->second != e.second;
      });
    }
  }

  /// One counter value of a HARDWARE span as it goes on the wire: an integral value (an integer tag, or a real one
  /// without a fraction, up to 2^53) as an int64 varint, any other as a double.
  struct CounterSample {
    std::uint64_t track = 0;              // its counter track
    std::optional<std::uint32_t> device;  // the track's parent: this GPU, else host process `process`
    std::uint32_t process = 0;
    std::string name;  // the track's name: the tag key
    bool is_int = true;
    std::int64_t i = 0;
    double d = 0;
    bool zero() const { return is_int ? i == 0 : d == 0; }
  };
  /// The counter values of one event: `main` the value of a TYPE_COUNTER event (on its own track), `ints` and
  /// `doubles` its extra counter values.
  struct CounterEvent {
    std::optional<CounterSample> main;
    std::vector<CounterSample> ints, doubles;
  };

  /// The counter values of HARDWARE span `s`, in tag order (their tracks' descriptors written): a counter track per
  /// tag name under the span's GPU (its stream's, its "device" tag's, or the run's only GPU; else its process).
  std::vector<CounterSample> counter_samples(const Span& s, const TrackState& st) {
    std::vector<CounterSample> out;
    std::optional<std::uint32_t> device;
    if (s.track.is_device()) {
      device = s.track.device;
    } else if (const auto d = s.tag_int("device"); d && *d >= 0) {
      device = static_cast<std::uint32_t>(*d);
    } else if (resource.device_names.size() == 1) {
      device = resource.device_names.begin()->first;
    }
    for (const Tag& t : s.tags) {
      const std::optional<double> v = counter_value(t);
      if (!v) continue;
      CounterSample c;
      c.device = device;
      c.process = process_of(st.track);
      c.name = utf8(t.key, [&] { return "a tag key of span " + std::to_string(s.id); });
      c.track = describe_counter_track(c);
      if (const auto i = t.type == TagType::kInt ? t.as_int() : std::nullopt) {
        c.i = *i;
      } else if (std::trunc(*v) == *v && std::fabs(*v) <= 9007199254740992.0) {
        c.i = static_cast<std::int64_t>(*v);  // -0.0 becomes 0
      } else {
        c.is_int = false;
        c.d = *v;
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  /// The counter track of `c`, described (its parent first) unless this generation of the sequence has it.
  std::uint64_t describe_counter_track(const CounterSample& c) {
    return counter_track(c.device ? gpu_process(*c.device) : host_process(c.process), c.name);
  }

  /// Splits a HARDWARE span's counter values into events at its start: the first rides on its slice's BEGIN, each
  /// further one is a TYPE_COUNTER event. trace_processor takes at most kMaxExtraCounters extra values per event,
  /// and keeps an event's extra values only up to its first 0 (in index order: the integers, then the doubles),
  /// reading the later ones as 0; so an event's zeros come after all its other values, as integers, and only in an
  /// event without doubles. A TYPE_COUNTER event's own value may be anything.
  static std::vector<CounterEvent> pack_counters(const std::vector<CounterSample>& samples) {
    std::deque<const CounterSample*> ints, doubles, zeros;
    for (const CounterSample& c : samples) (c.zero() ? zeros : c.is_int ? ints : doubles).push_back(&c);
    const auto fill = [&](CounterEvent& e) {
      for (; !ints.empty() && e.ints.size() < kMaxExtraCounters; ints.pop_front()) e.ints.push_back(*ints.front());
      for (; !doubles.empty() && e.ints.size() + e.doubles.size() < kMaxExtraCounters; doubles.pop_front()) {
        e.doubles.push_back(*doubles.front());
      }
      if (!e.doubles.empty()) return;
      for (; !zeros.empty() && e.ints.size() < kMaxExtraCounters; zeros.pop_front()) e.ints.push_back(*zeros.front());
    };
    std::vector<CounterEvent> events(1);
    fill(events[0]);
    while (!ints.empty() || !doubles.empty() || !zeros.empty()) {
      CounterEvent e;
      // A double as the event's own value leaves the extra values to integers, zeros included.
      std::deque<const CounterSample*>& from = !doubles.empty() ? doubles : !zeros.empty() ? zeros : ints;
      e.main = *from.front();
      from.pop_front();
      fill(e);
      events.push_back(std::move(e));
    }
    return events;
  }

  /// Orders an event's extra counter values (its non-zero ones, then its zeros) as the sequence's default track list
  /// `tracks` has them, tracks the list lacks last. When they are then not the list's first entries, the list
  /// becomes their tracks followed by its other tracks, and false says that the defaults must be written again. So
  /// no event names its extra counter tracks: they are always the first ones of the defaults.
  static bool arrange(std::vector<CounterSample>& values, std::vector<std::uint64_t>& tracks) {
    const auto rank = [&](std::uint64_t t) { return std::find(tracks.begin(), tracks.end(), t) - tracks.begin(); };
    std::stable_sort(values.begin(), values.end(), [&](const CounterSample& a, const CounterSample& b) {
      if (a.zero() != b.zero()) return !a.zero();
      return rank(a.track) < rank(b.track);
    });
    bool prefix = values.size() <= tracks.size();
    for (std::size_t k = 0; prefix && k < values.size(); ++k) prefix = tracks[k] == values[k].track;
    if (prefix) return true;
    std::vector<std::uint64_t> next;
    for (const CounterSample& c : values) next.push_back(c.track);
    for (std::uint64_t t : tracks) {
      if (std::none_of(values.begin(), values.end(), [&](const CounterSample& c) { return c.track == t; })) {
        next.push_back(t);
      }
    }
    tracks = std::move(next);
    return false;
  }

  /// Writes `e`'s extra counter values (extra_counter_values, extra_double_counter_values) on `event`, their tracks
  /// the first entries of the sequence's TrackEventDefaults lists (written again on this packet when they change).
  void extra_counters(Proto& event, CounterEvent& e) {
    const bool ints_default = arrange(e.ints, seq->int_counter_tracks);
    const bool doubles_default = arrange(e.doubles, seq->double_counter_tracks);
    if (!ints_default || !doubles_default) seq->defaults_changed = true;
    for (const CounterSample& c : e.ints) event.int64(pb::kEventExtraCounterValues, c.i);
    for (const CounterSample& c : e.doubles) event.dbl(pb::kEventExtraDoubleCounterValues, c.d);
  }

  /// The counter values that did not fit on the BEGIN of HARDWARE span `s` (on lane `lane` of `st`): TYPE_COUNTER
  /// events at its start, on a sequence of their own (so that their default track lists do not take turns with the
  /// BEGINs' on the slice's sequence).
  void write_counter_events(const Span& s, TrackState& st, std::size_t lane, std::vector<CounterEvent>& events) {
    if (events.size() <= 1) return;
    begin_event(track_uuid(kCounterSequence, st.lanes[lane].uuid), false);
    for (std::size_t k = 1; k < events.size(); ++k) {
      const CounterEvent& e = events[k];
      describe_counter_track(*e.main);
      for (const CounterSample& c : e.ints) describe_counter_track(c);
      for (const CounterSample& c : e.doubles) describe_counter_track(c);
    }
    for (std::size_t k = 1; k < events.size(); ++k) {
      CounterEvent& e = events[k];
      begin_packet();
      Proto event;
      event.varint(pb::kEventType, pb::kTypeCounter);
      track(event, e.main->track);
      if (e.main->is_int) {
        event.int64(pb::kEventCounterValue, e.main->i);
      } else {
        event.dbl(pb::kEventDoubleCounterValue, e.main->d);
      }
      extra_counters(event, e);
      Proto body;
      timestamp(body, s.start_ns);
      body.message(pb::kTrackEvent, event);
      end_packet(body, true);
    }
  }

  /// The span's tags as typed annotations, less what the event already says: counter values on their counter tracks
  /// (unless `counters_collide`), and a device activity's location tags its category's previous slice had.
  template <typename What>
  void annotate_tags(Proto& event, const Span& s, std::string_view cat, bool counters_collide, const What& what) {
    // Device activities leave out the kind, device, context and stream their category's previous slice on this
    // sequence had (docs/exports.md lists the rules).
    const int category = position(kKernelCategories, cat);
    const KernelTags* previous = category >= 0 && seq->kernel_tags[category] ? &*seq->kernel_tags[category] : nullptr;
    const auto occurrences = [&](std::string_view key) {
      return std::count_if(s.tags.begin(), s.tags.end(), [&](const Tag& t) { return t.key == key; });
    };
    for (const Tag& t : s.tags) {
      // Counter values are on their counter tracks at this span's start: the annotation would say it twice.
      if (s.level == Level::kHardware && !counters_collide && counter_value(t)) continue;
      if (const int k = previous ? position(kRepeatedKernelTags, t.key) : -1; k >= 0 && occurrences(t.key) == 1) {
        const std::optional<Tag>& prev = (*previous)[k];
        if (prev && prev->type == t.type && prev->value == t.value) continue;
      }
      annotate(event, t, what);
    }
    if (category >= 0) {
      std::string unset;
      KernelTags now;
      for (std::size_t k = 0; k < now.size(); ++k) {
        const std::string_view key = kRepeatedKernelTags[k];
        const auto last = std::find_if(s.tags.rbegin(), s.tags.rend(), [&](const Tag& t) { return t.key == key; });
        if (last != s.tags.rend()) {
          now[k] = *last;
        } else if (previous && (*previous)[k]) {
          unset += (unset.empty() ? "" : ",") + std::string(key);
        }
      }
      if (!unset.empty()) annotate_string(event, kUnsetAnnotation, unset);
      seq->kernel_tags[category] = std::move(now);
    }
  }

  /// The correlation id, level, span id, parent and rule annotations, each unless the event already says it, and the
  /// flow (docs/exports.md lists the rules). `here`: the lane the slice opens on.
  void annotate_identity(Proto& event, const Span& s, std::string_view cat, const Lane& here) {
    const bool kernel_level = is_kernel_category(cat);
    // A launch starts a flow and every device activity of its correlation id after it steps it on: one kernel is an
    // arrow from its launch, a CUDA graph's replay a chain from the cudaGraphLaunch through each of its kernels in
    // time order. The flow is never terminated (the writer cannot know a replay's last kernel in time); the flow id
    // holds the correlation id, so such an event leaves "correlation" out.
    std::optional<std::uint64_t> starts_flow, steps_flow;
    if (s.correlation_id != 0 && s.level == Level::kSystem) {
      starts_flow = flow_id(s);
    } else if (s.correlation_id != 0 && s.level == Level::kKernel) {
      if (const std::uint64_t id = flow_id(s); pending_flows.contains(id)) steps_flow = id;
    }
    const std::optional<std::uint64_t> flow = starts_flow ? starts_flow : steps_flow;
    if (s.correlation_id != 0 && !(flow && (*flow & kFlowCorrelationMask) == s.correlation_id)) {
      annotate_int(event, "correlation", static_cast<std::int64_t>(s.correlation_id));
    }
    // What the event already says is left out (docs/exports.md lists the rules): the level where the category
    // implies it, the parent where it is the enclosing slice on this track (or none at the top), the rule where it is
    // the commonest for where the parent is.
    if (s.level != implied_level(cat)) annotate_string(event, "xsp.level", to_string(s.level));
    // The span id unless it continues the ids of the latest two slices of its category on this sequence since its
    // last reset (last + (last - the one before), modulo 2^64; last + 1 after one): ops, launches and kernels of a
    // thread or stream mostly come with ids in steps of 1 or 2, interleaved with the other categories'.
    auto run = seq->span_ids.find(cat);
    if (run == seq->span_ids.end() || s.id != run->second.last + run->second.stride) {
      annotate_int(event, "xsp.span_id", static_cast<std::int64_t>(s.id));
    }
    if (run == seq->span_ids.end()) {
      seq->span_ids.emplace(std::string(cat), Sequence::IdRun{s.id, 1});
    } else {
      run->second.stride = s.id - run->second.last;
      run->second.last = s.id;
    }
    // The parent a slice implies is the enclosing one on its track (none at the top), with the rule "context"; a
    // cuda_driver slice directly inside a cuda_runtime slice (the driver call of a runtime call) implies that slice's
    // parent and rule instead.
    SpanId implied_parent = here.open_span_ids.empty() ? kNoSpan : here.open_span_ids.back();
    ParentRule rule_if_implied = ParentRule::kContext;
    if (cat == "cuda_driver" && !here.open_info.empty() && here.open_info.back().runtime) {
      implied_parent = here.open_info.back().parent;
      rule_if_implied = here.open_info.back().rule;
    }
    const bool parent_implied = s.parent_id == implied_parent;
    if (!parent_implied) annotate_int(event, "xsp.parent_id", static_cast<std::int64_t>(s.parent_id));
    // A parent elsewhere is mostly, for device work, the launch joined by correlation id, and for the rest (graph
    // replays under the host's step, driver calls under the op) the profiler's own context.
    const ParentRule implied_rule = parent_implied ? rule_if_implied
                                    : kernel_level ? ParentRule::kCorrelation
                                                   : ParentRule::kContext;
    if (s.parent_rule != implied_rule) annotate_string(event, "xsp.parent_rule", to_string(s.parent_rule));
    if (flow) event.fixed64(pb::kEventFlowIds, *flow);
    if (starts_flow) open_flow(*starts_flow);
  }

  /// The span's name as written (UTF-8, or with U+FFFD replacing invalid bytes), after checking everything that
  /// would make the span unwritable: nothing of a rejected span is written or interned.
  std::string checked_name(const Span& s) {
    if (finished) throw std::logic_error("perfetto export: add() after finish()");
    const auto what = [&] { return "span " + std::to_string(s.id); };
    if (s.end_ns < s.start_ns) {
      throw std::invalid_argument("perfetto export: " + what() + " ends at " + std::to_string(s.end_ns) +
                                  " ns, before its start " + std::to_string(s.start_ns) + " ns");
    }
    if (s.start_ns < 0) {
      throw std::invalid_argument("perfetto export: " + what() + " starts at " + std::to_string(s.start_ns) +
                                  " ns, before the clock's zero (Perfetto timestamps are unsigned)");
    }
    if (s.start_ns < last_start_ns) {
      throw std::invalid_argument("perfetto export: " + what() + " starts at " + std::to_string(s.start_ns) +
                                  " ns, before span " + std::to_string(last_span) + " at " +
                                  std::to_string(last_start_ns) + " ns: spans must come sorted by start");
    }
    // Strings are checked before anything of the span is written or interned, so a rejected span leaves nothing.
    if (!options.replace_invalid_utf8) {
      utf8(s.name, [&] { return "the name of " + what(); });
      for (const Tag& t : s.tags) {
        utf8(t.key, [&] { return "a tag key of " + what(); });
        utf8(t.value, [&] { return "tag '" + t.key + "' of " + what(); });
      }
    }
    return utf8(s.name, [&] { return "the name of " + what(); });
  }

  void add(const Span& s) {
    const std::string name = checked_name(s);
    const auto what = [&] { return "span " + std::to_string(s.id); };
    last_start_ns = s.start_ns;
    last_span = s.id;
    if (!started) start(s.start_ns);
    close_until(s.start_ns);

    TrackState& st = track_state(s.track);
    // The first lane whose innermost open slice contains this span; every open slice ends after s.start_ns here.
    std::size_t lane = 0;
    while (lane < st.lanes.size() && !st.lanes[lane].open_end_ns.empty() &&
           st.lanes[lane].open_end_ns.back() < s.end_ns) {
      ++lane;
    }
    if (lane == st.lanes.size()) {
      st.lanes.push_back(
          Lane{track_uuid(kOverlap, st.base_uuid, lane), {}, {}, {}, std::numeric_limits<std::int64_t>::min()});
    }
    // One reset check for all of the span's packets (descriptors, BEGIN, counters), so its counter tracks are
    // described in the generation that uses them.
    begin_event(st.lanes[lane].uuid);
    describe_lane(st, lane);
    std::vector<CounterSample> counters;
    bool counters_collide = false;  // a counter track already has a value at this span's start
    if (s.level == Level::kHardware) {
      counters = counter_samples(s, st);
      for (const CounterSample& c : counters) {
        const auto it = counter_last_ns.find(c.track);
        counters_collide = counters_collide || (it != counter_last_ns.end() && it->second == s.start_ns);
      }
    }
    std::vector<CounterEvent> counter_events = pack_counters(counters);

    begin_packet();
    Proto event;
    event.varint(pb::kEventType, pb::kTypeSliceBegin);
    track(event, st.lanes[lane].uuid);
    const std::string_view cat = kineto_category(s);
    event.varint(pb::kEventCategoryIids, intern(seq->categories, pb::kInternedEventCategories, std::string(cat)));
    event.varint(pb::kEventNameIid, intern(seq->names, pb::kInternedEventNames, name));
    annotate_tags(event, s, cat, counters_collide, what);
    annotate_identity(event, s, cat, st.lanes[lane]);
    extra_counters(event, counter_events[0]);
    Proto body;
    timestamp(body, s.start_ns);
    body.message(pb::kTrackEvent, event);
    end_packet(body, true);
    last_ts_ns = std::max(last_ts_ns, s.start_ns);

    write_counter_events(s, st, lane, counter_events);
    for (const CounterSample& c : counters) counter_last_ns[c.track] = s.start_ns;

    st.lanes[lane].open_end_ns.push_back(s.end_ns);
    st.lanes[lane].open_span_ids.push_back(s.id);
    st.lanes[lane].open_info.push_back({cat == "cuda_runtime", s.parent_id, s.parent_rule});
    open.push(Open{s.end_ns, ++open_seq, &st, lane});
    ++spans;
  }

  void finish() {
    if (finished) throw std::logic_error("perfetto export: finish() called twice");
    if (!started) start(0);
    close_until(std::numeric_limits<std::int64_t>::max());
    std::map<std::string, std::uint64_t> counters = trace_counters;
    if (invalid_utf8 != 0) counters[kInvalidUtf8Replaced] += invalid_utf8;
    if (!counters.empty()) {
      std::vector<Tag> tags;
      for (const auto& [name, value] : counters) tags.emplace_back(name, value);
      write_instant("xsp.counters", last_ts_ns, tags);
    }
    finished = true;
    out.flush();
  }
};

PerfettoWriter::PerfettoWriter(std::ostream& out, const TraceResource& resource, const ClockInfo& clock,
                               std::vector<TraceProcess> processes, PerfettoOptions options)
    : impl_(std::make_unique<Impl>(out, resource, clock, std::move(processes), options)) {}
PerfettoWriter::~PerfettoWriter() = default;
void PerfettoWriter::add(const Span& span) { impl_->add(span); }
void PerfettoWriter::add_counters(const std::map<std::string, std::uint64_t>& counters) {
  for (const auto& [name, value] : counters) impl_->trace_counters[name] += value;
}
void PerfettoWriter::finish() { impl_->finish(); }
std::uint64_t PerfettoWriter::bytes_written() const { return impl_->bytes; }
std::uint64_t PerfettoWriter::spans_written() const { return impl_->spans; }
std::uint64_t PerfettoWriter::invalid_utf8_replaced() const { return impl_->invalid_utf8; }
std::map<std::string, std::uint64_t> PerfettoWriter::assembly_counters(const AssemblyReport& a) {
  return {{"assembly.by_context", a.by_context},         {"assembly.by_correlation", a.by_correlation},
          {"assembly.by_containment", a.by_containment}, {"assembly.roots", a.roots},
          {"assembly.unparented", a.unparented},         {"assembly.dangling_parent_ids", a.dangling_parent_ids}};
}

void write_perfetto_trace(std::ostream& out, const Trace& trace, const TraceResource& resource,
                          const PerfettoOptions& options) {
  PerfettoWriter writer(out, resource, trace.clock, trace.processes, options);
  writer.add_counters(trace.counters);
  writer.add_counters(PerfettoWriter::assembly_counters(trace.assembly));

  const std::vector<Span>& spans = trace.spans;
  bool sorted = true;
  for (std::size_t i = 1; i < spans.size() && sorted; ++i) sorted = !in_order_before(spans[i], spans[i - 1]);
  if (sorted) {
    for (const Span& s : spans) {
      if (!out) return;
      writer.add(s);
    }
  } else {
    std::vector<std::uint32_t> index(spans.size());
    std::iota(index.begin(), index.end(), 0u);
    std::sort(index.begin(), index.end(),
              [&](std::uint32_t x, std::uint32_t y) { return in_order_before(spans[x], spans[y]); });
    for (std::uint32_t i : index) {
      if (!out) return;
      writer.add(spans[i]);
    }
  }
  if (out) writer.finish();
}

}  // namespace xsp
