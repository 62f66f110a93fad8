// The CLI in-process for the tests of this folder: a fake framework of the test's own name (so that test files do not
// meet in the predictor registry), a one-model zoo in a fresh folder, a fake clock, stdout and stderr captured.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "../eval/fake_model.h"
#include "cli.h"
#include "fake_zoo.h"

namespace xsp::testing {

/// Runs `xsp ARGS...` in-process with `env`; returns its exit code and leaves what it printed in `out` and `err`.
inline int run_xsp_captured(const std::vector<std::string>& args, const cli::CliEnvironment& env, std::string& out,
                            std::string& err) {
  std::vector<const char*> argv{"xsp"};
  for (const auto& a : args) argv.push_back(a.c_str());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = cli::run_cli(static_cast<int>(argv.size()), argv.data(), env);
  out = ::testing::internal::GetCapturedStdout();
  err = ::testing::internal::GetCapturedStderr();
  return rc;
}

/// A predictor of framework `name` 1.0.0 on a fake clock (FakePredictor's latency model, its framework profiler);
/// `before_predict`, when set, runs before every batch with the batch's input (e.g. to raise a signal).
class NamedFakePredictor final : public Predictor {
 public:
  NamedFakePredictor(std::string name, FakeClock& clock, std::function<void(const Tensor&)> before_predict)
      : name_(std::move(name)), before_(std::move(before_predict)), inner_(clock, LatencyModel{}) {}
  std::string framework_name() const override { return name_; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest& m, const DeviceSpec& d) override { inner_.load(m, d); }
  Tensor predict(const Tensor& t) override {
    if (before_) before_(t);
    return inner_.predict(t);
  }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return inner_.framework_profiler(); }

 private:
  std::string name_;
  std::function<void(const Tensor&)> before_;
  FakePredictor inner_;
};

/// Base fixture: make_zoo() in SetUp, then xsp({...}) runs the CLI; dir_ is removed after the test.
class CliHarness : public ::testing::Test {
 protected:
  /// Creates dir_ (fresh, named after the test) with the zoo dir_/zoo holding model `model` of framework
  /// `framework`, registering the framework on first use. `before_predict`: see NamedFakePredictor.
  void make_zoo(const std::string& framework, const std::string& model,
                std::function<void(const Tensor&)> before_predict = {}) {
    static std::set<std::string> registered;
    if (registered.insert(framework).second) {
      register_predictor(framework, [framework] {
        return std::make_unique<NamedFakePredictor>(framework, current()->clock_, current()->before_predict_);
      });
    }
    before_predict_ = std::move(before_predict);
    dir_ = std::filesystem::temp_directory_path() / ("xsp-" + framework + "-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    write_fake_zoo(dir_ / "zoo", model, framework);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// Runs `xsp ARGS...` in-process; returns its exit code, leaves its output in out_ and err_.
  int xsp(const std::vector<std::string>& args) {
    current() = this;
    cli::CliEnvironment env;
    env.clock = &clock_;
    env.record_machine_state = false;
    return run_xsp_captured(args, env, out_, err_);
  }

  /// The last command's stderr is exactly one line "xsp: error: ..." holding `expected`.
  void expect_one_line_error(const std::string& expected) const {
    EXPECT_EQ(err_.rfind("xsp: error: ", 0), 0u) << err_;
    EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;
    EXPECT_NE(err_.find(expected), std::string::npos) << "expected '" << expected << "' in: " << err_;
  }

  FakeClock clock_;
  std::filesystem::path dir_;
  std::string out_, err_;

 private:
  static CliHarness*& current() {
    static CliHarness* harness = nullptr;
    return harness;
  }
  std::function<void(const Tensor&)> before_predict_;
};

}  // namespace xsp::testing
