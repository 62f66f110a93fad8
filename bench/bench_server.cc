// Load on `xsp serve`'s REST API (docs/server.md) over loopback: CLIENTS threads each send REQUESTS GETs, mixed over
// the evaluation list, one evaluation and its A1 analysis, against a store of 4 evaluations made on a fake framework
// (a fake clock, so that making them takes milliseconds). One new connection per request, as curl makes them.
// Usage: bench_server [CLIENTS] [REQUESTS] [REPEATS]. Prints per repeat the p50/p99 (xsp::percentile, type 7)/max
// latency (ms) and requests/s, then the median and range over the repeats. Exits 1 when any answer is not 200 or the
// store's evaluation count changed. The store lives in a temporary folder that is removed.
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../tests/unit/cli/fake_zoo.h"
#include "../tests/unit/eval/fake_model.h"
#include "xsp/eval/evaluate.h"
#include "xsp/server/server.h"
#include "xsp/stats/stats.h"
#include "xsp/store/store.h"

using namespace xsp;
namespace fs = std::filesystem;

namespace {

testing::FakeClock g_clock;

class BenchPredictor final : public Predictor {
 public:
  BenchPredictor() : inner_(g_clock, testing::LatencyModel{}) {}
  std::string framework_name() const override { return "bench-fake"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest& m, const DeviceSpec& d) override { inner_.load(m, d); }
  Tensor predict(const Tensor& t) override { return inner_.predict(t); }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return inner_.framework_profiler(); }

 private:
  testing::FakePredictor inner_;
};

struct Figures {
  double p50_ms, p99_ms, max_ms, requests_per_s;
};

}  // namespace

int main(int argc, char** argv) {
  const int clients = argc > 1 ? std::atoi(argv[1]) : 32;
  const int requests = argc > 2 ? std::atoi(argv[2]) : 500;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  if (clients < 1 || requests < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: bench_server [CLIENTS >= 1] [REQUESTS >= 1] [REPEATS >= 1]\n");
    return 2;
  }
  std::string tmpl = (fs::temp_directory_path() / "xsp-bench-server-XXXXXX").string();
  const fs::path dir = mkdtemp(tmpl.data());
  testing::write_fake_zoo(dir / "zoo", "bench_model", "bench-fake");
  register_predictor("bench-fake", [] { return std::make_unique<BenchPredictor>(); });

  EvaluationRequest request;
  request.model = "bench_model";
  request.framework = "bench-fake";
  request.batch_sizes = {1, 2, 4};
  request.trace_level = TraceLevel::kFramework;
  request.leveled = true;
  request.inputs.synthetic = true;
  request.measurement.warmup_min_ms = 100;
  request.measurement.min_duration_ms = 200;
  std::vector<std::int64_t> ids;
  {
    auto store = Store::open(dir / "s.db");
    EvaluationContext c;
    c.zoo = dir / "zoo";
    c.store = store.get();
    c.clock = &g_clock;
    c.record_machine_state = false;
    for (int i = 0; i < 4; ++i) ids.push_back(evaluate(request, c).id);
  }
  const std::size_t stored = Store::open(dir / "s.db", StoreAccess::kRead)->count({});

  ServerOptions o;
  o.port = 0;
  o.store = dir / "s.db";
  o.zoo = dir / "zoo";
  Server server(o);
  server.start();
  std::vector<std::string> paths = {"/api/v1/evaluations"};
  for (std::int64_t id : ids) {
    paths.push_back("/api/v1/evaluations/" + std::to_string(id));
    paths.push_back("/api/v1/evaluations/" + std::to_string(id) + "/analyses/A1");
  }
  std::printf(
      "bench_server: %d clients x %d GETs, %d repeats, %zu evaluations (3 batch sizes, M and M/F runs), "
      "server threads %zu, %u CPUs\n",
      clients, requests, repeats, stored, o.threads, std::thread::hardware_concurrency());

  std::vector<Figures> figures;
  std::atomic<long> failures{0};
  for (int rep = 0; rep < repeats; ++rep) {
    std::vector<std::vector<double>> latencies(clients);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < clients; ++t)
      threads.emplace_back([&, t] {
        httplib::Client c("127.0.0.1", server.port());
        c.set_read_timeout(60, 0);
        latencies[t].reserve(requests);
        for (int i = 0; i < requests; ++i) {
          const auto s = std::chrono::steady_clock::now();
          const auto r = c.Get(paths[static_cast<std::size_t>(t + i) % paths.size()]);
          latencies[t].push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
          if (!r || r->status != 200) ++failures;
        }
      });
    for (auto& th : threads) th.join();
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<double> all;
    for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
    const Figures f{percentile(all, 50), percentile(all, 99), *std::max_element(all.begin(), all.end()),
                    static_cast<double>(all.size()) / wall_s};
    figures.push_back(f);
    std::printf("repeat %d: p50 %.2f ms, p99 %.2f ms, max %.2f ms, %.0f requests/s\n", rep + 1, f.p50_ms, f.p99_ms,
                f.max_ms, f.requests_per_s);
  }
  server.stop();
  auto summary = [&](const char* what, double Figures::*field, const char* unit) {
    std::vector<double> v;
    for (const Figures& f : figures) v.push_back(f.*field);
    std::sort(v.begin(), v.end());
    std::printf("%-12s median %.2f %s, range %.2f .. %.2f\n", what, v[v.size() / 2], unit, v.front(), v.back());
  };
  summary("p50", &Figures::p50_ms, "ms");
  summary("p99", &Figures::p99_ms, "ms");
  summary("max", &Figures::max_ms, "ms");
  summary("requests/s", &Figures::requests_per_s, "");
  const std::size_t after = Store::open(dir / "s.db", StoreAccess::kRead)->count({});
  std::printf("non-200 answers: %ld; evaluations in the store: %zu before, %zu after\n", failures.load(), stored,
              after);
  fs::remove_all(dir);
  return failures == 0 && after == stored ? 0 : 1;
}
