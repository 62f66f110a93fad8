// Requests are checked where the user gives them (issue 31, findings 9 and 10): `xsp submit` refuses a request that
// can never run before it queues it (or even connects), and a framework the manifest chose is not blamed on a flag
// the user did not give.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_harness.h"

namespace xsp {
namespace {

class RequestChecks : public testing::CliHarness {
 protected:
  void SetUp() override { make_zoo("checks-fake", "checks_model"); }
};

TEST_F(RequestChecks, SubmitRefusesABadRequestBeforeQueueingIt) {
  // An SQLite store cannot hold a queue: a request checked first fails on its own flag, not on --store.
  EXPECT_EQ(xsp({"--store", (dir_ / "s.db").string(), "submit", "checks_model", "--batch-sizes", "0"}), 2);
  EXPECT_NE(err_.find("--batch-sizes"), std::string::npos) << err_;
  EXPECT_EQ(err_.find("PostgreSQL"), std::string::npos) << err_;
  EXPECT_EQ(xsp({"--store", (dir_ / "s.db").string(), "submit", "checks_model", "--min-duration-ms", "1e12"}), 2);
  EXPECT_NE(err_.find("--min-duration-ms"), std::string::npos) << err_;
}

TEST_F(RequestChecks, AFrameworkTheManifestChoseIsNotBlamedOnTheFrameworkFlag) {
  // The model wants checks-fake >= 99; this build's checks-fake is 1.0.0.
  std::string yaml;
  {
    std::ifstream in(dir_ / "zoo" / "checks_model.yaml");
    yaml.assign(std::istreambuf_iterator<char>(in), {});
  }
  yaml.replace(yaml.find("\">=1.0\""), 7, "\">=99\"");
  { std::ofstream(dir_ / "zoo" / "checks_model.yaml") << yaml; }
  EXPECT_EQ(xsp({"--store", (dir_ / "s.db").string(), "--zoo", (dir_ / "zoo").string(), "evaluate", "checks_model",
                 "--synthetic"}),
            2);
  EXPECT_EQ(err_.find("--framework"), std::string::npos) << err_;
  EXPECT_NE(err_.find(">=99"), std::string::npos) << err_;
  EXPECT_NE(err_.find("checks_model.yaml"), std::string::npos) << err_;
  // Named by the user, the flag is the one at fault.
  EXPECT_EQ(xsp({"--store", (dir_ / "s.db").string(), "--zoo", (dir_ / "zoo").string(), "evaluate", "checks_model",
                 "--synthetic", "--framework", "checks-fake"}),
            2);
  EXPECT_NE(err_.find("--framework"), std::string::npos) << err_;
}

}  // namespace
}  // namespace xsp
