// Store::list(EvaluationFilter), count() and remove() (the server's listing and DELETE): every filter alone and
// together, pages, dates, devices by ordinal, and a delete that takes the runs with it; on SQLite and PostgreSQL.
#include <gtest/gtest.h>

#include "store_backends.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

class StoreFilter : public testing::StoreBackends {
 protected:
  void SetUp() override {
    StoreBackends::SetUp();
    if (IsSkipped()) return;
    store_ = open("s.db");
    add("resnet", "libtorch", "cpu", "alpha", "2026-11-20T10:00:00Z");
    add("resnet", "onnxruntime", "cuda:0", "beta", "2026-11-22T10:00:00Z");
    add("mobilenet", "libtorch", "cuda:1", "alpha", "2026-11-24T10:00:00Z");
  }
  void TearDown() override { store_.reset(); }
  void add(const std::string& model, const std::string& framework, const std::string& device, const std::string& host,
           const std::string& created_at) {
    EvaluationRecord r;
    r.model_name = model;
    r.model_version = "1.0.0";
    r.framework_name = framework;
    r.framework_version = "1";
    r.device = device;
    r.created_at = created_at;
    r.batch_sizes = {1};
    r.system = {{"host", {{"hostname", host}}}};
    RunRecord run;
    run.batch_size = 1;
    run.predict_latency_ns = {1e6, 1.1e6};
    r.runs.push_back(run);
    store_->save(r);
  }
  // The ids list() returns; count() must agree when there is no page.
  std::vector<std::int64_t> ids(const EvaluationFilter& f) {
    std::vector<std::int64_t> out;
    for (const auto& e : store_->list(f)) out.push_back(e.id);
    EXPECT_EQ(store_->count(f), out.size());
    return out;
  }
  std::unique_ptr<Store> store_;
};

TEST_P(StoreFilter, EachFilterAndTheirCombination) {
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(ids({}), (V{3, 2, 1}));  // newest first
  EXPECT_EQ(ids({.model = "resnet"}), (V{2, 1}));
  EXPECT_EQ(ids({.framework = "libtorch"}), (V{3, 1}));
  EXPECT_EQ(ids({.device = "cuda"}), (V{3, 2}));  // every ordinal
  EXPECT_EQ(ids({.device = "cuda:1"}), (V{3}));
  EXPECT_EQ(ids({.device = "cpu"}), (V{1}));
  EXPECT_EQ(ids({.device = "cud"}), V{});  // a prefix of a name is not a device
  EXPECT_EQ(ids({.host = "alpha"}), (V{3, 1}));
  EXPECT_EQ(ids({.since = "2026-11-21"}), (V{3, 2}));
  EXPECT_EQ(ids({.until = "2026-11-22T10:00:00Z"}), (V{2, 1}));  // inclusive
  EXPECT_EQ(ids({.model = "resnet", .framework = "libtorch", .host = "alpha"}), (V{1}));
  EXPECT_EQ(ids({.model = "x' OR '1'='1"}), V{});  // a bound value, never SQL
  EXPECT_EQ(store_->list().front().hostname, "alpha");
}

TEST_P(StoreFilter, PagesAndCount) {
  EvaluationFilter f;
  f.limit = 2;
  EXPECT_EQ(store_->list(f).size(), 2u);
  f.offset = 2;
  ASSERT_EQ(store_->list(f).size(), 1u);
  EXPECT_EQ(store_->list(f).front().id, 1);
  EXPECT_EQ(store_->count(f), 3u);  // limit and offset ignored
  f.offset = 5;
  EXPECT_TRUE(store_->list(f).empty());
}

TEST_P(StoreFilter, RemoveDeletesTheEvaluationAndItsRuns) {
  EXPECT_TRUE(store_->remove(2));
  EXPECT_FALSE(store_->load(2).has_value());
  EXPECT_FALSE(store_->remove(2));
  EXPECT_FALSE(store_->remove(999));
  EXPECT_EQ(store_->count({}), 2u);
  ASSERT_TRUE(store_->load(1).has_value());
  EXPECT_EQ(store_->load(1)->runs.size(), 1u);
  // The runs went with it (ON DELETE CASCADE): one run row per remaining evaluation.
  store_.reset();
  EXPECT_EQ(rows("s.db", "runs"), 2);
  EXPECT_EQ(rows("s.db", "runs WHERE evaluation_id = 2"), 0);
}

XSP_STORE_BACKENDS_INSTANTIATE(StoreFilter);

}  // namespace
}  // namespace xsp
