// Internal to xsp_eval: how numbers read in messages (request errors, warnings).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "xsp/pipeline/pipeline.h"

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

}  // namespace xsp::detail
