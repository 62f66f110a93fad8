// Trace export throughput (docs/exports.md) on a real GPU trace: the kernel-level run of the H200 ResNet-18
// fixture (tests/fixtures/gpu/resnet18_bs1_kernel_h200.db, 1,209 spans), repeated COPIES times end to end (ids and
// correlation ids offset, times shifted) so the trace has the size of a long profile.
// Usage: bench_export [COPIES] [REPEATS]. Prints per format the median and range of REPEATS timings, spans/s and
// the output size; files go to a temporary folder that is removed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "xsp/store/store.h"
#include "xsp/store/trace_export.h"

using namespace xsp;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const int copies = argc > 1 ? std::atoi(argv[1]) : 200;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  if (copies < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: bench_export [COPIES >= 1] [REPEATS >= 1]\n");
    return 2;
  }
  std::string tmpl = (fs::temp_directory_path() / "xsp-bench-export-XXXXXX").string();
  const fs::path dir = mkdtemp(tmpl.data());
  const fs::path store_file = dir / "K.db";  // a copy: opening a store migrates it
  fs::copy_file(fs::path(XSP_SOURCE_DIR) / "tests" / "fixtures" / "gpu" / "resnet18_bs1_kernel_h200.db", store_file);
  EvaluationRecord record = *Store::open(store_file)->load(1);
  RunRecord run = choose_run(record, {});

  const Trace one = run.trace;
  std::int64_t first = one.spans.front().start_ns, last = first;
  SpanId max_id = 0;
  std::uint64_t max_corr = 0;
  for (const Span& s : one.spans) {
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns);
    max_id = std::max(max_id, s.id);
    max_corr = std::max(max_corr, s.correlation_id);
  }
  run.trace.spans.clear();
  run.trace.spans.reserve(one.spans.size() * copies);
  for (int c = 0; c < copies; ++c) {
    for (Span s : one.spans) {
      const auto k = static_cast<std::uint64_t>(c);
      s.id += k * max_id;
      if (s.parent_id != kNoSpan) s.parent_id += k * max_id;
      if (s.correlation_id != 0) s.correlation_id += k * max_corr;
      s.start_ns += static_cast<std::int64_t>(c) * (last - first);
      s.end_ns += static_cast<std::int64_t>(c) * (last - first);
      run.trace.spans.push_back(std::move(s));
    }
  }
  const double spans = static_cast<double>(run.trace.spans.size());
  std::printf("trace: %zu spans (%d copies of run %lld of the fixture), %d repeats\n", run.trace.spans.size(), copies,
              static_cast<long long>(run.id), repeats);
  std::printf("%-7s %10s %21s %14s %12s\n", "format", "median_s", "range_s", "spans_per_s", "bytes");
  for (TraceFormat f : {TraceFormat::kChrome, TraceFormat::kOtlp, TraceFormat::kSqlite}) {
    const fs::path out = dir / ("trace." + std::string(to_string(f)));
    std::vector<double> seconds;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      export_run_trace(record, run, f, out);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds.size() % 2 ? seconds[seconds.size() / 2]
                                             : (seconds[seconds.size() / 2 - 1] + seconds[seconds.size() / 2]) / 2;
    std::printf("%-7s %10.3f %10.3f..%-10.3f %14.0f %12ju\n", std::string(to_string(f)).c_str(), median,
                seconds.front(), seconds.back(), spans / median, static_cast<std::uintmax_t>(fs::file_size(out)));
  }
  fs::remove_all(dir);
  return 0;
}
