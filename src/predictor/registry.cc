#include <map>
#include <mutex>
#include <stdexcept>

#include "xsp/predictor/predictor.h"

namespace xsp {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, PredictorFactory> factories;
  std::map<std::string, std::string> unavailable;  // name -> why this build lacks it
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_predictor(const std::string& name, PredictorFactory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.factories[name] = std::move(factory);
}

void register_unavailable_predictor(const std::string& name, const std::string& reason) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.unavailable[name] = reason;
}

std::string unavailable_predictor_reason(const std::string& name) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (r.factories.find(name) != r.factories.end()) return "";
  auto u = r.unavailable.find(name);
  return u == r.unavailable.end() ? std::string() : u->second;
}

std::unique_ptr<Predictor> create_predictor(const std::string& name) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.factories.find(name);
  if (it == r.factories.end()) {
    if (auto u = r.unavailable.find(name); u != r.unavailable.end())
      throw std::runtime_error("framework '" + name + "' is not in this build: " + u->second);
    std::string known;
    for (const auto& [n, f] : r.factories) known += (known.empty() ? "" : ", ") + n;
    throw std::runtime_error("unknown framework '" + name + "'; this build has: " +
                             (known.empty() ? std::string("none (built without any predictor)") : known));
  }
  return it->second();
}

std::vector<std::string> registered_predictors() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.factories) names.push_back(n);
  return names;
}

}  // namespace xsp
