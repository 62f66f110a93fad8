// xsp submit / jobs / agents / agent: the shared job queue (docs/deploy.md). Each maps its flags onto one call of
// JobService (include/xsp/queue/jobs.h) or run_agent() (include/xsp/queue/agent.h).
#include <spdlog/spdlog.h>

#include <cmath>
#include <iostream>
#include <thread>

#include "common.h"
#include "request_flags.h"
#include "signals.h"
#include "xsp/queue/agent.h"
#include "xsp/queue/postgres_queue.h"

namespace xsp::cli {
namespace {

std::unique_ptr<JobService> open_jobs(const Globals& g) {
  try {
    return open_job_service(g.store_path);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--store", e.what());
  }
}

// Table columns of `xsp jobs`, declared once; the JSON form is to_json(JobInfo).
Table jobs_table(const std::vector<JobInfo>& jobs, const std::string& title) {
  Table t;
  t.id = "jobs";
  t.title = title;
  t.columns = {{"id"},       {"state"},    {"model"}, {"framework"}, {"device"},        {"constraints"},
               {"priority"}, {"attempts"}, {"agent"}, {"progress"},  {"evaluation_id"}, {"submitted_at"},
               {"note"}};
  for (const JobInfo& j : jobs) {
    std::string constraints;
    const JobConstraints& c = j.constraints;
    if (!c.framework_version.empty()) constraints += "version " + c.framework_version + " ";
    if (!c.gpu_pattern.empty()) constraints += "gpu " + c.gpu_pattern + " ";
    if (c.min_gpu_memory_bytes > 0) constraints += ">=" + std::to_string(c.min_gpu_memory_bytes >> 30) + "GiB ";
    if (!c.host.empty()) constraints += "host " + c.host + " ";
    if (!constraints.empty()) constraints.pop_back();
    const std::string progress =
        j.state == JobState::kRunning && j.progress.total > 0
            ? std::to_string(j.progress.done) + "/" + std::to_string(j.progress.total) + " " + j.progress.what
            : "";
    const std::string note = j.state == JobState::kQueued && !j.waiting_reason.empty() ? j.waiting_reason : j.error;
    t.rows.push_back({Cell(j.id),
                      Cell(std::string(to_string(j.state)) +
                           (j.cancel_requested && j.state == JobState::kRunning ? " (cancelling)" : "")),
                      Cell(j.request.model), Cell(j.request.framework.empty() ? c.framework : j.request.framework),
                      Cell(j.request.device), Cell(constraints), Cell(static_cast<std::int64_t>(j.priority)),
                      Cell(std::to_string(j.attempts) + "/" + std::to_string(j.max_attempts)), Cell(j.agent_name),
                      Cell(progress), j.evaluation_id ? Cell(*j.evaluation_id) : Cell(), Cell(j.submitted_at),
                      Cell(note)});
  }
  return t;
}

Table agents_table(const std::vector<AgentInfo>& agents) {
  Table t;
  t.id = "agents";
  t.title = "Agents";
  t.columns = {{"name"},        {"state"},     {"hostname"},    {"frameworks"},        {"gpus"},
               {"current_job"}, {"jobs_done"}, {"jobs_failed"}, {"last_heartbeat_at"}, {"id"}};
  for (const AgentInfo& a : agents) {
    std::string frameworks, gpus;
    for (const AgentFramework& f : a.capabilities.frameworks)
      frameworks += (frameworks.empty() ? "" : ", ") + f.name + " " + f.version;
    for (const AgentGpu& gpu : a.capabilities.gpus)
      gpus += (gpus.empty() ? "" : ", ") + gpu.name + " " + std::to_string(gpu.memory_bytes >> 30) + " GiB";
    t.rows.push_back({Cell(a.name), Cell(a.state), Cell(a.capabilities.hostname), Cell(frameworks),
                      Cell(gpus.empty() ? std::string("none") : gpus), a.current_job ? Cell(*a.current_job) : Cell(),
                      Cell(a.jobs_done), Cell(a.jobs_failed), Cell(a.last_heartbeat_at), Cell(a.id)});
  }
  return t;
}

void print_table(const Table& t, TableFormat format) { print_tables({t}, format); }

struct SubmitArgs : RequestFlags {
  JobSubmission submission;
  double min_gpu_memory_gib = 0;
  bool wait = false;
  std::string format = "text";
};

int run_submit(Globals& g, SubmitArgs& a) {
  to_request(a);
  JobSubmission& s = a.submission;
  s.request = a.request;
  s.constraints.device = a.request.device;
  s.constraints.framework = a.request.framework;
  s.constraints.min_gpu_memory_bytes = static_cast<std::uint64_t>(std::llround(a.min_gpu_memory_gib * (1ull << 30)));
  try {
    validate_fields(s.request);  // as `xsp evaluate` does, before the job is queued (and before connecting)
  } catch (const RequestError& e) {
    throw flag_error(e);
  }
  auto jobs = open_jobs(g);
  std::int64_t id = 0;
  try {
    id = jobs->submit(s);
  } catch (const RequestError& e) {
    static const std::map<std::string, std::string> constraint_flags = {
        {"constraints.gpu_pattern", "--gpu"},     {"constraints.min_gpu_memory_bytes", "--min-gpu-memory-gib"},
        {"constraints.host", "--host"},           {"constraints.framework_version", "--framework-version"},
        {"constraints.framework", "--framework"}, {"constraints.device", "--device"},
        {"max_attempts", "--max-attempts"}};
    const auto it = constraint_flags.find(e.field());
    if (it == constraint_flags.end()) throw flag_error(e);
    throw CLI::ValidationError(it->second, std::string(e.what()).substr(e.field().size() + 2));
  }
  const auto job = jobs->get(id);
  if (a.format == "json") {
    std::cout << to_json(*job).dump(2) << "\n";
  } else {
    std::cout << "submitted job " << id << " (" << a.request.model << ")";
    if (job && !job->waiting_reason.empty()) std::cout << "; " << job->waiting_reason;
    std::cout << "\n";
  }
  if (!a.wait) return kExitOk;
  // --wait: until the job finishes, polling once a second; the exit status says how it ended.
  InterruptGuard interrupt;
  std::string last;
  while (interrupt.signal() == 0) {
    const auto j = jobs->get(id);
    if (!j) throw std::runtime_error("job " + std::to_string(id) + " was deleted while waiting for it");
    const std::string line =
        std::string(to_string(j->state)) +
        (j->state == JobState::kRunning ? " on " + j->agent_name + " " + std::to_string(j->progress.done) + "/" +
                                              std::to_string(j->progress.total) + " " + j->progress.what
                                        : "") +
        (j->state == JobState::kQueued && !j->waiting_reason.empty() ? ": " + j->waiting_reason : "");
    if (line != last) std::cerr << "job " << id << ": " << line << "\n";
    last = line;
    if (j->state == JobState::kDone) {
      std::cout << "job " << id << " done: evaluation " << j->evaluation_id.value_or(0) << " in "
                << redact_location(g.store_path) << "\n";
      return kExitOk;
    }
    if (j->state == JobState::kFailed || j->state == JobState::kCancelled) {
      std::cerr << "xsp: error: job " << id << " " << to_string(j->state) << (j->error.empty() ? "" : ": " + j->error)
                << "\n";
      return kExitFailure;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return exit_code_for_signal(interrupt.signal());
}

void add_submit(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("submit",
                                 "queue an evaluation for the agents (`xsp agent`) of a shared PostgreSQL store; the "
                                 "same flags as `xsp evaluate`, plus which machines may run it");
  auto a = std::make_shared<SubmitArgs>();
  add_request_flags(sub, *a);
  const std::string cg = "Where it may run (every constraint must hold for one agent)";
  JobConstraints& c = a->submission.constraints;
  sub->add_option("--gpu", c.gpu_pattern,
                  "glob on the GPU name as the driver reports it, e.g. \"*H100*\" (* any run of characters, ? one)")
      ->group(cg);
  sub->add_option("--min-gpu-memory-gib", a->min_gpu_memory_gib, "a matching GPU has at least this much memory (GiB)")
      ->group(cg);
  sub->add_option("--host", c.host, "only the agent on this hostname")->group(cg);
  sub->add_option("--framework-version", c.framework_version,
                  "the agent's framework version equals this or starts with it and a dot (2.11 matches 2.11.0)")
      ->group(cg);
  sub->add_option("--priority", a->submission.priority, "higher runs first; equal priorities in submission order")
      ->capture_default_str()
      ->group(cg);
  sub->add_option("--max-attempts", a->submission.max_attempts,
                  "attempts before the job is failed (an agent killed mid-job, a lost lease and a failed run count)")
      ->check(integer_in_range(1, 100))
      ->capture_default_str()
      ->group(cg);
  sub->add_flag("--wait", a->wait, "wait until the job finishes; exit 0 when done, 1 when failed or cancelled");
  sub->add_option("--format", a->format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  out.push_back({sub, [&g, a] { return run_submit(g, *a); }});
}

void add_jobs(CLI::App& app, Globals& g, Commands& out) {
  auto* sub =
      app.add_subcommand("jobs", "submitted jobs of a shared PostgreSQL store: list, show, cancel, retry, delete");
  struct ListArgs {
    std::string state, format = "text";
    std::size_t limit = 50;
    std::int64_t id = 0;
  };
  auto a = std::make_shared<ListArgs>();
  sub->add_option("--state", a->state, "only jobs in this state: queued, running, done, failed, cancelled")
      ->check(CLI::IsMember({"queued", "running", "done", "failed", "cancelled"}));
  sub->add_option("--limit", a->limit, "at most this many, newest first")->capture_default_str();
  sub->add_option("--format", a->format, "text, csv or json")
      ->check(CLI::IsMember({"text", "csv", "json"}))
      ->capture_default_str();
  sub->require_subcommand(0, 1);
  auto* show = sub->add_subcommand("show", "one job as JSON: request, constraints, state, attempts, agent, error");
  show->add_option("id", a->id, "job id")->required();
  out.push_back({show, [&g, a] {
                   const auto job = open_jobs(g)->get(a->id);
                   if (!job)
                     throw std::runtime_error("no job " + std::to_string(a->id) + " in " +
                                              redact_location(g.store_path));
                   std::cout << to_json(*job).dump(2) << "\n";
                   return 0;
                 }});
  auto* cancel = sub->add_subcommand("cancel", "cancel a queued job, or stop a running one after its current batch");
  cancel->add_option("id", a->id, "job id")->required();
  out.push_back({cancel, [&g, a] {
                   switch (open_jobs(g)->cancel(a->id)) {
                     case JobService::CancelResult::kNotFound:
                       throw std::runtime_error("no job " + std::to_string(a->id));
                     case JobService::CancelResult::kRemoved:
                       std::cout << "job " << a->id << " cancelled\n";
                       return 0;
                     case JobService::CancelResult::kStopping:
                       std::cout << "job " << a->id << " is running: its agent stops it after the current batch\n";
                       return 0;
                     case JobService::CancelResult::kAlreadyFinished:
                       throw std::runtime_error("job " + std::to_string(a->id) + " has finished already");
                   }
                   return 0;
                 }});
  auto* retry = sub->add_subcommand("retry", "queue a failed or cancelled job again, its attempts reset");
  retry->add_option("id", a->id, "job id")->required();
  out.push_back({retry, [&g, a] {
                   switch (open_jobs(g)->retry(a->id)) {
                     case JobService::RetryResult::kNotFound:
                       throw std::runtime_error("no job " + std::to_string(a->id));
                     case JobService::RetryResult::kRequeued:
                       std::cout << "job " << a->id << " queued again\n";
                       return 0;
                     case JobService::RetryResult::kNotFinished:
                       throw std::runtime_error("job " + std::to_string(a->id) +
                                                " is queued or running: nothing to retry");
                     case JobService::RetryResult::kDone:
                       throw std::runtime_error("job " + std::to_string(a->id) +
                                                " is done: submit it again to repeat the evaluation");
                   }
                   return 0;
                 }});
  auto* del = sub->add_subcommand("delete", "delete a job that is not running (its evaluation stays in the store)");
  del->add_option("id", a->id, "job id")->required();
  out.push_back({del, [&g, a] {
                   switch (open_jobs(g)->remove(a->id)) {
                     case JobService::DeleteResult::kNotFound:
                       throw std::runtime_error("no job " + std::to_string(a->id));
                     case JobService::DeleteResult::kDeleted:
                       std::cout << "job " << a->id << " deleted\n";
                       return 0;
                     case JobService::DeleteResult::kRunning:
                       throw std::runtime_error("job " + std::to_string(a->id) + " is running: cancel it first");
                   }
                   return 0;
                 }});
  // After its subcommands: run_cli() runs the first parsed command, and `jobs` is parsed with `jobs show`.
  out.push_back({sub, [&g, a] {
                   auto jobs = open_jobs(g);
                   JobFilter f;
                   f.state = parse_job_state(a->state);
                   f.limit = a->limit;
                   print_table(jobs_table(jobs->list(f), "Jobs in " + redact_location(g.store_path)),
                               parse_table_format(a->format));
                   return 0;
                 }});
}

void add_agents(CLI::App& app, Globals& g, Commands& out) {
  auto* sub =
      app.add_subcommand("agents", "agents of a shared PostgreSQL store: alive, lost or stopped, and what each has");
  auto format = std::make_shared<std::string>("text");
  sub->add_option("--format", *format, "text, csv or json")
      ->check(CLI::IsMember({"text", "csv", "json"}))
      ->capture_default_str();
  out.push_back({sub, [&g, format] {
                   const auto agents = open_jobs(g)->agents();
                   if (*format == "json") {
                     nlohmann::json j = nlohmann::json::array();
                     for (const AgentInfo& a : agents) j.push_back(to_json(a));
                     std::cout << j.dump(2) << "\n";
                   } else {
                     print_table(agents_table(agents), parse_table_format(*format));
                   }
                   return 0;
                 }});
}

void add_agent(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("agent",
                                 "lend this machine: take the jobs it can run from a shared PostgreSQL store, run them "
                                 "and publish the results (stops cleanly on SIGTERM, handing its job back)");
  struct Args {
    AgentOptions o;
    double lease_s = 30, poll_s = 5, exit_when_idle_s = -1;
    std::size_t max_jobs = 0;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("--name", a->o.name, "name shown by `xsp agents` (default: the hostname)");
  sub->add_option("--data-dir", a->o.data_dirs,
                  "a folder jobs may read inputs and prompts from, besides the zoo and the default images (repeat "
                  "for more); a job naming any other file is refused")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--lease-s", a->lease_s,
                  "a claimed job stays this agent's this long past each renewal (renewed every third of it); a job "
                  "whose agent dies is queued again after it")
      ->capture_default_str();
  sub->add_option("--poll-s", a->poll_s, "when idle, heartbeat and look for work this often (new jobs wake it at once)")
      ->capture_default_str();
  sub->add_option("--max-jobs", a->max_jobs, "exit after this many jobs (0 = no limit)")->capture_default_str();
  sub->add_option("--exit-when-idle-s", a->exit_when_idle_s, "exit after this long without a job it can run");
  out.push_back({sub, [&g, a] {
                   AgentOptions o = a->o;
                   o.store = g.store_path;
                   if (a->lease_s < 0.1)
                     throw CLI::ValidationError("--lease-s", "at least 0.1 s, got " + std::to_string(a->lease_s));
                   if (a->poll_s < 0.01)
                     throw CLI::ValidationError("--poll-s", "at least 0.01 s, got " + std::to_string(a->poll_s));
                   o.lease = std::chrono::milliseconds(std::llround(a->lease_s * 1000));
                   o.poll = std::chrono::milliseconds(std::llround(a->poll_s * 1000));
                   if (a->max_jobs > 0) o.max_jobs = a->max_jobs;
                   if (a->exit_when_idle_s >= 0)
                     o.exit_when_idle = std::chrono::milliseconds(std::llround(a->exit_when_idle_s * 1000));
                   o.zoo = g.zoo_path;
                   o.default_images_dir = default_images();
                   o.record_machine_state = g.env.record_machine_state;
                   if (!is_postgres_location(o.store)) open_jobs(g);  // the usage error naming --store
                   // The agent's log is its only output while it runs: info level, unless -v asked for debug.
                   if (!g.verbose) spdlog::set_level(spdlog::level::info);
                   InterruptGuard interrupt;
                   o.interrupt = interrupt.flag();
                   const AgentSummary s = run_agent(o);
                   std::cout << "agent " << s.agent_id << ": " << s.jobs_done << " done, " << s.jobs_failed
                             << " failed, " << s.jobs_handed_back << " handed back, " << s.jobs_lost << " lost, "
                             << s.reconnects << " reconnects\n";
                   return interrupt.signal() != 0 ? exit_code_for_signal(interrupt.signal()) : 0;
                 }});
}

}  // namespace

void add_queue_commands(CLI::App& app, Globals& g, Commands& out) {
  add_submit(app, g, out);
  add_jobs(app, g, out);
  add_agents(app, g, out);
  add_agent(app, g, out);
}

}  // namespace xsp::cli
