// trace/ knows about nothing else (docs/architecture.md): its sources and headers include only xsp/trace/ headers,
// so the folders stay acyclic (record/ depends on trace/, never the reverse; the run-statistics registry that the
// assembler uses lives in trace/ for that reason).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace xsp {
namespace {

TEST(TraceDependencies, TraceIncludesOnlyTraceHeaders) {
  const fs::path root(XSP_SOURCE_DIR);
  std::size_t files = 0;
  for (const fs::path dir : {root / "src" / "trace", root / "include" / "xsp" / "trace"}) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      ++files;
      std::ifstream in(entry.path());
      std::size_t n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        const auto at = line.find("#include \"xsp/");
        if (at == std::string::npos) continue;
        EXPECT_EQ(line.compare(at, 20, "#include \"xsp/trace/"), 0) << entry.path() << ":" << n << ": " << line;
      }
    }
  }
  EXPECT_GT(files, 10u);
}

// loadgen/ schedules queries and knows nothing of what answers them (issue 30): no predictor, profiler, pipeline or
// eval header; the predictor side is xsp/eval/predictor_sut.h, its profilers switched by the run's RunSession.
TEST(LoadgenDependencies, LoadgenIncludesOnlyLoadgenTraceAndStatsHeaders) {
  const fs::path root(XSP_SOURCE_DIR);
  std::size_t files = 0;
  for (const fs::path dir : {root / "src" / "loadgen", root / "include" / "xsp" / "loadgen"}) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      ++files;
      std::ifstream in(entry.path());
      std::size_t n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        const auto at = line.find("#include \"xsp/");
        if (at == std::string::npos) continue;
        const std::string folder = line.substr(at + 14, line.find('/', at + 14) - (at + 14));
        EXPECT_TRUE(folder == "loadgen" || folder == "trace" || folder == "stats")
            << entry.path() << ":" << n << ": " << line;
      }
    }
  }
  EXPECT_GT(files, 4u);
}

}  // namespace
}  // namespace xsp
