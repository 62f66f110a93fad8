#include "xsp/trace/span.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

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

std::vector<TraceLevel> level_sequence(TraceLevel setting, bool leveled) {
  std::vector<TraceLevel> levels;
  if (leveled) {
    levels.push_back(TraceLevel::kModel);
    if (setting >= TraceLevel::kFramework) levels.push_back(TraceLevel::kFramework);
  }
  // Counters come from a run of their own whose timings kernel replay distorts: the kernel run gives the durations.
  if (setting == TraceLevel::kHardware) {
    levels.push_back(TraceLevel::kKernel);
    levels.push_back(TraceLevel::kHardware);
  } else if (!leveled || setting > TraceLevel::kFramework) {
    levels.push_back(setting);
  }
  return levels;
}

bool enables(TraceLevel setting, Level level) {
  return static_cast<std::uint8_t>(level) <= static_cast<std::uint8_t>(deepest_level(setting));
}

std::string_view to_string(ParentRule rule) {
  switch (rule) {
    case ParentRule::kNone:
      return "none";
    case ParentRule::kContext:
      return "context";
    case ParentRule::kCorrelation:
      return "correlation";
    case ParentRule::kContainment:
      return "containment";
  }
  return "unknown";
}

std::string_view to_string(TagType type) {
  switch (type) {
    case TagType::kString:
      return "string";
    case TagType::kInt:
      return "int";
    case TagType::kReal:
      return "real";
    case TagType::kIntList:
      return "int_list";
  }
  return "unknown";
}

namespace {

std::string shortest(double v) {
  char buf[32];
  // to_chars without a precision gives the shortest text that reads back to the same double.
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, ptr) : std::to_string(v);
}

std::string join(const auto& values) {
  std::string out;
  for (std::int64_t x : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(x);
  }
  return out;
}

std::optional<std::int64_t> parse_int(std::string_view text) {
  std::int64_t out = 0;
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), last, out);
  // A partially numeric value ("12ms") is not an integer.
  if (text.empty() || ec != std::errc() || ptr != last) return std::nullopt;
  return out;
}

}  // namespace

Tag::Tag(std::string k, double v) : key(std::move(k)), value(shortest(v)), type(TagType::kReal) {
  if (!std::isfinite(v)) type = TagType::kString;
}
Tag::Tag(std::string k, std::initializer_list<std::int64_t> v)
    : key(std::move(k)), value(join(v)), type(TagType::kIntList) {}
Tag::Tag(std::string k, const std::vector<std::int64_t>& v)
    : key(std::move(k)), value(join(v)), type(TagType::kIntList) {}

std::optional<std::int64_t> Tag::as_int() const {
  if (type != TagType::kInt && type != TagType::kString) return std::nullopt;
  return parse_int(value);
}

std::optional<double> Tag::as_real() const {
  if (type == TagType::kIntList || value.empty()) return std::nullopt;
  double out = 0;
  const char* last = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), last, out);
  if (ec != std::errc() || ptr != last || !std::isfinite(out)) return std::nullopt;
  return out;
}

std::vector<std::int64_t> Tag::as_int_list() const {
  std::vector<std::int64_t> out;
  if (type != TagType::kIntList) return out;
  std::string_view rest = value;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    if (const auto x = parse_int(rest.substr(0, comma))) out.push_back(*x);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

std::string to_string(const Track& track) {
  if (track.is_device())
    return "GPU " + std::to_string(track.device) + " stream " + std::to_string(track.stream_number()) +
           (track.process_index() > 0 ? " (process #" + std::to_string(track.process_index()) + ")" : "");
  return "thread " + std::to_string(track.id);
}

const Tag* Span::find_tag(std::string_view key) const {
  for (const Tag& t : tags) {
    if (t.key == key) return &t;
  }
  return nullptr;
}

std::optional<std::string_view> Span::tag(std::string_view key) const {
  for (const Tag& t : tags) {
    if (t.key == key) return std::string_view(t.value);
  }
  return std::nullopt;
}

std::optional<std::int64_t> Span::tag_int(std::string_view key) const {
  const auto value = tag(key);
  if (!value) return std::nullopt;
  return parse_int(*value);
}

}  // namespace xsp
