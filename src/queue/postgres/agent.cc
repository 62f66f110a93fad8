// The agent loop of `xsp agent` (include/xsp/queue/agent.h, docs/deploy.md).
#include "xsp/queue/agent.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

#include "xsp/eval/evaluate.h"
#include "xsp/eval/measurement.h"
#include "xsp/predictor/predictor.h"
#include "xsp/queue/postgres_queue.h"
#include "xsp/store/store.h"
#include "xsp/system/system_info.h"

namespace xsp {

namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool stopping(const AgentOptions& o) { return o.interrupt != nullptr && o.interrupt->load() != 0; }

// Sleeps up to `d`, waking early when the agent is asked to stop.
void nap(const AgentOptions& o, milliseconds d) {
  const auto until = SteadyClock::now() + d;
  while (!stopping(o) && SteadyClock::now() < until)
    std::this_thread::sleep_for(std::min<SteadyClock::duration>(milliseconds(100), until - SteadyClock::now()));
}

// Retries `f` while the database is unreachable: 1 s, doubling to 30 s, each failure logged. Gives up (returns
// std::nullopt) when `give_up` says so. Counts a reconnect when it succeeds after a failure.
template <typename F>
auto with_retry(const std::string& what, AgentSummary& summary, F&& f, const std::function<bool()>& give_up)
    -> std::optional<decltype(f())> {
  milliseconds backoff(1'000);
  bool failed = false;
  while (true) {
    try {
      auto result = f();
      if (failed) {
        ++summary.reconnects;
        spdlog::info("agent: database reachable again ({})", what);
      }
      return result;
    } catch (const QueueUnavailable& e) {
      failed = true;
      if (give_up()) return std::nullopt;
      spdlog::warn("agent: {}: {}; retrying in {} s", what, e.what(), backoff.count() / 1000);
    }
    const auto until = SteadyClock::now() + backoff;
    while (SteadyClock::now() < until && !give_up()) std::this_thread::sleep_for(milliseconds(100));
    backoff = std::min(backoff * 2, milliseconds(30'000));
  }
}

class JobRun {
 public:
  JobRun(PostgresJobQueue& queue, const std::string& agent_id, const JobInfo& job, const AgentOptions& o,
         AgentSummary& summary)
      : queue_(queue), agent_id_(agent_id), job_(job), o_(o), summary_(summary) {}

  void run() {
    spdlog::info("agent: job {} ({} on {}, attempt {} of {}) started", job_.id, job_.request.model, job_.request.device,
                 job_.attempts, job_.max_attempts);
    std::thread keeper([this] { keep_lease(); });
    EvaluationContext context;
    context.zoo = o_.zoo;
    context.default_images_dir = o_.default_images_dir;
    context.confine_to = confinement_roots(o_.zoo, o_.default_images_dir, o_.data_dirs);
    context.record_machine_state = o_.record_machine_state;
    context.clock = o_.clock;
    context.interrupt = &interrupt_;
    context.progress = [this](const Progress& p) {
      std::lock_guard lock(mu_);
      progress_ = p;
    };
    std::optional<EvaluationRecord> record;
    std::string error, error_field;
    bool permanent = false;
    try {
      record = evaluate(job_.request, context);
    } catch (const RequestError& e) {
      // Another attempt would be refused the same way: fail the job now, naming the field.
      error = e.what();
      error_field = e.field();
      permanent = true;
    } catch (const std::exception& e) {
      error = e.what();
    }
    {
      std::lock_guard lock(mu_);
      finished_ = true;
    }
    wake_.notify_all();
    keeper.join();

    if (handing_back_) return hand_back();
    if (lost_) {
      ++summary_.jobs_lost;
      spdlog::warn(
          "agent: job {} is no longer this agent's (its lease expired while the database was out of reach, "
          "or it was deleted); its result is dropped so that it is not published twice",
          job_.id);
      return;
    }
    if (record) return publish(*record);
    ++summary_.jobs_failed;
    spdlog::warn("agent: job {} failed: {}", job_.id, error);
    with_retry(
        "report the failure of job " + std::to_string(job_.id), summary_,
        [&] { return queue_.fail(agent_id_, job_.id, error, error_field, permanent); },
        [this] { return stopping(o_); });
  }

 private:
  // Renews the lease every lease / 3 with the latest progress; turns a cancel, a lost lease or SIGTERM into the
  // evaluation's interrupt flag (evaluate() stops before its next batch).
  void keep_lease() {
    const auto every = std::max(milliseconds(50), o_.lease / 3);
    auto next = SteadyClock::now() + every;
    std::unique_lock lock(mu_);
    while (!finished_) {
      wake_.wait_for(lock, milliseconds(100));
      if (finished_) break;
      if (stopping(o_) && !handing_back_) {
        handing_back_ = true;
        interrupt_.store(o_.interrupt->load());
      }
      if (SteadyClock::now() < next) continue;
      const Progress p = progress_;
      lock.unlock();
      try {
        switch (queue_.renew(agent_id_, job_.id, p)) {
          case PostgresJobQueue::LeaseState::kHeld:
            break;
          case PostgresJobQueue::LeaseState::kCancelRequested:
            if (interrupt_.load() == 0)
              spdlog::info("agent: job {}: cancel requested; stopping after this batch", job_.id);
            interrupt_.store(SIGINT);
            break;
          case PostgresJobQueue::LeaseState::kLost:
            lost_ = true;
            interrupt_.store(SIGTERM);
            break;
        }
      } catch (const std::exception& e) {
        // Keep running: the database may be back before the lease ends. If not, another agent gets the job and this
        // one's result is dropped at publish time (complete() checks ownership).
        spdlog::warn("agent: job {}: could not renew the lease: {}", job_.id, e.what());
      }
      lock.lock();
      next = SteadyClock::now() + every;
    }
  }

  void hand_back() {
    ++summary_.jobs_handed_back;
    // A few tries only: the agent is stopping. If they fail, the lease expires and the job is queued again then.
    const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
    const auto r = with_retry(
        "hand back job " + std::to_string(job_.id), summary_, [&] { return queue_.hand_back(agent_id_, job_.id); },
        [&] { return SteadyClock::now() > deadline; });
    spdlog::info("agent: job {} {}", job_.id,
                 r && *r ? "handed back to the queue"
                         : "not handed back (the database is unreachable): it returns to "
                           "the queue when its lease expires");
  }

  void publish(EvaluationRecord& record) {
    // While the database is unreachable keep trying: the lease may still be ours when it is back. On SIGTERM meanwhile,
    // or when the store refuses the record, the finished evaluation goes to a recovery file instead of being lost.
    std::string refused;
    const auto published = with_retry(
        "publish the result of job " + std::to_string(job_.id), summary_,
        [&]() -> bool {
          try {
            return queue_.complete(agent_id_, job_.id, record);
          } catch (const QueueUnavailable&) {
            throw;
          } catch (const StoreError& e) {
            refused = e.what();
            return false;
          }
        },
        [this] { return stopping(o_); });
    if (published && *published) {
      ++summary_.jobs_done;
      spdlog::info("agent: job {} done: evaluation {} ({})", job_.id, record.id, record.status);
      return;
    }
    if (published && refused.empty()) {
      ++summary_.jobs_lost;
      spdlog::warn(
          "agent: job {} was taken by another agent while this one could not reach the database; its result "
          "is dropped so that it is not published twice",
          job_.id);
      return;
    }
    std::string saved;
    try {
      std::error_code ec;
      saved = write_recovery_file(record, {std::filesystem::current_path(ec), std::filesystem::temp_directory_path(ec)})
                  .string();
    } catch (const std::exception& e) {
      saved = std::string("could not be written either: ") + e.what();
    }
    const std::string why = refused.empty() ? "the database was unreachable when the agent stopped" : refused;
    spdlog::error(
        "agent: job {}: result not published ({}); the evaluation is in {} (load it with `xsp import FILE "
        "--store {}`)",
        job_.id, why, saved, redact_location(o_.store));
    if (!refused.empty()) {
      ++summary_.jobs_failed;
      with_retry(
          "report the failure of job " + std::to_string(job_.id), summary_,
          [&] {
            return queue_.fail(agent_id_, job_.id,
                               "the store refused the result: " + refused + "; agent " + agent_id_ +
                                   " saved the evaluation to " + saved + " on its machine",
                               "", false);
          },
          [this] { return stopping(o_); });
    }
  }

  PostgresJobQueue& queue_;
  const std::string& agent_id_;
  const JobInfo& job_;
  const AgentOptions& o_;
  AgentSummary& summary_;
  std::atomic<int> interrupt_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  Progress progress_;
  bool finished_ = false;
  std::atomic<bool> handing_back_{false}, lost_{false};
};

}  // namespace

AgentSummary run_agent(const AgentOptions& o) {
  if (!is_postgres_location(o.store))
    throw StoreError("xsp agent: --store " + o.store +
                     ": agents take jobs from a shared PostgreSQL store (postgresql://USER@HOST/DATABASE, "
                     "docs/deploy.md), not from an SQLite file");
  AgentSummary summary;
  const nlohmann::json system = describe_system();
  const AgentCapabilities caps = o.capabilities ? *o.capabilities : describe_capabilities(system);
  const std::string name = o.name.empty() ? caps.hostname : o.name;
  const auto give_up = [&o] { return stopping(o); };

  QueueOptions qo;
  qo.lease = o.lease;
  auto opened = with_retry(
      "connect to " + redact_location(o.store), summary,
      [&] { return std::shared_ptr<PostgresJobQueue>(PostgresJobQueue::open(o.store, qo)); }, give_up);
  if (!opened) return summary;
  PostgresJobQueue& queue = **opened;
  const auto id = with_retry(
      "register", summary, [&] { return queue.register_agent(name, caps, system); }, give_up);
  if (!id) return summary;
  summary.agent_id = *id;
  std::string frameworks;
  for (const AgentFramework& f : caps.frameworks)
    frameworks += (frameworks.empty() ? "" : ", ") + f.name + " " + f.version;
  spdlog::info("agent {} ({}) registered on {}: frameworks {}; {} GPU(s){}", name, summary.agent_id, queue.location(),
               frameworks.empty() ? "none" : frameworks, caps.gpus.size(), caps.has_cuda ? "" : ", no CUDA");

  auto idle_since = SteadyClock::now();
  auto last_heartbeat = SteadyClock::now();
  bool look = true;  // claim at once at start, then when woken or every poll
  while (!stopping(o)) {
    if (o.max_jobs && summary.jobs_done + summary.jobs_failed + summary.jobs_lost >= *o.max_jobs) break;
    if (look) {
      const auto job = with_retry(
          "claim a job", summary, [&] { return queue.claim(summary.agent_id, caps); }, give_up);
      if (!job) break;  // stopping
      last_heartbeat = SteadyClock::now();
      if (*job) {
        JobRun(queue, summary.agent_id, **job, o, summary).run();
        idle_since = SteadyClock::now();
        continue;  // look again at once: more work may be queued
      }
    }
    const auto now = SteadyClock::now();
    if (o.exit_when_idle && now - idle_since >= *o.exit_when_idle) break;
    if (now - last_heartbeat >= o.poll) {
      with_retry(
          "heartbeat", summary,
          [&] {
            queue.heartbeat(summary.agent_id);
            return 0;
          },
          give_up);
      last_heartbeat = SteadyClock::now();
      look = true;  // also sweeps expired leases of dead agents, which no NOTIFY announces
      continue;
    }
    // Short waits keep SIGTERM responsive; a NOTIFY ends the wait at once.
    auto wait = std::min<SteadyClock::duration>(milliseconds(1'000), o.poll - (now - last_heartbeat));
    if (o.exit_when_idle) wait = std::min<SteadyClock::duration>(wait, *o.exit_when_idle - (now - idle_since));
    try {
      look = queue.wait_for_work(std::chrono::duration_cast<milliseconds>(wait));
    } catch (const QueueUnavailable& e) {
      spdlog::warn("agent: {}", e.what());
      nap(o, milliseconds(1'000));
      look = true;
    }
  }
  // A clean stop: `xsp agents` shows it stopped rather than lost. Not worth waiting long for an unreachable database.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(5);
  with_retry(
      "mark the agent stopped", summary,
      [&] {
        queue.agent_stopped(summary.agent_id);
        return 0;
      },
      [&] { return SteadyClock::now() > deadline; });
  spdlog::info("agent {} stopped: {} done, {} failed, {} handed back, {} lost", name, summary.jobs_done,
               summary.jobs_failed, summary.jobs_handed_back, summary.jobs_lost);
  return summary;
}

}  // namespace xsp
