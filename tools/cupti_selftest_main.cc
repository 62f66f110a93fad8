// Self-test of the CUPTI device profiler on a real GPU: runs a known workload (tools/cupti_selftest.cu) under two
// fake framework ops and checks the assembled trace against docs/spans.md. Exit status 0 = every check passed,
// 1 = a check failed, 2 = the profiler or CUDA failed.
//
//   build/xsp_cupti_selftest [RUNS]     # RUNS profiled runs in one process (default 2: start/stop twice)
//   XSP_DUMP_GPU_ACTIVITY=tests/fixtures/gpu build/xsp_cupti_selftest 1   # also records the fixture
//   build/xsp_cupti_selftest 1 t.xspt   # also writes the assembled trace (xsp-trace blob) of run 0 to t.xspt
// The profiler's options come from the XSP_* variables of env_overrides() (xsp/profilers/profiler_options.h), as
// for `xsp evaluate`, so one script can run both the same way; a bad value exits 2.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cupti_selftest.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/profilers/profiler_options.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/serialize.h"

namespace {

int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "  ok  " : "  FAIL", what.c_str());
  if (!ok) ++failures;
}

/// One profiled run of the workload; returns 2 when the profiler fails, else 0 (checks count in `failures`).
int profile_once(int run, const xsp::CuptiOptions& options, const std::string& dump_trace) {
  using namespace xsp;
  std::printf("== run %d\n", run);
  const std::int64_t bytes = static_cast<std::int64_t>(selftest::buffer_bytes());

  TraceRecorder recorder;
  std::unique_ptr<DeviceProfiler> profiler = create_device_profiler(options);
  try {
    // Before any NVTX call: start() points NVTX_INJECTION64_PATH at libcupti when it is unset.
    profiler->start(recorder, DeviceProfilerOptions{});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: start: %s\n", e.what());
    return 2;
  }
  OpCorrelationListener* listener = profiler->correlation_listener();
  const std::uint64_t tid = current_thread_id();

  // Spans the harness and a framework profiler would make: application > predict > op A, op B.
  const SpanId app = recorder.next_id(), predict = recorder.next_id(), op_a = recorder.next_id(),
               op_b = recorder.next_id();
  auto host_span = [&](SpanId id, SpanId parent, Level level, const char* name, std::int64_t s, std::int64_t e) {
    Span span;
    span.id = id;
    span.parent_id = parent;
    span.level = level;
    span.name = name;
    span.start_ns = s;
    span.end_ns = e;
    span.track = Track::host_thread(tid);
    recorder.add(std::move(span));
  };

  const std::int64_t t_app = now_ns();
  const std::int64_t t_predict = now_ns();

  const std::int64_t a0 = now_ns();
  listener->op_enter(op_a);
  selftest::op_a_work();
  listener->op_exit(op_a);
  const std::int64_t a1 = now_ns();

  const std::int64_t b0 = now_ns();
  listener->op_enter(op_b);
  selftest::op_b_work();
  listener->op_exit(op_b);
  const std::int64_t b1 = now_ns();

  selftest::synchronize();  // outside any op: placed under predict by containment
  const std::int64_t t_predict_end = now_ns();

  host_span(op_a, predict, Level::kFramework, "op.A", a0, a1);
  host_span(op_b, predict, Level::kFramework, "op.B", b0, b1);
  host_span(predict, app, Level::kModel, "predict", t_predict, t_predict_end);

  try {
    profiler->stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: stop: %s\n", e.what());
    return 2;
  }
  host_span(app, kNoSpan, Level::kApplication, "selftest", t_app, now_ns());

  Trace trace = recorder.take();
  trace.clock.device_clock_mapping = profiler->clock_mapping();
  const AssemblyReport report = assemble(trace);

  std::map<SpanId, const Span*> by_id;
  for (const Span& s : trace.spans) by_id[s.id] = &s;
  auto parent_of = [&](const Span& s) -> const Span* {
    const auto it = by_id.find(s.parent_id);
    return it == by_id.end() ? nullptr : it->second;
  };
  auto has_ancestor = [&](const Span& s, SpanId ancestor) {
    for (const Span* p = parent_of(s); p != nullptr; p = parent_of(*p)) {
      if (p->id == ancestor) return true;
    }
    return false;
  };

  std::printf("clock: %s\n", trace.clock.device_clock_mapping.c_str());
  std::printf("spans: %zu (context %zu, correlation %zu, containment %zu, unparented %zu)\n", trace.spans.size(),
              report.by_context, report.by_correlation, report.by_containment, report.unparented);
  for (const Span& s : trace.spans) {
    const Span* p = parent_of(s);
    std::printf("  %-9s %-44.44s %10lld ns  parent=%-28.28s (%s)\n", std::string(to_string(s.level)).c_str(),
                s.name.c_str(), static_cast<long long>(s.duration_ns()), p ? p->name.c_str() : "-",
                std::string(to_string(s.parent_rule)).c_str());
  }
  std::printf("counters:\n");
  for (const auto& [k, v] : trace.counters) {
    std::printf("  %s = %llu\n", k.c_str(), static_cast<unsigned long long>(v));
  }

  std::printf("checks:\n");
  int kernels = 0, graph_kernels = 0, memcpys = 0, memsets = 0, markers = 0;
  bool kernel_parents_system = true, graph_under_launch = true, graph_under_b = true, memcpy_under_b = true;
  int adds_under_a = 0, adds_under_b = 0;
  std::set<Track> streams;
  bool memset_under_a = false, marker_under_a = false, sync_under_predict = false;
  for (const Span& s : trace.spans) {
    const Span* p = parent_of(s);
    if (s.level == Level::kKernel) {
      if (p == nullptr || p->level != Level::kSystem) {
        kernel_parents_system = false;
        std::printf("  (KERNEL span without a SYSTEM parent: %s)\n", s.name.c_str());
      }
      const std::string_view kind = s.tag("kind").value_or("");
      if (kind == "kernel") {
        ++kernels;
        if (s.tag("attribution") == std::optional<std::string_view>("graph-launch")) {
          ++graph_kernels;
          graph_under_launch = graph_under_launch && p != nullptr && p->name == "cudaGraphLaunch";
          graph_under_b = graph_under_b && has_ancestor(s, op_b);
        } else if (s.name.find("vector_add") != std::string::npos) {
          if (has_ancestor(s, op_a)) ++adds_under_a;
          if (has_ancestor(s, op_b)) ++adds_under_b;
        }
        streams.insert(s.track);
      } else if (kind == "memcpy") {
        ++memcpys;
        memcpy_under_b = memcpy_under_b && has_ancestor(s, op_b) && s.tag_int("bytes") == bytes;
      } else if (kind == "memset") {
        ++memsets;
        memset_under_a = has_ancestor(s, op_a);
      }
    } else if (s.level == Level::kLibrary && s.name == selftest::kNvtxRange) {
      ++markers;
      marker_under_a = s.parent_id == op_a;
    } else if (s.level == Level::kSystem && s.name == "cudaStreamSynchronize" && s.start_ns >= b1) {
      sync_under_predict = s.parent_id == predict;
    }
  }
  auto counter = [&](const char* name) -> long long {
    const auto it = trace.counters.find(name);
    return it == trace.counters.end() ? -1 : static_cast<long long>(it->second);
  };
  expect(kernel_parents_system, "every KERNEL span has a SYSTEM parent (correlation id)");
  expect(kernels == 6, "6 kernels ran (2 vector adds + 2 graph replays x 2 nodes): " + std::to_string(kernels));
  expect(adds_under_a == 1 && adds_under_b == 1, "one vector_add kernel under op A, one under op B");
  expect(streams.size() == 2, "kernels ran on 2 stream tracks: " + std::to_string(streams.size()));
  expect(memsets == 1 && memset_under_a, "1 memset, under op A: " + std::to_string(memsets));
  expect(memcpys == 2 && memcpy_under_b, "2 memcpys of the buffer size, under op B: " + std::to_string(memcpys));
  expect(graph_kernels == 4,
         "4 graph-replayed kernels tagged attribution=graph-launch: " + std::to_string(graph_kernels));
  expect(graph_under_launch && graph_under_b, "graph kernels hang under cudaGraphLaunch, under op B");
  expect(markers == 1 && marker_under_a, "the NVTX range is a LIBRARY span under op A (NVTX_INJECTION64_PATH)");
  expect(sync_under_predict, "cudaStreamSynchronize outside any op is placed under predict by containment");
  expect(counter("cupti.dropped_records") == 0, "cupti.dropped_records == 0");
  expect(counter("cupti.orphan_activities") == 0, "cupti.orphan_activities == 0");
  expect(counter("cupti.buffers_completed") > 0, "cupti.buffers_completed > 0");
  expect(counter("cupti.external_correlation_errors") <= 0, "no external correlation push/pop errors");
  expect(report.unparented == 0, "no unparented spans: " + std::to_string(report.unparented));

  if (!dump_trace.empty() && run == 0) {
    const char* dump = dump_trace.c_str();
    const std::vector<std::uint8_t> blob = encode_trace(trace);
    std::FILE* f = std::fopen(dump, "wb");
    if (f == nullptr || std::fwrite(blob.data(), 1, blob.size(), f) != blob.size() || std::fclose(f) != 0) {
      std::fprintf(stderr, "FAIL: cannot write %s\n", dump);
      return 2;
    }
    std::printf("wrote %s (%zu bytes)\n", dump, blob.size());
  }

  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!xsp::have_device_profiler()) {
    std::fprintf(stderr, "FAIL: this build has no device profiler\n");
    return 2;
  }
  xsp::CuptiOptions options;
  try {
    xsp::CounterOptions unused;
    xsp::apply_env_overrides(options, unused);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 2;
  }
  std::printf("options: api source %s, clock %s, zeroed buffers %d, latency timestamps %d, all apis %d, dump %s\n",
              std::string(to_string(options.api_source)).c_str(), std::string(to_string(options.clock)).c_str(),
              options.zeroed_buffers, options.latency_timestamps, options.all_apis,
              options.dump_dir.empty() ? "-" : options.dump_dir.c_str());
  const int runs = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::string dump_trace = argc > 2 ? argv[2] : "";
  selftest::setup();  // allocations and graph capture: outside the profiled runs
  for (int run = 0; run < runs; ++run) {
    if (profile_once(run, options, dump_trace) != 0) return 2;
  }
  selftest::teardown();
  std::printf("%s (%d failed)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
