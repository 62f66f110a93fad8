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

}  // namespace xsp::loadgen
