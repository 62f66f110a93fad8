// System description (SPEC §7): the facts a reader needs to reproduce a measurement are present.
#include "xsp/system/system_info.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "xsp/system/cuda_libraries.h"
#include "xsp/system/gpu_info.h"

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

TEST(SystemInfo, CudaAndCudnnVersionEncodings) {
  EXPECT_EQ(format_cuda_version(12020), "12.2");  // cudaRuntimeGetVersion on CUDA 12.2
  EXPECT_EQ(format_cuda_version(11080), "11.8");
  EXPECT_EQ(format_cuda_version(13000), "13.0");
  EXPECT_EQ(format_cuda_version(0), "");           // cudaDriverGetVersion without a driver
  EXPECT_EQ(format_cudnn_version(8902), "8.9.2");  // cuDNN 8: 1000*major + 100*minor + patch
  EXPECT_EQ(format_cudnn_version(7605), "7.6.5");
  EXPECT_EQ(format_cudnn_version(90100), "9.1.0");  // cuDNN 9: 10000*major + 100*minor + patch
  EXPECT_EQ(format_cudnn_version(91002), "9.10.2");
  EXPECT_EQ(format_cudnn_version(0), "");
}

TEST(SystemInfo, CudaLibrariesAreDescribedOrMarkedAbsent) {
  const nlohmann::json c = describe_system()["cuda"];
  for (const char* key : {"runtime", "cudnn"}) {
    ASSERT_TRUE(c.contains(key)) << c.dump(2);
    const std::string status = c[key].value("status", "");
    EXPECT_TRUE(status == "loaded" || status == "found (not loaded by the framework)" || status == "absent") << status;
    // A library that was found answers its version call with a well-formed version; an absent one has none.
    if (status == "absent") {
      EXPECT_FALSE(c[key].contains("version"));
    } else {
      EXPECT_TRUE(std::regex_match(c[key].value("version", ""), std::regex(R"(\d+\.\d+(\.\d+)?)"))) << c[key].dump();
      EXPECT_FALSE(c[key].value("library", "").empty());
    }
  }
  // This test binary links no CUDA: whatever is found was not loaded by a framework.
  EXPECT_NE(c["runtime"].value("status", ""), "loaded");
}

TEST(SystemInfo, FormatsCudaLines) {
  nlohmann::json s = {
      {"cuda",
       {{"runtime",
         {{"status", "loaded"}, {"version", "12.2"}, {"library", "/x/libcudart.so.12"}, {"driver_version", "12.4"}}},
        {"cudnn", {{"status", "absent"}}},
        {"driver_cuda_version", "12.4"}}}};
  const std::string text = format_system(s);
  EXPECT_NE(text.find("cuda runtime: 12.2 (loaded, /x/libcudart.so.12), driver API 12.4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cudnn: absent\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cuda (driver supports): 12.4\n"), std::string::npos) << text;
}

TEST(SystemInfo, SoftwareAndEnvironmentAreAlignedTablesNotJson) {
  const nlohmann::json s = {{"software", {{"compiler", "gcc 12.2.0"}, {"xsp_version", "0.1.0"}}},
                            {"environment", {{"OMP_NUM_THREADS", "4"}}}};
  const std::string text = format_system(s);
  EXPECT_NE(text.find("software:\n  compiler     gcc 12.2.0\n  xsp_version  0.1.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("environment:\n  OMP_NUM_THREADS  4\n"), std::string::npos) << text;
  EXPECT_EQ(text.find('{'), std::string::npos) << text;
}

TEST(SystemInfo, PerformanceRelevantEnvironmentNames) {
  for (const char* n : {"OMP_NUM_THREADS", "OMP_PROC_BIND", "MKL_NUM_THREADS", "KMP_AFFINITY", "CUDA_VISIBLE_DEVICES",
                        "CUDA_LAUNCH_BLOCKING", "CUBLAS_WORKSPACE_CONFIG", "CUDNN_LOGINFO_DBG", "NVIDIA_TF32_OVERRIDE",
                        "TORCH_CUDNN_V8_API_DISABLED", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "PYTORCH_CUDA_ALLOC_CONF",
                        "DNNL_MAX_CPU_ISA", "LD_PRELOAD", "LD_LIBRARY_PATH", "XSP_STORE"})
    EXPECT_TRUE(is_performance_relevant_env(n)) << n;
  for (const char* n : {"HOME", "PATH", "USER", "CUDA", "TORCHVISION_X", "MY_OMP_NUM_THREADS"})
    EXPECT_FALSE(is_performance_relevant_env(n)) << n;
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 1);
  EXPECT_EQ(describe_system()["environment"].value("CUBLAS_WORKSPACE_CONFIG", ""), ":4096:8");
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
}

TEST(SystemInfo, UtcNowIsIso8601) {
  EXPECT_TRUE(std::regex_match(utc_now_iso8601(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_TRUE(
      std::regex_match(describe_system().value("captured_at", ""), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
}

}  // namespace
}  // namespace xsp
