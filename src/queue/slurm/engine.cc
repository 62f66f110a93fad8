// SlurmEngine: job arrays submitted with sbatch, watched through squeue/sacct, kept in a folder per submission; and
// the PostgreSQL queue as a JobEngine (include/xsp/queue/slurm.h, engine.h).
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "xsp/queue/slurm.h"
#include "xsp/util/time.h"

namespace xsp {

namespace {
class QueueEngine final : public JobEngine {
 public:
  explicit QueueEngine(std::unique_ptr<JobService> jobs) : jobs_(std::move(jobs)) {}
  std::string name() const override { return "queue"; }
  std::vector<JobInfo> list(const JobFilter& filter) override {
    std::vector<JobInfo> out = jobs_->list(filter);
    for (JobInfo& j : out) tag(j);
    return out;
  }
  std::optional<JobInfo> get(const std::string& id) override {
    if (!owns(id)) return std::nullopt;
    auto j = jobs_->get(std::stoll(id));
    if (j) tag(*j);
    return j;
  }
  JobService::CancelResult cancel(const std::string& id) override {
    if (!owns(id)) return JobService::CancelResult::kNotFound;
    return jobs_->cancel(std::stoll(id));
  }
  bool owns(const std::string& id) const override {
    return !id.empty() && id.size() < 19 &&
           std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
  }

 private:
  static void tag(JobInfo& j) {
    j.engine = "queue";
    j.external_id = std::to_string(j.id);
  }
  std::unique_ptr<JobService> jobs_;
};
}  // namespace

std::unique_ptr<JobEngine> queue_engine(std::unique_ptr<JobService> jobs) {
  return std::make_unique<QueueEngine>(std::move(jobs));
}

}  // namespace xsp

namespace xsp::slurm {

namespace {
namespace fs = std::filesystem;

// Holds an exclusive flock on ROOT/.lock: `xsp jobs` runs may overlap, and each may rewrite job.json files.
class RootLock {
 public:
  explicit RootLock(const fs::path& root) {
    fs::create_directories(root);
    fd_ = ::open((root / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) throw std::runtime_error("cannot open " + (root / ".lock").string());
    ::flock(fd_, LOCK_EX);
  }
  ~RootLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  RootLock(const RootLock&) = delete;
  RootLock& operator=(const RootLock&) = delete;

 private:
  int fd_ = -1;
};

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  return nlohmann::json::parse(in);
}

// Written whole to a temporary file, then renamed over: a reader never sees half a job.json.
void write_json(const fs::path& file, const nlohmann::json& j) {
  const fs::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, file);
}

void write_file(const fs::path& file, const std::string& text, fs::perms perms) {
  const fs::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::permissions(tmp, perms);
  fs::rename(tmp, file);
}

nlohmann::json to_json(const ArrayOptions& o) {
  return {{"partition", o.partition},
          {"gres", o.gres},
          {"gpus", o.gpus},
          {"time", o.time},
          {"dependency", o.dependency},
          {"max_concurrent", o.max_concurrent},
          {"max_attempts", o.max_attempts},
          {"sbatch_args", o.sbatch_args},
          {"job_name", o.job_name}};
}

std::string command_error(const std::vector<std::string>& argv, const ProcessResult& r) {
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  std::string why = r.timed_out ? "timed out"
                    : r.signal  ? "killed by signal " + std::to_string(r.signal)
                                : "exit code " + std::to_string(r.exit_code);
  std::string err = r.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  return cmd + ": " + why + (err.empty() ? "" : ": " + err);
}

bool parse_id(const std::string& id, std::int64_t& array, int& task) {
  static const std::regex form(R"((\d{1,18})_(\d{1,9}))");
  std::smatch m;
  if (!std::regex_match(id, m, form)) return false;
  array = std::stoll(m[1]);
  task = std::stoi(m[2]);
  return true;
}

bool is_final(JobState s) { return s == JobState::kDone || s == JobState::kFailed || s == JobState::kCancelled; }
}  // namespace

SlurmEngine::SlurmEngine(std::filesystem::path root, std::chrono::milliseconds timeout)
    : root_(std::move(root)), timeout_(timeout) {}

SlurmEngine::Submitted SlurmEngine::submit(const ArrayOptions& options, const std::vector<TaskSpec>& tasks,
                                           const std::filesystem::path& xsp_binary, const std::string& store,
                                           const std::filesystem::path& zoo) {
  if (tasks.empty()) throw std::invalid_argument("slurm: no tasks to submit");
  if (options.max_attempts < 1 || options.max_attempts > 100)
    throw std::invalid_argument("max_attempts: expected 1 to 100, got " + std::to_string(options.max_attempts));
  if (options.max_concurrent < 0)
    throw std::invalid_argument("max_concurrent: expected 0 (no limit) or more, got " +
                                std::to_string(options.max_concurrent));
  Submitted s;
  {
    RootLock lock(root_);
    // Folders sort by submission: UTC time, then a counter for submissions within the same second.
    const std::string stamp = util::utc_now_iso8601();
    std::string base;
    for (char c : stamp) base += (c == ':' ? '-' : c);
    for (int i = 0;; ++i) {
      s.dir = fs::absolute(root_ / (base + "." + std::to_string(i)));
      if (fs::create_directory(s.dir)) break;
    }
  }
  const fs::path script = s.dir / "job.sh";
  write_file(script, batch_script(options, tasks, s.dir, xsp_binary, store, zoo),
             fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  nlohmann::json job = {{"format", 1},       {"engine", "slurm"},           {"submitted_at", util::utc_now_iso8601()},
                        {"array_job_id", 0}, {"options", to_json(options)}, {"tasks", nlohmann::json::array()}};
  for (const TaskSpec& t : tasks)
    job["tasks"].push_back({{"model", t.model},
                            {"request", t.request},
                            {"argv", t.argv},
                            {"attempts", nlohmann::json::array()},
                            {"final", nullptr}});
  write_json(s.dir / "job.json", job);
  const auto argv = sbatch_argv(options, script, array_spec(tasks.size(), options.max_concurrent), true);
  const ProcessResult r = run_process(argv, timeout_);
  std::string out = r.out.substr(0, r.out.find_first_of(";\n"));  // --parsable: "ID" or "ID;CLUSTER"
  if (r.exit_code != 0 || out.empty() || !std::all_of(out.begin(), out.end(), ::isdigit)) {
    job["submit_error"] = command_error(argv, r);
    write_json(s.dir / "job.json", job);
    throw std::runtime_error(command_error(argv, r) + " (the script is kept in " + script.string() + ")");
  }
  s.array_job_id = std::stoll(out);
  job["array_job_id"] = s.array_job_id;
  for (auto& t : job["tasks"]) t["attempts"].push_back(s.array_job_id);
  write_json(s.dir / "job.json", job);
  for (std::size_t i = 0; i < tasks.size(); ++i)
    s.ids.push_back(std::to_string(s.array_job_id) + "_" + std::to_string(i));
  return s;
}

std::vector<JobInfo> SlurmEngine::refresh() {
  std::vector<JobInfo> out;
  if (!fs::is_directory(root_)) return out;
  RootLock lock(root_);
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root_))
    if (e.is_directory() && fs::exists(e.path() / "job.json")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end(), std::greater<>());  // newest first
  std::vector<std::pair<fs::path, nlohmann::json>> jobs;
  bool any_live = false;
  for (const fs::path& d : dirs) {
    try {
      jobs.emplace_back(d, read_json(d / "job.json"));
    } catch (const std::exception& e) {
      spdlog::warn("slurm: skipping {}: {}", d.string(), e.what());
      continue;
    }
    for (const auto& t : jobs.back().second["tasks"])
      if (t["final"].is_null() && !t["attempts"].empty()) any_live = true;
  }
  // One squeue for all: it reports every job the controller still knows (MinJobAge), finished ones too.
  std::map<std::pair<std::int64_t, int>, TaskStatus> seen;
  if (any_live) {
    const std::vector<std::string> squeue = {"squeue", "--json"};
    const ProcessResult r = run_process(squeue, timeout_);
    if (r.exit_code != 0) throw std::runtime_error(command_error(squeue, r));
    for (const TaskStatus& t : parse_squeue_json(nlohmann::json::parse(r.out))) seen[{t.array_job_id, t.task}] = t;
    // Where accounting exists, sacct knows the jobs squeue forgot; without it sacct says so and is not asked again.
    const std::vector<std::string> sacct = {"sacct", "--json", "--starttime", "now-7days"};
    try {
      const ProcessResult a = run_process(sacct, timeout_);
      if (a.exit_code == 0)
        for (const TaskStatus& t : parse_sacct_json(nlohmann::json::parse(a.out)))
          seen.try_emplace({t.array_job_id, t.task}, t);
    } catch (const std::exception& e) {
      spdlog::debug("slurm: sacct: {}", e.what());
    }
  }
  for (auto& [dir, job] : jobs) {
    bool changed = false;
    const int max_attempts = job["options"].value("max_attempts", 1);
    for (std::size_t i = 0; i < job["tasks"].size(); ++i) {
      nlohmann::json& t = job["tasks"][i];
      JobInfo info;
      info.engine = "slurm";
      info.max_attempts = max_attempts;
      info.attempts = static_cast<int>(t["attempts"].size());
      info.submitted_at = job.value("submitted_at", "");
      try {
        info.request = evaluation_request_from_json(t["request"]);
      } catch (const std::exception&) {
        info.request.model = t.value("model", "");
      }
      info.constraints = constraints_for(info.request);
      if (t["attempts"].empty()) {
        info.state = JobState::kFailed;
        info.error = job.value("submit_error", std::string("not submitted"));
        info.external_id = "-";
        out.push_back(std::move(info));
        continue;
      }
      const std::int64_t array = t["attempts"].back().get<std::int64_t>();
      info.id = array;
      info.external_id = std::to_string(array) + "_" + std::to_string(i);
      const fs::path result = dir / ("result-" + std::to_string(i) + ".json");
      if (fs::exists(result)) {
        try {
          const nlohmann::json r = read_json(result);
          info.evaluation_id = r.value("evaluation_id", std::int64_t{0});
        } catch (const std::exception&) {
        }
      }
      if (!t["final"].is_null()) {
        const nlohmann::json& f = t["final"];
        info.state = parse_job_state(f.value("state", "failed")).value_or(JobState::kFailed);
        info.error = f.value("reason", "");
        info.agent_name = f.value("node", "");
        info.started_at = f.value("started_at", "");
        info.finished_at = f.value("finished_at", "");
      } else {
        const auto it = seen.find({array, static_cast<int>(i)});
        if (it == seen.end()) {
          info.state = JobState::kFailed;
          info.error = "Slurm no longer knows job " + info.external_id +
                       " (past MinJobAge, no accounting) and it left no result";
          t["final"] = {{"state", "failed"}, {"reason", info.error}, {"retryable", false}};
          changed = true;
        } else {
          const TaskStatus& s = it->second;
          const MappedState m = map_state(s);
          info.state = m.state;
          info.agent_name = s.node;
          if (s.start_time > 0 && m.state != JobState::kQueued)
            info.started_at = util::format_utc_iso8601(s.start_time);
          if (is_final(m.state) && s.end_time > 0) info.finished_at = util::format_utc_iso8601(s.end_time);
          if (m.state == JobState::kQueued)
            info.waiting_reason = m.reason;
          else
            info.error = m.reason;
          if (is_final(m.state)) {
            t["final"] = {{"state", to_string(m.state)},    {"reason", m.reason},
                          {"retryable", m.retryable},       {"node", s.node},
                          {"exit_code", s.exit_code},       {"signal", s.signal},
                          {"slurm_state", s.state},         {"started_at", info.started_at},
                          {"finished_at", info.finished_at}};
            changed = true;
          }
        }
      }
      if (info.state == JobState::kDone && !info.evaluation_id)
        info.error = "done, but no result-" + std::to_string(i) + ".json: the evaluation's id is unknown";
      out.push_back(std::move(info));
    }
    if (changed) write_json(dir / "job.json", job);
  }
  return out;
}

std::size_t SlurmEngine::retry_failed() {
  if (!fs::is_directory(root_)) return 0;
  refresh();
  RootLock lock(root_);
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(root_)) {
    if (!e.is_directory() || !fs::exists(e.path() / "job.json")) continue;
    nlohmann::json job = read_json(e.path() / "job.json");
    ArrayOptions o;
    o.max_attempts = job["options"].value("max_attempts", 1);
    bool changed = false;
    for (std::size_t i = 0; i < job["tasks"].size(); ++i) {
      nlohmann::json& t = job["tasks"][i];
      if (t["final"].is_null() || !t["final"].value("retryable", false)) continue;
      if (static_cast<int>(t["attempts"].size()) >= o.max_attempts) continue;
      const auto argv = sbatch_argv(o, e.path() / "job.sh", std::to_string(i), false);
      const ProcessResult r = run_process(argv, timeout_);
      const std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
      if (r.exit_code != 0 || id.empty() || !std::all_of(id.begin(), id.end(), ::isdigit)) {
        spdlog::warn("slurm: retrying task {} of {}: {}", i, e.path().string(), command_error(argv, r));
        continue;
      }
      spdlog::info("slurm: task {} ended {}: attempt {} of {} as {}_{}", i, t["final"].value("reason", ""),
                   t["attempts"].size() + 1, o.max_attempts, id, i);
      t["attempts"].push_back(std::stoll(id));
      t["previous"].push_back(t["final"]);
      t["final"] = nullptr;
      changed = true;
      ++n;
    }
    if (changed) write_json(e.path() / "job.json", job);
  }
  return n;
}

std::vector<JobInfo> SlurmEngine::list(const JobFilter& filter) {
  retry_failed();
  std::vector<JobInfo> all = refresh();
  std::vector<JobInfo> out;
  for (JobInfo& j : all) {
    if (filter.state && j.state != *filter.state) continue;
    if (out.size() >= filter.limit) break;
    out.push_back(std::move(j));
  }
  return out;
}

bool SlurmEngine::owns(const std::string& id) const {
  std::int64_t array = 0;
  int task = 0;
  return parse_id(id, array, task);
}

std::optional<JobInfo> SlurmEngine::get(const std::string& id) {
  std::int64_t array = 0;
  int task = 0;
  if (!parse_id(id, array, task)) return std::nullopt;
  retry_failed();
  for (JobInfo& j : refresh()) {
    if (j.external_id == id) return j;
  }
  // An earlier attempt's id names the same task: its latest state.
  for (const auto& e : fs::directory_iterator(root_)) {
    if (!e.is_directory() || !fs::exists(e.path() / "job.json")) continue;
    const nlohmann::json job = read_json(e.path() / "job.json");
    const auto& tasks = job["tasks"];
    if (task >= 0 && static_cast<std::size_t>(task) < tasks.size()) {
      for (const auto& a : tasks[task]["attempts"]) {
        if (a.get<std::int64_t>() != array) continue;
        const std::string latest =
            std::to_string(tasks[task]["attempts"].back().get<std::int64_t>()) + "_" + std::to_string(task);
        for (JobInfo& j : refresh())
          if (j.external_id == latest) return j;
      }
    }
  }
  return std::nullopt;
}

JobService::CancelResult SlurmEngine::cancel(const std::string& id) {
  const auto job = get(id);
  if (!job) return JobService::CancelResult::kNotFound;
  if (is_final(job->state)) return JobService::CancelResult::kAlreadyFinished;
  const std::vector<std::string> argv = {"scancel", job->external_id};
  const ProcessResult r = run_process(argv, timeout_);
  if (r.exit_code != 0) throw std::runtime_error(command_error(argv, r));
  if (job->state != JobState::kQueued) return JobService::CancelResult::kStopping;
  // A pending task that was never split off the array's record leaves squeue at once, without a record of its own:
  // its end is written here, or the next list would find it gone.
  std::int64_t array = 0;
  int task = 0;
  parse_id(job->external_id, array, task);
  RootLock lock(root_);
  for (const auto& e : fs::directory_iterator(root_)) {
    if (!e.is_directory() || !fs::exists(e.path() / "job.json")) continue;
    nlohmann::json j = read_json(e.path() / "job.json");
    auto& tasks = j["tasks"];
    if (task < 0 || static_cast<std::size_t>(task) >= tasks.size() || tasks[task]["attempts"].empty() ||
        tasks[task]["attempts"].back().get<std::int64_t>() != array)
      continue;
    tasks[task]["final"] = {
        {"state", "cancelled"}, {"reason", "cancelled while pending (scancel)"}, {"retryable", false}};
    write_json(e.path() / "job.json", j);
  }
  return JobService::CancelResult::kRemoved;
}

}  // namespace xsp::slurm
