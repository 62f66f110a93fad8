// Job states, constraints and their matching against an agent (include/xsp/queue/jobs.h).
#include "xsp/queue/jobs.h"

#include <algorithm>
#include <string>

namespace xsp {

const char* to_string(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::optional<JobState> parse_job_state(std::string_view name) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kFailed, JobState::kCancelled}) {
    if (name == to_string(s)) return s;
  }
  return std::nullopt;
}

JobConstraints constraints_for(const EvaluationRequest& request) {
  JobConstraints c;
  c.framework = request.framework;
  c.device = request.device;
  return c;
}

nlohmann::json to_json(const JobConstraints& c) {
  return {{"framework", c.framework},     {"framework_version", c.framework_version},       {"device", c.device},
          {"gpu_pattern", c.gpu_pattern}, {"min_gpu_memory_bytes", c.min_gpu_memory_bytes}, {"host", c.host}};
}

namespace {
[[noreturn]] void reject(const std::string& key, const std::string& expected) {
  throw RequestError("constraints." + key, expected);
}
}  // namespace

JobConstraints job_constraints_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw RequestError("constraints", "an object, got " + std::string(j.type_name()));
  JobConstraints c;
  for (const auto& [key, value] : j.items()) {
    if (key == "min_gpu_memory_bytes") {
      if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
        reject(key, "a non-negative integer (bytes), got " + value.dump());
      c.min_gpu_memory_bytes = value.get<std::uint64_t>();
      continue;
    }
    std::string* field = key == "framework"           ? &c.framework
                         : key == "framework_version" ? &c.framework_version
                         : key == "device"            ? &c.device
                         : key == "gpu_pattern"       ? &c.gpu_pattern
                         : key == "host"              ? &c.host
                                                      : nullptr;
    if (field == nullptr)
      reject(key, "one of framework, framework_version, device, gpu_pattern, min_gpu_memory_bytes, host");
    if (!value.is_string()) reject(key, "a string, got " + value.dump());
    *field = value.get<std::string>();
    if (field->size() > 256) reject(key, "at most 256 characters, got " + std::to_string(field->size()));
  }
  if (c.device != "cpu" && c.device != "cuda") reject("device", "cpu or cuda, got '" + c.device + "'");
  if (!c.framework_version.empty() && c.framework.empty())
    reject("framework_version", "a framework with it (a version alone names no framework)");
  return c;
}

JobSubmission job_submission_from_json(const nlohmann::json& body) {
  if (!body.is_object())
    throw RequestError("body", std::string("expected a JSON object (an EvaluationRequest or a job submission), got ") +
                                   body.type_name());
  JobSubmission s;
  if (!body.contains("request")) {
    s.request = evaluation_request_from_json(body);
    validate_fields(s.request);
    s.constraints = constraints_for(s.request);
    return s;
  }
  for (const auto& item : body.items())
    if (item.key() != "request" && item.key() != "constraints" && item.key() != "priority" &&
        item.key() != "max_attempts")
      throw RequestError(item.key(),
                         "unknown key in a job submission; it has request, constraints, priority, "
                         "max_attempts");
  if (!body["request"].is_object())
    throw RequestError("request",
                       std::string("expected an object (an EvaluationRequest), got ") + body["request"].type_name());
  try {
    s.request = evaluation_request_from_json(body["request"]);
    validate_fields(s.request);
  } catch (const RequestError& e) {
    throw RequestError("request." + e.field(), std::string(e.what()).substr(e.field().size() + 2));
  }
  s.constraints =
      body.contains("constraints") ? job_constraints_from_json(body["constraints"]) : constraints_for(s.request);
  // An optional integer member in [lo, hi].
  auto integer = [&](const char* key, int lo, int hi, int& out) {
    const auto it = body.find(key);
    if (it == body.end()) return;
    const std::string expected = "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    if (!it->is_number_integer()) throw RequestError(key, expected + ", got " + it->dump());
    // Unsigned values above INT64_MAX would read as negative through get<int64_t>().
    const bool huge = it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(hi);
    if (huge || it->get<std::int64_t>() < lo || it->get<std::int64_t>() > hi)
      throw RequestError(key, expected + ", got " + it->dump());
    out = static_cast<int>(it->get<std::int64_t>());
  };
  integer("priority", -1'000'000, 1'000'000, s.priority);
  integer("max_attempts", 1, 100, s.max_attempts);
  return s;
}

std::string glob_to_like(std::string_view pattern) {
  std::string out;
  for (char ch : pattern) {
    switch (ch) {
      case '*':
        out += '%';
        break;
      case '?':
        out += '_';
        break;
      case '%':
      case '_':
      case '\\':
        out += '\\';
        out += ch;
        break;
      default:
        out += ch;
    }
  }
  return out;
}

bool glob_match(std::string_view pattern, std::string_view name) {
  if (pattern.empty()) return true;
  // Iterative matching with one backtrack point for the last '*': linear in practice, no recursion on user input.
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {
bool version_matches(const std::string& wanted, const std::string& have) {
  return wanted.empty() || have == wanted ||
         (have.size() > wanted.size() && have.compare(0, wanted.size(), wanted) == 0 && have[wanted.size()] == '.');
}

std::string describe_gpus(const AgentCapabilities& a) {
  if (a.gpus.empty()) return "no GPU";
  std::string out;
  for (const AgentGpu& g : a.gpus) {
    out += (out.empty() ? "" : ", ") + g.name + " " + std::to_string(g.memory_bytes >> 30) + " GiB";
  }
  return out;
}
}  // namespace

std::string mismatch_reason(const JobConstraints& c, const AgentCapabilities& a) {
  if (!c.host.empty() && c.host != a.hostname)
    return "needs host '" + c.host + "' (this agent is on '" + a.hostname + "')";
  if (c.device == "cuda" && !a.has_cuda)
    return "needs a CUDA device (this agent has " + describe_gpus(a) + " usable by CUDA: none)";
  if (!c.framework.empty()) {
    const auto fw = std::find_if(a.frameworks.begin(), a.frameworks.end(), [&](const AgentFramework& f) {
      return f.name == c.framework && version_matches(c.framework_version, f.version);
    });
    if (fw == a.frameworks.end()) {
      std::string have;
      for (const AgentFramework& f : a.frameworks) have += (have.empty() ? "" : ", ") + f.name + " " + f.version;
      return "needs framework " + c.framework + (c.framework_version.empty() ? "" : " " + c.framework_version) +
             " (this agent has " + (have.empty() ? "none" : have) + ")";
    }
  }
  if (!c.gpu_pattern.empty() || c.min_gpu_memory_bytes > 0) {
    const bool any = std::any_of(a.gpus.begin(), a.gpus.end(), [&](const AgentGpu& g) {
      return (c.gpu_pattern.empty() || glob_match(c.gpu_pattern, g.name)) && g.memory_bytes >= c.min_gpu_memory_bytes;
    });
    if (!any) {
      std::string want = "a GPU";
      if (!c.gpu_pattern.empty()) want += " matching '" + c.gpu_pattern + "'";
      if (c.min_gpu_memory_bytes > 0) want += " with at least " + std::to_string(c.min_gpu_memory_bytes >> 30) + " GiB";
      return "needs " + want + " (this agent has " + describe_gpus(a) + ")";
    }
  }
  return "";
}

nlohmann::json to_json(const AgentCapabilities& c) {
  nlohmann::json frameworks = nlohmann::json::array(), gpus = nlohmann::json::array();
  for (const AgentFramework& f : c.frameworks) frameworks.push_back({{"name", f.name}, {"version", f.version}});
  for (const AgentGpu& g : c.gpus)
    gpus.push_back({{"name", g.name}, {"memory_bytes", g.memory_bytes}, {"uuid", g.uuid}});
  return {{"hostname", c.hostname}, {"frameworks", frameworks}, {"gpus", gpus}, {"has_cuda", c.has_cuda}};
}

AgentCapabilities agent_capabilities_from_json(const nlohmann::json& j) {
  AgentCapabilities c;
  c.hostname = j.value("hostname", "");
  c.has_cuda = j.value("has_cuda", false);
  for (const auto& f : j.value("frameworks", nlohmann::json::array()))
    c.frameworks.push_back({f.value("name", ""), f.value("version", "")});
  for (const auto& g : j.value("gpus", nlohmann::json::array()))
    c.gpus.push_back({g.value("name", ""), g.value("memory_bytes", std::uint64_t{0}), g.value("uuid", "")});
  return c;
}

nlohmann::json to_json(const AgentInfo& a) {
  // The capabilities' keys (hostname, frameworks, gpus, has_cuda) sit beside the agent's own, as the API documents.
  nlohmann::json j = to_json(a.capabilities);
  j.update({{"id", a.id},
            {"name", a.name},
            {"state", a.state},
            {"current_job", a.current_job ? nlohmann::json(*a.current_job) : nlohmann::json()},
            {"jobs_done", a.jobs_done},
            {"jobs_failed", a.jobs_failed},
            {"started_at", a.started_at},
            {"last_heartbeat_at", a.last_heartbeat_at},
            {"role", a.role},
            {"system", a.system}});
  return j;
}

nlohmann::json to_json(const JobInfo& job) {
  auto opt = [](const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); };
  nlohmann::json j = {
      {"id", job.id},
      {"engine", job.engine},
      {"external_id", job.external_id.empty() ? std::to_string(job.id) : job.external_id},
      {"state", to_string(job.state)},
      {"priority", job.priority},
      {"attempts", job.attempts},
      {"max_attempts", job.max_attempts},
      {"progress", {{"done", job.progress.done}, {"total", job.progress.total}, {"phase", job.progress.what}}},
      {"cancel_requested", job.cancel_requested},
      // A Slurm task has a node (agent_name) but no agent id.
      {"agent", job.agent_id.empty() && job.agent_name.empty()
                    ? nlohmann::json()
                    : nlohmann::json({{"id", opt(job.agent_id)}, {"name", job.agent_name}})},
      {"waiting_reason", opt(job.waiting_reason)},
      {"submitted_by", opt(job.submitted_by)},
      {"submitted_at", job.submitted_at},
      {"started_at", opt(job.started_at)},
      {"finished_at", opt(job.finished_at)},
      {"lease_expires_at", opt(job.lease_expires_at)},
      {"evaluation_id", job.evaluation_id ? nlohmann::json(*job.evaluation_id) : nlohmann::json()},
      {"evaluation_status", opt(job.evaluation_status)},
      {"request", to_json(job.request)},
      {"constraints", to_json(job.constraints)},
  };
  if (!job.error.empty()) {
    j["error"] = {{"message", job.error}};
    if (!job.error_field.empty()) j["error"]["field"] = job.error_field;
  }
  return j;
}

}  // namespace xsp
