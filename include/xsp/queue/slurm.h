// The Slurm engine of `xsp submit --engine slurm` (docs/deploy.md "Running XSP on a Slurm cluster"), and the
// Kubernetes Indexed Job written out by `xsp submit --engine k8s --dry-run`.
//
// Slurm is driven only through its stable command-line interface (sbatch --parsable, squeue --json, sacct --json,
// scancel): SchedMD changes the C API (libslurm) between major releases, so XSP never links it. One submission is one
// job array: task I runs `xsp evaluate` for the I-th model on the node Slurm allocates and writes the result into the
// shared store given with --store. What XSP keeps of a submission is a folder (the job's folder) on a filesystem the
// submitter can read: job.sh (the batch script, readable and resubmittable by hand with sbatch), job.json (the tasks,
// their requests, every Slurm job id each task ran under, and the final state of each once seen), and each task's
// output. States are read from Slurm on every list and kept in job.json once final, so a job that left squeue's
// memory (MinJobAge) without accounting still shows how it ended.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xsp/queue/engine.h"

namespace xsp::slurm {

/// How a child process ended, with what it printed.
struct ProcessResult {
  int exit_code = -1;      ///< its exit status; -1 when killed by a signal
  int signal = 0;          ///< the signal that killed it, 0 if none
  bool timed_out = false;  ///< killed (SIGKILL) because it ran past the timeout
  std::string out, err;    ///< stdout and stderr, whole
};
/// Runs `argv` (argv[0] looked up in PATH) with stdin /dev/null, collecting stdout and stderr, and kills it with
/// SIGKILL once it runs past `timeout`. Throws std::runtime_error naming argv[0] when it cannot be started (not
/// installed).
ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

/// The sbatch options of one array, passed through to sbatch as given (Slurm validates them).
struct ArrayOptions {
  std::string partition;   ///< --partition; "" = the cluster's default
  std::string gres;        ///< --gres per task, e.g. "gpu:h100:1"; "" = none
  std::string gpus;        ///< --gpus per task, e.g. "1" or "h100:1"; "" = none
  std::string time;        ///< --time per task, Slurm's format ("00:30:00", "30", "1-00:00:00"); "" = partition's
  std::string dependency;  ///< --dependency of the first submission, e.g. "afterok:1234"; retries go without it
  int max_concurrent = 0;  ///< K of --array=0-N%K: at most K tasks at once; 0 = no limit
  int max_attempts = 3;    ///< a task that failed, timed out, was preempted or lost its node runs again until this
  std::vector<std::string> sbatch_args;  ///< further sbatch options, each one argument ("--container-image=...")
  std::string job_name = "xsp";          ///< --job-name
};

/// One task of an array: the model it evaluates and the command line that does it.
struct TaskSpec {
  std::string model;
  nlohmann::json request;         ///< to_json(EvaluationRequest) of the task, shown by `xsp jobs show`
  std::vector<std::string> argv;  ///< the whole command, e.g. {"/usr/bin/xsp", "evaluate", "resnet50", ...}
};

/// Slurm's view of one array task, from squeue --json (or sacct --json).
struct TaskStatus {
  std::int64_t array_job_id = 0;  ///< the array's id (SLURM_ARRAY_JOB_ID)
  int task = -1;                  ///< the task index (SLURM_ARRAY_TASK_ID)
  std::int64_t job_id = 0;        ///< the task's own job id once it started; the array's id while pending
  std::string state;              ///< Slurm's state name: PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, ...
  std::string reason;             ///< Slurm's reason ("None", "JobArrayTaskLimit", "NonZeroExitCode", ...)
  int exit_code = 0;              ///< the batch script's exit status
  int signal = 0;                 ///< the signal that ended it, 0 if none
  int restarts = 0;               ///< times Slurm requeued it
  std::string node;               ///< where it runs or ran
  std::int64_t submit_time = 0, start_time = 0, end_time = 0;  ///< Unix seconds; 0 = not yet
};

/// The tasks in the output of `squeue --json` (Slurm 22.05: {"jobs": [{job_id, array_job_id, array_task_id,
/// array_task_string, job_state, state_reason, exit_code (a wait status), restart_cnt, nodes, submit_time, ...}]}).
/// A record of pending tasks not yet split off (array_task_string "2-5%2", "1,3,7-9") gives one TaskStatus per
/// index. Records of jobs that are not array tasks are skipped. Throws std::runtime_error naming the key for a
/// document of another shape.
std::vector<TaskStatus> parse_squeue_json(const nlohmann::json& doc);
/// The tasks in the output of `sacct --json` (Slurm 22.05, clusters with slurmdbd: {"jobs": [{job_id, array:
/// {job_id, task_id}, state: {current, reason}, exit_code: {return_code, signal: {signal_id}}, ...}]}).
std::vector<TaskStatus> parse_sacct_json(const nlohmann::json& doc);
/// The indices in an array_task_string ("0-3", "2-5%2", "1,3,7-9:2"). Throws std::invalid_argument for anything
/// else.
std::vector<int> expand_task_string(const std::string& text);

/// A Slurm task's state as XSP's, with the reason `xsp jobs` prints and whether another attempt may help.
struct MappedState {
  JobState state = JobState::kQueued;
  std::string reason;      ///< "" when there is nothing to say (running, done)
  bool retryable = false;  ///< FAILED with an exit status other than usage (2), TIMEOUT, NODE_FAIL, PREEMPTED, ...
};
/// PENDING, CONFIGURING, REQUEUED, REQUEUE_HOLD/FED, RESIZING: queued (a PENDING task with restarts was requeued by
/// Slurm after its node failed or it was preempted, and says so); RUNNING, COMPLETING, SUSPENDED, STOPPED:
/// running; COMPLETED: done; CANCELLED: cancelled; FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, BOOT_FAIL,
/// DEADLINE, SPECIAL_EXIT, REVOKED: failed; an unknown name: failed, saying so. State names may carry flags after a
/// space or "+" ("CANCELLED by 0", "RUNNING+COMPLETING"); only the first word counts.
MappedState map_state(const TaskStatus& status);

/// "0-N%K" (N = tasks - 1; "%K" only when 0 < K < tasks). Throws std::invalid_argument for tasks < 1.
std::string array_spec(std::size_t tasks, int max_concurrent);
/// The batch script of an array: #SBATCH lines for every option but --dependency, XSP_STORE and XSP_ZOO exported
/// (`store`, `zoo`: what every task's `xsp` reads), then one `case` branch per task running its argv, recording the
/// evaluation's id and the Slurm ids in `dir`/result-I.json (written whole, then renamed) and as tags slurm-array:A
/// and slurm-task:I on the evaluation. Throws std::invalid_argument for no tasks.
std::string batch_script(const ArrayOptions& options, const std::vector<TaskSpec>& tasks,
                         const std::filesystem::path& dir, const std::filesystem::path& xsp_binary,
                         const std::string& store, const std::filesystem::path& zoo);
/// The argv of `sbatch --parsable` for the script (the first submission: `array` = array_spec(), with
/// --dependency; a retry: one index, without it).
std::vector<std::string> sbatch_argv(const ArrayOptions& options, const std::filesystem::path& script,
                                     const std::string& array, bool first);

/// Submits, watches, cancels and retries job arrays; one folder per submission under `root`.
class SlurmEngine final : public JobEngine {
 public:
  /// `root`: where submissions' folders go (created when needed). `timeout`: the longest any Slurm command may take.
  explicit SlurmEngine(std::filesystem::path root, std::chrono::milliseconds timeout = std::chrono::seconds(60));

  /// What submit() made.
  struct Submitted {
    std::filesystem::path dir;      ///< the job's folder (job.sh, job.json, outputs)
    std::int64_t array_job_id = 0;  ///< sbatch's answer
    std::vector<std::string> ids;   ///< "ARRAYID_I" for each task
  };
  /// Writes job.sh and job.json into a new folder and submits the array with sbatch --parsable. Throws
  /// std::invalid_argument for no tasks or max_attempts out of 1..100, std::runtime_error with sbatch's message when
  /// it refuses (the folder then stays, job.json saying it was not submitted, so the script can be read).
  Submitted submit(const ArrayOptions& options, const std::vector<TaskSpec>& tasks,
                   const std::filesystem::path& xsp_binary, const std::string& store, const std::filesystem::path& zoo);

  /// Resubmits (sbatch --array=I) each task that ended retryable (map_state) with attempts left. Returns how many.
  /// list() and get() call it, so watching a job is what retries it.
  std::size_t retry_failed();

  std::string name() const override { return "slurm"; }
  std::vector<JobInfo> list(const JobFilter& filter) override;
  std::optional<JobInfo> get(const std::string& id) override;
  /// scancel of the task's latest attempt. kRemoved when it was pending, kStopping when running (Slurm sends SIGTERM,
  /// SIGKILL after KillWait), kAlreadyFinished when it ended before.
  JobService::CancelResult cancel(const std::string& id) override;
  bool owns(const std::string& id) const override;

 private:
  std::vector<JobInfo> refresh();
  std::filesystem::path root_;
  std::chrono::milliseconds timeout_;
};

/// The options of a Kubernetes Indexed Job (batch/v1): one pod per task, JOB_COMPLETION_INDEX picks the task.
struct K8sOptions {
  std::string name = "xsp";  ///< metadata.name (a DNS label: lowercase, digits, '-'; at most 63 characters)
  std::string image;         ///< the container image holding the xsp binary (required)
  std::string namespace_;    ///< metadata.namespace; "" = kubectl's current
  int gpus = 0;              ///< nvidia.com/gpu per pod (limits); 0 = none
  int parallelism = 0;       ///< pods at once; 0 = all tasks
  int max_attempts = 3;      ///< backoffLimit = tasks × (max_attempts - 1)
  std::string store_secret = "xsp-store";  ///< Secret whose key `store_key` holds the store's location (XSP_STORE)
  std::string store_key = "url";
  std::string time;  ///< activeDeadlineSeconds from Slurm's format ("00:30:00"); "" = none
};
/// The Job manifest as YAML. Each task's argv must not hold the store (the pod reads XSP_STORE from the Secret).
/// Throws std::invalid_argument naming the option (image, name, time) for an empty image, a name that is not a DNS
/// label, or a time that is not [D-]HH:MM:SS, MM:SS or MM.
std::string k8s_manifest(const K8sOptions& options, const std::vector<TaskSpec>& tasks);
/// Slurm's time format as seconds: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS". Throws
/// std::invalid_argument for anything else.
std::int64_t parse_slurm_time(const std::string& text);

}  // namespace xsp::slurm
