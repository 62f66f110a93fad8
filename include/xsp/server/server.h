// `xsp serve` (docs/server.md): a REST API (JSON, prefix /api/v1) over the results store and the one library call,
// evaluate(). Reads go to a pool of read-only store connections (WAL: they never wait for the worker's save);
// submitted evaluations go to a JobService: on an SQLite store the server's own worker thread runs them one at a
// time (JobQueue); on a PostgreSQL store the shared queue takes them and `xsp agent` processes run them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "xsp/eval/evaluate.h"
#include "xsp/queue/engine.h"
#include "xsp/queue/jobs.h"

namespace xsp {

// ---------------------------------------------------------------------------------------------------------
// Jobs: submitted evaluations
// ---------------------------------------------------------------------------------------------------------

/// The in-process JobService of `xsp serve` on an SQLite store: one worker thread, the server itself being the
/// only "agent". Queued jobs run highest priority first, equal priorities in submission (id) order; constraints are
/// kept and reported but not matched (there is only this machine), and each job runs once (max_attempts 1).
/// Cancelling a queued job removes it from the queue; cancelling the running one sets its interrupt flag, so that
/// evaluate() stops before the next batch and saves the complete runs as an "incomplete" evaluation, as Ctrl-C does
/// for `xsp evaluate`.
class JobQueue final : public JobService {
 public:
  /// Runs one request: evaluate() with the server's context, `progress` and `interrupt` (non-zero = stop).
  /// Returns the saved record; throws as evaluate() does.
  using Runner = std::function<EvaluationRecord(const EvaluationRequest& request, const ProgressCallback& progress,
                                                const std::atomic<int>* interrupt)>;
  /// Starts the worker. `max_queued`: jobs waiting at most (submit() and retry() refuse more); `max_finished`:
  /// finished jobs remembered for GET jobs (the oldest are forgotten first).
  JobQueue(Runner runner, std::size_t max_queued = 64, std::size_t max_finished = 1000);
  /// shutdown().
  ~JobQueue() override;
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  /// Queues `submission` (its max_attempts is ignored: 1) and returns its job id (1, 2, ...). The request is not
  /// validated here: the server validates against its zoo first, and evaluate() again when it runs. Throws
  /// std::length_error when max_queued jobs wait already, std::logic_error after shutdown().
  std::int64_t submit(const JobSubmission& submission) override;
  std::optional<JobInfo> get(std::int64_t id) override;
  /// Remembered jobs in `filter.state` (any when unset), newest (highest id) first, at most `filter.limit`.
  std::vector<JobInfo> list(const JobFilter& filter) override;
  /// A queued job: removed (kRemoved); the running one: asked to stop (kStopping; state stays running until it has).
  CancelResult cancel(std::int64_t id) override;
  /// A failed or cancelled job: queued again under its id at its priority, attempts, error, progress and evaluation
  /// cleared. Throws std::length_error when max_queued jobs wait already, std::logic_error after shutdown().
  RetryResult retry(std::int64_t id) override;
  /// A finished or queued job (taken off the queue) is forgotten; the running one is not touched (kRunning).
  DeleteResult remove(std::int64_t id) override;
  /// Empty: the server runs jobs itself.
  std::vector<AgentInfo> agents() override;

  /// Cancels every queued job, asks the running one to stop, waits for it (its incomplete evaluation is saved) and
  /// ends the worker. Idempotent.
  void shutdown();

 private:
  struct Job {
    JobInfo info;
    std::atomic<int> interrupt{0};
  };
  void work();
  void remember_finished(const std::shared_ptr<Job>& job);  // with mu_ held
  void enqueue(const std::shared_ptr<Job>& job);            // with mu_ held: by priority, then id
  void check_room() const;                                  // with mu_ held: throws as submit() documents

  Runner runner_;
  std::size_t max_queued_, max_finished_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::shared_ptr<Job> running_;
  std::map<std::int64_t, std::shared_ptr<Job>> jobs_;  // every remembered job, by id
  std::deque<std::int64_t> finished_order_;
  std::int64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread worker_;
};

// ---------------------------------------------------------------------------------------------------------
// The HTTP server
// ---------------------------------------------------------------------------------------------------------

/// What `xsp serve` maps its flags onto.
struct ServerOptions {
  std::string host = "127.0.0.1";            ///< address to bind; loopback by default
  int port = 8080;                           ///< 0 = any free port (Server::port() then tells which)
  std::filesystem::path store;               ///< results store (opened read-write once, read-only per reader)
  std::filesystem::path zoo;                 ///< folder of manifests (GET models, submissions)
  std::filesystem::path default_images_dir;  ///< EvaluationContext::default_images_dir
  /// Bearer token for writes (POST, DELETE). Required when `host` is not a loopback address; on loopback, writes
  /// are open when it is empty. Compared in constant time.
  std::string token;
  std::size_t max_body_bytes = 1 << 20;  ///< larger request bodies get 413 before they are read
  std::size_t threads = 16;              ///< HTTP worker threads: requests handled at once
  std::size_t max_queued_jobs = 64;      ///< the server's own queue: submissions beyond this get 503
  /// Connections are read by one event loop (src/server/http_front.h), so a slow or idle client never holds a
  /// worker thread. A request must arrive whole (head and body) within `request_timeout` of its first byte (else
  /// 408); a connection without a request under way is closed after `idle_timeout`.
  std::chrono::milliseconds request_timeout{10'000};
  std::chrono::milliseconds idle_timeout{5'000};
  std::size_t max_connections = 512;            ///< open at once; more get 503
  std::size_t max_connections_per_client = 64;  ///< per remote address; more get 429
  /// Requests that load whole evaluations and compute over them (analyses, compare, report, trace downloads) run at
  /// most this many at once; more get 503 with Retry-After, so that they cannot starve the listing endpoints.
  std::size_t max_heavy_requests = 4;
  /// Host names the server answers to besides IP addresses, "localhost" and this machine's host name: the Host
  /// header of any other name is refused (421), as a DNS-rebinding page would send it (`--allowed-host`, e.g. the
  /// public name of a TLS proxy in front of the server).
  std::vector<std::string> allowed_hosts;
  /// Folders a submitted request may read files from (inputs.images_dir, generation.prompts_file), besides the zoo
  /// and default_images_dir: EvaluationContext::confine_to (docs/server.md "Security").
  std::vector<std::filesystem::path> data_dirs;
  /// A folder served under /ui/ (the web UI's static assets); empty = none.
  std::filesystem::path static_dir;
  const Clock* clock = nullptr;      ///< EvaluationContext::clock (tests inject a fake one)
  bool record_machine_state = true;  ///< EvaluationContext::record_machine_state
  /// Where submitted evaluations go. Null: for an SQLite store the server makes its own JobQueue and runs them; for
  /// a PostgreSQL store (is_postgres_location) it opens the shared queue (open_job_service) and runs nothing itself:
  /// `xsp agent` processes do. Given (tests inject a fake): used as is, and the server runs nothing itself.
  std::shared_ptr<JobService> jobs;
  /// The Slurm submissions of `xsp submit --engine slurm` (a slurm::SlurmEngine over their folder; `xsp serve
  /// --slurm-dir`), listed by GET /api/v1/jobs beside the queue's jobs and reached by their "ARRAYID_TASK" ids.
  /// Null: the API shows the queue's jobs only.
  std::shared_ptr<JobEngine> slurm;
};

/// True for 127.0.0.0/8, ::1 and "localhost": addresses no other machine can reach.
bool is_loopback_address(const std::string& host);

/// Reads a token file: its content without surrounding whitespace. Throws std::runtime_error naming the file when
/// it cannot be read or holds no token.
std::string read_token_file(const std::filesystem::path& file);

/// The REST API of docs/server.md on cpp-httplib.
class Server {
 public:
  /// Checks the options, opens the store read-write (so that a store that cannot be written fails now, not after a
  /// submitted evaluation) and sets up the job service (ServerOptions::jobs). Throws std::invalid_argument naming
  /// the option when `host` is not loopback and there is no token, or for a zero max_body_bytes/threads; StoreError
  /// as Store::open; for a PostgreSQL store without `jobs`, what open_job_service() throws (std::invalid_argument
  /// in a build without PostgreSQL, QueueUnavailable when the queue cannot be reached).
  explicit Server(ServerOptions options);
  /// stop().
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds host:port; returns the port bound. Throws std::runtime_error naming the address when it cannot bind.
  int bind();
  /// Serves until stop() (call bind() first). Returns when stopped.
  void listen();
  /// bind(), then listen() on a background thread; returns once it accepts connections.
  void start();
  /// Stops accepting requests and, when the server runs jobs itself, cancels queued jobs, stops the running one (its
  /// complete runs are saved as an incomplete evaluation) and waits for both threads; a shared queue's jobs are
  /// left to its agents. Idempotent; safe from a signal-watching thread.
  void stop();

  int port() const;
  /// "http://HOST:PORT" (IPv6 hosts in brackets).
  std::string url() const;
  /// The job service submissions go to (ServerOptions::jobs).
  JobService& jobs();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xsp
