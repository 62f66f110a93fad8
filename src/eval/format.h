// Internal to xsp_eval: how numbers read in messages (request errors, warnings).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/predictor/predictor.h"
#include "xsp/record/record.h"

namespace xsp::detail {

/// `v` as "%g" prints it: "1000", "0.1", "1e+06".
inline std::string number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// Settings keys of the inputs screen_inputs() left out: "inputs_skipped_count" (all of them) and
/// "inputs_skipped" ([{file, reason}], the first kMaxListed, so that a folder of thousands of bad files does not
/// bloat the record).
inline nlohmann::json skipped_inputs_json(const std::vector<SkippedInput>& skipped) {
  constexpr std::size_t kMaxListed = 100;
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < skipped.size() && i < kMaxListed; ++i)
    list.push_back({{"file", skipped[i].file}, {"reason", skipped[i].reason}});
  return {{"inputs_skipped_count", skipped.size()}, {"inputs_skipped", std::move(list)}};
}

/// A record naming what every runner's evaluation ran: the model (name, version, manifest text), the framework and
/// its version, and the device as "cpu" or "cuda:N".
inline EvaluationRecord record_of(const Manifest& manifest, const Predictor& predictor, const DeviceSpec& device) {
  EvaluationRecord record;
  record.model_name = manifest.name;
  record.model_version = manifest.version;
  record.manifest_yaml = manifest.source_yaml;
  record.framework_name = predictor.framework_name();
  record.framework_version = predictor.framework_version();
  record.device = device.kind + (device.kind == "cpu" ? "" : ":" + std::to_string(device.index));
  return record;
}

}  // namespace xsp::detail
