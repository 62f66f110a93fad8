// The committed schema fixtures (tests/unit/store/schema/): the reference `.schema` of a new SQLite store made before
// the schema was declared once (sqlite_schema.sql), and the hand-written steps of each dialect as stores of versions
// 1..7 ran them (sqlite_steps.sql, postgres_steps.sql; frozen, never edited).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace xsp::testing {

inline std::string schema_fixture(const std::string& name) {
  const std::string path = std::string(XSP_SOURCE_DIR) + "/tests/unit/store/schema/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The frozen steps of `name` by version: the text between a "-- version N" line and the next.
inline std::map<int, std::string> frozen_steps(const std::string& name) {
  std::map<int, std::string> steps;
  std::istringstream in(schema_fixture(name));
  int version = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("-- version ", 0) == 0) {
      version = std::stoi(line.substr(11));
      continue;
    }
    if (version > 0) steps[version] += line + "\n";
  }
  return steps;
}

/// The statements that make a store of `version` from the frozen steps of `name`: the version table, steps
/// 1..version, the version recorded (as XSP before the declaration did, in one transaction).
inline std::string frozen_store_sql(const std::string& name, int version) {
  std::string sql = "BEGIN;\nCREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);\n";
  for (const auto& [v, step] : frozen_steps(name)) {
    if (v <= version) sql += step;
  }
  return sql + "INSERT INTO schema_version (version) VALUES (" + std::to_string(version) + ");\nCOMMIT;\n";
}

}  // namespace xsp::testing
