// Internal to xsp_eval: strict readers of request JSON (EvaluationRequest and its parts). A request comes from other
// people (the REST API, `xsp submit`, a job row of the shared queue), so a value is taken only when it is exactly of
// the field's type and within it: no float read into an integer (nlohmann's get<int>() truncates 1e10 and wraps
// 4294967297 to 1), no string read as a number, no key that the request does not have (a misspelt key would otherwise
// be dropped silently and its field keep its default).
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "xsp/eval/measurement.h"

namespace xsp::detail {

/// Whether `v` holds a value of T exactly, stored into `out` when it does: booleans; strings; integers within T's
/// range (not floats: 2.5 and 1e10 are not counts); finite numbers for floating-point T; arrays of those.
template <typename T>
bool json_value(const nlohmann::json& v, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return false;
    out = v.get<bool>();
    return true;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return false;
    out = v.get<std::string>();
    return true;
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned()) {
      const std::uint64_t u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
      out = static_cast<T>(u);
      return true;
    }
    const std::int64_t i = v.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0) return false;
      if (static_cast<std::uint64_t>(i) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
    } else {
      if (i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
          i > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
        return false;
    }
    out = static_cast<T>(i);
    return true;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return false;
    const double d = v.get<double>();
    if (!std::isfinite(d)) return false;
    out = static_cast<T>(d);
    return true;
  } else {
    // std::vector<E>
    if (!v.is_array()) return false;
    T items;
    for (const auto& e : v) {
      typename T::value_type x{};
      if (!json_value(e, x)) return false;
      items.push_back(std::move(x));
    }
    out = std::move(items);
    return true;
  }
}

/// Reads member `key` of object `j` into `field` when present and not null; a value of another type or out of the
/// field's range is a RequestError on `prefix + key` saying `expected` and what was given.
template <typename T>
void read_field(const nlohmann::json& j, const char* key, T& field, const std::string& prefix, const char* expected) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!json_value(*it, field))
    throw RequestError(prefix + key, std::string("expected ") + expected + ", got " +
                                         it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

/// Throws a RequestError on `prefix + key` for the first member of object `j` whose key is not in `known`,
/// naming the keys it has.
inline void reject_unknown_keys(const nlohmann::json& j, std::initializer_list<std::string_view> known,
                                const std::string& prefix) {
  for (const auto& item : j.items()) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || item.key() == k;
    if (ok) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    std::string where = prefix.empty() ? std::string("the request") : prefix.substr(0, prefix.size() - 1);
    throw RequestError(prefix + item.key(), "unknown key in " + where + "; it has " + list);
  }
}

}  // namespace xsp::detail
