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

/// Per-query tracing done by the predictor side (PredictorSut's worker thread), never by the load generator.
struct SutTracing {
  /// Receives one MODEL span "predict" per batch (tags "query" = query id, "sequence" = 0-based position of
  /// the query in the order the worker served it, warm-up queries included, "batch" = batch index within the
  /// query, "batch_size"); nullptr = no spans. The spans are built after the last query, outside the timed
  /// region: during the run the worker only stores two timestamps per batch.
  TraceRecorder* recorder = nullptr;
  /// Started on the worker thread before the first query (FrameworkProfiler::start must run on the predict
  /// thread), given each batch's predict span as parent, stopped after the last; nullptr = MODEL spans only.
  /// Needs `recorder`.
  FrameworkProfiler* framework = nullptr;
};

/// One predict() call as the worker saw it (host clock, ns).
struct BatchTiming {
  std::uint64_t sequence = 0;  ///< position of its query in service order (warm-up queries first)
  std::uint64_t query = 0;     ///< the query id
  std::uint32_t batch = 0;     ///< index of the batch within its query
  std::uint32_t size = 0;      ///< samples in the batch
  std::int64_t start_ns = 0, end_ns = 0;
};

/// Drives a loaded Predictor on one worker thread of its own (the load generator never runs on it): each
/// query's samples are cut into batches of at most max_batch, built by `build` and predicted in turn; the
/// query completes after its last batch. Errors thrown by build/predict are kept (first_error()) and the
/// query still completes so that the run ends. Every predict() call's start and end are kept (timings()), and
/// with `tracing` the run is traced on the worker thread (SutTracing). The predictor must outlive this object.
class PredictorSut final : public SystemUnderTest {
 public:
  /// Throws std::invalid_argument for max_batch < 1, an empty builder, or tracing.framework without a recorder.
  PredictorSut(Predictor& predictor, BatchBuilder build, std::size_t max_batch, SutTracing tracing = {});
  ~PredictorSut() override;
  std::string name() const override { return "predictor:" + predictor_.framework_name(); }
  void start(QueryCompleter& completer) override;
  void issue(const Query& query) override;
  void stop() override;
  /// The message of the first build/predict error (or framework profiler start/stop error), empty if none.
  std::string first_error() const;
  /// Every predict() call since start(), in service order. Read after stop().
  const std::vector<BatchTiming>& timings() const { return timings_; }

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
  SutTracing tracing_;
  std::vector<BatchTiming> timings_;  // worker thread only until stop() joins it
  std::thread thread_;
};

}  // namespace xsp::loadgen
