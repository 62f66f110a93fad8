// Job constraints and their matching without a database (include/xsp/queue/jobs.h).
#include <gtest/gtest.h>

#include "xsp/eval/measurement.h"
#include "xsp/queue/jobs.h"

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
  EXPECT_EQ(mismatch_reason(c, gpu),
            "needs a GPU with at least 96 GiB (this agent has NVIDIA H100 80GB HBM3 80 GiB)");
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
