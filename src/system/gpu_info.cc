// nvidia-smi parsing and the readable system description; see include/xsp/system/gpu_info.h.
#include "xsp/system/gpu_info.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "xsp/util/strings.h"

namespace xsp {
namespace {

// "1980 MHz" -> 1980; "[N/A]" or garbage -> -1.
long long leading_number(const std::string& s) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  return end == s.c_str() ? -1 : v;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  std::string dir;
  std::error_code ec;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && std::filesystem::is_regular_file(std::filesystem::path(dir) / program, ec)) return true;
  return false;
}

std::string capture(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  return ::pclose(pipe) == 0 ? out : std::string();
}

std::string str(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "?";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

}  // namespace

nlohmann::json parse_nvidia_smi_gpus(const std::string& csv) {
  nlohmann::json gpus = nlohmann::json::array();
  std::stringstream lines(csv);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::stringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) f.emplace_back(util::trim(cell));
    if (f.size() != 5) continue;
    nlohmann::json g = {{"index", gpus.size()}, {"name", f[0]}};
    if (f[1].find("N/A") == std::string::npos) g["driver_version"] = f[1];
    if (const auto v = leading_number(f[2]); v >= 0) g["sm_clock_mhz"] = v;
    if (const auto v = leading_number(f[3]); v >= 0) g["mem_clock_mhz"] = v;
    if (const auto v = leading_number(f[4]); v >= 0) g["memory_total_bytes"] = v * 1024 * 1024;  // MiB
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::string parse_nvidia_smi_cuda_version(const std::string& banner) {
  std::smatch m;
  return std::regex_search(banner, m, std::regex(R"(CUDA Version:\s*([0-9]+(\.[0-9]+)*))")) ? m[1].str() : "";
}

nlohmann::json describe_nvidia_gpus() {
  try {
    if (!on_path("nvidia-smi")) return nlohmann::json::object();
    const auto gpus = parse_nvidia_smi_gpus(
        capture("nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv,noheader"));
    if (gpus.empty()) return nlohmann::json::object();
    nlohmann::json out = {{"gpus", gpus}};
    if (auto cuda = parse_nvidia_smi_cuda_version(capture("nvidia-smi")); !cuda.empty())
      out["driver_cuda_version"] = cuda;
    return out;
  } catch (...) {
    return nlohmann::json::object();
  }
}

std::string format_system(const nlohmann::json& s) {
  if (!s.is_object()) return "system: (not recorded)\n";
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);  // GiB figures; integers print unchanged
  const auto& host = s.value("host", nlohmann::json::object());
  o << "host: " << str(host, "hostname") << ", " << str(host, "os") << ", kernel " << str(host, "kernel") << ", "
    << str(host, "arch") << "\n";
  const auto& cpu = s.value("cpu", nlohmann::json::object());
  o << "cpu: " << str(cpu, "model") << ", " << str(cpu, "logical_cores") << " logical / " << str(cpu, "physical_cores")
    << " physical cores";
  if (cpu.contains("max_mhz")) o << ", max " << str(cpu, "max_mhz") << " MHz";
  o << "\n";
  const auto& mem = s.value("memory", nlohmann::json::object());
  if (mem.contains("total_bytes") && mem["total_bytes"].is_number())
    o << "memory: " << mem["total_bytes"].get<double>() / (1024.0 * 1024 * 1024) << " GiB\n";
  const auto& gpu = s.value("gpu", nlohmann::json::array());
  if (!gpu.is_array() || gpu.empty()) o << "gpu: none\n";
  for (const auto& g : gpu.is_array() ? gpu : nlohmann::json::array()) {
    o << "gpu " << str(g, "index") << ": " << str(g, "name") << ", driver " << str(g, "driver_version");
    if (g.contains("sm_clock_mhz")) o << ", SM " << str(g, "sm_clock_mhz") << " MHz";
    if (g.contains("mem_clock_mhz")) o << ", memory " << str(g, "mem_clock_mhz") << " MHz";
    if (g.contains("memory_total_bytes") && g["memory_total_bytes"].is_number())
      o << ", " << g["memory_total_bytes"].get<double>() / (1024.0 * 1024 * 1024) << " GiB";
    o << "\n";
  }
  if (s.contains("cuda") && s["cuda"].is_object()) {
    const auto& c = s["cuda"];
    // One line per library: version and whether the framework had it loaded or it only sits on the path.
    auto lib = [&](const char* key, const char* label) {
      if (!c.contains(key) || !c[key].is_object()) return;
      const auto& l = c[key];
      o << label << ": " << (l.contains("version") ? str(l, "version") : std::string("absent"));
      if (l.value("status", "absent") != "absent") o << " (" << str(l, "status");
      if (l.contains("library")) o << ", " << str(l, "library");
      if (l.value("status", "absent") != "absent") o << ")";
      if (l.contains("driver_version")) o << ", driver API " << str(l, "driver_version");
      o << "\n";
    };
    lib("runtime", "cuda runtime");
    lib("cudnn", "cudnn");
    if (c.contains("driver_cuda_version")) o << "cuda (driver supports): " << str(c, "driver_cuda_version") << "\n";
  }
  // Facts as a two-column table under their heading, labels aligned.
  auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  auto aligned = [&o](const std::vector<std::pair<std::string, std::string>>& facts) {
    std::size_t label_width = 0;
    for (const auto& fact : facts) label_width = std::max(label_width, fact.first.size());
    for (const auto& [label, value] : facts)
      o << "  " << label << std::string(label_width - label.size() + 2, ' ') << value << "\n";
  };
  auto object_facts = [&text](const nlohmann::json& obj) {
    std::vector<std::pair<std::string, std::string>> facts;
    for (const auto& [name, value] : obj.items()) facts.emplace_back(name, text(value));
    return facts;
  };
  if (s.contains("software") && s["software"].is_object()) {
    o << "software:\n";
    aligned(object_facts(s["software"]));
  }
  if (s.contains("framework")) {
    const auto& f = s["framework"];
    o << "framework: " << str(f, "name") << " " << str(f, "version") << "\n";
    // Threads and backends as the framework ran the model (recorded since Predictor::framework_facts(); older
    // evaluations have none): a two-column table, labels aligned.
    std::vector<std::pair<std::string, std::string>> facts;
    if (f.contains("threads") && f["threads"].is_object()) {
      const auto& t = f["threads"];
      if (t.contains("intra_op")) facts.emplace_back("intra-op threads", text(t["intra_op"]));
      if (t.contains("inter_op")) facts.emplace_back("inter-op threads", text(t["inter_op"]));
    }
    if (f.contains("backends") && f["backends"].is_object())
      for (const auto& fact : object_facts(f["backends"])) facts.push_back(fact);
    aligned(facts);
  }
  if (s.contains("environment") && s["environment"].is_object() && !s["environment"].empty()) {
    o << "environment:\n";
    aligned(object_facts(s["environment"]));
  }
  if (s.contains("captured_at")) o << "captured: " << str(s, "captured_at") << "\n";
  return o.str();
}

}  // namespace xsp
