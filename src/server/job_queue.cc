// Submitted evaluations: one worker thread, FIFO, progress and cancel (include/xsp/server/server.h).
#include <csignal>
#include <stdexcept>

#include "xsp/eval/measurement.h"
#include "xsp/server/server.h"
#include "xsp/system/system_info.h"

namespace xsp {

JobQueue::JobQueue(Runner runner, std::size_t max_queued, std::size_t max_finished)
    : runner_(std::move(runner)), max_queued_(max_queued), max_finished_(max_finished) {
  worker_ = std::thread([this] { work(); });
}

JobQueue::~JobQueue() { shutdown(); }

std::int64_t JobQueue::submit(const EvaluationRequest& request) {
  std::lock_guard lock(mu_);
  if (stopping_) throw std::logic_error("the server is stopping: no new evaluations");
  if (queue_.size() >= max_queued_)
    throw std::length_error(std::to_string(queue_.size()) + " evaluations are queued already (at most " +
                            std::to_string(max_queued_) + "); submit again when some have run");
  auto job = std::make_shared<Job>();
  job->info.id = next_id_++;
  job->info.request = request;
  job->info.submitted_at = utc_now_iso8601();
  jobs_[job->info.id] = job;
  queue_.push_back(job);
  wake_.notify_one();
  return job->info.id;
}

std::optional<JobInfo> JobQueue::get(std::int64_t id) const {
  std::lock_guard lock(mu_);
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second->info;
}

std::vector<JobInfo> JobQueue::list() const {
  std::lock_guard lock(mu_);
  std::vector<JobInfo> out;
  out.reserve(jobs_.size());
  for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it) out.push_back(it->second->info);
  return out;
}

JobQueue::CancelResult JobQueue::cancel(std::int64_t id) {
  std::lock_guard lock(mu_);
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return CancelResult::kNotFound;
  Job& job = *it->second;
  switch (job.info.state) {
    case JobState::kQueued:
      for (auto q = queue_.begin(); q != queue_.end(); ++q)
        if ((*q)->info.id == id) {
          queue_.erase(q);
          break;
        }
      job.info.state = JobState::kCancelled;
      job.info.cancel_requested = true;
      job.info.finished_at = utc_now_iso8601();
      remember_finished(it->second);
      return CancelResult::kRemoved;
    case JobState::kRunning:
      job.info.cancel_requested = true;
      // SIGINT: the record says the evaluation was interrupted as by Ctrl-C (settings.interrupted.signal = 2).
      job.interrupt.store(SIGINT);
      return CancelResult::kStopping;
    default:
      return CancelResult::kAlreadyFinished;
  }
}

void JobQueue::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
    for (const auto& job : queue_) {
      job->info.state = JobState::kCancelled;
      job->info.cancel_requested = true;
      job->info.finished_at = utc_now_iso8601();
    }
    queue_.clear();
    if (running_) {
      running_->info.cancel_requested = true;
      running_->interrupt.store(SIGINT);
    }
    wake_.notify_all();
  }
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

void JobQueue::remember_finished(const std::shared_ptr<Job>& job) {
  finished_order_.push_back(job->info.id);
  while (finished_order_.size() > max_finished_) {
    jobs_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
}

void JobQueue::work() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = queue_.front();
      queue_.pop_front();
      job->info.state = JobState::kRunning;
      job->info.started_at = utc_now_iso8601();
      running_ = job;
    }
    // Progress comes from the worker itself; the lock keeps a reader from seeing a half-written phase string.
    const ProgressCallback progress = [this, job](const Progress& p) {
      std::lock_guard lock(mu_);
      job->info.progress = p;
    };
    JobState state = JobState::kDone;
    std::optional<std::int64_t> evaluation_id;
    std::string evaluation_status, error, field;
    try {
      const EvaluationRecord record = runner_(job->info.request, progress, &job->interrupt);
      evaluation_id = record.id;
      evaluation_status = record.status;
      // A cancel that came after the last batch changed nothing: the evaluation is complete, the job done.
      if (job->interrupt.load() != 0 && record.status == "incomplete") state = JobState::kCancelled;
    } catch (const RequestError& e) {
      state = JobState::kFailed;
      error = e.what();
      field = e.field();
    } catch (const std::exception& e) {
      state = job->interrupt.load() != 0 ? JobState::kCancelled : JobState::kFailed;
      error = e.what();
    }
    std::lock_guard lock(mu_);
    job->info.state = state;
    job->info.evaluation_id = evaluation_id;
    job->info.evaluation_status = evaluation_status;
    job->info.error = error;
    job->info.error_field = field;
    job->info.finished_at = utc_now_iso8601();
    running_.reset();
    remember_finished(job);
  }
}

}  // namespace xsp
