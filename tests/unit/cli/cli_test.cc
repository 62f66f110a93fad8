// The library entry point and the CLI over it, in-process, on a fake framework registered for the test and a
// fake clock: the request validates once, before any work, with errors naming the field (library) or the flag
// (CLI); the same request gives the same record through xsp::evaluate() and through `xsp evaluate`; global
// options work before and after the command.
#include "cli.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../eval/fake_model.h"
#include "fake_zoo.h"
#include "xsp/eval/evaluate.h"
#include "xsp/manifest/manifest.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

using testing::FakeClock;
using testing::FakePredictor;

// The clock the registered "fake" framework's predictors run on, and how many models were loaded.
FakeClock* g_clock = nullptr;
int g_created = 0;
int g_loads = 0;

class CountingPredictor final : public Predictor {
 public:
  explicit CountingPredictor(FakeClock& clock) : inner_(clock, model()) { ++g_created; }
  static testing::LatencyModel model() {
    testing::LatencyModel m;
    m.framework_overhead = 0.05;
    m.noise_cv = 0.03;
    m.seed = 11;
    return m;
  }
  std::string framework_name() const override { return "fake"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest& m, const DeviceSpec& d) override {
    ++g_loads;
    inner_.load(m, d);
  }
  Tensor predict(const Tensor& t) override { return inner_.predict(t); }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return inner_.framework_profiler(); }

 private:
  FakePredictor inner_;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    static bool registered = false;
    if (!registered) {
      register_predictor("fake", [] { return std::make_unique<CountingPredictor>(*g_clock); });
      registered = true;
    }
    dir_ = fs::temp_directory_path() / ("xsp-cli-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    testing::write_fake_zoo(dir_ / "zoo", "fake_model", "fake");
    g_created = g_loads = 0;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `xsp ARGS` in-process on `clock`; returns the exit status.
  int xsp(const std::vector<std::string>& args, FakeClock& clock) {
    g_clock = &clock;
    std::vector<const char*> argv{"xsp"};
    for (const auto& a : args) argv.push_back(a.c_str());
    cli::CliEnvironment env;
    env.clock = &clock;
    env.record_machine_state = false;
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const int rc = cli::run_cli(static_cast<int>(argv.size()), argv.data(), env);
    out_ = ::testing::internal::GetCapturedStdout();
    err_ = ::testing::internal::GetCapturedStderr();
    return rc;
  }

  EvaluationRequest request() const {
    EvaluationRequest r;
    r.model = "fake_model";
    r.framework = "fake";
    r.batch_sizes = {1, 2};
    r.trace_level = TraceLevel::kFramework;
    r.leveled = true;
    r.inputs.synthetic = true;
    r.inputs.seed = 5;
    r.measurement.warmup_min_ms = 300;
    r.measurement.min_duration_ms = 600;
    r.measurement.max_duration_ms = 2000;
    return r;
  }
  EvaluationContext context(Store* store, FakeClock& clock) const {
    EvaluationContext c;
    c.zoo = dir_ / "zoo";
    c.default_images_dir = fs::path(XSP_SOURCE_DIR) / "data" / "images";  // as the CLI
    c.store = store;
    c.clock = &clock;
    c.record_machine_state = false;
    return c;
  }

  fs::path dir_;
  std::string out_, err_;
};

// What differs between two processes running the same request: ids, wall-clock times, the system description.
EvaluationRecord comparable(EvaluationRecord r) {
  r.id = 0;
  r.created_at.clear();
  r.uuid.clear();  // random per save
  r.system = nlohmann::json::object();
  for (auto& run : r.runs) {
    run.id = 0;
    run.trace_id.clear();
    run.trace.clock.unix_offset_ns = 0;
  }
  return r;
}

TEST_F(Cli, SameRequestGivesTheSameRecordThroughTheLibraryAndTheCli) {
  FakeClock a, b;
  g_clock = &a;
  auto lib_store = Store::open(dir_ / "lib.db");
  const EvaluationRecord lib = evaluate(request(), context(lib_store.get(), a));
  ASSERT_EQ(xsp({"--zoo",
                 (dir_ / "zoo").string(),
                 "evaluate",
                 "fake_model",
                 "--framework",
                 "fake",
                 "--batch-sizes",
                 "1,2",
                 "--trace-level",
                 "framework",
                 "--leveled",
                 "--synthetic",
                 "--seed",
                 "5",
                 "--warmup-min-ms",
                 "300",
                 "--min-duration-ms",
                 "600",
                 "--max-duration-ms",
                 "2000",
                 "--no-progress",
                 "--store",
                 (dir_ / "cli.db").string()},
                b),
            0)
      << err_;
  EXPECT_NE(out_.find("stored as evaluation 1"), std::string::npos) << out_;
  EXPECT_NE(out_.find("summary.overheads"), std::string::npos) << out_;
  auto cli_store = Store::open(dir_ / "cli.db");
  const auto cli_record = cli_store->load(1);
  ASSERT_TRUE(cli_record);
  EXPECT_EQ(cli_record->settings["request"], lib.settings["request"]);
  EXPECT_EQ(comparable(*cli_record), comparable(lib));
  // And what was stored is what evaluate() returned.
  EXPECT_EQ(comparable(*lib_store->load(lib.id)), comparable(lib));
  // The stored request reproduces the evaluation.
  EXPECT_EQ(evaluation_request_from_json(lib.settings["request"]).model, "fake_model");
  EvaluationRequest again = evaluation_request_from_json(lib.settings["request"]);
  EvaluationRequest expected = request();
  expected.inputs.images_dir = fs::path(XSP_SOURCE_DIR) / "data" / "images";  // filled in by validate()
  EXPECT_EQ(again, expected);
}

TEST_F(Cli, ABadRequestFailsBeforeAnyWorkNamingTheFieldOrFlag) {
  FakeClock clock;
  g_clock = &clock;
  auto store = Store::open(dir_ / "x.db");
  struct Case {
    std::function<void(EvaluationRequest&)> change;
    std::string field, flag_args, flag;
  };
  const std::vector<Case> cases = {
      {[](auto& r) {
         r.batch_sizes = {1, 0};
       },
       "batch_sizes", "--batch-sizes 1,0", "--batch-sizes"},
      {[](auto& r) { r.model = "nope"; }, "model", "", "MODEL"},
      {[](auto& r) { r.trace_level = TraceLevel::kKernel; }, "trace_level", "--trace-level kernel", "--trace-level"},
      {[](auto& r) { r.measurement.min_batches = 0; }, "measurement.min_batches", "--min-batches 0", "--min-batches"},
      {[](auto& r) { r.measurement.rule.tolerance = 2; }, "measurement.stability_tolerance", "--stability-tolerance 2",
       "--stability-tolerance"},
      {[](auto& r) { r.device = "tpu"; }, "device", "--device tpu", "--device"},
      {[](auto& r) { r.framework = "onnxruntime-gpu"; }, "framework", "--framework onnxruntime-gpu", "--framework"},
      {[](auto& r) { r.cuda_graphs = true; }, "cuda_graphs", "--cuda-graphs", "--cuda-graphs"},  // on the CPU
      {[](auto& r) {
         r.cuda_graphs = true;
         r.device = "cuda";
       },
       "cuda_graphs", "--cuda-graphs --device cuda", "--cuda-graphs"},  // a framework that cannot capture
      {[](auto& r) {
         r.cuda_graphs = true;
         r.device = "cuda";
         r.scenario = ScenarioRequest{};
         r.scenario->scenario = "single-stream";
         r.measurement.warmup_min_batches = 0;
       },
       "measurement.warmup_min_batches", "--cuda-graphs --device cuda --scenario single-stream --warmup 0",
       "--warmup"},  // the capture would be measured
  };
  for (const auto& c : cases) {
    EvaluationRequest r = request();
    c.change(r);
    try {
      evaluate(r, context(store.get(), clock));
      ADD_FAILURE() << c.field << ": no error";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.field(), c.field) << e.what();
    }
    EXPECT_EQ(g_loads, 0) << c.field << ": the model was loaded before the request was checked";
    if (c.flag_args.empty()) continue;
    std::vector<std::string> args{
        "--zoo", (dir_ / "zoo").string(), "--store", (dir_ / "x.db").string(), "evaluate", "fake_model", "--synthetic"};
    std::istringstream extra(c.flag_args);
    for (std::string w; extra >> w;) args.push_back(w);
    EXPECT_EQ(xsp(args, clock), 2) << c.flag;
    EXPECT_NE(err_.find(c.flag), std::string::npos) << err_;
    EXPECT_EQ(g_loads, 0) << c.flag << ": " << out_ << err_;
  }
  EXPECT_TRUE(store->list().empty());
}

// A framework this build lacks for a known reason (aotinductor without LibTorch >= 2.6) says why, not just which
// frameworks there are.
TEST_F(Cli, AFrameworkNotInThisBuildSaysWhy) {
  FakeClock clock;
  testing::write_fake_zoo(dir_ / "zoo2", "unbuilt_model", "x-unbuilt");
  register_unavailable_predictor("x-unbuilt", "it needs the X runtime");
  EXPECT_EQ(unavailable_predictor_reason("x-unbuilt"), "it needs the X runtime");
  EXPECT_EQ(unavailable_predictor_reason("fake"), "");  // built: no reason
  EXPECT_EQ(xsp({"--zoo", (dir_ / "zoo2").string(), "--store", (dir_ / "u.db").string(), "evaluate", "unbuilt_model",
                 "--synthetic", "--no-progress"},
                clock),
            2);
  EXPECT_NE(err_.find("--framework"), std::string::npos) << err_;
  EXPECT_NE(err_.find("got 'x-unbuilt', which is not in this build: it needs the X runtime"), std::string::npos)
      << err_;
  try {
    create_predictor("x-unbuilt");
    ADD_FAILURE() << "created";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "framework 'x-unbuilt' is not in this build: it needs the X runtime");
  }
  EXPECT_EQ(g_loads, 0);
}

TEST_F(Cli, GlobalOptionsBeforeOrAfterTheCommand) {
  FakeClock clock;
  const std::string db = (dir_ / "g.db").string();
  ASSERT_EQ(xsp({"evaluate", "fake_model", "--zoo", (dir_ / "zoo").string(), "--store", db, "--synthetic",
                 "--warmup-min-ms", "100", "--min-duration-ms", "100", "--no-progress"},
                clock),
            0)
      << err_;
  ASSERT_EQ(xsp({"list", "--store", db}, clock), 0) << err_;
  EXPECT_NE(out_.find("fake_model"), std::string::npos) << out_;
  ASSERT_EQ(xsp({"--store", db, "show", "1"}, clock), 0) << err_;
  EXPECT_NE(out_.find("window medians"), std::string::npos) << out_;
  ASSERT_EQ(xsp({"show", "1", "--store", db, "--format", "json"}, clock), 0) << err_;
  const auto tables = nlohmann::json::parse(out_);
  EXPECT_EQ(tables[0]["id"], "summary.runs");
  ASSERT_EQ(xsp({"analyze", "1", "--analysis", "A1", "--store", db, "--format", "csv"}, clock), 0) << err_;
  EXPECT_EQ(out_.rfind("batch_size,median_ms,ci95_low_ms,ci95_high_ms,stability,", 0), 0u) << out_;
  // An empty store path would make SQLite open a temporary database and lose the result: refused.
  EXPECT_EQ(xsp({"list", "--store", ""}, clock), 2);
  EXPECT_NE(err_.find("--store"), std::string::npos) << err_;
}

TEST_F(Cli, VerboseLogsTheMeasurementsDecisions) {
  FakeClock clock;
  ASSERT_EQ(xsp({"-v", "--zoo", (dir_ / "zoo").string(), "--store", (dir_ / "v.db").string(), "evaluate", "fake_model",
                 "--synthetic", "--warmup-min-ms", "100", "--min-duration-ms", "100", "--no-progress"},
                clock),
            0);
  EXPECT_NE(err_.find("batches per block"), std::string::npos) << err_;
  ASSERT_EQ(xsp({"--zoo", (dir_ / "zoo").string(), "--store", (dir_ / "v.db").string(), "evaluate", "fake_model",
                 "--synthetic", "--warmup-min-ms", "100", "--min-duration-ms", "100", "--no-progress"},
                clock),
            0);
  EXPECT_EQ(err_.find("batches per block"), std::string::npos) << err_;
}

TEST_F(Cli, ProfilerFlagsOverrideTheEnvironmentAndLandInTheRequest) {
  FakeClock clock;
  ::setenv("XSP_COUNTER_REPLAY", "kernel", 1);
  ::setenv("XSP_CUPTI_CLOCK", "offset", 1);
  const std::string db = (dir_ / "p.db").string();
  const int rc = xsp(
      {"--zoo", (dir_ / "zoo").string(), "--store", db, "evaluate", "fake_model", "--synthetic", "--warmup-min-ms",
       "100", "--min-duration-ms", "100", "--no-progress", "--cupti-clock", "callback", "--counter-max-ranges", "64"},
      clock);
  ::unsetenv("XSP_COUNTER_REPLAY");
  ::unsetenv("XSP_CUPTI_CLOCK");
  ASSERT_EQ(rc, 0) << err_;
  auto store = Store::open(db);
  const auto r = evaluation_request_from_json(store->load(1)->settings["request"]);
  EXPECT_EQ(r.counters.replay, CounterOptions::Replay::kKernel);  // from the environment
  EXPECT_EQ(r.cupti.clock, CuptiOptions::Clock::kCallback);       // the flag wins
  EXPECT_EQ(r.counters.max_ranges, 64u);
  EXPECT_EQ(xsp({"--store", db, "--zoo", (dir_ / "zoo").string(), "evaluate", "fake_model", "--synthetic",
                 "--counter-replay", "sometimes"},
                clock),
            2);
  EXPECT_NE(err_.find("--counter-replay"), std::string::npos) << err_;
}

// Issue 11: the roofline chart of the recorded H200 run says how many kernels it left out and why; an evaluation
// with nothing to draw fails naming the evaluation and the reason, and writes no file.
TEST_F(Cli, RooflineChartSaysWhatItLeftOutAndFailsWithoutPoints) {
  FakeClock clock;
  const fs::path h = dir_ / "H.db";  // a copy: opening a store migrates it
  fs::copy_file(fs::path(XSP_SOURCE_DIR) / "tests" / "fixtures" / "counters" / "resnet18_bs1_hardware_h200.db", h);
  ASSERT_EQ(xsp({"--store", h.string(), "analyze", "1", "--analysis", "A9", "--format", "csv", "--chart",
                 (dir_ / "r.vl.json").string()},
                clock),
            0)
      << err_;
  EXPECT_NE(err_.find("84 of 102 kernels drawn"), std::string::npos) << err_;
  EXPECT_NE(err_.find("18 of 102 kernels left out (log axes have no place for them): 18 with no FLOPs (AI 0, 0 "
                      "FLOP/s)"),
            std::string::npos)
      << err_;
  EXPECT_NE(out_.find("binding_level"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "r.vl.json"));

  // An evaluation of the fake framework has no KERNEL-level run: nothing to draw.
  ASSERT_EQ(xsp({"--zoo", (dir_ / "zoo").string(), "--store", (dir_ / "f.db").string(), "evaluate", "fake_model",
                 "--synthetic", "--warmup-min-ms", "100", "--min-duration-ms", "100", "--no-progress"},
                clock),
            0)
      << err_;
  EXPECT_EQ(xsp({"--store", (dir_ / "f.db").string(), "analyze", "1", "--analysis", "A9", "--chart",
                 (dir_ / "empty.vl.json").string()},
                clock),
            1);
  EXPECT_NE(err_.find("evaluation 1 (fake_model): no kernel to draw on the A9 roofline: Kernel roofline (batch size "
                      "1) has no rows (no KERNEL-level run in this evaluation"),
            std::string::npos)
      << err_;
  EXPECT_NE(err_.find("empty.vl.json not written"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "empty.vl.json"));
}

}  // namespace
}  // namespace xsp
