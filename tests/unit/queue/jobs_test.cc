// Job constraints and their matching without a database (include/xsp/queue/jobs.h).
#include "xsp/queue/jobs.h"

#include <gtest/gtest.h>

#include <fstream>

#include "xsp/eval/measurement.h"

namespace xsp {
namespace {

TEST(Jobs, GlobMatchesWholeNames) {
  EXPECT_TRUE(glob_match("*H100*", "NVIDIA H100 80GB HBM3"));
  EXPECT_FALSE(glob_match("H100*", "NVIDIA H100 80GB HBM3")) << "anchored at the start";
  EXPECT_TRUE(glob_match("NVIDIA H?00*", "NVIDIA H200"));
  EXPECT_FALSE(glob_match("NVIDIA H?00", "NVIDIA H1000"));
  EXPECT_TRUE(glob_match("", "anything")) << "empty pattern: any GPU";
  EXPECT_TRUE(glob_match("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXbYbZ"));
  EXPECT_TRUE(glob_match("100%", "100%"));
  EXPECT_FALSE(glob_match("100%", "1000"));
}

TEST(Jobs, GlobToLikeEscapesLikeWildcards) {
  EXPECT_EQ(glob_to_like("*H100*"), "%H100%");
  EXPECT_EQ(glob_to_like("H?00"), "H_00");
  EXPECT_EQ(glob_to_like("50%_off\\"), "50\\%\\_off\\\\");
  EXPECT_EQ(glob_to_like(""), "");
}

TEST(Jobs, MismatchReasonNamesWhatIsMissing) {
  AgentCapabilities cpu;
  cpu.hostname = "box";
  cpu.frameworks = {{"libtorch", "2.11.0"}};
  JobConstraints c;
  EXPECT_EQ(mismatch_reason(c, cpu), "");
  c.framework = "libtorch";
  c.framework_version = "2.1";
  EXPECT_EQ(mismatch_reason(c, cpu), "needs framework libtorch 2.1 (this agent has libtorch 2.11.0)")
      << "2.1 is not a prefix of 2.11.0 by components";
  c.framework_version = "2.11";
  EXPECT_EQ(mismatch_reason(c, cpu), "");
  c.device = "cuda";
  EXPECT_NE(mismatch_reason(c, cpu).find("needs a CUDA device"), std::string::npos);
  AgentCapabilities gpu = cpu;
  gpu.has_cuda = true;
  gpu.gpus = {{"NVIDIA H100 80GB HBM3", 80ull << 30, ""}};
  EXPECT_EQ(mismatch_reason(c, gpu), "");
  c.min_gpu_memory_bytes = 96ull << 30;
  EXPECT_EQ(mismatch_reason(c, gpu), "needs a GPU with at least 96 GiB (this agent has NVIDIA H100 80GB HBM3 80 GiB)");
  c.min_gpu_memory_bytes = 0;
  c.host = "other";
  EXPECT_EQ(mismatch_reason(c, gpu), "needs host 'other' (this agent is on 'box')");
}

TEST(Jobs, ConstraintsJsonRoundTripAndErrorsNameTheKey) {
  JobConstraints c;
  c.framework = "libtorch";
  c.framework_version = "2.11";
  c.device = "cuda";
  c.gpu_pattern = "*H100*";
  c.min_gpu_memory_bytes = 80ull << 30;
  c.host = "gpu7";
  const JobConstraints back = job_constraints_from_json(to_json(c));
  EXPECT_EQ(to_json(back), to_json(c));
  auto field_of = [](const nlohmann::json& j) {
    try {
      job_constraints_from_json(j);
    } catch (const RequestError& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(field_of({{"device", "tpu"}}), "constraints.device");
  EXPECT_EQ(field_of({{"gpu_pattern", 3}}), "constraints.gpu_pattern");
  EXPECT_EQ(field_of({{"min_gpu_memory_bytes", -1}}), "constraints.min_gpu_memory_bytes");
  EXPECT_EQ(field_of({{"gpus", "H100"}}), "constraints.gpus");
  EXPECT_EQ(field_of({{"framework_version", "2.11"}}), "constraints.framework_version");
  EXPECT_EQ(field_of(nlohmann::json::array()), "constraints");
}

TEST(Jobs, StatesRoundTrip) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kFailed, JobState::kCancelled})
    EXPECT_EQ(parse_job_state(to_string(s)), s);
  EXPECT_FALSE(parse_job_state("paused"));
}

}  // namespace
}  // namespace xsp

namespace xsp {
namespace {

// What `xsp machine describe` printed on the lent H100 (tests/fixtures/agents/agent_capabilities_h100.json): the same
// parsing as an agent's registration, and the constraints a submitter would write for it.
TEST(Jobs, RecordedH100AgentMatchesWhatItHas) {
  std::ifstream in(std::string(XSP_TEST_FIXTURES) + "/agents/agent_capabilities_h100.json");
  ASSERT_TRUE(in) << "fixture missing";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  // describe_capabilities() on the recorded system description gives what the machine registered (frameworks aside:
  // they come from this build's registry, not from the description).
  nlohmann::json system = {
      {"host", {{"hostname", "gpu-h100"}}}, {"gpu", fixture["system_gpu"]}, {"cuda", fixture["system_cuda"]}};
  AgentCapabilities described = describe_capabilities(system);
  const AgentCapabilities recorded = agent_capabilities_from_json(fixture["agent_capabilities"]);
  EXPECT_TRUE(described.has_cuda);
  ASSERT_EQ(described.gpus.size(), 1u);
  EXPECT_EQ(described.gpus[0].name, recorded.gpus[0].name);
  EXPECT_EQ(described.gpus[0].memory_bytes, recorded.gpus[0].memory_bytes);
  EXPECT_EQ(to_json(agent_capabilities_from_json(to_json(recorded))), to_json(recorded));

  JobConstraints c;
  c.framework = "libtorch";
  c.framework_version = "2.11";
  c.device = "cuda";
  c.gpu_pattern = "*H100*";
  c.min_gpu_memory_bytes = 64ull << 30;
  EXPECT_EQ(mismatch_reason(c, recorded), "");
  c.gpu_pattern = "H100*";
  EXPECT_NE(mismatch_reason(c, recorded), "") << "the driver's name starts with NVIDIA";
  c.gpu_pattern = "*H100*";
  // "80GB" is 80 * 10^9 bytes less what the driver reserves: 79.6 GiB, so at least 80 GiB is not an H100 80GB.
  c.min_gpu_memory_bytes = 80ull << 30;
  EXPECT_EQ(mismatch_reason(c, recorded),
            "needs a GPU matching '*H100*' with at least 80 GiB (this agent has "
            "NVIDIA H100 80GB HBM3 79 GiB)");
  c.min_gpu_memory_bytes = 0;
  c.framework_version = "2.1";
  EXPECT_NE(mismatch_reason(c, recorded).find("needs framework libtorch 2.1"), std::string::npos);
}

}  // namespace
}  // namespace xsp
