// `xsp label` and `xsp delete`: labels set, merged and shown; bad values as usage errors naming the flag (exit 2);
// an unknown id as exit 1 with nothing changed; several ids deleted at once, all or none.
#include <gtest/gtest.h>

#include "cli_harness.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

class Labels : public testing::CliHarness {
 protected:
  void SetUp() override { make_zoo("label-fake", "label_model"); }
  std::string store() const { return (dir_ / "s.db").string(); }
  // Evaluations saved through the library: ids 1..n.
  void seed(int n) {
    auto s = Store::open(store());
    for (int i = 0; i < n; ++i) {
      EvaluationRecord r;
      r.model_name = "label_model";
      r.model_version = "1.0.0";
      r.framework_name = "label-fake";
      r.framework_version = "1.0.0";
      r.batch_sizes = {1};
      s->save(r);
    }
  }
  EvaluationLabels labels(std::int64_t id) { return Store::open(store(), StoreAccess::kRead)->load(id)->labels; }
  std::vector<std::int64_t> ids() {
    std::vector<std::int64_t> out;
    for (const auto& e : Store::open(store(), StoreAccess::kRead)->list()) out.push_back(e.id);
    return out;
  }
};

TEST_F(Labels, LabelSetsMergesAndPrints) {
  seed(2);
  ASSERT_EQ(xsp({"--store", store(), "label", "2", "--name", "fp16 baseline", "--tag", "h200", "--tag", "baseline",
                 "--note", "clocks locked"}),
            0)
      << err_;
  EXPECT_EQ(labels(2), (EvaluationLabels{"fp16 baseline", {"baseline", "h200"}, "clocks locked"}));
  EXPECT_NE(out_.find("evaluation 2"), std::string::npos) << out_;
  EXPECT_NE(out_.find("name: fp16 baseline"), std::string::npos) << out_;
  EXPECT_NE(out_.find("tags: baseline, h200"), std::string::npos) << out_;
  // --untag takes one away, --tag adds; the name and note stay.
  ASSERT_EQ(xsp({"--store", store(), "label", "2", "--untag", "baseline", "--tag", "regression"}), 0) << err_;
  EXPECT_EQ(labels(2), (EvaluationLabels{"fp16 baseline", {"h200", "regression"}, "clocks locked"}));
  // "" removes the name; --clear-tags empties the set.
  ASSERT_EQ(xsp({"--store", store(), "label", "2", "--name", "", "--clear-tags"}), 0) << err_;
  EXPECT_EQ(labels(2), (EvaluationLabels{"", {}, "clocks locked"}));
  EXPECT_TRUE(labels(1).empty());
}

TEST_F(Labels, BadLabelsAreUsageErrorsNamingTheFlagAndChangeNothing) {
  seed(1);
  EXPECT_EQ(xsp({"--store", store(), "label", "1", "--name", std::string(121, 'x')}), 2);
  EXPECT_NE(err_.find("xsp: error: --name: at most 120 characters, got 121"), std::string::npos) << err_;
  EXPECT_EQ(xsp({"--store", store(), "label", "1", "--tag", "has space"}), 2);
  EXPECT_NE(err_.find("--tag: 'has space' is not a tag"), std::string::npos) << err_;
  EXPECT_EQ(xsp({"--store", store(), "label", "1", "--note", std::string(4001, 'n')}), 2);
  EXPECT_NE(err_.find("--note: at most 4000 characters"), std::string::npos) << err_;
  EXPECT_EQ(xsp({"--store", store(), "label", "1"}), 2);
  EXPECT_NE(err_.find("nothing to change"), std::string::npos) << err_;
  EXPECT_EQ(xsp({"--store", store(), "label", "abc", "--name", "x"}), 2);
  EXPECT_TRUE(labels(1).empty());
  // An unknown evaluation: exit 1 (README "Exit codes": no such evaluation).
  EXPECT_EQ(xsp({"--store", store(), "label", "9", "--name", "x"}), 1);
  EXPECT_NE(err_.find("no evaluation 9"), std::string::npos) << err_;
}

TEST_F(Labels, DeleteRemovesEveryIdGivenOrNoneWhenOneIsUnknown) {
  seed(4);
  EXPECT_EQ(xsp({"--store", store(), "delete", "2", "7", "3"}), 1);
  EXPECT_NE(err_.find("no evaluation 7"), std::string::npos) << err_;
  EXPECT_NE(err_.find("nothing was deleted"), std::string::npos) << err_;
  EXPECT_EQ(ids(), (std::vector<std::int64_t>{4, 3, 2, 1}));
  ASSERT_EQ(xsp({"--store", store(), "delete", "2", "3", "2"}), 0) << err_;
  EXPECT_EQ(out_, "deleted evaluation 2\ndeleted evaluation 3\n");
  EXPECT_EQ(ids(), (std::vector<std::int64_t>{4, 1}));
  EXPECT_EQ(xsp({"--store", store(), "delete"}), 2);  // an id is required
  EXPECT_EQ(xsp({"--store", store(), "delete", "0"}), 2);
}

}  // namespace
}  // namespace xsp
