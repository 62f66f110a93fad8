// Systems under test for the load generator: a null SUT (harness cost) and a fake SUT of controlled latency and
// capacity (tests, benchmarks). The adapter that drives an xsp::Predictor is the run engine's
// (xsp/eval/predictor_sut.h): the load generator knows nothing of predictors or profilers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "xsp/loadgen/loadgen.h"

namespace xsp::loadgen {

/// Completes every query inline in issue(), stamped with now_ns(): what is left is the harness's own cost.
class NullSut final : public SystemUnderTest {
 public:
  std::string name() const override { return "null"; }
  void start(QueryCompleter& completer) override { completer_ = &completer; }
  void issue(const Query& query) override;
  void stop() override { completer_ = nullptr; }

 private:
  QueryCompleter* completer_ = nullptr;
};

/// Serves queries FIFO on `workers` threads, each query taking latency_ns + per_sample_ns * samples of
/// wall time (slept to ~100 µs before the deadline, then busy-waited, so the service time is accurate
/// without burning a core for long). One worker gives a single-server queue: capacity = 1e9 / latency_ns
/// queries per second, and queueing shows above it.
class FakeSut final : public SystemUnderTest {
 public:
  /// Throws std::invalid_argument for workers < 1 or a negative latency.
  explicit FakeSut(std::int64_t latency_ns, int workers = 1, std::int64_t per_sample_ns = 0);
  ~FakeSut() override;
  std::string name() const override { return "fake"; }
  void start(QueryCompleter& completer) override;
  void issue(const Query& query) override;
  void stop() override;

 private:
  void work();
  std::int64_t latency_ns_, per_sample_ns_;
  int workers_;
  QueryCompleter* completer_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::uint64_t, std::size_t>> queue_;  // (query id, sample count)
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace xsp::loadgen
