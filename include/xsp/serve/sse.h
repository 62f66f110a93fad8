// Server-Sent Events, parsed incrementally (issue 27, docs/serving.md): the framing of the streamed responses of
// OpenAI-compatible servers (`data: {json}` events, `data: [DONE]` at the end). Bytes arrive in whatever pieces the
// socket reads give, so an event, a line or a CRLF pair may be split anywhere.
// Source: the WHATWG HTML standard, "Server-sent events", §9.2.6 "Interpreting an event stream".
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace xsp::serve {

/// An incremental SSE parser. Lines end in LF, CRLF or CR (a CR at the end of one piece and an LF at the start of the
/// next are one line end); a line starting with ':' is a comment; `data:` lines (one optional space after the colon
/// dropped) accumulate, joined by '\n', into the data of the event that a blank line dispatches; `event:`, `id:` and
/// `retry:` lines and unknown fields are ignored (OpenAI-compatible servers send none that matter). An event with no
/// data line is not dispatched. Not thread-safe: one parser per stream.
class SseParser {
 public:
  /// Called once per dispatched event with its data (without the trailing '\n').
  using OnData = std::function<void(std::string_view data)>;

  explicit SseParser(OnData on_data) : on_data_(std::move(on_data)) {}

  /// Feeds the next piece of the stream; calls OnData for every event it completes. Pieces of any size, empty included.
  void feed(std::string_view bytes);
  /// The stream ended: a last line without its line end is taken as a line, and an event whose data was read but
  /// whose blank line never came is dispatched (servers that close right after the last `data:` line). Idempotent.
  void finish();
  /// Bytes of an unfinished line held between feed() calls.
  std::size_t pending_bytes() const { return line_.size(); }
  /// Lines longer than this (bytes) are cut: a stream that never sends a line end cannot grow the parser without bound.
  static constexpr std::size_t kMaxLineBytes = 16 << 20;
  /// Whether a line was ever cut at kMaxLineBytes (the event it held is malformed).
  bool overflowed() const { return overflowed_; }

 private:
  void line(std::string_view text);
  OnData on_data_;
  std::string line_;  // the line being read
  std::string data_;  // the event being read
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte fed was a CR: an LF next is part of the same line end
  bool overflowed_ = false;
};

}  // namespace xsp::serve
