// The predictor adapter of the LoadGen workloads: see include/xsp/eval/predictor_sut.h.
#include "xsp/eval/predictor_sut.h"

#include <stdexcept>

#include "xsp/trace/trace.h"

namespace xsp {

PredictorSut::PredictorSut(Predictor& predictor, BatchBuilder build, std::size_t max_batch, SutTracing tracing,
                           bool several)
    : predictor_(predictor), build_(std::move(build)), max_batch_(max_batch), several_(several), tracing_(tracing) {
  if (max_batch < 1) throw std::invalid_argument("PredictorSut: max_batch must be >= 1");
  if (!build_) throw std::invalid_argument("PredictorSut: no batch builder");
  if (tracing_.session != nullptr && tracing_.recorder == nullptr)
    throw std::invalid_argument("PredictorSut: profiling needs a trace recorder");
}

PredictorSut::~PredictorSut() { stop(); }

void PredictorSut::start(loadgen::QueryCompleter& completer) {
  stop();
  completer_ = &completer;
  stopping_ = false;
  timings_.clear();
  thread_ = std::thread([this] { work(); });
}

void PredictorSut::issue(const loadgen::Query& query) {
  {
    std::lock_guard lk(mu_);
    queue_.push_back(query);
  }
  cv_.notify_one();
}

void PredictorSut::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string PredictorSut::first_error() const {
  std::lock_guard lk(mu_);
  return error_;
}

void PredictorSut::work() {
  auto keep_error = [this](const std::string& what) {
    std::lock_guard lk(mu_);
    if (error_.empty()) error_ = what;
  };
  TraceRecorder* recorder = tracing_.recorder;
  RunSession* session = tracing_.session;
  if (session != nullptr) {
    try {
      session->start(*recorder, tracing_.level);
    } catch (const std::exception& e) {
      keep_error(std::string("profiler: ") + e.what());
      session = nullptr;
    }
  }
  // Span ids are taken up front per batch so the framework profiler can parent its ops to them; the spans
  // themselves are built after the run.
  std::vector<SpanId> span_ids;
  std::uint64_t sequence = 0;
  for (;;) {
    loadgen::Query q;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;
      q = queue_.front();
      queue_.pop_front();
    }
    std::uint32_t batch = 0;
    for (std::size_t off = 0; off < q.samples.size(); off += max_batch_, ++batch) {
      auto chunk = q.samples.subspan(off, std::min(max_batch_, q.samples.size() - off));
      BatchTiming t{sequence, q.id, batch, static_cast<std::uint32_t>(chunk.size()), 0, 0};
      if (recorder != nullptr) {
        span_ids.push_back(recorder->next_id());
        if (session != nullptr) session->set_parent(span_ids.back());
      }
      try {
        const std::vector<Tensor> inputs = build_(chunk);
        if (!several_ && inputs.size() != 1)
          throw std::logic_error("PredictorSut: " + std::to_string(inputs.size()) + " inputs for predict()");
        t.start_ns = now_ns();
        if (several_) {
          const std::vector<Tensor> out = predictor_.predict_all(inputs);
          t.end_ns = now_ns();
        } else {
          const Tensor out = predictor_.predict(inputs.front());
          t.end_ns = now_ns();
        }
      } catch (const std::exception& e) {
        if (t.end_ns == 0) t.end_ns = now_ns();
        if (t.start_ns == 0) t.start_ns = t.end_ns;
        keep_error(e.what());
      }
      timings_.push_back(t);
    }
    completer_->complete(q.id, now_ns());
    ++sequence;
  }
  if (session != nullptr) {
    try {
      session->stop();
    } catch (const std::exception& e) {
      keep_error(std::string("profiler: ") + e.what());
    }
  }
  if (recorder == nullptr) return;
  std::vector<Span> spans;
  spans.reserve(timings_.size());
  const std::uint64_t thread = current_thread_id();
  for (std::size_t i = 0; i < timings_.size(); ++i) {
    const BatchTiming& t = timings_[i];
    Span s;
    s.id = span_ids[i];
    s.level = Level::kModel;
    s.name = "predict";
    s.start_ns = t.start_ns;
    s.end_ns = t.end_ns;
    s.track = Track::host_thread(thread);
    s.tags = {{"query", t.query}, {"sequence", t.sequence}, {"batch", t.batch}, {"batch_size", t.size}};
    spans.push_back(std::move(s));
  }
  recorder->add_all(std::move(spans));
}

}  // namespace xsp
