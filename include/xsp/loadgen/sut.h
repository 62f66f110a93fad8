// Systems under test for the load generator: a null SUT (harness cost), a fake SUT of controlled latency and
// capacity (tests, benchmarks), and the adapter that drives an xsp::Predictor on its own worker thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "xsp/loadgen/loadgen.h"
#include "xsp/predictor/predictor.h"

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

/// Builds the input batch {N, ...} for the given sample indices (N = indices.size()).
using BatchBuilder = std::function<Tensor(std::span<const std::uint64_t> sample_indices)>;

/// Drives a loaded Predictor on one worker thread of its own (the load generator never runs on it): each
/// query's samples are cut into batches of at most max_batch, built by `build` and predicted in turn; the
/// query completes after its last batch. Errors thrown by build/predict are kept (first_error()) and the
/// query still completes so that the run ends. The predictor must outlive this object.
class PredictorSut final : public SystemUnderTest {
 public:
  /// Throws std::invalid_argument for max_batch < 1 or an empty builder.
  PredictorSut(Predictor& predictor, BatchBuilder build, std::size_t max_batch);
  ~PredictorSut() override;
  std::string name() const override { return "predictor:" + predictor_.framework_name(); }
  void start(QueryCompleter& completer) override;
  void issue(const Query& query) override;
  void stop() override;
  /// The message of the first build/predict error, empty if none.
  std::string first_error() const;

 private:
  void work();
  Predictor& predictor_;
  BatchBuilder build_;
  std::size_t max_batch_;
  QueryCompleter* completer_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Query> queue_;
  bool stopping_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace xsp::loadgen
