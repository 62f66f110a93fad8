// System description (SPEC §7): the facts a reader needs to reproduce a measurement are present.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "xsp/system/system_info.h"

namespace xsp {
namespace {

TEST(SystemInfo, DescribesCpuMemoryAndSoftware) {
  const nlohmann::json s = describe_system();
  ASSERT_TRUE(s.contains("cpu")) << s.dump(2);
  EXPECT_TRUE(s["cpu"].contains("model")) << s.dump(2);
  EXPECT_FALSE(s["cpu"].value("model", "").empty());
  EXPECT_GT(s["cpu"].value("logical_cores", 0), 0);
  EXPECT_TRUE(s["cpu"]["flags"].is_array());
  ASSERT_TRUE(s.contains("memory"));
  EXPECT_GT(s["memory"].value("total_bytes", std::uint64_t{0}), 0u);
  EXPECT_EQ(s["software"].value("xsp_version", ""), xsp_version());
  EXPECT_EQ(s["software"].value("xsp_git_revision", ""), xsp_git_revision());
  EXPECT_FALSE(s["software"].value("compiler", "").empty());
  EXPECT_EQ(s["software"].value("cxx_standard", ""), "C++20");
  EXPECT_FALSE(s["host"].value("kernel", "").empty());
  EXPECT_FALSE(s["host"].value("arch", "").empty());
  EXPECT_TRUE(s["gpu"].is_array());
  EXPECT_TRUE(s["environment"].is_object());
}

TEST(SystemInfo, VersionComesFromTheBuild) {
  EXPECT_EQ(xsp_version(), "0.1.0");
  EXPECT_FALSE(xsp_git_revision().empty());
}

TEST(SystemInfo, RecordsPerformanceRelevantEnvironmentOnly) {
  ::setenv("OMP_NUM_THREADS", "3", 1);
  ::setenv("XSP_TEST_MARKER", "yes", 1);
  ::setenv("XSP_UNRELATED_NAME_NOT", "", 1);
  ::setenv("SOME_UNRELATED_VARIABLE", "no", 1);
  const nlohmann::json env = describe_system()["environment"];
  EXPECT_EQ(env.value("OMP_NUM_THREADS", ""), "3");
  EXPECT_EQ(env.value("XSP_TEST_MARKER", ""), "yes");
  EXPECT_FALSE(env.contains("SOME_UNRELATED_VARIABLE"));
  ::unsetenv("OMP_NUM_THREADS");
  ::unsetenv("XSP_TEST_MARKER");
  ::unsetenv("XSP_UNRELATED_NAME_NOT");
  ::unsetenv("SOME_UNRELATED_VARIABLE");
}

TEST(SystemInfo, UtcNowIsIso8601) {
  EXPECT_TRUE(std::regex_match(utc_now_iso8601(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_TRUE(std::regex_match(describe_system().value("captured_at", ""),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
}

}  // namespace
}  // namespace xsp
