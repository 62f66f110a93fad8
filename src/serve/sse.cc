#include "xsp/serve/sse.h"

namespace xsp::serve {

void SseParser::feed(std::string_view bytes) {
  std::size_t i = 0;
  if (after_cr_ && !bytes.empty()) {
    after_cr_ = false;
    if (bytes.front() == '\n') i = 1;  // the LF of a CRLF split across two reads
  }
  while (i < bytes.size()) {
    const std::size_t end = bytes.find_first_of("\r\n", i);
    if (end == std::string_view::npos) {
      const std::string_view rest = bytes.substr(i);
      if (line_.size() + rest.size() > kMaxLineBytes) {
        overflowed_ = true;
        line_.append(rest.substr(0, kMaxLineBytes - line_.size()));
      } else {
        line_.append(rest);
      }
      return;
    }
    if (line_.empty()) {
      line(bytes.substr(i, end - i));
    } else {
      line_.append(bytes.substr(i, end - i));
      line(line_);
      line_.clear();
    }
    if (bytes[end] == '\r') {
      if (end + 1 == bytes.size()) {
        after_cr_ = true;
        return;
      }
      i = bytes[end + 1] == '\n' ? end + 2 : end + 1;
    } else {
      i = end + 1;
    }
  }
}

void SseParser::finish() {
  after_cr_ = false;
  if (!line_.empty()) {
    line(line_);
    line_.clear();
  }
  line("");  // the blank line a server closing early never sent
}

void SseParser::line(std::string_view text) {
  if (text.empty()) {
    if (has_data_) {
      has_data_ = false;
      // on_data_ may throw; the event is gone either way.
      std::string data = std::move(data_);
      data_.clear();
      on_data_(data);
    }
    return;
  }
  if (text.front() == ':') return;  // a comment (keep-alive pings)
  const std::size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  if (field != "data") return;
  std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

}  // namespace xsp::serve
