// `xsp agent` as a library call (docs/deploy.md): register with the shared PostgreSQL queue, take the jobs this
// machine can run, run each through evaluate() (the CLI's library call) and publish its result with the job.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xsp/queue/jobs.h"

namespace xsp {
class Clock;
}

namespace xsp {

struct AgentOptions {
  std::string store;                         ///< "postgresql://..." (the queue and the results store)
  std::string name;                          ///< shown by `xsp agents`; "" = the hostname
  std::filesystem::path zoo;                 ///< EvaluationContext::zoo
  std::filesystem::path default_images_dir;  ///< EvaluationContext::default_images_dir
  /// Folders a job's request may read files from besides the zoo and default_images_dir: jobs come from whoever can
  /// submit to the shared store, so every file a job names is confined to these (EvaluationContext::confine_to).
  std::vector<std::filesystem::path> data_dirs;
  /// A claimed job is the agent's for this long past each renewal; renewed every lease / 3 while it runs.
  std::chrono::milliseconds lease{30'000};
  /// Idle: heartbeat and look for work at least this often (new jobs also wake it at once through NOTIFY).
  std::chrono::milliseconds poll{5'000};
  std::optional<std::size_t> max_jobs;                      ///< exit after this many jobs (done or failed)
  std::optional<std::chrono::milliseconds> exit_when_idle;  ///< exit after this long without a claimable job
  /// Set (to the signal number) by the front end's SIGTERM/SIGINT handler: a running job stops before its next
  /// batch and is handed back to the queue (its attempt not counted), the agent is marked stopped, and run_agent()
  /// returns.
  const std::atomic<int>* interrupt = nullptr;
  bool record_machine_state = true;  ///< EvaluationContext::record_machine_state
  const Clock* clock = nullptr;      ///< EvaluationContext::clock (nullptr = the system clock; tests inject a fake)
  /// What it can run; std::nullopt = describe_capabilities(describe_system()). Tests pass their own.
  std::optional<AgentCapabilities> capabilities;
};

/// What an agent did before run_agent() returned.
struct AgentSummary {
  std::string agent_id;
  std::size_t jobs_done = 0;         ///< results published
  std::size_t jobs_failed = 0;       ///< attempts that failed (the job may be queued again)
  std::size_t jobs_handed_back = 0;  ///< given back on SIGTERM
  std::size_t jobs_lost = 0;         ///< taken away (lease expired while cut off): their results were dropped
  std::size_t reconnects = 0;        ///< times the database was unreachable and then reached again
};

/// Runs the agent until `max_jobs`, `exit_when_idle` or an interrupt. While PostgreSQL is unreachable it retries with
/// backoff (1 s doubling to 30 s) and logs each failure, so a database restart costs a pause, not the agent; a result
/// finished meanwhile is published once the database is back, if the job is still the agent's. Throws StoreError
/// for a location that is not PostgreSQL (or a build without it) and when the database refuses the agent's role.
AgentSummary run_agent(const AgentOptions& options);

}  // namespace xsp
