// xsp submit / jobs / agents / agent: the shared job queue (docs/deploy.md). Each maps its flags onto one call of
// JobService (include/xsp/queue/jobs.h) or run_agent() (include/xsp/queue/agent.h).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "common.h"
#include "request_flags.h"
#include "signals.h"
#include "xsp/queue/agent.h"
#include "xsp/queue/engine.h"
#include "xsp/queue/postgres_queue.h"
#include "xsp/queue/slurm.h"

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
  t.columns = {{"id"},       {"engine"},        {"state"},        {"model"},    {"framework"},
               {"device"},   {"constraints"},   {"priority"},     {"attempts"}, {"agent"},
               {"progress"}, {"evaluation_id"}, {"submitted_at"}, {"note"}};
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
    t.rows.push_back({Cell(j.external_id.empty() ? std::to_string(j.id) : j.external_id), Cell(j.engine),
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
  // Engines other than the queue (issue 28).
  std::string engine = "queue", slurm_dir, output, xsp_binary;
  slurm::ArrayOptions slurm;
  slurm::K8sOptions k8s;
  bool dry_run = false;
  double wait_timeout_s = 0;
  std::vector<const CLI::Option*> request_options;  ///< the flags `xsp evaluate` takes too, passed on to each task
  std::vector<std::string> vary;                    ///< --vary FLAG=V1,V2: a task per value (per combination)
};

// The models of a submission: "resnet50,bert_base" is two tasks; a model listed twice is evaluated twice.
std::vector<std::string> split_models(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string m;
  while (std::getline(ss, m, ',')) {
    if (m.empty()) throw CLI::ValidationError("model", "an empty name in the list '" + text + "' (MODEL[,MODEL...])");
    out.push_back(m);
  }
  return out;
}

// The flags given to `xsp submit` that `xsp evaluate` takes too, as arguments again: a task runs exactly what was
// asked, and its script shows it in the user's own words.
std::vector<std::string> evaluate_flags(const SubmitArgs& a) {
  std::vector<std::string> out;
  for (const CLI::Option* o : a.request_options) {
    if (o->count() == 0 || o->get_lnames().empty()) continue;
    const std::string name = "--" + o->get_lnames().front();
    if (o->get_expected_min() == 0) {  // a flag
      for (std::size_t i = 0; i < o->count(); ++i) out.push_back(name);
      continue;
    }
    for (const std::string& v : o->results()) out.push_back(name + "=" + v);
  }
  return out;
}

// One configuration of a --vary matrix: the flags that differ from the submission's ("--framework=onnxruntime"), and
// the same as "framework=onnxruntime" for a task's label.
struct Variant {
  std::vector<std::string> flags;
  std::string label;
};

// The cartesian product of the --vary options ("framework=libtorch,onnxruntime", "precision=fp32,fp16": 4 variants),
// each flag checked against `xsp evaluate`'s. One empty variant when there is no --vary.
std::vector<Variant> variants(const SubmitArgs& a) {
  std::vector<Variant> out{Variant{}};
  std::set<std::string> seen;
  for (const std::string& v : a.vary) {
    const auto eq = v.find('=');
    const std::string flag = eq == std::string::npos ? "" : v.substr(0, eq);
    if (flag.empty() || eq + 1 >= v.size())
      throw CLI::ValidationError(
          "--vary", "expected FLAG=VALUE[,VALUE...] (e.g. framework=libtorch,onnxruntime), got '" + v + "'");
    const bool known = std::any_of(a.request_options.begin(), a.request_options.end(), [&](const CLI::Option* o) {
      return !o->get_lnames().empty() && o->get_lnames().front() == flag && o->get_expected_min() > 0 &&
             o->get_lnames().front() != "model";
    });
    if (!known)
      throw CLI::ValidationError("--vary",
                                 "'" + flag + "' is not a flag of `xsp evaluate` that takes a value (in '" + v + "')");
    if (!seen.insert(flag).second) throw CLI::ValidationError("--vary", "'" + flag + "' is varied twice");
    std::vector<std::string> values;
    // Values are separated by commas, or by semicolons when one holds commas itself ("batch-sizes=1,8;64").
    const std::string list = v.substr(eq + 1);
    std::stringstream in(list);
    for (std::string x; std::getline(in, x, list.find(';') != std::string::npos ? ';' : ',');) {
      if (x.empty()) throw CLI::ValidationError("--vary", "an empty value in '" + v + "'");
      values.push_back(x);
    }
    std::vector<Variant> next;
    for (const Variant& base : out)
      for (const std::string& x : values) {
        Variant n = base;
        n.flags.push_back("--" + flag + "=" + x);
        n.label += (n.label.empty() ? "" : ", ") + flag + "=" + x;
        next.push_back(std::move(n));
      }
    out = std::move(next);
  }
  if (out.size() > 10000)
    throw CLI::ValidationError("--vary", std::to_string(out.size()) + " configurations: at most 10000");
  return out;
}

// The request `xsp evaluate MODEL FLAGS...` would run: FLAGS parsed by `xsp evaluate`'s own flag definitions, so a
// varied value is checked exactly as it would be on the command line.
EvaluationRequest request_of(const std::string& model, const std::vector<std::string>& flags) {
  CLI::App app("evaluate");
  RequestFlags r;
  add_request_flags(&app, r);
  std::vector<std::string> args{model};
  args.insert(args.end(), flags.begin(), flags.end());
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector in reverse order
  app.parse(args);
  to_request(r);
  return r.request;
}

std::filesystem::path self_binary() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("xsp") : p;
}

// `xsp submit --engine slurm|k8s`: one task per model and --vary configuration, each `xsp evaluate MODEL <the same
// flags> <the configuration's>`.
int run_submit_engine(Globals& g, SubmitArgs& a) {
  const std::vector<std::string> models = split_models(a.request.model);
  const std::vector<Variant> configs = variants(a);
  std::vector<std::string> flags = evaluate_flags(a);
  // A varied flag given outside --vary too would be given twice: the --vary values replace it.
  for (const std::string& v : a.vary) {
    const std::string prefix = "--" + v.substr(0, v.find('=')) + "=";
    std::erase_if(flags, [&](const std::string& f) { return f.rfind(prefix, 0) == 0; });
  }
  const bool slurm_engine = a.engine == "slurm";
  std::string store = g.store_path;
  if (slurm_engine && !is_postgres_location(store)) store = std::filesystem::absolute(store).string();
  const std::filesystem::path xsp = a.xsp_binary.empty() ? self_binary() : std::filesystem::path(a.xsp_binary);
  std::vector<slurm::TaskSpec> tasks;
  for (const std::string& m : models) {
    for (const Variant& c : configs) {
      EvaluationRequest r = a.request;
      if (!c.flags.empty()) {
        std::vector<std::string> all = flags;
        all.insert(all.end(), c.flags.begin(), c.flags.end());
        try {
          r = request_of(m, all);
        } catch (const CLI::Error& e) {
          throw CLI::ValidationError("--vary", "configuration " + c.label + ": " + e.what());
        }
      }
      r.model = m;
      try {
        validate_fields(r);  // as `xsp evaluate` does, before anything is submitted
      } catch (const RequestError& e) {
        if (c.flags.empty()) throw flag_error(e);
        throw CLI::ValidationError("--vary", "configuration " + c.label + ": " + e.what());
      }
      slurm::TaskSpec t;
      t.model = c.label.empty() ? m : m + " (" + c.label + ")";
      t.request = to_json(r);
      // The store and the zoo come from XSP_STORE and XSP_ZOO: the batch script exports them; a pod reads the store
      // from its Secret and the zoo from its image.
      t.argv = {slurm_engine ? xsp.string() : (a.xsp_binary.empty() ? "xsp" : a.xsp_binary), "evaluate", m};
      t.argv.insert(t.argv.end(), flags.begin(), flags.end());
      t.argv.insert(t.argv.end(), c.flags.begin(), c.flags.end());
      tasks.push_back(std::move(t));
    }
  }
  if (a.engine == "k8s") {
    if (!a.dry_run)
      throw CLI::ValidationError("--engine",
                                 "k8s only writes the Job manifest: add --dry-run (and -o FILE), then "
                                 "kubectl apply -f FILE");
    a.k8s.max_attempts = a.submission.max_attempts;
    a.k8s.parallelism = a.slurm.max_concurrent;
    a.k8s.time = a.slurm.time;
    if (!a.slurm.gpus.empty()) {
      try {
        std::size_t used = 0;
        a.k8s.gpus = std::stoi(a.slurm.gpus, &used);
        if (used != a.slurm.gpus.size() || a.k8s.gpus < 0) throw std::invalid_argument("");
      } catch (const std::exception&) {
        throw CLI::ValidationError("--gpus",
                                   "with --engine k8s: a count of nvidia.com/gpu per pod, got '" + a.slurm.gpus + "'");
      }
    }
    std::string yaml;
    try {
      yaml = slurm::k8s_manifest(a.k8s, tasks);
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      const std::string field = what.substr(0, what.find(':'));
      const std::string flag = field == "image" ? "--image" : field == "name" ? "--job-name" : "--time";
      throw CLI::ValidationError(flag, what.substr(what.find(':') + 2));
    }
    if (a.output.empty() || a.output == "-") {
      std::cout << yaml;
    } else {
      write_file_atomically(a.output, yaml);
      std::cerr << "wrote a Kubernetes Indexed Job of " << tasks.size() << " pod(s) to " << a.output
                << "; run it with: kubectl apply -f " << a.output << "\n";
    }
    return kExitOk;
  }
  a.slurm.max_attempts = a.submission.max_attempts;
  slurm::SlurmEngine engine(a.slurm_dir);
  if (a.dry_run) {
    const std::string script = slurm::batch_script(a.slurm, tasks, std::filesystem::absolute(a.slurm_dir) / "DRY-RUN",
                                                   xsp, store, std::filesystem::absolute(g.zoo_path));
    if (a.output.empty() || a.output == "-")
      std::cout << script;
    else
      write_file_atomically(a.output, script);
    return kExitOk;
  }
  slurm::SlurmEngine::Submitted sub;
  try {
    sub = engine.submit(a.slurm, tasks, xsp, store, std::filesystem::absolute(g.zoo_path));
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--max-concurrent", e.what());
  }
  if (a.format == "json") {
    nlohmann::json j = {{"array_job_id", sub.array_job_id}, {"dir", sub.dir.string()}, {"ids", sub.ids}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "submitted Slurm array " << sub.array_job_id << " (" << tasks.size() << " task(s): ";
    for (std::size_t i = 0; i < tasks.size(); ++i) std::cout << (i ? ", " : "") << sub.ids[i] << " " << tasks[i].model;
    std::cout << "); script " << (sub.dir / "job.sh").string() << "\n";
  }
  if (!a.wait) return kExitOk;
  // --wait: until every task ended (retries included), polling every 2 s; exit 0 when all are done.
  InterruptGuard interrupt;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::llround(a.wait_timeout_s * 1000));
  while (interrupt.signal() == 0) {
    std::size_t finished = 0, done = 0;
    std::vector<JobInfo> mine;
    for (const std::string& id : sub.ids) {
      auto j = engine.get(id);
      if (!j) continue;
      if (j->state == JobState::kDone || j->state == JobState::kFailed || j->state == JobState::kCancelled) ++finished;
      if (j->state == JobState::kDone) ++done;
      mine.push_back(std::move(*j));
    }
    if (finished == sub.ids.size()) {
      for (const JobInfo& j : mine)
        if (j.state != JobState::kDone)
          std::cerr << "xsp: error: task " << j.external_id << " (" << j.request.model << ") " << to_string(j.state)
                    << (j.error.empty() ? "" : ": " + j.error) << "\n";
      std::cout << "array " << sub.array_job_id << ": " << done << " of " << sub.ids.size() << " task(s) done\n";
      return done == sub.ids.size() ? kExitOk : kExitFailure;
    }
    if (a.wait_timeout_s > 0 && std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("--wait-timeout-s: array " + std::to_string(sub.array_job_id) + " still running after " +
                               std::to_string(a.wait_timeout_s) + " s");
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  return exit_code_for_signal(interrupt.signal());
}

int run_submit(Globals& g, SubmitArgs& a) {
  to_request(a);
  if (a.engine != "queue") return run_submit_engine(g, a);
  if (!a.vary.empty())
    throw CLI::ValidationError("--vary",
                               "with --engine slurm or k8s (a job array's tasks); submit to the queue once "
                               "per configuration");
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

// The flags of the engines other than the queue (issue 28): Slurm's sbatch options, the Kubernetes manifest's.
void add_engine_flags(CLI::App* sub, SubmitArgs& a) {
  const std::string eg =
      "Engine (docs/deploy.md \"Running XSP on a Slurm cluster\"; MODEL may list several: one task each)";
  sub->add_option("--engine", a.engine,
                  "queue: the shared PostgreSQL queue's agents; slurm: one Slurm job array (sbatch), a task per "
                  "model; k8s: write a Kubernetes Indexed Job (with --dry-run)")
      ->check(CLI::IsMember({"queue", "slurm", "k8s"}))
      ->capture_default_str()
      ->group(eg);
  sub->add_option("--partition", a.slurm.partition, "slurm: sbatch --partition")->group(eg);
  sub->add_option("--gres", a.slurm.gres, "slurm: sbatch --gres per task, e.g. gpu:h100:1")->group(eg);
  sub->add_option("--gpus", a.slurm.gpus, "slurm: sbatch --gpus per task (e.g. 1, h100:1); k8s: nvidia.com/gpu per pod")
      ->group(eg);
  sub->add_option("--time", a.slurm.time, "slurm: sbatch --time per task (HH:MM:SS); k8s: the Job's deadline per wave")
      ->group(eg);
  sub->add_option("--dependency", a.slurm.dependency, "slurm: sbatch --dependency, e.g. afterok:1234")->group(eg);
  sub->add_option("--max-concurrent", a.slurm.max_concurrent,
                  "slurm: at most this many tasks at once (--array=0-N%K); k8s: parallelism; 0 = no limit")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group(eg);
  sub->add_option("--sbatch-arg", a.slurm.sbatch_args,
                  "slurm: one more sbatch option, passed as is (repeat for more; give it after MODEL, with '='), "
                  "e.g. --sbatch-arg=--container-image=nvcr.io#nvidia/pytorch:24.05-py3 with Pyxis")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(eg);
  sub->add_option("--job-name", a.slurm.job_name, "slurm: sbatch --job-name; k8s: metadata.name")
      ->capture_default_str()
      ->group(eg);
  sub->add_option("--slurm-dir", a.slurm_dir,
                  "slurm: where each submission's folder (job.sh, job.json, outputs) goes; the compute nodes must "
                  "reach it (default $XSP_SLURM_DIR, else ~/.local/share/xsp/slurm)")
      ->group(eg);
  sub->add_option("--xsp-binary", a.xsp_binary,
                  "the xsp the tasks run (default: this one for slurm, `xsp` in the image's PATH for k8s)")
      ->group(eg);
  sub->add_option("--image", a.k8s.image, "k8s: the container image holding xsp and the zoo (XSP_ZOO)")->group(eg);
  sub->add_option("--namespace", a.k8s.namespace_, "k8s: metadata.namespace")->group(eg);
  sub->add_option("--store-secret", a.k8s.store_secret, "k8s: the Secret whose key `url` holds the store location")
      ->capture_default_str()
      ->group(eg);
  sub->add_option("--vary", a.vary,
                  "slurm, k8s: a task per value of an `xsp evaluate` flag, e.g. --vary framework=libtorch,onnxruntime "
                  "(';' between values that hold commas: batch-sizes='1,8;64'); repeat for a matrix: every "
                  "combination, for every model")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(eg);
  sub->add_flag("--dry-run", a.dry_run,
                "write the batch script (slurm) or the Job manifest (k8s) instead of submitting")
      ->group(eg);
  sub->add_option("-o,--output", a.output, "with --dry-run: the file to write (default: stdout)")->group(eg);
  sub->add_option("--wait-timeout-s", a.wait_timeout_s, "slurm, with --wait: give up after this long (0 = never)")
      ->group(eg);
}

void add_submit(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("submit",
                                 "queue an evaluation for the agents (`xsp agent`) of a shared PostgreSQL store; the "
                                 "same flags as `xsp evaluate`, plus which machines may run it");
  auto a = std::make_shared<SubmitArgs>();
  add_request_flags(sub, *a);
  for (const CLI::Option* o : sub->get_options())
    if (!o->get_lnames().empty() && o->get_lnames().front() != "help") a->request_options.push_back(o);
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
  add_engine_flags(sub, *a);
  out.push_back({sub, [&g, a] {
                   if (a->slurm_dir.empty()) a->slurm_dir = default_slurm_dir();
                   if (a->engine == "k8s") a->k8s.name = a->slurm.job_name;
                   return run_submit(g, *a);
                 }});
}

// The engines whose jobs `xsp jobs` shows: the PostgreSQL queue when the store is PostgreSQL, Slurm when its folder
// exists. Neither: the queue's usage error naming --store.
std::vector<std::unique_ptr<JobEngine>> open_engines(const Globals& g, const std::string& slurm_dir) {
  std::vector<std::unique_ptr<JobEngine>> engines;
  const std::string dir = slurm_dir.empty() ? default_slurm_dir() : slurm_dir;
  const bool slurm = std::filesystem::is_directory(dir);
  if (is_postgres_location(g.store_path) || !slurm) engines.push_back(queue_engine(open_jobs(g)));
  if (slurm) engines.push_back(std::make_unique<slurm::SlurmEngine>(dir));
  return engines;
}

std::optional<JobInfo> find_job(std::vector<std::unique_ptr<JobEngine>>& engines, const std::string& id,
                                JobEngine** owner) {
  for (auto& e : engines) {
    if (!e->owns(id)) continue;
    if (auto j = e->get(id)) {
      if (owner) *owner = e.get();
      return j;
    }
  }
  return std::nullopt;
}

void add_jobs(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("jobs",
                                 "submitted jobs of a shared PostgreSQL store and of Slurm arrays (`xsp submit "
                                 "--engine slurm`): list, show, cancel, retry, delete");
  struct ListArgs {
    std::string state, format = "text", slurm_dir;
    std::size_t limit = 50;
    std::int64_t id = 0;
    std::string any_id;  ///< show, cancel: the queue's "17" or Slurm's "1234_5"
  };
  auto a = std::make_shared<ListArgs>();
  sub->add_option("--slurm-dir", a->slurm_dir,
                  "the folder of Slurm submissions (default $XSP_SLURM_DIR, else ~/.local/share/xsp/slurm)");
  sub->add_option("--state", a->state, "only jobs in this state: queued, running, done, failed, cancelled")
      ->check(CLI::IsMember({"queued", "running", "done", "failed", "cancelled"}));
  sub->add_option("--limit", a->limit, "at most this many, newest first")->capture_default_str();
  sub->add_option("--format", a->format, "text, csv or json")
      ->check(CLI::IsMember({"text", "csv", "json"}))
      ->capture_default_str();
  sub->require_subcommand(0, 1);
  auto* show = sub->add_subcommand("show", "one job as JSON: request, constraints, state, attempts, agent, error");
  show->add_option("id", a->any_id, "job id: the queue's (17) or a Slurm task's (1234_5)")->required();
  out.push_back({show, [&g, a] {
                   auto engines = open_engines(g, a->slurm_dir);
                   const auto job = find_job(engines, a->any_id, nullptr);
                   if (!job)
                     throw std::runtime_error("no job " + a->any_id + " in " + redact_location(g.store_path) +
                                              " or the Slurm submissions");
                   std::cout << to_json(*job).dump(2) << "\n";
                   return 0;
                 }});
  auto* cancel = sub->add_subcommand("cancel", "cancel a queued job, or stop a running one after its current batch");
  cancel->add_option("id", a->any_id, "job id: the queue's (17) or a Slurm task's (1234_5: scancel)")->required();
  out.push_back({cancel, [&g, a] {
                   auto engines = open_engines(g, a->slurm_dir);
                   JobEngine* owner = nullptr;
                   const auto job = find_job(engines, a->any_id, &owner);
                   if (!job) throw std::runtime_error("no job " + a->any_id);
                   const bool slurm = owner->name() == "slurm";
                   switch (owner->cancel(a->any_id)) {
                     case JobService::CancelResult::kNotFound:
                       throw std::runtime_error("no job " + a->any_id);
                     case JobService::CancelResult::kRemoved:
                       std::cout << "job " << a->any_id << " cancelled\n";
                       return 0;
                     case JobService::CancelResult::kStopping:
                       std::cout << "job " << a->any_id
                                 << (slurm ? " is running: scancel sent (SIGTERM; the evaluation stops and is stored "
                                             "as incomplete, or Slurm kills it after KillWait)\n"
                                           : " is running: its agent stops it after the current batch\n");
                       return 0;
                     case JobService::CancelResult::kAlreadyFinished:
                       throw std::runtime_error("job " + a->any_id + " has finished already");
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
                   JobFilter f;
                   f.state = parse_job_state(a->state);
                   f.limit = a->limit;
                   std::vector<JobInfo> all;
                   auto engines = open_engines(g, a->slurm_dir);
                   for (auto& e : engines) {
                     std::vector<JobInfo> some;
                     try {
                       some = e->list(f);
                     } catch (const std::runtime_error& ex) {
                       // One engine unreachable (Slurm's controller down) still lets the other's jobs be seen.
                       if (engines.size() == 1) throw;
                       std::cerr << "xsp: warning: " << e->name() << " jobs not listed: " << ex.what() << "\n";
                     }
                     all.insert(all.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
                   }
                   // Newest first across engines (ISO 8601 UTC sorts as text); each engine's own order within.
                   std::stable_sort(all.begin(), all.end(),
                                    [](const JobInfo& x, const JobInfo& y) { return x.submitted_at > y.submitted_at; });
                   if (all.size() > f.limit) all.resize(f.limit);
                   print_table(jobs_table(all, "Jobs in " + redact_location(g.store_path)),
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
