// The system under test of the run engine's LoadGen workloads: a loaded xsp::Predictor driven on a worker thread of
// its own, its profilers switched on and off there by the run's RunSession (xsp/eval/session.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "xsp/eval/session.h"
#include "xsp/loadgen/loadgen.h"
#include "xsp/predictor/predictor.h"

namespace xsp {

/// Builds the input batch for the given sample indices: one tensor {N, ...} per model input, in the manifest's order
/// (N = indices.size()).
using BatchBuilder = std::function<std::vector<Tensor>(std::span<const std::uint64_t> sample_indices)>;

/// Per-query tracing done by the predictor side (PredictorSut's worker thread), never by the load generator.
struct SutTracing {
  /// Receives one MODEL span "predict" per batch (tags "query" = query id, "sequence" = 0-based position of
  /// the query in the order the worker served it, warm-up queries included, "batch" = batch index within the
  /// query, "batch_size"); nullptr = no spans. The spans are built after the last query, outside the timed
  /// region: during the run the worker only stores two timestamps per batch.
  TraceRecorder* recorder = nullptr;
  /// The run's session: started on the worker thread at `level` before the first query (a framework profiler
  /// must start on the predict thread), told each batch's predict span as parent, stopped after the last query;
  /// nullptr = MODEL spans only. Needs `recorder`.
  RunSession* session = nullptr;
  TraceLevel level = TraceLevel::kModel;
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
class PredictorSut final : public loadgen::SystemUnderTest {
 public:
  /// `several`: predict with Predictor::predict_all() (models of several inputs or structured outputs, the task
  /// pipeline's); else Predictor::predict() on the batch's one tensor, as the batch sweep does for classification.
  /// Throws std::invalid_argument for max_batch < 1, an empty builder, or tracing.session without a recorder.
  PredictorSut(Predictor& predictor, BatchBuilder build, std::size_t max_batch, SutTracing tracing = {},
               bool several = false);
  ~PredictorSut() override;
  std::string name() const override { return "predictor:" + predictor_.framework_name(); }
  void start(loadgen::QueryCompleter& completer) override;
  void issue(const loadgen::Query& query) override;
  void stop() override;
  /// The message of the first build/predict error (or profiler start/stop error), empty if none.
  std::string first_error() const;
  /// Every predict() call since start(), in service order. Read after stop().
  const std::vector<BatchTiming>& timings() const { return timings_; }

 private:
  void work();
  Predictor& predictor_;
  BatchBuilder build_;
  std::size_t max_batch_;
  bool several_ = false;
  loadgen::QueryCompleter* completer_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<loadgen::Query> queue_;
  bool stopping_ = false;
  std::string error_;
  SutTracing tracing_;
  std::vector<BatchTiming> timings_;  // worker thread only until stop() joins it
  std::thread thread_;
};

}  // namespace xsp
