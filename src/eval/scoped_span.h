// Internal to xsp_eval: a MODEL span opened and closed around a pipeline stage, shared by the batch sweep
// (runner.cc) and the generation runner (generation_runner.cc).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "xsp/eval/measurement.h"
#include "xsp/trace/trace.h"

namespace xsp {

// Opens a span now and closes it (adding it to the recorder) when the scope ends; times on `clock`.
class ScopedSpan {
 public:
  ScopedSpan(const Clock& clock, TraceRecorder* recorder, Level level, std::string name, SpanId parent,
             std::vector<Tag> tags = {})
      : clock_(clock), recorder_(recorder) {
    span_.id = recorder ? recorder->next_id() : kNoSpan;
    span_.parent_id = parent;
    span_.parent_rule = parent == kNoSpan ? ParentRule::kNone : ParentRule::kContext;
    span_.level = level;
    span_.name = std::move(name);
    span_.track = Track::host_thread(current_thread_id());
    if (recorder) span_.tags = std::move(tags);
    span_.start_ns = clock_.now_ns();
  }
  ~ScopedSpan() { close(); }
  /// Ends the span now; returns its duration.
  std::int64_t close() {
    if (!closed_) {
      span_.end_ns = clock_.now_ns();
      closed_ = true;
      if (recorder_) recorder_->add(std::move(span_));
    }
    return span_.end_ns - span_.start_ns;
  }
  SpanId id() const { return span_.id; }
  /// When the span started (ns on the clock).
  std::int64_t start_ns() const { return span_.start_ns; }
  /// When it ended (ns); only meaningful after close().
  std::int64_t end_ns() const { return span_.end_ns; }

 private:
  const Clock& clock_;
  TraceRecorder* recorder_;
  Span span_;
  bool closed_ = false;
};

}  // namespace xsp
