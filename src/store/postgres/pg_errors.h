// StoreError messages of the PostgreSQL store: "xsp store LOCATION: OPERATION: REASON", the location without its
// password. Internal to src/store/postgres.
#pragma once

#include <pqxx/pqxx>
#include <string>

#include "xsp/store/store.h"

namespace xsp::pg {

[[noreturn]] inline void fail(const std::string& location, const std::string& operation, const std::string& reason) {
  throw StoreError("xsp store " + redact_location(location) + ": " + operation + ": " + reason);
}

/// The first line of a libpq message without libpq's "ERROR:  " prefix: the DETAIL lines that follow may quote a
/// whole failing row (megabytes of trace).
inline std::string first_line(const std::string& message) {
  std::string s = message.substr(0, message.find('\n'));
  for (const char* prefix : {"ERROR:  ", "FATAL:  "}) {
    if (s.rfind(prefix, 0) == 0) s.erase(0, std::string(prefix).size());
  }
  return s;
}

/// The reason a statement failed: libpq's message, with the SQLSTATE when the server refused it (e.g. 23514: a
/// CHECK constraint, 42501: no privilege).
inline std::string reason(const std::exception& e) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
  const std::string state = sql != nullptr ? sql->sqlstate() : std::string();
  return first_line(e.what()) + (state.empty() ? "" : " (SQLSTATE " + state + ")");
}

/// True when the server or the network closed the connection (class 08, or the server shutting the session down,
/// 57P01..57P03): the statement may be retried on a new connection when it only read.
inline bool connection_lost(const pqxx::sql_error& e) {
  const std::string state = e.sqlstate();
  return state.rfind("08", 0) == 0 || state == "57P01" || state == "57P02" || state == "57P03";
}

}  // namespace xsp::pg
