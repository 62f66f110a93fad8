// The run session: see include/xsp/eval/session.h.
#include "xsp/eval/session.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "xsp/trace/assembler.h"
#include "xsp/trace/run_statistics.h"

namespace xsp {

RunSession::RunSession(SessionOptions options)
    : profilers_(options.profilers),
      clock_(options.clock ? *options.clock : system_clock()),
      interrupt_(options.interrupt),
      record_machine_state_(options.record_machine_state),
      progress_(std::move(options.progress)) {}

void RunSession::start(TraceRecorder& recorder, TraceLevel level, bool uniform_batches) {
  if (started_) throw std::logic_error("RunSession::start: a block is already started");
  FrameworkProfiler* framework = enables(level, Level::kFramework) ? profilers_.framework : nullptr;
  if (enables(level, Level::kFramework) && framework == nullptr)
    throw std::logic_error("RunSession::start: trace level '" + std::string(to_string(level)) +
                           "' needs a framework profiler");
  DeviceProfiler* device = level == TraceLevel::kHardware    ? profilers_.counters
                           : enables(level, Level::kLibrary) ? profilers_.device
                                                             : nullptr;
  if ((level == TraceLevel::kHardware || enables(level, Level::kLibrary)) && device == nullptr)
    throw std::logic_error("RunSession::start: trace level '" + std::string(to_string(level)) +
                           "' needs a device profiler");
  clock_mapping_.clear();
  if (framework) {
    framework->set_correlation_listener(device ? device->correlation_listener() : nullptr);
    framework->set_uniform_batches(uniform_batches);
  }
  if (device) {
    DeviceProfilerOptions o;
    o.library = enables(level, Level::kLibrary);
    o.system = enables(level, Level::kSystem);
    o.kernel = enables(level, Level::kKernel);
    if (level == TraceLevel::kHardware) {
      counters_unavailable_.clear();
      try {
        device->start(recorder, o);
      } catch (const std::runtime_error& e) {
        // Counters can be unavailable where tracing works (profiling restricted to admins, another profiler
        // attached, a virtualized GPU): the run goes on without them and says why.
        counters_unavailable_ = e.what();
        recorder.count(stat::kCountersUnavailable, 1);
        device = nullptr;
        if (framework) framework->set_correlation_listener(nullptr);
      }
    } else {
      try {
        device->start(recorder, o);
      } catch (...) {
        if (framework) framework->set_correlation_listener(nullptr);
        throw;
      }
    }
  }
  if (framework) {
    try {
      framework->start(recorder, kNoSpan);
    } catch (...) {
      if (device) device->stop();
      framework->set_correlation_listener(nullptr);
      throw;
    }
  }
  started_ = true;
  running_framework_ = framework;
  running_device_ = device;
  uniform_batches_ = uniform_batches;
}

void RunSession::stop() {
  if (!started_) return;
  started_ = false;
  if (running_device_) {
    running_device_->stop();
    clock_mapping_ = running_device_->clock_mapping();
  }
  if (running_framework_) {
    running_framework_->stop();
    running_framework_->set_correlation_listener(nullptr);
    if (!uniform_batches_) running_framework_->set_uniform_batches(true);
  }
  running_framework_ = nullptr;
  running_device_ = nullptr;
}

void RunSession::set_parent(SpanId span) {
  if (running_framework_) running_framework_->set_parent(span);
}

void RunSession::check_interrupt() {
  if (const int sig = interrupt_signal(); sig != 0) {
    stop();  // profilers off before the run is abandoned
    throw RunInterrupted{sig};
  }
}

Trace close_run_trace(std::vector<Span> spans, Span app, const std::map<std::string, std::uint64_t>& counters,
                      const std::string& clock_mapping, const Clock& clock) {
  app.level = Level::kApplication;
  app.track = Track::host_thread(current_thread_id());
  if (app.start_ns > app.end_ns) {
    app.start_ns = std::numeric_limits<std::int64_t>::max();
    app.end_ns = std::numeric_limits<std::int64_t>::min();
  }
  for (const Span& s : spans) {
    app.start_ns = std::min(app.start_ns, s.start_ns);
    app.end_ns = std::max(app.end_ns, s.end_ns);
  }
  if (app.start_ns > app.end_ns) app.start_ns = app.end_ns = clock.now_ns();
  Trace trace;
  trace.spans = std::move(spans);
  trace.spans.push_back(std::move(app));
  for (const auto& [name, value] : counters) trace.counters[name] += value;
  trace.clock.unix_offset_ns = unix_offset_now_ns();
  trace.clock.device_clock_mapping = clock_mapping;
  assemble(trace);
  return trace;
}

}  // namespace xsp
