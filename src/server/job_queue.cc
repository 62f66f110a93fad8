// Submitted evaluations in-process: one worker thread, by priority then submission order, progress, cancel, retry
// and delete (include/xsp/server/server.h).
#include <algorithm>
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

void JobQueue::check_room() const {
  if (stopping_) throw std::logic_error("the server is stopping: no new evaluations");
  if (queue_.size() >= max_queued_)
    throw std::length_error(std::to_string(queue_.size()) + " evaluations are queued already (at most " +
                            std::to_string(max_queued_) + "); submit again when some have run");
}

void JobQueue::enqueue(const std::shared_ptr<Job>& job) {
  // After every job of the same or a higher priority: equal priorities keep their submission (id) order, and a
  // retried job, whose id is older, goes before the newer ones of its priority.
  const auto before = std::find_if(queue_.begin(), queue_.end(), [&](const std::shared_ptr<Job>& q) {
    return q->info.priority < job->info.priority ||
           (q->info.priority == job->info.priority && q->info.id > job->info.id);
  });
  queue_.insert(before, job);
  wake_.notify_one();
}

std::int64_t JobQueue::submit(const JobSubmission& submission) {
  std::lock_guard lock(mu_);
  check_room();
  auto job = std::make_shared<Job>();
  job->info.id = next_id_++;
  job->info.request = submission.request;
  job->info.constraints = submission.constraints;
  job->info.priority = submission.priority;
  job->info.max_attempts = 1;
  job->info.submitted_by = "api";
  job->info.submitted_at = utc_now_iso8601();
  jobs_[job->info.id] = job;
  enqueue(job);
  return job->info.id;
}

std::optional<JobInfo> JobQueue::get(std::int64_t id) {
  std::lock_guard lock(mu_);
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second->info;
}

std::vector<JobInfo> JobQueue::list(const JobFilter& filter) {
  std::lock_guard lock(mu_);
  std::vector<JobInfo> out;
  for (auto it = jobs_.rbegin(); it != jobs_.rend() && out.size() < filter.limit; ++it)
    if (!filter.state || it->second->info.state == *filter.state) out.push_back(it->second->info);
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

JobQueue::RetryResult JobQueue::retry(std::int64_t id) {
  std::lock_guard lock(mu_);
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return RetryResult::kNotFound;
  const std::shared_ptr<Job>& job = it->second;
  switch (job->info.state) {
    case JobState::kQueued:
    case JobState::kRunning:
      return RetryResult::kNotFinished;
    case JobState::kDone:
      return RetryResult::kDone;
    case JobState::kFailed:
    case JobState::kCancelled:
      break;
  }
  check_room();
  // Queued again, it is no longer finished: it must not be forgotten as one of the oldest finished jobs.
  finished_order_.erase(std::remove(finished_order_.begin(), finished_order_.end(), id), finished_order_.end());
  JobInfo& info = job->info;
  info.state = JobState::kQueued;
  info.attempts = 0;
  info.progress = Progress{};
  info.evaluation_id.reset();
  info.evaluation_status.clear();
  info.error.clear();
  info.error_field.clear();
  info.cancel_requested = false;
  info.started_at.clear();
  info.finished_at.clear();
  job->interrupt.store(0);
  enqueue(job);
  return RetryResult::kRequeued;
}

JobQueue::DeleteResult JobQueue::remove(std::int64_t id) {
  std::lock_guard lock(mu_);
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return DeleteResult::kNotFound;
  if (it->second->info.state == JobState::kRunning) return DeleteResult::kRunning;
  queue_.erase(std::remove(queue_.begin(), queue_.end(), it->second), queue_.end());
  finished_order_.erase(std::remove(finished_order_.begin(), finished_order_.end(), id), finished_order_.end());
  jobs_.erase(it);
  return DeleteResult::kDeleted;
}

std::vector<AgentInfo> JobQueue::agents() { return {}; }

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
      job->info.attempts += 1;
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
