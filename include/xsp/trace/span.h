// Span model of XSP (SPEC §2). Knows nothing of CUDA or of any framework.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

/// A key/value annotation. Values are strings; numeric tags are written in decimal.
struct Tag {
  std::string key;
  std::string value;
  bool operator==(const Tag&) const = default;
};

/// A timed interval on the host clock (nanoseconds of the trace's host clock, see ClockInfo).
struct Span {
  SpanId id = kNoSpan;
  SpanId parent_id = kNoSpan;
  Level level = Level::kApplication;
  ParentRule parent_rule = ParentRule::kNone;
  std::string name;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;  ///< end_ns >= start_ns
  /// Host thread id for CPU spans; for device work a track id (e.g. a stream) chosen by the profiler.
  std::uint64_t thread_id = 0;
  /// Joins asynchronous work to the call that issued it (0 = none). Rule (b) of SPEC §2: a span with a
  /// non-zero correlation id and no parent is parented by the shallowest-level span carrying the same id.
  std::uint64_t correlation_id = 0;
  std::vector<Tag> tags;

  std::int64_t duration_ns() const { return end_ns - start_ns; }
  /// Value of the first tag named `key`, or std::nullopt.
  std::optional<std::string_view> tag(std::string_view key) const;
  /// Numeric value of tag `key`; std::nullopt when absent or not an integer.
  std::optional<std::int64_t> tag_int(std::string_view key) const;
  bool operator==(const Span&) const = default;
};

}  // namespace xsp
