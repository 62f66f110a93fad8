// Issue rate of the load generator itself: every scenario against the null SUT (completes inline), so what
// is measured is the harness: queries/s and the harness's own ns per query. Median of R repeats.
// Usage: bench_loadgen [queries=1000000] [repeats=5]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "xsp/loadgen/loadgen.h"
#include "xsp/loadgen/sut.h"

using namespace xsp::loadgen;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t queries = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  std::printf(
      "| scenario | queries (samples) | queries/s (samples/s for offline) | harness ns/query | "
      "QPS w/o harness |\n|---|---|---|---|---|\n");
  for (auto sc : {Scenario::kSingleStream, Scenario::kMultiStream, Scenario::kServer, Scenario::kOffline}) {
    Settings s;
    s.scenario = sc;
    s.min_duration_ms = 0;
    s.min_query_count = queries;
    s.max_query_count = sc == Scenario::kOffline ? 0 : queries;
    s.seed = 1;
    // Server: a rate far above what the harness can issue, so every arrival is due at once (issue as fast
    // as possible through the schedule path); Offline: `queries` samples in one query.
    s.target_qps = 1e12;
    s.samples_per_query = 8;
    std::vector<double> qps, harness, net;
    std::uint64_t n = 0, samples = 0;
    for (int i = 0; i < repeats; ++i) {
      NullSut sut;
      Result r = run(sut, s);
      n = r.query_count;
      samples = r.sample_count;
      qps.push_back(r.qps_with_overhead);
      harness.push_back(r.harness_ns_per_query);
      net.push_back(r.qps_without_overhead);
    }
    std::printf("| %s | %llu (%llu) | %.3g | %.1f | %.3g |\n", to_string(sc).c_str(), (unsigned long long)n,
                (unsigned long long)samples, median(qps), median(harness), median(net));
  }
  return 0;
}
