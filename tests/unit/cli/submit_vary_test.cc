// `xsp submit --engine slurm|k8s --vary FLAG=V1,V2`: a job array's task per model and configuration, each varied value
// checked by `xsp evaluate`'s own flag parser before anything is written (issue 28). Dry runs only: the real Slurm is
// tests/slurm/slurm_test.sh's.
#include <fstream>
#include <regex>
#include <sstream>

#include "cli_harness.h"

namespace xsp::testing {
namespace {

class SubmitVary : public CliHarness {
 protected:
  void SetUp() override { make_zoo("vary-fake", "m"); }
  std::string script() {
    std::ifstream in(dir_ / "job.sh");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::vector<std::string> commands() {
    std::vector<std::string> out;
    const std::string text = script();
    const std::regex task(R"re(\n  \d+\) cmd=\(([^)]*)\))re");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), task); it != std::sregex_iterator(); ++it)
      out.push_back((*it)[1]);
    return out;
  }
  int submit(std::vector<std::string> extra) {
    std::vector<std::string> args{
        "--store", (dir_ / "s.db").string(),   "submit",       "--engine", "slurm", "--dry-run",
        "-o",      (dir_ / "job.sh").string(), "--xsp-binary", "/opt/xsp"};
    args.insert(args.end(), extra.begin(), extra.end());
    return xsp(args);
  }
};

TEST_F(SubmitVary, EveryModelRunsEveryCombinationWithTheOtherFlagsUnchanged) {
  ASSERT_EQ(submit({"a,b", "--batch-sizes", "1,8", "--precision", "fp32", "--vary", "framework=libtorch,onnxruntime",
                    "--vary", "precision=fp16,bf16"}),
            0)
      << err_;
  const std::vector<std::string> cmds = commands();
  ASSERT_EQ(cmds.size(), 8u) << script();
  EXPECT_EQ(cmds[0], "/opt/xsp evaluate a --batch-sizes=1,8 --framework=libtorch --precision=fp16");
  EXPECT_EQ(cmds[3], "/opt/xsp evaluate a --batch-sizes=1,8 --framework=onnxruntime --precision=bf16");
  EXPECT_EQ(cmds[4], "/opt/xsp evaluate b --batch-sizes=1,8 --framework=libtorch --precision=fp16");
  // The submission's own --precision fp32 is replaced, never given twice.
  for (const std::string& c : cmds) EXPECT_EQ(c.find("fp32"), std::string::npos) << c;
  EXPECT_NE(script().find("# b (framework=onnxruntime, precision=bf16)"), std::string::npos);
  EXPECT_NE(script().find("--array=0-7"), std::string::npos);
}

TEST_F(SubmitVary, ValuesHoldingCommasAreSeparatedBySemicolons) {
  ASSERT_EQ(submit({"a", "--vary", "batch-sizes=1,8;64"}), 0) << err_;
  EXPECT_EQ(commands(), (std::vector<std::string>{"/opt/xsp evaluate a --batch-sizes=1,8",
                                                  "/opt/xsp evaluate a --batch-sizes=64"}));
}

TEST_F(SubmitVary, BadMatricesAreRefusedNamingTheValueAndNothingIsWritten) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"a", "--vary", "nope=1"}, "'nope' is not a flag of `xsp evaluate`"},
      {{"a", "--vary", "precision=fp64"}, "configuration precision=fp64: --precision"},
      {{"a", "--vary", "precision="}, "expected FLAG=VALUE"},
      {{"a", "--vary", "precision=fp16,,bf16"}, "an empty value"},
      {{"a", "--vary", "precision=fp16", "--vary", "precision=bf16"}, "'precision' is varied twice"},
      {{"a", "--vary", "trace-level=kernel"}, "configuration trace-level=kernel: "},  // on the CPU
  };
  for (const auto& [args, message] : cases) {
    EXPECT_EQ(submit(args), 2) << message;
    EXPECT_NE(err_.find(message), std::string::npos) << err_;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "job.sh")) << message;
  }
  // The queue takes one configuration per submission.
  EXPECT_EQ(xsp({"--store", (dir_ / "s.db").string(), "submit", "a", "--vary", "precision=fp16"}), 2);
  EXPECT_NE(err_.find("with --engine slurm or k8s"), std::string::npos) << err_;
}

}  // namespace
}  // namespace xsp::testing
