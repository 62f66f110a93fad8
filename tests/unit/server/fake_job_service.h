// A JobService that runs nothing: it records what the server hands it and answers with the jobs and agents a test
// puts in it, so that the routes over a shared queue (agents, waiting reasons, constraints) are tested without
// PostgreSQL.
#pragma once

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "xsp/queue/jobs.h"

namespace xsp::testing {

class FakeJobService final : public JobService {
 public:
  std::int64_t submit(const JobSubmission& submission) override {
    std::lock_guard lock(mu_);
    if (unavailable) throw std::runtime_error("connection refused");
    submissions.push_back(submission);
    JobInfo job;
    job.id = 100 + static_cast<std::int64_t>(submissions.size());
    job.request = submission.request;
    job.constraints = submission.constraints;
    job.priority = submission.priority;
    job.max_attempts = submission.max_attempts;
    job.waiting_reason = "no live agent matches";
    job.submitted_by = "api";
    job.submitted_at = "2026-11-24T12:00:00Z";
    jobs.push_back(job);
    return job.id;
  }
  std::optional<JobInfo> get(std::int64_t id) override {
    std::lock_guard lock(mu_);
    for (const JobInfo& j : jobs)
      if (j.id == id) return j;
    return std::nullopt;
  }
  std::vector<JobInfo> list(const JobFilter& filter) override {
    std::lock_guard lock(mu_);
    if (unavailable) throw std::runtime_error("connection refused");
    last_filter = filter;
    std::vector<JobInfo> out;
    for (auto it = jobs.rbegin(); it != jobs.rend() && out.size() < filter.limit; ++it)
      if (!filter.state || it->state == *filter.state) out.push_back(*it);
    return out;
  }
  CancelResult cancel(std::int64_t id) override { return get(id) ? CancelResult::kRemoved : CancelResult::kNotFound; }
  RetryResult retry(std::int64_t id) override { return get(id) ? RetryResult::kNotFinished : RetryResult::kNotFound; }
  DeleteResult remove(std::int64_t id) override { return get(id) ? DeleteResult::kRunning : DeleteResult::kNotFound; }
  std::vector<AgentInfo> agents() override {
    std::lock_guard lock(mu_);
    return agent_list;
  }

  // What the test sets before the server runs, and reads after its requests have been answered.
  std::vector<JobSubmission> submissions;
  std::vector<JobInfo> jobs;
  std::vector<AgentInfo> agent_list;
  std::optional<JobFilter> last_filter;
  std::atomic<bool> unavailable{false};  ///< submit() and list() throw as an unreachable queue does

 private:
  std::mutex mu_;
};

}  // namespace xsp::testing
