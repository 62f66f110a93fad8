// Cost of the checks Store::open(kReadWrite) makes before an evaluation (issue 12, defect 4): PRAGMA quick_check of
// the whole file plus the write probe, on a store of realistic size. The store is built from the H200 ResNet-18
// kernel-level fixture (tests/fixtures/gpu/resnet18_bs1_kernel_h200.db): its evaluation, each run's trace repeated
// COPIES times (a long profile), saved again and again until the file holds MB megabytes.
// Usage: bench_store_check [MB] [REPEATS] [cold]. Prints the median and range of REPEATS timings of quick_check alone
// (a raw connection), of Store::open(kReadWrite) and of Store::open(kRead), with the file warm in the page cache; with
// `cold` (root only) the page cache is dropped before each timing, as for the first `xsp evaluate` after a reboot.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "xsp/store/store.h"

using namespace xsp;
namespace fs = std::filesystem;

namespace {

constexpr int kCopies = 20;

bool g_cold = false;

void drop_page_cache() {
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  drop << "3\n";
  if (!drop.flush()) {
    std::fprintf(stderr, "bench_store_check: cold: cannot write /proc/sys/vm/drop_caches (needs root)\n");
    std::exit(1);
  }
}

void print_timing(const char* what, int repeats, const std::function<void()>& f) {
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    if (g_cold) drop_page_cache();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  const double median = n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  std::printf("%-24s %10.3f %10.3f..%-10.3f\n", what, median, seconds.front(), seconds.back());
}

}  // namespace

int main(int argc, char** argv) {
  const int megabytes = argc > 1 ? std::atoi(argv[1]) : 300;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  g_cold = argc > 3 && std::string(argv[3]) == "cold";
  if (megabytes < 1 || repeats < 1 || (argc > 3 && !g_cold)) {
    std::fprintf(stderr, "usage: bench_store_check [MB >= 1] [REPEATS >= 1] [cold]\n");
    return 2;
  }
  std::string tmpl = (fs::temp_directory_path() / "xsp-bench-store-XXXXXX").string();
  const fs::path dir = mkdtemp(tmpl.data());
  const fs::path fixture = dir / "fixture.db";  // a copy: opening a store migrates it
  fs::copy_file(fs::path(XSP_SOURCE_DIR) / "tests" / "fixtures" / "gpu" / "resnet18_bs1_kernel_h200.db", fixture);
  EvaluationRecord record = *Store::open(fixture)->load(1);
  for (RunRecord& run : record.runs) {
    const std::vector<Span> one = run.trace.spans;
    if (one.empty()) continue;
    SpanId max_id = 0;
    std::int64_t first = one.front().start_ns, last = first;
    for (const Span& s : one) {
      max_id = std::max(max_id, s.id);
      first = std::min(first, s.start_ns);
      last = std::max(last, s.end_ns);
    }
    for (int c = 1; c < kCopies; ++c) {
      for (Span s : one) {
        s.id += static_cast<SpanId>(c) * max_id;
        if (s.parent_id != kNoSpan) s.parent_id += static_cast<SpanId>(c) * max_id;
        s.start_ns += c * (last - first);
        s.end_ns += c * (last - first);
        run.trace.spans.push_back(std::move(s));
      }
    }
  }

  const fs::path file = dir / "big.db";
  std::size_t saved = 0;
  {
    auto store = Store::open(file);
    while (fs::file_size(file) + (fs::exists(file.string() + "-wal") ? fs::file_size(file.string() + "-wal") : 0) <
           static_cast<std::uintmax_t>(megabytes) << 20) {
      EvaluationRecord r = record;
      r.uuid.clear();
      for (RunRecord& run : r.runs) run.trace_id.clear();
      store->save(r);
      ++saved;
    }
  }
  std::size_t spans = 0;
  for (const RunRecord& run : record.runs) spans += run.trace.spans.size();
  std::printf("store: %.1f MB, %zu evaluations of %zu runs (%zu spans each), %d repeats, page cache %s\n",
              static_cast<double>(fs::file_size(file)) / (1 << 20), saved, record.runs.size(), spans, repeats,
              g_cold ? "dropped before each" : "warm");
  std::printf("%-24s %10s %21s\n", "what", "median_s", "range_s");

  print_timing("PRAGMA quick_check", repeats, [&file] {
    sqlite3* db = nullptr;
    sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, nullptr);
    const int rc = sqlite3_step(st);
    const std::string result = rc == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "";
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (result != "ok") {
      std::fprintf(stderr, "quick_check: %s\n", result.c_str());
      std::exit(1);
    }
  });
  print_timing("Store::open(kReadWrite)", repeats, [&file] { Store::open(file, StoreAccess::kReadWrite); });
  print_timing("Store::open(kRead)", repeats, [&file] { Store::open(file, StoreAccess::kRead); });
  fs::remove_all(dir);
  return 0;
}
