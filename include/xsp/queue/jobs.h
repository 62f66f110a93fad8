// Jobs: submitted evaluations and who runs them (SPEC §8, docs/deploy.md). One interface, JobService, behind the
// CLI (`xsp submit`, `xsp jobs`, `xsp agents`), the REST API and the web UI, with two implementations:
//  - the in-process queue of `xsp serve` on an SQLite store (server.h JobQueue: one worker thread in the server);
//  - the shared queue in PostgreSQL (postgres_queue.h), whose jobs are run by `xsp agent` processes on many machines.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/eval/evaluate.h"

namespace xsp {

enum class JobState { kQueued, kRunning, kDone, kFailed, kCancelled };
/// "queued" | "running" | "done" | "failed" | "cancelled".
const char* to_string(JobState state);
/// Inverse of to_string(JobState); std::nullopt for anything else.
std::optional<JobState> parse_job_state(std::string_view name);

/// Which agents may run a job. Every field must hold for one agent; an empty field (0 for memory) matches any agent.
struct JobConstraints {
  std::string framework;  ///< framework name (libtorch, opencv-dnn, onnxruntime); "" = any
  /// The agent's framework version equals this or starts with it followed by "." ("2.11" matches "2.11.0", not
  /// "2.110"); "" = any. Needs `framework`.
  std::string framework_version;
  std::string device = "cpu";  ///< "cpu" (every agent) or "cuda" (agents with a CUDA GPU)
  /// Glob on the GPU's name as the driver reports it ("NVIDIA H100 80GB HBM3"): `*` any run of characters, `?` one
  /// character, matched against the whole name case-sensitively ("*H100*"). "" = any. Implies device "cuda" GPUs.
  std::string gpu_pattern;
  std::uint64_t min_gpu_memory_bytes = 0;  ///< some GPU matching gpu_pattern has at least this much memory
  std::string host;                        ///< the agent's hostname, exactly; "" = any
};
/// The constraints a request implies: its framework and device; the rest empty.
JobConstraints constraints_for(const EvaluationRequest& request);
nlohmann::json to_json(const JobConstraints& constraints);
/// Inverse of to_json(JobConstraints); missing keys keep their defaults. Throws RequestError naming the key
/// ("constraints.gpu_pattern") for a wrong type, a device other than cpu/cuda, or framework_version without framework.
JobConstraints job_constraints_from_json(const nlohmann::json& j);

/// `pattern` (glob: `*`, `?`) as an SQL LIKE pattern with `\` as its escape character: `%` and `_` in the pattern
/// are matched literally. "" stays "".
std::string glob_to_like(std::string_view pattern);
/// Whether `name` matches glob `pattern` (the same rule as glob_to_like() under LIKE). An empty pattern matches.
bool glob_match(std::string_view pattern, std::string_view name);

/// One GPU an agent lends.
struct AgentGpu {
  std::string name;                ///< as the driver reports it
  std::uint64_t memory_bytes = 0;  ///< total memory
  std::string uuid;
};
/// A framework an agent's build can run, with the version its library reports.
struct AgentFramework {
  std::string name, version;
};

/// What an agent can run: the facts JobConstraints are matched against.
struct AgentCapabilities {
  std::string hostname;
  std::vector<AgentFramework> frameworks;
  std::vector<AgentGpu> gpus;  ///< empty: CPU only
  bool has_cuda = false;       ///< built with CUDA and a GPU is visible
};
/// {hostname, frameworks: [{name, version}], gpus: [{name, memory_bytes, uuid}], has_cuda}: what an agent registers
/// and `xsp machine describe` prints.
nlohmann::json to_json(const AgentCapabilities& capabilities);
/// Inverse of to_json(AgentCapabilities); missing keys read as empty.
AgentCapabilities agent_capabilities_from_json(const nlohmann::json& j);
/// This machine's capabilities: hostname and GPUs (name, memory) from `system` (describe_system()), the frameworks
/// this build registered with the versions their libraries report, has_cuda when a GPU is listed and the CUDA runtime
/// was found or loaded.
AgentCapabilities describe_capabilities(const nlohmann::json& system);

/// Why an agent with `agent` cannot run a job with `constraints` ("needs a GPU matching 'H100*' (this agent has
/// NVIDIA H200)"), or "" when it can. The same rule as the queue's claim query.
std::string mismatch_reason(const JobConstraints& constraints, const AgentCapabilities& agent);

/// A registered `xsp agent`.
struct AgentInfo {
  std::string id;    ///< random UUID, new at each start
  std::string name;  ///< --name, default the hostname
  /// "idle" | "busy" (running current_job) | "stopped" (exited cleanly) | "lost" (no heartbeat for 3 intervals)
  std::string state;
  AgentCapabilities capabilities;
  nlohmann::json system;  ///< describe_system() of its machine
  std::optional<std::int64_t> current_job;
  std::int64_t jobs_done = 0, jobs_failed = 0;
  std::string started_at, last_heartbeat_at;  ///< ISO 8601 UTC
  std::string role;                           ///< the PostgreSQL role it connected as
};
nlohmann::json to_json(const AgentInfo& agent);

/// What a submitter asks for.
struct JobSubmission {
  EvaluationRequest request;
  JobConstraints constraints;  ///< default: constraints_for(request)
  int priority = 0;            ///< higher runs first; equal priorities run in submission order
  int max_attempts = 3;        ///< from 1: runs that died (agent killed, lease expired) or failed to run count
};

/// A submission as the REST API takes it (POST /api/v1/jobs, POST /api/v1/evaluations): either a bare
/// EvaluationRequest, or {"request": {...}, "constraints": {...}, "priority": N, "max_attempts": N} with all but
/// "request" optional (constraints default to constraints_for(request)). Throws RequestError naming the field
/// ("request.batch_sizes" in the second shape, "batch_sizes" in the first; "body" when it is not an object) for an
/// unknown key, a wrong type or a value out of range (priority within ±1,000,000, max_attempts 1 to 100), and
/// whatever validate_fields() refuses: the checks that need no zoo.
JobSubmission job_submission_from_json(const nlohmann::json& body);

/// A submitted evaluation as the API reports it.
struct JobInfo {
  std::int64_t id = 0;
  JobState state = JobState::kQueued;
  EvaluationRequest request;
  JobConstraints constraints;
  int priority = 0;
  int attempts = 0, max_attempts = 1;         ///< attempts started so far
  Progress progress;                          ///< done/total batches of the current phase, and the phase (`what`)
  std::optional<std::int64_t> evaluation_id;  ///< once saved (done, or cancelled while running: "incomplete")
  std::string evaluation_status;              ///< "complete" | "incomplete" once saved
  std::string error;        ///< failed: what went wrong (RequestError: "field: message"); queued after a failed
                            ///< attempt: that attempt's error
  std::string error_field;  ///< failed with a RequestError: the request field
  bool cancel_requested = false;
  std::string agent_id, agent_name;  ///< running, or the last to run it
  /// Queued: why no live agent takes it ("no live agent can run it (cpu1: needs a GPU matching '*H100*' (this
  /// agent has no GPU))", or "no live agent: ..."), "" when one can. Computed when read.
  std::string waiting_reason;
  std::string submitted_by;                                             ///< PostgreSQL role or "api"
  std::string submitted_at, started_at, finished_at, lease_expires_at;  ///< ISO 8601 UTC; "" until it happens
  /// Who runs it (include/xsp/queue/engine.h): "queue" (the PostgreSQL queue's agents, or the in-process queue of
  /// `xsp serve`) or "slurm" (a task of a Slurm job array; agent_name is then its node).
  std::string engine = "queue";
  /// The id `xsp jobs` shows and takes: the queue's decimal id; Slurm's "ARRAYID_TASK". "" = the decimal `id`.
  std::string external_id;
};
/// The job as the API's JSON object (request and constraints included).
nlohmann::json to_json(const JobInfo& job);

/// Which jobs JobService::list() returns, newest first.
struct JobFilter {
  std::optional<JobState> state;
  std::size_t limit = 100;
};

/// Submitted evaluations: submit, watch, cancel, retry, delete; and the agents that run them. Every method throws
/// std::runtime_error (QueueUnavailable for the PostgreSQL queue) when the queue cannot be reached, and
/// std::length_error / std::logic_error where a full or stopping in-process queue refuses new work (submit, retry).
class JobService {
 public:
  virtual ~JobService() = default;

  /// Queues `submission` and returns its job id. Throws RequestError naming the field for a request or constraint
  /// that is invalid on its face (checked without the zoo: the agent validates against its own), std::length_error
  /// when the queue is full, std::runtime_error when the queue cannot be reached.
  virtual std::int64_t submit(const JobSubmission& submission) = 0;
  virtual std::optional<JobInfo> get(std::int64_t id) = 0;
  virtual std::vector<JobInfo> list(const JobFilter& filter) = 0;

  enum class CancelResult {
    kNotFound,         ///< no such job
    kRemoved,          ///< it was queued: state cancelled, nothing ran
    kStopping,         ///< it is running: asked to stop after the current batch
    kAlreadyFinished,  ///< done, failed or cancelled before
  };
  virtual CancelResult cancel(std::int64_t id) = 0;

  enum class RetryResult {
    kNotFound,
    kRequeued,     ///< failed or cancelled: queued again with its attempts reset
    kNotFinished,  ///< queued or running: nothing to retry
    kDone,         ///< done: submit again to repeat it
  };
  virtual RetryResult retry(std::int64_t id) = 0;

  enum class DeleteResult {
    kNotFound,
    kDeleted,  ///< the job row is gone; its evaluation, if any, stays in the store
    kRunning,  ///< running: cancel it first
  };
  virtual DeleteResult remove(std::int64_t id) = 0;

  /// The agents that registered, live ones first; an in-process queue has none.
  virtual std::vector<AgentInfo> agents() = 0;
};

}  // namespace xsp
