// Trace export throughput and memory (docs/exports.md) on a real GPU trace: the kernel-level run of the H200
// ResNet-18 fixture (tests/fixtures/gpu/resnet18_bs1_kernel_h200.db, 1,209 spans), repeated COPIES times end to
// end (ids and correlation ids offset, times shifted) so the trace has the size of a long profile.
// Usage: bench_export [COPIES] [REPEATS]. Each export runs in a fresh child process (bench_export --format F
// --copies N), so one format's peak memory cannot hide another's. Prints per format the median and range over
// REPEATS of the export time, spans/s, the trace's own memory, the export's extra peak memory (per million spans)
// and the output size; files go to a temporary folder that is removed.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "xsp/store/store.h"
#include "xsp/store/trace_export.h"

using namespace xsp;
namespace fs = std::filesystem;

namespace {

/// A field of /proc/self/status in bytes (VmRSS, VmHWM), 0 when unreadable.
std::int64_t status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
      return std::atoll(line.c_str() + n + 1) * 1024;  // the kernel reports kB
    }
  }
  return 0;
}

/// Resets VmHWM to the current RSS (Linux >= 4.0), so the next VmHWM is the peak of what follows alone.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

fs::path make_temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "xsp-bench-export-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("bench_export: mkdtemp");
    std::exit(1);
  }
  return tmpl;
}

/// Child mode: builds the COPIES-times trace, exports it once in `format` to `dir`, and prints one line
/// "SPANS SECONDS TRACE_BYTES EXPORT_PEAK_BYTES FILE_BYTES". TRACE_BYTES is the RSS the built trace added;
/// EXPORT_PEAK_BYTES the peak RSS during the export above the RSS just before it.
int run_one(TraceFormat format, int copies, const fs::path& dir) {
  const fs::path store_file = dir / "K.db";  // a copy: opening a store migrates it
  fs::copy_file(fs::path(XSP_SOURCE_DIR) / "tests" / "fixtures" / "gpu" / "resnet18_bs1_kernel_h200.db", store_file,
                fs::copy_options::overwrite_existing);
  EvaluationRecord record = *Store::open(store_file)->load(1);
  RunRecord run = choose_run(record, {});
  for (RunRecord& r : record.runs) r.trace = Trace{};  // only `run` is exported; the copies stay out of the figures

  const std::int64_t rss_before_trace = status_bytes("VmRSS");
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
  run.trace.spans.shrink_to_fit();
  run.trace.spans.reserve(one.spans.size() * static_cast<std::size_t>(copies));
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
  const std::int64_t rss_before_export = status_bytes("VmRSS");
  if (!reset_peak_rss()) {
    std::fprintf(stderr, "bench_export: cannot reset the peak RSS (/proc/self/clear_refs)\n");
    return 1;
  }
  const fs::path out = dir / ("trace." + std::string(to_string(format)));
  const auto t0 = std::chrono::steady_clock::now();
  export_run_trace(record, run, format, out);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::int64_t peak = status_bytes("VmHWM");
  std::printf("%zu %.6f %lld %lld %ju\n", run.trace.spans.size(), seconds,
              static_cast<long long>(rss_before_export - rss_before_trace),
              static_cast<long long>(std::max<std::int64_t>(0, peak - rss_before_export)),
              static_cast<std::uintmax_t>(fs::file_size(out)));
  return 0;
}

struct Sample {
  double spans = 0, seconds = 0, trace_bytes = 0, export_peak_bytes = 0, file_bytes = 0;
};

std::optional<Sample> run_child(const char* self, TraceFormat format, int copies, const fs::path& dir) {
  const std::string cmd = std::string("'") + self + "' --format " + std::string(to_string(format)) + " --copies " +
                          std::to_string(copies) + " --dir '" + dir.string() + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  Sample s;
  const int n =
      std::fscanf(p, "%lf %lf %lf %lf %lf", &s.spans, &s.seconds, &s.trace_bytes, &s.export_peak_bytes, &s.file_bytes);
  const int status = pclose(p);
  if (n != 5 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return s;
}

using bench::Stats;
using bench::stats;

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--format") == 0) {
    const std::optional<TraceFormat> f = argc > 2 ? parse_trace_format(argv[2]) : std::nullopt;
    const int copies = argc > 4 && std::strcmp(argv[3], "--copies") == 0 ? std::atoi(argv[4]) : 0;
    if (!f || copies < 1) {
      std::fprintf(stderr, "usage: bench_export --format chrome|otlp|sqlite --copies N [--dir DIR]\n");
      return 2;
    }
    if (argc > 6 && std::strcmp(argv[5], "--dir") == 0) return run_one(*f, copies, argv[6]);
    const fs::path dir = make_temp_dir();
    const int rc = run_one(*f, copies, dir);
    fs::remove_all(dir);
    return rc;
  }
  const int copies = argc > 1 ? std::atoi(argv[1]) : 200;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  if (copies < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: bench_export [COPIES >= 1] [REPEATS >= 1]\n");
    return 2;
  }
  const fs::path dir = make_temp_dir();
  std::printf("%d copies of the fixture's kernel-level run, %d repeats, one child process per export\n", copies,
              repeats);
  std::printf("%-7s %9s %17s %11s %12s %22s %12s\n", "format", "median_s", "range_s", "spans_per_s", "trace_MB/M",
              "export_peak_MB/M (range)", "bytes");
  const double mb = 1024.0 * 1024.0;
  for (TraceFormat f : {TraceFormat::kChrome, TraceFormat::kOtlp, TraceFormat::kSqlite}) {
    std::vector<double> seconds, trace_mb, peak_mb;
    Sample last;
    for (int r = 0; r < repeats; ++r) {
      const std::optional<Sample> s = run_child(argv[0], f, copies, dir);
      if (!s) {
        std::fprintf(stderr, "bench_export: the %s child failed\n", std::string(to_string(f)).c_str());
        fs::remove_all(dir);
        return 1;
      }
      const double millions = s->spans / 1e6;
      seconds.push_back(s->seconds);
      trace_mb.push_back(s->trace_bytes / mb / millions);
      peak_mb.push_back(s->export_peak_bytes / mb / millions);
      last = *s;
    }
    const Stats t = stats(seconds), m = stats(trace_mb), p = stats(peak_mb);
    std::printf("%-7s %9.3f %7.3f..%-8.3f %11.0f %12.0f %8.0f (%5.0f..%-5.0f) %12.0f\n",
                std::string(to_string(f)).c_str(), t.median, t.low, t.high, last.spans / t.median, m.median, p.median,
                p.low, p.high, last.file_bytes);
  }
  fs::remove_all(dir);
  return 0;
}
