// nvidia-smi parsing and the readable system description, on captured/hand-made text.
#include "xsp/system/gpu_info.h"

#include <gtest/gtest.h>

#include "xsp/system/system_info.h"

namespace xsp {
namespace {

TEST(NvidiaSmi, ParsesQueryGpuCsv) {
  const auto gpus = parse_nvidia_smi_gpus(
      "NVIDIA H100 80GB HBM3, 535.104.05, 1980 MHz, 2619 MHz, 81559 MiB\n"
      "Tesla T4, 470.57.02, [N/A], 5000 MHz, 15109 MiB\n"
      "garbage line without fields\n");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0]["driver_version"], "535.104.05");
  EXPECT_EQ(gpus[0]["sm_clock_mhz"], 1980);
  EXPECT_EQ(gpus[0]["mem_clock_mhz"], 2619);
  EXPECT_EQ(gpus[0]["memory_total_bytes"], 81559LL * 1024 * 1024);
  EXPECT_EQ(gpus[1]["index"], 1);
  EXPECT_FALSE(gpus[1].contains("sm_clock_mhz"));  // [N/A] left out
  EXPECT_TRUE(parse_nvidia_smi_gpus("").empty());
  // Captured on the project's H200 machine (driver 580.159.04), 2026-11-21.
  const auto h200 = parse_nvidia_smi_gpus("NVIDIA H200, 580.159.04, 1980 MHz, 3201 MHz, 143771 MiB\n");
  ASSERT_EQ(h200.size(), 1u);
  EXPECT_EQ(h200[0]["mem_clock_mhz"], 3201);
}

TEST(NvidiaSmi, CudaVersionFromBanner) {
  EXPECT_EQ(
      parse_nvidia_smi_cuda_version("| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |"),
      "12.2");
  EXPECT_EQ(parse_nvidia_smi_cuda_version(  // captured on the H200 machine
                "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |"),
            "13.0");
  EXPECT_EQ(parse_nvidia_smi_cuda_version("no banner"), "");
}

TEST(FormatSystem, ReadableLines) {
  nlohmann::json s = describe_system();
  s["gpu"] = parse_nvidia_smi_gpus("NVIDIA H100 80GB HBM3, 535.104.05, 1980 MHz, 2619 MHz, 81559 MiB\n");
  const std::string text = format_system(s);
  EXPECT_NE(text.find("cpu: "), std::string::npos) << text;
  EXPECT_NE(text.find("gpu 0: NVIDIA H100 80GB HBM3, driver 535.104.05, SM 1980 MHz"), std::string::npos) << text;
  s["gpu"] = nlohmann::json::array();
  EXPECT_NE(format_system(s).find("gpu: none"), std::string::npos);
  EXPECT_NE(format_system(nlohmann::json()).find("not recorded"), std::string::npos);
}

}  // namespace
}  // namespace xsp
