// The service both front ends call (xsp/service/service.h), on a store made through the library: evaluate() on a
// fake framework ("service-fake") and a fake clock, as tests/unit/server/server_fixture.h makes one. Each result is
// checked against what the library gives directly, and each failure for its typed exception and field.
#include "xsp/service/service.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../cli/fake_zoo.h"
#include "../eval/fake_model.h"
#include "xsp/analysis/compare.h"
#include "xsp/analysis/roofline.h"
#include "xsp/eval/evaluate.h"
#include "xsp/report/report.h"

namespace xsp {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class ServiceFakePredictor final : public Predictor {
 public:
  explicit ServiceFakePredictor(testing::FakeClock& clock) : inner_(clock, testing::LatencyModel{}) {}
  std::string framework_name() const override { return "service-fake"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest& m, const DeviceSpec& d) override { inner_.load(m, d); }
  Tensor predict(const Tensor& t) override { return inner_.predict(t); }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return inner_.framework_profiler(); }

 private:
  testing::FakePredictor inner_;
};

// Two evaluations of the fake model (batch sizes 1 and 2, runs M and M/F each) in a fresh store.
class Service : public ::testing::Test {
 protected:
  static testing::FakeClock& clock() {
    static testing::FakeClock c;
    return c;
  }

  void SetUp() override {
    static const bool registered = [] {
      register_predictor("service-fake", [] { return std::make_unique<ServiceFakePredictor>(clock()); });
      return true;
    }();
    (void)registered;
    dir_ = fs::temp_directory_path() / ("xsp-service-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    testing::write_fake_zoo(dir_ / "zoo", "service_model", "service-fake");
    store_ = Store::open(dir_ / "s.db");
    first_ = seed();
    second_ = seed();
  }

  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  std::int64_t seed() {
    EvaluationContext c;
    c.zoo = dir_ / "zoo";
    c.store = store_.get();
    c.clock = &clock();
    c.record_machine_state = false;
    const json request = {{"model", "service_model"},
                          {"framework", "service-fake"},
                          {"batch_sizes", {1, 2}},
                          {"trace_level", "framework"},
                          {"leveled", true},
                          {"inputs", {{"synthetic", true}}},
                          {"measurement", {{"warmup_min_ms", 100}, {"min_duration_ms", 100}}}};
    return evaluate(evaluation_request_from_json(request), c).id;
  }

  static nlohmann::ordered_json tables(const std::vector<Table>& t) {
    auto out = nlohmann::ordered_json::array();
    for (const Table& table : t) out.push_back(to_json(table));
    return out;
  }

  fs::path dir_;
  std::unique_ptr<Store> store_;
  std::int64_t first_ = 0, second_ = 0;
};

// The exception `call` throws, checked for its type; a test failure when it throws nothing.
template <typename E, typename F>
E thrown(F&& call) {
  try {
    call();
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another exception: " << e.what();
    throw;
  }
  ADD_FAILURE() << "threw nothing";
  throw std::logic_error("threw nothing");
}

TEST_F(Service, LoadsAnEvaluationOrSaysWhichIsMissingInWhichStore) {
  const EvaluationRecord r = service::load_evaluation(*store_, first_);
  EXPECT_EQ(r.id, first_);
  EXPECT_EQ(r.runs.size(), 4u);
  const auto e = thrown<service::EvaluationNotFound>([&] { service::load_evaluation(*store_, 999); });
  EXPECT_EQ(e.id(), 999);
  EXPECT_EQ(e.field(), "id");
  EXPECT_EQ(std::string(e.what()), "no evaluation 999 in store " + (dir_ / "s.db").string());
}

TEST_F(Service, ListsEvaluationsNewestFirstWithTheTotalOfTheFilter) {
  service::EvaluationPage all = service::list_evaluations(*store_);
  EXPECT_EQ(all.total, 2u);
  ASSERT_EQ(all.evaluations.size(), 2u);
  EXPECT_EQ(all.evaluations[0].id, second_);
  EXPECT_EQ(all.evaluations[1].id, first_);

  EvaluationFilter page;
  page.limit = 1;
  page.offset = 1;
  const service::EvaluationPage one = service::list_evaluations(*store_, page);
  EXPECT_EQ(one.total, 2u);
  ASSERT_EQ(one.evaluations.size(), 1u);
  EXPECT_EQ(one.evaluations[0].id, first_);

  EvaluationFilter other;
  other.model = "another_model";
  EXPECT_EQ(service::list_evaluations(*store_, other).total, 0u);
  EXPECT_TRUE(service::list_evaluations(*store_, other).evaluations.empty());
}

TEST_F(Service, FindsAListingAndDeletesAnEvaluation) {
  const EvaluationListing e = service::find_evaluation(*store_, first_);
  EXPECT_EQ(e.batch_sizes, (std::vector<int>{1, 2}));
  EXPECT_EQ(e.run_count, 4u);
  EXPECT_EQ(thrown<service::EvaluationNotFound>([&] { service::find_evaluation(*store_, 999); }).id(), 999);

  service::delete_evaluation(*store_, first_);
  EXPECT_THROW(service::load_evaluation(*store_, first_), service::EvaluationNotFound);
  EXPECT_EQ(thrown<service::EvaluationNotFound>([&] { service::delete_evaluation(*store_, first_); }).id(), first_);
  EXPECT_EQ(service::list_evaluations(*store_).total, 1u);
}

TEST_F(Service, AnalysisOptionsCarryTheCeilingsOfTheEvaluationsMachine) {
  const EvaluationRecord r = service::load_evaluation(*store_, first_);
  const MachineIdentity machine = evaluation_machine(r);
  AnalysisOptions none = service::analysis_options(*store_, r);
  EXPECT_FALSE(none.ceilings);
  EXPECT_FALSE(none.batch_size);

  MachineCeilings elsewhere;
  elsewhere.hostname = "another-host";
  elsewhere.gpu_name = "NVIDIA H200";
  elsewhere.ceilings = {{"fp32", 5e13, "flop/s", "test"}, {"dram", 4e12, "bytes/s", "test"}};
  store_->save_ceilings(elsewhere);
  EXPECT_FALSE(service::analysis_options(*store_, r).ceilings);

  MachineCeilings here = elsewhere;
  here.hostname = machine.hostname.empty() ? "unknown" : machine.hostname;
  here.gpu_name = machine.gpu_name.empty() ? "NVIDIA H100 80GB HBM3" : machine.gpu_name;
  here.gpu_uuid = machine.gpu_uuid;
  store_->save_ceilings(here);
  const AnalysisOptions found = service::analysis_options(*store_, r);
  if (machine.hostname.empty()) GTEST_SKIP() << "the evaluation recorded no host name to match ceilings on";
  ASSERT_TRUE(found.ceilings);
  EXPECT_EQ(found.ceilings->hostname, here.hostname);
  EXPECT_EQ(found.ceilings->gpu_name, here.gpu_name);
  EXPECT_FALSE(found.ceilings_note.empty());
  // Exactly what select_ceilings() picks over the stored ones, as the analyses were given them before the service.
  std::string note;
  const auto stored = store_->list_ceilings();
  const MachineCeilings* direct = select_ceilings(stored, machine, &note);
  ASSERT_NE(direct, nullptr);
  EXPECT_EQ(*found.ceilings, *direct);
  EXPECT_EQ(found.ceilings_note, note);
}

TEST_F(Service, AnalysisIdsAreCaseInsensitiveAndUnknownOnesNamed) {
  EXPECT_EQ(service::analysis_id("a2"), "A2");
  EXPECT_EQ(service::analysis_id("LAUNCH-STATS"), "launch-stats");
  const auto e = thrown<service::AnalysisNotFound>([] { service::analysis_id("Z9"); });
  EXPECT_EQ(e.field(), "analysis");
  EXPECT_NE(std::string(e.what()).find("no analysis 'Z9'; expected one of A1, A2"), std::string::npos) << e.what();
}

TEST_F(Service, AnalyzeRunsTheAnalysesWithTheEvaluationsOptions) {
  const service::AnalysisResult defaults = service::analyze(*store_, {first_, {}, std::nullopt, std::nullopt});
  EXPECT_EQ(defaults.record.id, first_);
  EXPECT_EQ(defaults.analyses, default_analysis_ids(defaults.record));
  EXPECT_EQ(tables(defaults.tables), tables(run_analyses(defaults.record, default_analysis_ids(defaults.record),
                                                         service::analysis_options(*store_, defaults.record))));

  const service::AnalysisResult a2 = service::analyze(*store_, {first_, {"a1", "a2"}, 2, 5.0});
  EXPECT_EQ(a2.analyses, (std::vector<std::string>{"A1", "A2"}));
  EXPECT_EQ(a2.options.batch_size, 2);
  EXPECT_EQ(a2.options.latency_bound_ms, 5.0);
  ASSERT_EQ(a2.tables.size(), 2u);  // A1 over all batch sizes, A2 for batch size 2 only
  EXPECT_EQ(a2.tables[0].id, "A1");
  EXPECT_EQ(a2.tables[1].id, "A2");
  EXPECT_EQ(a2.tables[1].batch_size, 2);
}

TEST_F(Service, AnalyzeRefusesUnknownIdsBeforeReadingAndUnmeasuredBatchSizes) {
  // The id is checked first: the evaluation does not exist either.
  EXPECT_THROW(service::analyze(*store_, {999, {"A1", "Z9"}, std::nullopt, std::nullopt}), service::AnalysisNotFound);
  EXPECT_THROW(service::analyze(*store_, {999, {"A1"}, std::nullopt, std::nullopt}), service::EvaluationNotFound);
  const auto e = thrown<service::InvalidArgument>([&] {
    service::analyze(*store_, {first_, {"A2"}, 7, std::nullopt});
  });
  EXPECT_EQ(e.field(), "batch_size");
  EXPECT_NE(std::string(e.what()).find("7"), std::string::npos) << e.what();
}

TEST_F(Service, ComparesStoredEvaluationsAsCompareEvaluationsDoes) {
  const std::vector<Table> t = service::compare(*store_, {{first_, second_}, std::nullopt});
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t[0].id, "compare.evaluations");
  EXPECT_EQ(t[0].rows.size(), 2u);
  EXPECT_EQ(tables(t), tables(compare_evaluations(
                           {service::load_evaluation(*store_, first_), service::load_evaluation(*store_, second_)})));

  EXPECT_EQ(thrown<service::InvalidArgument>([&] {
              service::compare(*store_, {{first_}, std::nullopt});
            }).field(),
            "ids");
  EXPECT_EQ(thrown<service::InvalidArgument>([&] {
              service::compare(*store_, {{first_, second_}, 8});
            }).field(),
            "batch_size");
  EXPECT_EQ(thrown<service::EvaluationNotFound>([&] {
              service::compare(*store_, {{first_, 999}, std::nullopt});
            }).id(),
            999);
}

TEST_F(Service, ReportsOneOrSeveralEvaluations) {
  if (!report_assets_available()) {
    const auto e = thrown<service::Unavailable>([&] { service::report(*store_, {{first_}, std::nullopt, ""}); });
    EXPECT_EQ(e.field(), "report assets");
    GTEST_SKIP() << "built without tools/vega/node_modules";
  }
  const service::ReportResult one = service::report(*store_, {{first_}, std::nullopt, "My title"});
  EXPECT_EQ(one.evaluations, 1u);
  EXPECT_GT(one.charts, 0u);
  EXPECT_NE(one.html.find("<title>My title</title>"), std::string::npos);
  const service::ReportResult both = service::report(*store_, {{first_, second_}, 1, ""});
  EXPECT_EQ(both.evaluations, 2u);
  EXPECT_NE(both.html.find("id=\"comparison\""), std::string::npos);
  EXPECT_THROW(service::report(*store_, {{first_, 999}, std::nullopt, ""}), service::EvaluationNotFound);
  EXPECT_EQ(thrown<service::InvalidArgument>([&] { service::report(*store_, {{}, std::nullopt, ""}); }).field(), "ids");
}

TEST_F(Service, ExportsTheChosenRunsTraceToABuffer) {
  // Default: the first batch size's deepest run (M/F of batch size 1, the second run).
  service::RunTrace chrome = service::export_trace(*store_, {first_, TraceFormat::kChrome, {}});
  EXPECT_EQ(chrome.run_number, 2u);
  EXPECT_EQ(chrome.file_name, "xsp-evaluation-" + std::to_string(first_) + "-run-2.json");
  const EvaluationRecord r = service::load_evaluation(*store_, first_);
  EXPECT_EQ(chrome.run_id, r.runs[1].id);
  EXPECT_EQ(chrome.span_count, r.runs[1].trace.spans.size());
  EXPECT_EQ(chrome.content, export_run_trace_to_string(r, r.runs[1], TraceFormat::kChrome));
  EXPECT_FALSE(json::parse(chrome.content)["traceEvents"].empty());

  service::TraceRequest otlp{first_, TraceFormat::kOtlp, {}};
  otlp.run.run = 1;
  const service::RunTrace first_run = service::export_trace(*store_, otlp);
  EXPECT_EQ(first_run.run_number, 1u);
  EXPECT_EQ(first_run.file_name, "xsp-evaluation-" + std::to_string(first_) + "-run-1.otlp.json");
  EXPECT_TRUE(json::parse(first_run.content).contains("resourceSpans"));

  service::TraceRequest sqlite{first_, TraceFormat::kSqlite, {}};
  sqlite.run.batch_size = 2;
  sqlite.run.trace_level = TraceLevel::kModel;
  const service::RunTrace db = service::export_trace(*store_, sqlite);
  EXPECT_EQ(db.run_number, 3u);
  EXPECT_EQ(db.content.substr(0, 15), "SQLite format 3");
  EXPECT_NE(db.file_name.find("-run-3.sqlite"), std::string::npos);
}

TEST_F(Service, ExportToAFileWritesWhatTheBufferHolds) {
  const fs::path file = dir_ / "t.json";
  const service::RunTrace written = service::export_trace_to_file(*store_, {first_, TraceFormat::kChrome, {}}, file);
  EXPECT_TRUE(written.content.empty());
  EXPECT_EQ(written.run_number, 2u);
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), service::export_trace(*store_, {first_, TraceFormat::kChrome, {}}).content);
}

TEST_F(Service, ARunThatIsNotThereIsRunNotFoundNamingTheChoice) {
  service::TraceRequest t{first_, TraceFormat::kChrome, {}};
  t.run.run = 99;
  auto e = thrown<service::RunNotFound>([&] { service::export_trace(*store_, t); });
  EXPECT_EQ(e.field(), "run");
  t.run = {};
  t.run.batch_size = 64;
  e = thrown<service::RunNotFound>([&] { service::export_trace_to_file(*store_, t, dir_ / "never.json"); });
  EXPECT_EQ(e.field(), "batch_size");
  EXPECT_FALSE(fs::exists(dir_ / "never.json"));
  t.run = {};
  t.run.trace_level = TraceLevel::kKernel;
  EXPECT_EQ(thrown<service::RunNotFound>([&] { service::export_trace(*store_, t); }).field(), "trace_level");
  EXPECT_THROW(service::export_trace(*store_, {999, TraceFormat::kChrome, {}}), service::EvaluationNotFound);
}

TEST_F(Service, ListsTheZooWithItsFrameworksAndProblems) {
  { std::ofstream(dir_ / "zoo" / "broken.yaml") << "name: broken\nversion: [\n"; }
  const service::ModelListing listing = service::list_models(dir_ / "zoo");
  ASSERT_EQ(listing.models.size(), 1u);
  const service::ModelEntry& m = listing.models[0];
  EXPECT_EQ(m.name, "service_model");
  EXPECT_EQ(m.version, "1.0.0");
  EXPECT_EQ(m.manifest, dir_ / "zoo" / "service_model.yaml");
  EXPECT_EQ(m.input_dimensions, (std::vector<std::vector<long>>{{4}}));
  ASSERT_EQ(m.frameworks.size(), 1u);
  EXPECT_EQ(m.frameworks[0].name, "service-fake");
  EXPECT_EQ(m.frameworks[0].constraint, ">=1.0");
  EXPECT_EQ(m.frameworks[0].graph, "fake.bin");
  EXPECT_TRUE(m.frameworks[0].exported);
  EXPECT_TRUE(m.frameworks[0].in_this_build);
  ASSERT_EQ(listing.problems.size(), 1u);
  EXPECT_EQ(listing.problems[0].file, dir_ / "zoo" / "broken.yaml");
  EXPECT_NE(listing.problems[0].message.find("broken.yaml"), std::string::npos);
  EXPECT_NE(std::find(listing.predictors_in_this_build.begin(), listing.predictors_in_this_build.end(), "service-fake"),
            listing.predictors_in_this_build.end());

  fs::remove(dir_ / "zoo" / "fake.bin");
  EXPECT_FALSE(service::list_models(dir_ / "zoo").models[0].frameworks[0].exported);
}

TEST_F(Service, AZooThatIsNotAFolderIsUnavailable) {
  const auto e = thrown<service::Unavailable>([&] { service::list_models(dir_ / "no-such-zoo"); });
  EXPECT_EQ(e.field(), "zoo");
  EXPECT_NE(std::string(e.what()).find("no-such-zoo"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace xsp
