// Names, tags and notes on evaluations through the service (service::label_evaluation, validate_label_change) and
// PATCH /api/v1/evaluations/{id}; the listing's key metrics, loose model filter and tag filter; the report's way back
// to the list; the Vega assets the list's chart loads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "server_fixture.h"
#include "xsp/report/report.h"
#include "xsp/service/service.h"

namespace xsp {
namespace {

using json = nlohmann::json;
using testing::ServerFixture;

// The field an InvalidArgument names, "" when the call succeeded.
std::string refused_field(const service::LabelChange& change) {
  try {
    service::validate_label_change(change);
  } catch (const service::InvalidArgument& e) {
    return e.field();
  }
  return "";
}

TEST(LabelValidation, EachFieldIsCheckedAndNamed) {
  service::LabelChange ok;
  ok.name = std::string(120, 'n');
  ok.tags = std::vector<std::string>{"baseline", "fp16", "torch:2.1", "a/b+c=d@e_f.g-h"};
  ok.note = "line one\nline two\twith a tab";
  EXPECT_EQ(refused_field(ok), "");
  EXPECT_EQ(refused_field({}), "labels");  // nothing to change

  auto with_name = [](std::string n) {
    service::LabelChange c;
    c.name = std::move(n);
    return c;
  };
  EXPECT_EQ(refused_field(with_name(std::string(121, 'n'))), "name");
  EXPECT_EQ(refused_field(with_name("two\nlines")), "name");
  EXPECT_EQ(refused_field(with_name("bad \xff utf-8")), "name");
  EXPECT_EQ(refused_field(with_name("\xc0\xaf")), "name");  // an overlong '/'
  EXPECT_EQ(refused_field(with_name(std::string(60, 'a') + "ü")), "");
  // 120 characters of two bytes each are 120 characters, not 240.
  std::string umlauts;
  for (int i = 0; i < 120; ++i) umlauts += "ü";
  EXPECT_EQ(refused_field(with_name(umlauts)), "");

  for (const std::string& bad : std::vector<std::string>{"", "with space", std::string(41, 't'), "semi;colon", "ü"}) {
    service::LabelChange c;
    c.add_tags = {bad};
    EXPECT_EQ(refused_field(c), "tags") << "'" << bad << "'";
  }
  service::LabelChange long_note;
  long_note.note = std::string(4001, 'x');
  EXPECT_EQ(refused_field(long_note), "note");
  long_note.note = "bell \a";
  EXPECT_EQ(refused_field(long_note), "note");
  try {
    service::validate_label_change(with_name(std::string(200, 'n')));
  } catch (const service::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("name: at most 120 characters, got 200"), std::string::npos) << e.what();
  }
}

TEST(ListingMetrics, ShallowestRunPerBatchSizeSmallestForLatencyLargestForThroughput) {
  EvaluationListing e;
  auto run = [](int batch, TraceLevel level, double p50_ns, double throughput, const char* stability) {
    RunFigures f;
    f.batch_size = batch;
    f.trace_level = level;
    f.predict_p50_ns = p50_ns;
    f.throughput_samples_per_s = throughput;
    f.stability = stability;
    return f;
  };
  // Leveled: M and M/F at batch sizes 8 and 1 (out of order); the M/F runs carry tracing overhead and are skipped.
  e.runs = {run(8, TraceLevel::kFramework, 9e6, 800, "unstable"), run(8, TraceLevel::kModel, 7e6, 1100, "stable"),
            run(1, TraceLevel::kFramework, 3e6, 300, "stable"), run(1, TraceLevel::kModel, 2e6, 500, "stable")};
  service::ListingMetrics m = service::listing_metrics(e);
  ASSERT_TRUE(m.p50_batch_size.has_value());
  EXPECT_EQ(*m.p50_batch_size, 1);
  EXPECT_DOUBLE_EQ(m.p50_ns, 2e6);
  ASSERT_TRUE(m.throughput_batch_size.has_value());
  EXPECT_EQ(*m.throughput_batch_size, 8);
  EXPECT_DOUBLE_EQ(m.throughput_samples_per_s, 1100);
  EXPECT_EQ(m.stability, "stable");
  e.runs[1].stability = "unstable";
  EXPECT_EQ(service::listing_metrics(e).stability, "unstable");
  e.runs[1].stability = "not_assessed";
  EXPECT_EQ(service::listing_metrics(e).stability, "not_assessed");
  // No p50 at batch size 1: the next batch size that has one.
  e.runs[3].predict_p50_ns = std::nan("");
  m = service::listing_metrics(e);
  EXPECT_EQ(*m.p50_batch_size, 8);
  EXPECT_DOUBLE_EQ(m.p50_ns, 7e6);
  EXPECT_EQ(service::listing_metrics(EvaluationListing{}).stability, "");
  EXPECT_FALSE(service::listing_metrics(EvaluationListing{}).p50_batch_size.has_value());
}

class Labels : public ServerFixture {
 protected:
  json patch(std::int64_t id, const std::string& body, int expected_status, const httplib::Headers& headers = {}) {
    auto r = client().Patch("/api/v1/evaluations/" + std::to_string(id), headers, body, "application/json");
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, expected_status) << r->body;
    return json::parse(r->body);
  }
  std::vector<std::int64_t> listed(const std::string& query) {
    const json j = body(client().Get("/api/v1/evaluations" + query));
    std::vector<std::int64_t> ids;
    for (const auto& e : j["evaluations"]) ids.push_back(e["id"]);
    EXPECT_EQ(j["total"].get<std::size_t>(), ids.size()) << query;
    return ids;
  }
  // An evaluation saved straight into the store under another display name (as the zoo's ResNet-18).
  std::int64_t save_named(const std::string& model) {
    auto store = Store::open(dir_ / "s.db");
    EvaluationRecord r;
    r.model_name = model;
    r.model_version = "1";
    r.framework_name = "libtorch";
    r.framework_version = "2";
    r.batch_sizes = {1};
    return store->save(r);
  }
};

TEST_F(Labels, ServiceMergesTagsAndKeepsWhatTheChangeDoesNotSet) {
  const std::int64_t id = seed_evaluation();
  auto store = Store::open(dir_ / "s.db");
  service::LabelChange c;
  c.name = "  before the driver update  ";
  c.add_tags = {"h200", "baseline", "h200"};
  EvaluationLabels l = service::label_evaluation(*store, id, c);
  EXPECT_EQ(l, (EvaluationLabels{"before the driver update", {"baseline", "h200"}, ""}));
  service::LabelChange more;
  more.add_tags = {"fp16"};
  more.remove_tags = {"baseline", "never-there"};
  more.note = "clocks locked at 1980 MHz";
  l = service::label_evaluation(*store, id, more);
  EXPECT_EQ(l, (EvaluationLabels{"before the driver update", {"fp16", "h200"}, "clocks locked at 1980 MHz"}));
  EXPECT_EQ(service::load_evaluation(*store, id).labels, l);
  EXPECT_THROW(service::label_evaluation(*store, id + 50, more), service::EvaluationNotFound);
  service::LabelChange many;
  for (int i = 0; i < 31; ++i) many.add_tags.push_back("t" + std::to_string(i));
  try {
    service::label_evaluation(*store, id, many);  // 2 + 31 > 32
    ADD_FAILURE() << "33 tags accepted";
  } catch (const service::InvalidArgument& e) {
    EXPECT_EQ(e.field(), "tags");
  }
  EXPECT_EQ(service::load_evaluation(*store, id).labels, l);  // nothing written
}

TEST_F(Labels, PatchSetsLabelsThatTheListAndTheEvaluationShow) {
  const std::int64_t id = seed_evaluation();
  const std::int64_t other = seed_evaluation();
  start();
  const json answer = patch(id, R"({"name": "baseline run", "tags": ["fp16", "baseline", "fp16"], "note": "n"})", 200);
  EXPECT_EQ(answer, (json{{"id", id}, {"name", "baseline run"}, {"tags", {"baseline", "fp16"}}, {"note", "n"}}));
  const json one = body(client().Get("/api/v1/evaluations/" + std::to_string(id)));
  EXPECT_EQ(one["name"], "baseline run");
  EXPECT_EQ(one["tags"], json({"baseline", "fp16"}));
  EXPECT_EQ(one["note"], "n");
  // Only "note": the name and tags stay.
  EXPECT_EQ(patch(id, R"({"note": ""})", 200)["name"], "baseline run");
  EXPECT_EQ(listed("?tag=fp16"), (std::vector<std::int64_t>{id}));
  EXPECT_EQ(listed("?tag=fp"), std::vector<std::int64_t>{});
  EXPECT_EQ(listed(""), (std::vector<std::int64_t>{other, id}));
  const json list = body(client().Get("/api/v1/evaluations?tag=baseline"));
  const json& e = list["evaluations"][0];
  EXPECT_EQ(e["name"], "baseline run");
  EXPECT_EQ(e["tags"], json({"baseline", "fp16"}));
  EXPECT_EQ(e["note"], "");
  // quick_request(): batch sizes 1 and 2, leveled M and M/F; the fake framework gives every run a latency.
  EXPECT_EQ(e["metrics"]["p50_batch_size"], 1);
  EXPECT_GT(e["metrics"]["p50_ms"].get<double>(), 0);
  EXPECT_EQ(e["metrics"]["throughput_batch_size"], 2);
  EXPECT_GT(e["metrics"]["throughput_samples_per_s"].get<double>(), 0);
  EXPECT_TRUE(e["metrics"]["stability"].is_string());
}

TEST_F(Labels, TheLooseModelFilterTakesTheZoosNameInAnyCase) {
  const std::int64_t resnet = save_named("ResNet-18");
  const std::int64_t mobilenet = save_named("MobileNet_v2");
  const std::int64_t fake = seed_evaluation();
  start();
  EXPECT_EQ(listed("?model_like=resnet18"), (std::vector<std::int64_t>{resnet}));
  EXPECT_EQ(listed("?model_like=RESNET"), (std::vector<std::int64_t>{resnet}));
  EXPECT_EQ(listed("?model_like=mobilenet-v2"), (std::vector<std::int64_t>{mobilenet}));
  EXPECT_EQ(listed("?model_like=server_model"), (std::vector<std::int64_t>{fake}));
  EXPECT_EQ(listed("?model=resnet18"), std::vector<std::int64_t>{});  // model stays exact
  EXPECT_EQ(listed("?model_like=resnet18&tag=none"), std::vector<std::int64_t>{});
}

TEST_F(Labels, BadPatchesAreFourHundredsNamingTheField) {
  const std::int64_t id = seed_evaluation();
  start();
  auto field = [](const json& j) { return j["error"]["field"].get<std::string>(); };
  EXPECT_EQ(field(patch(id, "{\"name\": ", 400)), "body");
  EXPECT_EQ(field(patch(id, "[1, 2]", 400)), "body");
  EXPECT_EQ(field(patch(id, R"({"name": ")" + std::string(121, 'x') + R"("})", 400)), "name");
  EXPECT_NE(
      patch(id, R"({"name": ")" + std::string(121, 'x') + R"("})", 400)["error"]["message"].get<std::string>().find(
          "at most 120 characters"),
      std::string::npos);
  EXPECT_EQ(field(patch(id, R"({"name": 5})", 400)), "name");
  EXPECT_EQ(field(patch(id, R"({"tags": "baseline"})", 400)), "tags");
  EXPECT_EQ(field(patch(id, R"({"tags": ["with space"]})", 400)), "tags");
  EXPECT_EQ(field(patch(id, R"({"note": ")" + std::string(4001, 'x') + R"("})", 400)), "note");
  EXPECT_EQ(field(patch(id, R"({"nmae": "x"})", 400)), "nmae");
  EXPECT_EQ(field(patch(id, "{}", 400)), "labels");
  EXPECT_EQ(patch(id + 100, R"({"name": "x"})", 404)["error"]["status"], 404);
  EXPECT_EQ(field(patch(0, R"({"name": "x"})", 400)), "id");
  // Writes are JSON only (a cross-site form cannot send it).
  auto form =
      client().Patch("/api/v1/evaluations/" + std::to_string(id), "name=x", "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415);
  // Nothing was changed by any of them.
  EXPECT_EQ(body(client().Get("/api/v1/evaluations/" + std::to_string(id)))["name"], "");
}

TEST_F(Labels, PatchNeedsTheTokenWhenTheServerHasOne) {
  const std::int64_t id = seed_evaluation();
  ServerOptions o = options();
  o.token = "label-token";
  start(o);
  patch(id, R"({"name": "x"})", 401);
  patch(id, R"({"name": "x"})", 403, {{"Authorization", "Bearer wrong"}});
  EXPECT_EQ(patch(id, R"({"name": "x"})", 200, {{"Authorization", "Bearer label-token"}})["name"], "x");
}

TEST_F(Labels, TheReportLinksBackToTheListAndTheChartAssetsAreServed) {
  if (!report_assets_available()) GTEST_SKIP() << "built without tools/vega/node_modules";
  const std::int64_t a = seed_evaluation();
  const std::int64_t b = seed_evaluation();
  start();
  auto c = client();
  const auto one = c.Get("/api/v1/report?ids=" + std::to_string(a));
  ASSERT_TRUE(one);
  EXPECT_NE(one->body.find("href=\"/\""), std::string::npos);
  EXPECT_NE(one->body.find("all evaluations"), std::string::npos);
  const auto two = c.Get("/api/v1/report?ids=" + std::to_string(a) + "," + std::to_string(b));
  ASSERT_TRUE(two);
  EXPECT_NE(two->body.find("href=\"/api/v1/report?ids=" + std::to_string(b) + "\""), std::string::npos);
  for (const char* asset : {"vega.min.js", "vega-lite.min.js", "vega-embed.min.js"}) {
    const auto r = c.Get(std::string("/assets/") + asset);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << asset;
    EXPECT_GT(r->body.size(), 10000u) << asset;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  }
  const auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("<script src=\"/assets/vega-lite.min.js\">"), std::string::npos);
}

}  // namespace
}  // namespace xsp
