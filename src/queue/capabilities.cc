// This machine's capabilities as an agent registers them (include/xsp/queue/jobs.h).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "xsp/predictor/predictor.h"
#include "xsp/queue/jobs.h"

namespace xsp {

AgentCapabilities describe_capabilities(const nlohmann::json& system) {
  AgentCapabilities c;
  if (system.contains("host") && system["host"].is_object()) c.hostname = system["host"].value("hostname", "");
  if (c.hostname.empty()) {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) == 0) c.hostname = buf;
  }
  for (const auto& g : system.value("gpu", nlohmann::json::array())) {
    if (!g.is_object()) continue;
    AgentGpu gpu;
    gpu.name = g.value("name", "");
    if (g.contains("memory_total_bytes") && g["memory_total_bytes"].is_number())
      gpu.memory_bytes = static_cast<std::uint64_t>(g["memory_total_bytes"].get<double>());
    gpu.uuid = g.value("uuid", "");
    c.gpus.push_back(std::move(gpu));
  }
  for (const std::string& name : registered_predictors()) {
    try {
      c.frameworks.push_back({name, create_predictor(name)->framework_version()});
    } catch (const std::exception& e) {
      spdlog::warn("agent: framework {} is built in but cannot be created ({}); not offered", name, e.what());
    }
  }
  std::string runtime;
  if (system.contains("cuda") && system["cuda"].is_object() && system["cuda"].contains("runtime"))
    runtime = system["cuda"]["runtime"].value("status", "");
  // "loaded", "found" or "found (not loaded by the framework)": the runtime library is there either way.
  c.has_cuda = !c.gpus.empty() && (runtime.rfind("loaded", 0) == 0 || runtime.rfind("found", 0) == 0);
  return c;
}

}  // namespace xsp
