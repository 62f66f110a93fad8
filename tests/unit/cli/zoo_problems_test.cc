// Issue 12 at the command line: one bad manifest in the zoo (malformed, an unknown step, a symlink loop, a
// 50,000-character version, a size that used to wrap) never breaks the other models. `xsp models` lists the good
// models and then the problems, exit 0; `xsp evaluate` of a good model warns once per bad file on stderr and runs;
// `xsp evaluate` of the bad model fails naming its file. In-process, on a fake framework of its own name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_harness.h"
#include "xsp/manifest/manifest.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto pos = text.find(part); pos != std::string::npos; pos = text.find(part, pos + part.size())) ++n;
  return n;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class ZooProblems : public testing::CliHarness {
 protected:
  void SetUp() override {
    make_zoo("zoo-fake", "good_model");
    zoo_ = dir_ / "zoo";
    good_ = read(zoo_ / "good_model.yaml");
    store_ = (dir_ / "xsp.db").string();
  }

  // good_model.yaml's text with each `from` replaced by its `to`, written to zoo/FILE.
  void write_variant(const std::string& file, const std::vector<std::pair<std::string, std::string>>& edits) {
    std::string text = good_;
    for (const auto& [from, to] : edits) {
      const auto pos = text.find(from);
      ASSERT_NE(pos, std::string::npos) << from;
      text.replace(pos, from.size(), to);
    }
    std::ofstream(zoo_ / file) << text;
  }

  // xsp --zoo ZOO --store STORE ARGS...
  int run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--zoo", zoo_.string(), "--store", store_});
    return xsp(args);
  }

  int evaluate(const std::string& model) {
    return run({"evaluate", model, "--framework", "zoo-fake", "--batch-sizes", "1", "--trace-level", "model",
                "--synthetic", "--warmup-min-ms", "100", "--min-duration-ms", "100", "--no-progress"});
  }

  // The bad files of most tests: an unknown step, malformed YAML, a symlink loop.
  void add_bad_files() {
    write_variant("bad_step.yaml", {{"name: good_model", "name: bad_step"},
                                    {"dimensions: [4]\n", "dimensions: [4]\n    steps:\n      - sharpen: {}\n"}});
    std::ofstream(zoo_ / "broken.yaml") << "name: [unclosed\n";
    fs::create_symlink("loop.yaml", zoo_ / "loop.yaml");
  }

  fs::path zoo_;
  std::string store_;
  std::string good_;
};

TEST_F(ZooProblems, ModelsListsTheGoodModelsThenEachBadFile) {
  add_bad_files();
  ASSERT_EQ(run({"models"}), 0) << err_;
  EXPECT_TRUE(has(out_, "good_model")) << out_;
  const auto problems = out_.find("Problems:");
  ASSERT_NE(problems, std::string::npos) << out_;
  EXPECT_LT(out_.find("good_model"), problems) << out_;  // the models first
  const std::string section = out_.substr(problems);
  EXPECT_TRUE(has(section, "3 manifest files of the zoo")) << section;
  EXPECT_TRUE(has(section, (zoo_ / "bad_step.yaml").string())) << section;
  EXPECT_TRUE(has(section, "unknown pre-processing step 'sharpen'")) << section;
  EXPECT_TRUE(has(section, (zoo_ / "broken.yaml").string() + ":")) << section;
  EXPECT_TRUE(has(section, "malformed YAML")) << section;
  EXPECT_TRUE(has(section, (zoo_ / "loop.yaml").string())) << section;
  EXPECT_TRUE(has(section, "symbolic links")) << section;
  EXPECT_EQ(count(out_, "bad_step"), 1u) << "a bad file is a problem, not a row:\n" << out_;
}

TEST_F(ZooProblems, LongVersionIsAProblemNotACrash) {
  // Used to overflow the stack (std::regex) and kill `xsp models` with SIGSEGV.
  write_variant("long.yaml", {{"version: 1.0.0", "version: \"1.0.0-" + std::string(50000, 'a') + "\""}});
  ASSERT_EQ(run({"models"}), 0) << err_;
  EXPECT_TRUE(has(out_, "good_model")) << out_;
  EXPECT_TRUE(has(out_, (zoo_ / "long.yaml").string() + ":2: field 'version': expected at most 256 characters"))
      << out_.substr(0, 2000);
  EXPECT_LT(out_.size(), 5000u) << "the 50,000-character value is shown cut short";
}

TEST_F(ZooProblems, SizeThatUsedToWrapIsAProblemNamingValueAndRange) {
  // 4294967520 = 2^32 + 224: an int cast made it 224 and the model ran as if the manifest were right.
  write_variant("wrap.yaml", {{"dimensions: [4]", "dimensions: [4294967520]"}});
  ASSERT_EQ(run({"models"}), 0) << err_;
  EXPECT_TRUE(has(out_, (zoo_ / "wrap.yaml").string())) << out_;
  EXPECT_TRUE(has(out_, "field 'inputs[0].dimensions[0]'")) << out_;
  EXPECT_TRUE(has(out_, "'4294967520'")) << out_;
  EXPECT_TRUE(has(out_, "from 1 to 2147483648")) << out_;
}

TEST_F(ZooProblems, EvaluateOfAGoodModelWarnsOncePerBadFileAndRuns) {
  add_bad_files();
  ASSERT_EQ(evaluate("good_model"), 0) << err_;
  EXPECT_TRUE(has(out_, "good_model")) << out_;
  for (const char* f : {"bad_step.yaml", "broken.yaml", "loop.yaml"}) {
    SCOPED_TRACE(f);
    EXPECT_EQ(count(err_, (zoo_ / f).string()), 1u) << err_;
  }
  std::istringstream lines(err_);
  std::size_t warnings = 0;
  for (std::string line; std::getline(lines, line);)
    if (has(line, "warning: model zoo: skipped ")) ++warnings;
  EXPECT_EQ(warnings, 3u) << err_;
}

TEST_F(ZooProblems, EvaluateOfTheBadModelFailsNamingItsFile) {
  add_bad_files();
  EXPECT_NE(evaluate("bad_step"), 0);
  EXPECT_TRUE(has(err_, "manifest " + (zoo_ / "bad_step.yaml").string() + " is invalid")) << err_;
  EXPECT_TRUE(has(err_, "unknown pre-processing step 'sharpen'")) << err_;
  // A model that is nowhere: the known ones and the unreadable files.
  EXPECT_NE(evaluate("no_such_model"), 0);
  EXPECT_TRUE(has(err_, "unknown model 'no_such_model'; known models: good_model")) << err_;
  EXPECT_TRUE(has(err_, (zoo_ / "loop.yaml").string())) << err_;
}

}  // namespace
}  // namespace xsp
