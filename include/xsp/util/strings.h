// The few string helpers the libraries share (one definition instead of one per file): trimming, ASCII lower
// case and joining. Header-only, no dependency beyond the standard library.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace xsp::util {

/// `text` without the leading and trailing characters in `chars` (default: ASCII blanks and line ends; HTTP's
/// optional whitespace is " \t", RFC 9110 §5.6.3). Returns a view into `text`.
inline std::string_view trim(std::string_view text, std::string_view chars = " \t\r\n") {
  const auto first = text.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(chars);
  return text.substr(first, last - first + 1);
}

/// `text` with ASCII letters lowered; other bytes (UTF-8 included) unchanged, whatever the C locale says.
inline std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

/// The items of `parts` with `separator` between them ("" for none).
inline std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty() || &p != &parts.front()) out += separator;
    out += p;
  }
  return out;
}

}  // namespace xsp::util
