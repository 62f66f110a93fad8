// Slurm's JSON, its states, and the batch script of an array (include/xsp/queue/slurm.h).
#include "xsp/queue/slurm.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <ctime>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace xsp::slurm {

std::vector<int> expand_task_string(const std::string& text) {
  // "%K" is the throttle, not an index.
  const std::string list = text.substr(0, text.find('%'));
  std::vector<int> out;
  std::stringstream ss(list);
  std::string part;
  static const std::regex range(R"((\d+)(?:-(\d+)(?::(\d+))?)?)");
  while (std::getline(ss, part, ',')) {
    std::smatch m;
    if (!std::regex_match(part, m, range))
      throw std::invalid_argument("array_task_string: expected indices like 0-3, 1,3 or 2-8:2, got '" + text + "'");
    const int lo = std::stoi(m[1]);
    const int hi = m[2].matched ? std::stoi(m[2]) : lo;
    const int step = m[3].matched ? std::stoi(m[3]) : 1;
    if (hi < lo || step < 1 || hi - lo > 1'000'000)
      throw std::invalid_argument("array_task_string: bad range '" + part + "' in '" + text + "'");
    for (int i = lo; i <= hi; i += step) out.push_back(i);
  }
  return out;
}

namespace {
std::int64_t integer(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number()) return it->get<std::int64_t>();
  // Slurm 23.02+ wraps numbers as {"set": true, "infinite": false, "number": N}.
  if (it->is_object()) return it->value("number", std::int64_t{0});
  throw std::runtime_error(std::string("squeue --json: ") + key + " is not a number: " + it->dump());
}
std::string text(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  // 23.02+: job_state is a list of flags, the state first.
  if (it->is_array() && !it->empty() && (*it)[0].is_string()) return (*it)[0].get<std::string>();
  return it->dump();
}
}  // namespace

std::vector<TaskStatus> parse_squeue_json(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array())
    throw std::runtime_error("squeue --json: expected an object with a \"jobs\" array");
  std::vector<TaskStatus> out;
  for (const nlohmann::json& j : doc["jobs"]) {
    if (!j.is_object()) throw std::runtime_error("squeue --json: a job that is not an object");
    TaskStatus t;
    t.array_job_id = integer(j, "array_job_id");
    if (t.array_job_id == 0) continue;  // not an array task
    t.job_id = integer(j, "job_id");
    t.state = text(j, "job_state");
    t.reason = text(j, "state_reason");
    // exit_code is the batch script's wait status: exit status in the high byte, the signal in the low 7 bits.
    const std::int64_t status = integer(j, "exit_code");
    t.exit_code = static_cast<int>((status >> 8) & 0xff);
    t.signal = static_cast<int>(status & 0x7f);
    t.restarts = static_cast<int>(integer(j, "restart_cnt"));
    t.node = text(j, "nodes");
    t.submit_time = integer(j, "submit_time");
    t.start_time = integer(j, "start_time");
    t.end_time = integer(j, "end_time");
    const auto task = j.find("array_task_id");
    if (task != j.end() && task->is_number()) {
      t.task = task->get<int>();
      out.push_back(t);
    } else if (task != j.end() && task->is_object() && task->value("set", false)) {
      t.task = task->value("number", 0);
      out.push_back(t);
    } else {
      // The record of tasks not split off yet: one status for each pending index.
      for (int i : expand_task_string(text(j, "array_task_string"))) {
        t.task = i;
        out.push_back(t);
      }
    }
  }
  return out;
}

std::vector<TaskStatus> parse_sacct_json(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array())
    throw std::runtime_error("sacct --json: expected an object with a \"jobs\" array");
  std::vector<TaskStatus> out;
  for (const nlohmann::json& j : doc["jobs"]) {
    const nlohmann::json array = j.value("array", nlohmann::json::object());
    TaskStatus t;
    t.array_job_id = integer(array, "job_id");
    if (t.array_job_id == 0) continue;
    t.task = static_cast<int>(integer(array, "task_id"));
    t.job_id = integer(j, "job_id");
    const nlohmann::json state = j.value("state", nlohmann::json::object());
    t.state = text(state, "current");
    t.reason = text(state, "reason");
    const nlohmann::json exit = j.value("exit_code", nlohmann::json::object());
    t.exit_code = static_cast<int>(integer(exit, "return_code"));
    t.signal = static_cast<int>(integer(exit.value("signal", nlohmann::json::object()), "signal_id"));
    t.restarts = static_cast<int>(integer(j, "restart_cnt"));
    t.node = text(j, "nodes");
    const nlohmann::json time = j.value("time", nlohmann::json::object());
    t.submit_time = integer(time, "submission");
    t.start_time = integer(time, "start");
    t.end_time = integer(time, "end");
    out.push_back(t);
  }
  return out;
}

MappedState map_state(const TaskStatus& s) {
  std::string name = s.state.substr(0, s.state.find_first_of(" +"));
  auto with_reason = [&](std::string what) {
    if (!s.reason.empty() && s.reason != "None") what += " (" + s.reason + ")";
    return what;
  };
  const std::string where = s.node.empty() ? "" : " on " + s.node;
  if (name == "PENDING" || name == "CONFIGURING" || name == "RESIZING") {
    const std::string pending = s.reason.empty() || s.reason == "None" ? "" : "pending: " + s.reason;
    // Slurm requeued it itself (its node went down, or it was preempted with requeue): it runs again from the start.
    if (s.restarts > 0)
      return {JobState::kQueued,
              "requeued by Slurm after restart " + std::to_string(s.restarts) + " (node failure or preemption)" +
                  (pending.empty() ? "" : "; " + pending),
              false};
    return {JobState::kQueued, pending, false};
  }
  if (name == "REQUEUED" || name == "REQUEUE_HOLD" || name == "REQUEUE_FED")
    return {JobState::kQueued, with_reason("requeued by Slurm") + ", restarts " + std::to_string(s.restarts), false};
  if (name == "RUNNING" || name == "COMPLETING" || name == "SUSPENDED" || name == "STOPPED" || name == "SIGNALING")
    return {JobState::kRunning, name == "RUNNING" ? "" : "Slurm: " + name, false};
  if (name == "COMPLETED") return {JobState::kDone, "", false};
  if (name == "CANCELLED")
    return {JobState::kCancelled,
            "cancelled (scancel)" + std::string(s.signal ? ", signal " + std::to_string(s.signal) : ""), false};
  if (name == "FAILED") {
    if (s.signal != 0) return {JobState::kFailed, "killed by signal " + std::to_string(s.signal) + where, true};
    // 2 is xsp's usage error: the request is wrong, another attempt fails the same way.
    const bool usage = s.exit_code == 2;
    return {JobState::kFailed,
            "exit code " + std::to_string(s.exit_code) + (usage ? " (usage error: not retried)" : "") + where, !usage};
  }
  if (name == "TIMEOUT") return {JobState::kFailed, "over its time limit (TIMEOUT)" + where, true};
  if (name == "NODE_FAIL") return {JobState::kFailed, "its node failed (NODE_FAIL)" + where, true};
  if (name == "PREEMPTED") return {JobState::kFailed, "preempted (PREEMPTED)" + where, true};
  if (name == "BOOT_FAIL") return {JobState::kFailed, "its node failed to boot (BOOT_FAIL)" + where, true};
  if (name == "OUT_OF_MEMORY")
    return {JobState::kFailed, "out of memory (OUT_OF_MEMORY)" + where + ": ask for more with --mem", false};
  if (name == "DEADLINE") return {JobState::kFailed, "past its deadline (DEADLINE)", false};
  if (name == "SPECIAL_EXIT" || name == "REVOKED") return {JobState::kFailed, with_reason("Slurm: " + name), false};
  return {JobState::kFailed, "unknown Slurm state '" + s.state + "'", false};
}

std::string array_spec(std::size_t tasks, int max_concurrent) {
  if (tasks < 1) throw std::invalid_argument("array: no tasks");
  std::string spec = "0-" + std::to_string(tasks - 1);
  if (max_concurrent > 0 && static_cast<std::size_t>(max_concurrent) < tasks)
    spec += "%" + std::to_string(max_concurrent);
  return spec;
}

namespace {
// An argument as bash reads it back: bare when it has only safe characters, else single-quoted.
std::string quote(const std::string& s) {
  static const std::regex safe(R"([A-Za-z0-9_@%+=:,./-]+)");
  if (std::regex_match(s, safe)) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
std::string join_quoted(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + quote(a);
  return out;
}
std::vector<std::string> resource_args(const ArrayOptions& o) {
  std::vector<std::string> args = {"--job-name=" + o.job_name};
  if (!o.partition.empty()) args.push_back("--partition=" + o.partition);
  if (!o.gres.empty()) args.push_back("--gres=" + o.gres);
  if (!o.gpus.empty()) args.push_back("--gpus=" + o.gpus);
  if (!o.time.empty()) args.push_back("--time=" + o.time);
  args.insert(args.end(), o.sbatch_args.begin(), o.sbatch_args.end());
  return args;
}
}  // namespace

std::vector<std::string> sbatch_argv(const ArrayOptions& o, const std::filesystem::path& script,
                                     const std::string& array, bool first) {
  std::vector<std::string> argv = {"sbatch", "--parsable", "--array=" + array};
  if (first && !o.dependency.empty()) argv.push_back("--dependency=" + o.dependency);
  argv.push_back(script.string());
  return argv;
}

std::string batch_script(const ArrayOptions& o, const std::vector<TaskSpec>& tasks, const std::filesystem::path& dir,
                         const std::filesystem::path& xsp_binary, const std::string& store,
                         const std::filesystem::path& zoo) {
  if (tasks.empty()) throw std::invalid_argument("batch script: no tasks");
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# XSP job array written by `xsp submit --engine slurm`: " << tasks.size()
    << " evaluation(s), one per task, each into the shared store.\n"
    << "# Resubmit it by hand (all tasks, or one with --array=I):\n"
    << "#   sbatch --array=" << array_spec(tasks.size(), o.max_concurrent)
    << (o.dependency.empty() ? "" : " --dependency=" + o.dependency) << " " << quote((dir / "job.sh").string()) << "\n";
  for (const std::string& a : resource_args(o)) s << "#SBATCH " << a << "\n";
  s << "#SBATCH --output=" << (dir / "task-%a.%A.out").string() << "\n"
    << "set -u\n"
    << "export XSP_STORE=" << quote(store) << "\n"
    << "export XSP_ZOO=" << quote(zoo.string()) << "\n"
    << "dir=" << quote(dir.string()) << "\n"
    << "xsp=" << quote(xsp_binary.string()) << "\n"
    << "task=${SLURM_ARRAY_TASK_ID:?run this script with sbatch --array}\n"
    << "case \"$task\" in\n";
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    std::vector<std::string> argv = tasks[i].argv;
    s << "  " << i << ") cmd=(" << join_quoted(argv) << ") ;;  # " << tasks[i].model << "\n";
  }
  s << "  *) echo \"xsp: this array has tasks 0-" << tasks.size() - 1 << ", not $task\" >&2; exit 2 ;;\n"
    << "esac\n"
    << "echo \"xsp: task $task of array ${SLURM_ARRAY_JOB_ID} (job ${SLURM_JOB_ID}) on $(hostname): ${cmd[*]}\"\n"
    // The evaluation is stored in one transaction by `xsp evaluate`; its id and the Slurm ids follow it here.
    << "\"${cmd[@]}\" | tee \"$dir/evaluate-$task.$SLURM_JOB_ID.out\"\n"
    << "status=${PIPESTATUS[0]}\n"
    << "id=$(sed -n 's/^stored as evaluation \\([0-9][0-9]*\\) .*/\\1/p' \"$dir/evaluate-$task.$SLURM_JOB_ID.out\" "
       "| tail -n 1)\n"
    << "if [ -n \"$id\" ]; then\n"
    << "  \"$xsp\" label \"$id\" --tag \"slurm-array:${SLURM_ARRAY_JOB_ID}\" --tag \"slurm-task:$task\" > /dev/null "
       "||\n"
    << "    echo \"xsp: could not tag evaluation $id with its Slurm ids\" >&2\n"
    << "  printf '{\"evaluation_id\": %s, \"array_job_id\": %s, \"task\": %s, \"job_id\": %s, \"exit_code\": %s}\\n' "
       "\"$id\" \"$SLURM_ARRAY_JOB_ID\" \"$task\" \"$SLURM_JOB_ID\" \"$status\" > \"$dir/.result-$task.json\" &&\n"
    << "    mv \"$dir/.result-$task.json\" \"$dir/result-$task.json\"\n"
    << "fi\n"
    << "exit \"$status\"\n";
  return s.str();
}

std::int64_t parse_slurm_time(const std::string& t) {
  static const std::regex days(R"((\d+)-(\d+)(?::(\d+)(?::(\d+))?)?)");
  static const std::regex hms(R"((\d+)(?::(\d+)(?::(\d+))?)?)");
  std::smatch m;
  auto num = [&](int i) -> std::int64_t { return m[i].matched ? std::stoll(m[i]) : 0; };
  if (t.size() < 16 && std::regex_match(t, m, days)) return num(1) * 86400 + num(2) * 3600 + num(3) * 60 + num(4);
  if (t.size() < 16 && std::regex_match(t, m, hms)) {
    if (m[3].matched) return num(1) * 3600 + num(2) * 60 + num(3);  // HH:MM:SS
    if (m[2].matched) return num(1) * 60 + num(2);                  // MM:SS
    return num(1) * 60;                                             // MM
  }
  throw std::invalid_argument("time: expected Slurm's format (MM, MM:SS, HH:MM:SS, D-HH:MM:SS), got '" + t + "'");
}

std::string k8s_manifest(const K8sOptions& o, const std::vector<TaskSpec>& tasks) {
  if (tasks.empty()) throw std::invalid_argument("k8s: no tasks");
  if (o.image.empty())
    throw std::invalid_argument("image: a container image holding the xsp binary is required (--image)");
  static const std::regex dns_label("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  if (o.name.size() > 63 || !std::regex_match(o.name, dns_label))
    throw std::invalid_argument("name: expected a DNS label (lowercase letters, digits and '-', at most 63), got '" +
                                o.name + "'");
  // One shell `case` picks the task by JOB_COMPLETION_INDEX, which the Job controller sets in each pod.
  std::string script = "case \"$JOB_COMPLETION_INDEX\" in\n";
  for (std::size_t i = 0; i < tasks.size(); ++i)
    script += "  " + std::to_string(i) + ") exec " + join_quoted(tasks[i].argv) + " ;;\n";
  script += "  *) echo \"no task $JOB_COMPLETION_INDEX\" >&2; exit 2 ;;\nesac\n";
  YAML::Emitter y;
  y << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "batch/v1" << YAML::Key << "kind" << YAML::Value
    << "Job";
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << o.name;
  if (!o.namespace_.empty()) y << YAML::Key << "namespace" << YAML::Value << o.namespace_;
  y << YAML::Key << "labels" << YAML::Value << YAML::BeginMap << YAML::Key << "app.kubernetes.io/name" << YAML::Value
    << "xsp" << YAML::EndMap << YAML::EndMap;
  const std::size_t n = tasks.size();
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "completionMode" << YAML::Value << "Indexed";
  y << YAML::Key << "completions" << YAML::Value << n;
  y << YAML::Key << "parallelism" << YAML::Value
    << (o.parallelism > 0 ? std::min<std::size_t>(n, static_cast<std::size_t>(o.parallelism)) : n);
  y << YAML::Key << "backoffLimit" << YAML::Value << n * static_cast<std::size_t>(std::max(0, o.max_attempts - 1));
  if (!o.time.empty()) {
    std::int64_t seconds = 0;
    try {
      seconds = parse_slurm_time(o.time);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("time: ") + e.what());
    }
    // A deadline for the whole Job: every wave of `parallelism` pods gets the per-task time.
    const std::size_t waves =
        (n + (o.parallelism > 0 ? o.parallelism : n) - 1) / (o.parallelism > 0 ? o.parallelism : n);
    y << YAML::Key << "activeDeadlineSeconds" << YAML::Value << seconds * static_cast<std::int64_t>(waves);
  }
  y << YAML::Key << "template" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "labels" << YAML::Value
    << YAML::BeginMap << YAML::Key << "app.kubernetes.io/name" << YAML::Value << "xsp" << YAML::EndMap << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "restartPolicy" << YAML::Value << "Never";
  y << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << "xsp";
  y << YAML::Key << "image" << YAML::Value << o.image;
  y << YAML::Key << "command" << YAML::Value << YAML::BeginSeq << "/bin/sh"
    << "-c" << YAML::Literal << script << YAML::EndSeq;
  y << YAML::Key << "env" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name" << YAML::Value
    << "XSP_STORE" << YAML::Key << "valueFrom" << YAML::Value << YAML::BeginMap << YAML::Key << "secretKeyRef"
    << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << o.store_secret << YAML::Key << "key"
    << YAML::Value << o.store_key << YAML::EndMap << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  if (o.gpus > 0) {
    y << YAML::Key << "resources" << YAML::Value << YAML::BeginMap << YAML::Key << "limits" << YAML::Value
      << YAML::BeginMap << YAML::Key << "nvidia.com/gpu" << YAML::Value << o.gpus << YAML::EndMap << YAML::EndMap;
  }
  y << YAML::EndMap << YAML::EndSeq;  // the container, containers
  y << YAML::EndMap << YAML::EndMap;  // pod spec, template
  y << YAML::EndMap << YAML::EndMap;  // job spec, document
  if (!y.good()) throw std::runtime_error(std::string("k8s manifest: ") + y.GetLastError());
  return std::string(y.c_str()) + "\n";
}

}  // namespace xsp::slurm
