// The shared job queue in PostgreSQL (docs/deploy.md). Jobs and agents are two tables beside the results store's;
// agents claim jobs with SELECT ... FOR UPDATE SKIP LOCKED under a lease they renew, are woken by LISTEN/NOTIFY,
// and publish a result in the transaction that marks its job done. Needs a build with PostgreSQL support
// (have_postgres_store()).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "xsp/queue/jobs.h"
#include "xsp/record/record.h"
#include "xsp/store/store.h"

namespace xsp {

/// The queue cannot be reached (server down, connection lost, role refused). what() names the redacted location
/// and the reason. Agents retry; front ends report it.
class QueueUnavailable : public StoreError {
 public:
  using StoreError::StoreError;
};

struct QueueOptions {
  /// How long a claimed job stays the agent's without a renewal. An agent renews every lease / 3; a job whose lease
  /// expires (agent killed, machine gone, network cut) goes back to the queue, or is failed once its attempts are
  /// used up.
  std::chrono::milliseconds lease{30'000};
  /// An agent whose last heartbeat is older than this is shown as "lost" and not counted as live in waiting reasons.
  std::chrono::milliseconds agent_lost_after{30'000};
};

/// Schema version of the queue's tables this build writes (table queue_schema_version).
int current_queue_schema_version();

class PostgresJobQueue final : public JobService {
 public:
  /// Connects to `location` ("postgresql://..."), opens the results store there (creating or migrating its schema
  /// as Store::open does) and creates or migrates the queue's tables, under one advisory lock. Throws StoreError for
  /// a location that is not PostgreSQL or a build without it, QueueUnavailable when the server cannot be reached.
  static std::unique_ptr<PostgresJobQueue> open(const std::string& location, QueueOptions options = {});
  ~PostgresJobQueue() override;

  // ---- JobService: submitters, the server, the web UI ----
  std::int64_t submit(const JobSubmission& submission) override;
  std::optional<JobInfo> get(std::int64_t id) override;
  std::vector<JobInfo> list(const JobFilter& filter) override;
  CancelResult cancel(std::int64_t id) override;
  RetryResult retry(std::int64_t id) override;
  DeleteResult remove(std::int64_t id) override;
  std::vector<AgentInfo> agents() override;

  // ---- agents ----
  /// Registers an agent (a new id each start) with what it can run and its machine's description; returns the id.
  std::string register_agent(const std::string& name, const AgentCapabilities& capabilities,
                             const nlohmann::json& system);
  /// Records that the agent is alive (last_heartbeat_at = now).
  void heartbeat(const std::string& agent_id);
  /// Marks the agent stopped (a clean exit).
  void agent_stopped(const std::string& agent_id);

  /// First returns expired leases to the queue (or fails jobs whose attempts are used up, saying so), then claims the
  /// highest-priority, oldest queued job that `capabilities` satisfies: state running, attempts + 1, lease from now.
  /// One transaction; SKIP LOCKED, so agents claiming together never wait for or take the same job. std::nullopt when
  /// none is claimable.
  std::optional<JobInfo> claim(const std::string& agent_id, const AgentCapabilities& capabilities);

  enum class LeaseState {
    kHeld,             ///< still this agent's; lease extended
    kCancelRequested,  ///< still this agent's, lease extended, but a user asked to cancel it
    kLost,             ///< no longer this agent's (lease expired and requeued, deleted): stop, publish nothing
  };
  /// Extends the lease of `job_id` by QueueOptions::lease and stores the progress, when the job is still
  /// `agent_id`'s and running. Also a heartbeat.
  LeaseState renew(const std::string& agent_id, std::int64_t job_id, const Progress& progress);

  /// Saves `record` in the results store and marks the job done with the evaluation's id, in one transaction, when
  /// the job is still `agent_id`'s; otherwise saves nothing and returns false (another agent owns it now: the result
  /// would be a duplicate). A record with status "incomplete" (cancelled mid-run) marks the job cancelled instead.
  /// Throws StoreError when the store refuses the record (then the job stays running, and its lease will expire).
  bool complete(const std::string& agent_id, std::int64_t job_id, EvaluationRecord& record);
  /// Ends an attempt that failed. `permanent` (a bad request: another attempt would fail the same way) or attempts
  /// used up: state failed with `error` (and `error_field`); else queued again with the error kept for `xsp jobs`.
  /// Returns false when the job was no longer the agent's.
  bool fail(const std::string& agent_id, std::int64_t job_id, const std::string& error, const std::string& error_field,
            bool permanent);
  /// Gives a running job back to the queue without counting the attempt (the agent is stopping). Returns false when
  /// the job was no longer the agent's.
  bool hand_back(const std::string& agent_id, std::int64_t job_id);

  /// Waits up to `timeout` for a NOTIFY that a job was queued (LISTEN on a connection of its own). Returns true when
  /// one arrived, false on timeout. Throws QueueUnavailable when that connection is lost (call again to reconnect).
  bool wait_for_work(std::chrono::milliseconds timeout);

  /// EXPLAIN (ANALYZE, BUFFERS) of the claim's selection for an agent with `capabilities`, run in a transaction that
  /// is rolled back (nothing is claimed): how the claim finds its job on this database (the jobs_claim index, or a
  /// scan past jobs no agent can run). For operators and bench/bench_queue.
  std::string explain_claim(const AgentCapabilities& capabilities);

  /// The redacted location.
  const std::string& location() const;

 private:
  struct Impl;
  explicit PostgresJobQueue(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Opens the job service for a store location: PostgresJobQueue for PostgreSQL; for an SQLite file, throws
/// std::invalid_argument saying that agents and submitted jobs need a PostgreSQL store (`xsp serve` on an SQLite
/// store runs submissions itself).
std::unique_ptr<JobService> open_job_service(const std::string& location);

}  // namespace xsp
