// `xsp serve` in-process: the flags reach the server, a non-loopback address without a token is a usage error, and
// SIGINT stops the server cleanly (exit 0) after it printed its URL.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "cli_harness.h"

namespace xsp {
namespace {

class Serve : public testing::CliHarness {
 protected:
  void SetUp() override { make_zoo("serve-fake", "serve_model"); }
};

#ifdef XSP_WITH_SERVER
TEST_F(Serve, AnotherAddressWithoutATokenIsAUsageError) {
  ::unsetenv("XSP_SERVER_TOKEN");
  EXPECT_EQ(xsp({"--store", (dir_ / "s.db").string(), "serve", "--host", "0.0.0.0", "--port", "0"}), 2);
  EXPECT_NE(err_.find("0.0.0.0 is not a loopback address: writes need a token"), std::string::npos) << err_;
}

TEST_F(Serve, AnEmptyTokenFileIsRefused) {
  std::filesystem::create_directories(dir_);
  { std::ofstream(dir_ / "token") << "\n"; }
  EXPECT_NE(xsp({"--store", (dir_ / "s.db").string(), "serve", "--token-file", (dir_ / "token").string()}), 0);
  EXPECT_NE(err_.find("holds no token"), std::string::npos) << err_;
}

TEST_F(Serve, PrintsItsUrlAndStopsCleanlyOnSigint) {
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::raise(SIGINT);
  });
  const int rc = xsp({"--store", (dir_ / "s.db").string(), "--zoo", (dir_ / "zoo").string(), "serve", "--port", "0"});
  stopper.join();
  EXPECT_EQ(rc, 0) << err_;
  EXPECT_NE(out_.find("listening on http://127.0.0.1:"), std::string::npos) << out_;
  EXPECT_NE(err_.find("xsp serve: stopping"), std::string::npos) << err_;
}
#else
TEST_F(Serve, SaysItWasBuiltWithoutTheServer) {
  EXPECT_EQ(xsp({"--store", (dir_ / "s.db").string(), "serve"}), 1);
  EXPECT_NE(err_.find("built without the server: install libcpp-httplib-dev"), std::string::npos) << err_;
}
#endif

}  // namespace
}  // namespace xsp
