// Span model of XSP (SPEC §2). Knows nothing of CUDA or of any framework.
#pragma once

#include <compare>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace xsp {

/// Where in the stack a span comes from, outermost first (numbering follows MLModelScope's trace levels).
enum class Level : std::uint8_t {
  kApplication = 0,  ///< a whole evaluation / benchmark (the harness)
  kModel = 1,        ///< pipeline stages: input, preprocess, predict, postprocess (one span per batch)
  kFramework = 2,    ///< operators/layers as the framework sees them
  kLibrary = 3,      ///< ML-library calls and NVTX ranges
  kSystem = 4,       ///< CUDA runtime/driver API calls
  kKernel = 5,       ///< GPU kernels, memcpy, memset as they ran on the device
  kHardware = 6,     ///< counter values attached to a kernel or range
};

/// Lower-case name of a level ("application", "model", ...).
std::string_view to_string(Level level);
/// Parses a level name as written by to_string(); std::nullopt for anything else.
std::optional<Level> parse_level(std::string_view name);

/// A trace-level setting enables every level from APPLICATION down to the one named (SPEC §2).
/// `full` is the same as `hardware`.
enum class TraceLevel : std::uint8_t { kModel, kFramework, kLibrary, kSystem, kKernel, kHardware };
std::string_view to_string(TraceLevel level);
/// Accepts model|framework|library|system|kernel|hardware|full; std::nullopt for anything else.
std::optional<TraceLevel> parse_trace_level(std::string_view name);
/// Whether spans of `level` are recorded under the trace-level setting `setting`.
bool enables(TraceLevel setting, Level level);
/// The deepest span level a trace-level setting enables.
Level deepest_level(TraceLevel setting);
/// The trace levels of a run sequence (SPEC §3), in the order they run: {setting}, or when `leveled` M, then M/F when
/// `setting` is framework or deeper, then `setting` when it is deeper than framework. hardware is a counter run that
/// never gives timings and always needs a kernel run for them: {kernel, hardware}, leveled {M, M/F, M/F/K, hardware}.
/// Shared by in-process evaluations (run_levels()) and profiled commands (external::command_levels()).
std::vector<TraceLevel> level_sequence(TraceLevel setting, bool leveled);

using SpanId = std::uint64_t;
inline constexpr SpanId kNoSpan = 0;  ///< "no parent" / "no span"; real ids start at 1

/// How a span got its parent (SPEC §2, "Parents").
enum class ParentRule : std::uint8_t {
  kNone = 0,         ///< not placed (root, or unparented)
  kContext = 1,      ///< the profiler knew it when it opened the span
  kCorrelation = 2,  ///< joined through a correlation id (asynchronous GPU work)
  kContainment = 3,  ///< innermost shallower-level span on the same thread whose interval contains it
};
std::string_view to_string(ParentRule rule);

/// How a tag's value is typed. Exporters write kInt and kReal as JSON numbers (OTLP intValue/doubleValue) and
/// kIntList as an array, so Perfetto SQL, TraceQL and pandas can sum and compare them (docs/exports.md).
enum class TagType : std::uint8_t {
  kString = 0,
  kInt = 1,      ///< a signed 64-bit integer
  kReal = 2,     ///< a double
  kIntList = 3,  ///< a short list of integers, e.g. a CUDA grid "x,y,z"
};
std::string_view to_string(TagType type);

/// A key/value annotation. `value` always holds the text form (decimal for kInt, the shortest text that reads
/// back to the same double for kReal, comma-separated decimals for kIntList), so readers that only want text
/// need not look at `type`; the constructors set both.
struct Tag {
  std::string key;
  std::string value;
  TagType type = TagType::kString;

  Tag() = default;
  Tag(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  Tag(std::string k, const char* v) : key(std::move(k)), value(v) {}
  /// A boolean is written as the string "true"/"false" (OTLP has boolValue, Chrome JSON true/false, but no
  /// consumer sums them; keeping text avoids a fifth type).
  Tag(std::string k, bool v) : key(std::move(k)), value(v ? "true" : "false") {}
  /// An integer tag. Unsigned values above INT64_MAX do not fit kInt and are kept as text.
  template <std::integral I>
  requires(!std::same_as<I, bool> && !std::same_as<I, char>) Tag(std::string k, I v)
      : key(std::move(k)), value(std::to_string(v)), type(TagType::kInt) {
    if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(std::int64_t)) {
      if (v > static_cast<I>(std::numeric_limits<std::int64_t>::max())) type = TagType::kString;
    }
  }
  /// A real tag; non-finite values are kept as text ("nan", "inf"), since JSON has no number for them.
  Tag(std::string k, double v);
  /// An integer-list tag (e.g. grid {x, y, z}).
  Tag(std::string k, std::initializer_list<std::int64_t> v);
  Tag(std::string k, const std::vector<std::int64_t>& v);

  /// The integer of a kInt tag (or of a kString tag holding exactly a decimal integer); std::nullopt otherwise.
  std::optional<std::int64_t> as_int() const;
  /// The number of a kInt/kReal tag (or of a kString tag holding exactly a number); std::nullopt otherwise.
  std::optional<double> as_real() const;
  /// The integers of a kIntList tag; empty when the tag is of another type.
  std::vector<std::int64_t> as_int_list() const;
  bool operator==(const Tag&) const = default;
};

/// Where a span ran: a host thread, or one stream of one GPU. Exporters map host tracks to (one process, one
/// thread per OS thread) and device tracks to (one process per GPU, one thread per stream), as Kineto does.
struct Track {
  /// `device` of a host-thread track.
  static constexpr std::uint32_t kHost = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t device = kHost;  ///< CUDA device ordinal, or kHost
  /// host: OS thread id (gettid); device: stream id (CUPTI streamId, 32 bits) in the low 32 bits, and in a trace
  /// of several processes (Trace::processes) the position + 1 of the process that ran the stream above them, so that
  /// two processes' streams of the same number stay two tracks (0: the trace's one process).
  std::uint64_t id = 0;

  static constexpr Track host_thread(std::uint64_t thread_id) { return Track{kHost, thread_id}; }
  /// Stream `stream_id` (< 2^32) of GPU `device`, run by Trace::processes[process - 1] (process 0: the only one).
  static constexpr Track stream(std::uint32_t device, std::uint64_t stream_id, std::uint32_t process = 0) {
    return Track{device, (static_cast<std::uint64_t>(process) << 32) | (stream_id & 0xffffffffu)};
  }
  constexpr bool is_device() const { return device != kHost; }
  /// A device track's CUDA stream number (the low 32 bits of id).
  constexpr std::uint64_t stream_number() const { return id & 0xffffffffu; }
  /// A device track's process: position + 1 in Trace::processes, 0 when the trace has one process.
  constexpr std::uint32_t process_index() const { return is_device() ? static_cast<std::uint32_t>(id >> 32) : 0; }
  auto operator<=>(const Track&) const = default;
};

/// "thread 1234", "GPU 0 stream 7", or in a trace of several processes "GPU 0 stream 7 (process #2)" (the position
/// + 1 in Trace::processes).
std::string to_string(const Track& track);

/// A timed interval on the host clock (nanoseconds of the trace's host clock, see ClockInfo).
struct Span {
  SpanId id = kNoSpan;
  SpanId parent_id = kNoSpan;
  Level level = Level::kApplication;
  ParentRule parent_rule = ParentRule::kNone;
  std::string name;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;  ///< end_ns >= start_ns
  /// The host thread or GPU stream the span ran on. Containment (SPEC §2, rule c) only looks within a track.
  Track track;
  /// Joins asynchronous work to the call that issued it (0 = none). Rule (b) of SPEC §2: a span with a
  /// non-zero correlation id and no parent is parented by the shallowest-level span carrying the same id.
  std::uint64_t correlation_id = 0;
  std::vector<Tag> tags;

  std::int64_t duration_ns() const { return end_ns - start_ns; }
  /// Value of the first tag named `key`, or std::nullopt.
  std::optional<std::string_view> tag(std::string_view key) const;
  /// Numeric value of tag `key`; std::nullopt when absent or not an integer.
  std::optional<std::int64_t> tag_int(std::string_view key) const;
  /// The tag named `key` itself (type included), or nullptr.
  const Tag* find_tag(std::string_view key) const;
  bool operator==(const Span&) const = default;
};

}  // namespace xsp
