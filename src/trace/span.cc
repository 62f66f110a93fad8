#include "xsp/trace/span.h"

#include <array>
#include <charconv>

namespace xsp {

namespace {

constexpr std::array<std::string_view, 7> kLevelNames = {"application", "model",  "framework", "library",
                                                         "system",      "kernel", "hardware"};
constexpr std::array<std::string_view, 6> kTraceLevelNames = {"model",  "framework", "library",
                                                              "system", "kernel",    "hardware"};

}  // namespace

std::string_view to_string(Level level) {
  const auto i = static_cast<std::size_t>(level);
  return i < kLevelNames.size() ? kLevelNames[i] : std::string_view("unknown");
}

std::optional<Level> parse_level(std::string_view name) {
  for (std::size_t i = 0; i < kLevelNames.size(); ++i) {
    if (kLevelNames[i] == name) return static_cast<Level>(i);
  }
  return std::nullopt;
}

std::string_view to_string(TraceLevel level) {
  const auto i = static_cast<std::size_t>(level);
  return i < kTraceLevelNames.size() ? kTraceLevelNames[i] : std::string_view("unknown");
}

std::optional<TraceLevel> parse_trace_level(std::string_view name) {
  if (name == "full") return TraceLevel::kHardware;
  for (std::size_t i = 0; i < kTraceLevelNames.size(); ++i) {
    if (kTraceLevelNames[i] == name) return static_cast<TraceLevel>(i);
  }
  return std::nullopt;
}

Level deepest_level(TraceLevel setting) {
  // TraceLevel starts at MODEL, Level at APPLICATION: the two enumerations are one apart.
  return static_cast<Level>(static_cast<std::uint8_t>(setting) + 1);
}

bool enables(TraceLevel setting, Level level) {
  return static_cast<std::uint8_t>(level) <= static_cast<std::uint8_t>(deepest_level(setting));
}

std::string_view to_string(ParentRule rule) {
  switch (rule) {
    case ParentRule::kNone: return "none";
    case ParentRule::kContext: return "context";
    case ParentRule::kCorrelation: return "correlation";
    case ParentRule::kContainment: return "containment";
  }
  return "unknown";
}

std::optional<std::string_view> Span::tag(std::string_view key) const {
  for (const Tag& t : tags) {
    if (t.key == key) return std::string_view(t.value);
  }
  return std::nullopt;
}

std::optional<std::int64_t> Span::tag_int(std::string_view key) const {
  const auto value = tag(key);
  if (!value || value->empty()) return std::nullopt;
  std::int64_t out = 0;
  const char* first = value->data();
  const char* last = first + value->size();
  const auto [ptr, ec] = std::from_chars(first, last, out);
  // A partially numeric value ("12ms") is not an integer tag.
  if (ec != std::errc() || ptr != last) return std::nullopt;
  return out;
}

}  // namespace xsp
