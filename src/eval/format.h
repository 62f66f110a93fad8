// Internal to xsp_eval: how numbers read in messages (request errors, warnings).
#pragma once

#include <cstdio>
#include <string>

namespace xsp::detail {

/// `v` as "%g" prints it: "1000", "0.1", "1e+06".
inline std::string number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace xsp::detail
