// Engines behind `xsp submit` (docs/deploy.md): who runs a submitted evaluation. Two implementations:
//  - "queue": the shared PostgreSQL queue and its `xsp agent` processes (postgres_queue.h), XSP's own scheduler for
//    machines outside any cluster scheduler;
//  - "slurm": job arrays of the cluster's Slurm (slurm.h), one task per model, each running `xsp evaluate` on its
//    allocated node and writing into the shared store.
// `xsp jobs` lists the jobs of every engine in one table: JobInfo with `engine` and `external_id` set.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xsp/queue/jobs.h"

namespace xsp {

/// The jobs of one engine as `xsp jobs` shows them. Ids are strings: the queue's are its decimal job ids ("17"),
/// Slurm's are "ARRAYID_TASK" ("1234_5"), Slurm's own notation, which scancel and squeue accept too.
class JobEngine {
 public:
  virtual ~JobEngine() = default;
  /// "queue" or "slurm".
  virtual std::string name() const = 0;
  /// Its jobs, newest first, at most filter.limit, only filter.state when set.
  virtual std::vector<JobInfo> list(const JobFilter& filter) = 0;
  /// One job by its id as list() shows it; std::nullopt when the engine has no such job (or the id is not of its
  /// form).
  virtual std::optional<JobInfo> get(const std::string& id) = 0;
  /// Cancels a job: the queue's rules (JobService::cancel), or scancel for Slurm.
  virtual JobService::CancelResult cancel(const std::string& id) = 0;
  /// Whether `id` has this engine's form (the queue: digits only; Slurm: ARRAYID_TASK).
  virtual bool owns(const std::string& id) const = 0;
};

/// The PostgreSQL queue as an engine: every call goes to `jobs` unchanged; JobInfo::engine "queue",
/// external_id the decimal id.
std::unique_ptr<JobEngine> queue_engine(std::unique_ptr<JobService> jobs);

}  // namespace xsp
