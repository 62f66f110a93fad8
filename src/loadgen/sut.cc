#include "xsp/loadgen/sut.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "xsp/trace/trace.h"

namespace xsp::loadgen {

void NullSut::issue(const Query& query) { completer_->complete(query.id, now_ns()); }

FakeSut::FakeSut(std::int64_t latency_ns, int workers, std::int64_t per_sample_ns)
    : latency_ns_(latency_ns), per_sample_ns_(per_sample_ns), workers_(workers) {
  if (workers < 1) throw std::invalid_argument("FakeSut: workers must be >= 1");
  if (latency_ns < 0 || per_sample_ns < 0) throw std::invalid_argument("FakeSut: negative latency");
}

FakeSut::~FakeSut() { stop(); }

void FakeSut::start(QueryCompleter& completer) {
  stop();
  completer_ = &completer;
  stopping_ = false;
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { work(); });
}

void FakeSut::issue(const Query& query) {
  {
    std::lock_guard lk(mu_);
    queue_.emplace_back(query.id, query.samples.size());
  }
  cv_.notify_one();
}

void FakeSut::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void FakeSut::work() {
  for (;;) {
    std::pair<std::uint64_t, std::size_t> q;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      q = queue_.front();
      queue_.pop_front();
    }
    // Service starts when a worker takes the query: with one worker, waiting in the queue is queueing delay.
    const std::int64_t deadline = now_ns() + latency_ns_ + per_sample_ns_ * static_cast<std::int64_t>(q.second);
    std::int64_t now = now_ns();
    if (deadline - now > 200'000) std::this_thread::sleep_for(std::chrono::nanoseconds(deadline - now - 100'000));
    while ((now = now_ns()) < deadline) {
    }
    completer_->complete(q.first, now);
  }
}

PredictorSut::PredictorSut(Predictor& predictor, BatchBuilder build, std::size_t max_batch, SutTracing tracing)
    : predictor_(predictor), build_(std::move(build)), max_batch_(max_batch), tracing_(tracing) {
  if (max_batch < 1) throw std::invalid_argument("PredictorSut: max_batch must be >= 1");
  if (!build_) throw std::invalid_argument("PredictorSut: no batch builder");
  if (tracing_.framework != nullptr && tracing_.recorder == nullptr)
    throw std::invalid_argument("PredictorSut: framework tracing needs a trace recorder");
}

PredictorSut::~PredictorSut() { stop(); }

void PredictorSut::start(QueryCompleter& completer) {
  stop();
  completer_ = &completer;
  stopping_ = false;
  timings_.clear();
  thread_ = std::thread([this] { work(); });
}

void PredictorSut::issue(const Query& query) {
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
  FrameworkProfiler* framework = tracing_.framework;
  if (framework != nullptr) {
    try {
      framework->start(*recorder, kNoSpan);
    } catch (const std::exception& e) {
      keep_error(std::string("framework profiler: ") + e.what());
      framework = nullptr;
    }
  }
  // Span ids are taken up front per batch so the framework profiler can parent its ops to them; the spans
  // themselves are built after the run.
  std::vector<SpanId> span_ids;
  std::uint64_t sequence = 0;
  for (;;) {
    Query q;
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
        if (framework != nullptr) framework->set_parent(span_ids.back());
      }
      try {
        Tensor input = build_(chunk);
        t.start_ns = now_ns();
        Tensor out = predictor_.predict(input);
        t.end_ns = now_ns();
        (void)out;
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
  if (framework != nullptr) {
    try {
      framework->stop();
    } catch (const std::exception& e) {
      keep_error(std::string("framework profiler: ") + e.what());
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

}  // namespace xsp::loadgen
