// Issue 31, finding 9: `xsp machine ceilings --import FILE` accepted any measured_at, and the store picks the latest
// measurement by comparing measured_at as text, so an entry measured at "9999" won over every later one for ever.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_harness.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;

class CeilingsImport : public testing::CliHarness {
 protected:
  void SetUp() override { make_zoo("ceilings_import", "ceilings_model"); }

  // The fixture's measurements (an array of 2), the second one's measured_at replaced by `measured_at`.
  fs::path file_with(const std::string& measured_at) {
    std::ifstream in(fs::path(XSP_TEST_FIXTURES) / "counters" / "ceilings_h200.json");
    nlohmann::json all = nlohmann::json::parse(in);
    if (!all.is_array()) all = nlohmann::json::array({all});
    if (all.size() < 2) all.push_back(all[0]);
    all[1]["measured_at"] = measured_at;
    const fs::path file = dir_ / "ceilings.json";
    std::ofstream(file) << all.dump(2);
    return file;
  }
  std::string store() const { return (dir_ / "s.db").string(); }
};

}  // namespace

TEST_F(CeilingsImport, AMeasuredAtThatIsNotAUtcTimeIsRefusedNamingFileEntryFieldAndValue) {
  for (const std::string bad : {"9999", "2026-13-45T00:00:00Z", "9999-12-31T23:59:59Z"}) {
    SCOPED_TRACE(bad);
    const fs::path file = file_with(bad);
    EXPECT_EQ(xsp({"--store", store(), "machine", "ceilings", "--import", file.string()}), 1) << out_;
    EXPECT_NE(err_.find(file.string() + ": entry 1: machine ceilings JSON: measured_at: expected "), std::string::npos)
        << err_;
    EXPECT_NE(err_.find("got '" + bad + "'"), std::string::npos) << err_;
  }
  EXPECT_FALSE(fs::exists(store())) << "a refused import opened the store";
}

TEST_F(CeilingsImport, AValidFileIsStillImported) {
  const fs::path file = file_with("2026-11-23T08:00:00Z");
  ASSERT_EQ(xsp({"--store", store(), "machine", "ceilings", "--import", file.string()}), 0) << err_;
  EXPECT_NE(out_.find("imported 2 measurement(s) from " + file.string()), std::string::npos) << out_;
  EXPECT_EQ(Store::open(store(), StoreAccess::kRead)->list_ceilings().size(), 2u);
}

}  // namespace xsp
