// The ceilings benchmark entry point of builds without the CUDA micro-benchmarks: it says so, naming the way out.
#include "xsp/profilers/ceilings_benchmark.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace xsp {
namespace {

TEST(CeilingsBenchmark, WithoutCudaThrowsNamingTheCause) {
  if (have_ceilings_benchmark()) GTEST_SKIP() << "this build measures ceilings with CUDA";
  try {
    measure_machine_ceilings(CeilingOptions{});
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("built without CUDA"), std::string::npos) << what;
    EXPECT_NE(what.find("--import"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace xsp
