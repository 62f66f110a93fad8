// The folders stay acyclic (docs/architecture.md): trace/ includes only xsp/trace/ headers (record/ depends on trace/,
// never the reverse; the run-statistics registry that the assembler uses lives in trace/ for that reason), and
// loadgen/ only loadgen, trace and stats headers (issue 30).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace xsp {
namespace {

// Every `#include "xsp/FOLDER/..."` of the sources and headers of `folder` names one of `allowed`; returns how many
// files were read.
std::size_t expect_includes_only(const std::string& folder, const std::set<std::string>& allowed) {
  const fs::path root(XSP_SOURCE_DIR);
  std::size_t files = 0;
  for (const fs::path dir : {root / "src" / folder, root / "include" / "xsp" / folder}) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      ++files;
      std::ifstream in(entry.path());
      std::size_t n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        const auto at = line.find("#include \"xsp/");
        if (at == std::string::npos) continue;
        const std::size_t from = at + 14;
        const std::string included = line.substr(from, line.find('/', from) - from);
        EXPECT_TRUE(allowed.count(included)) << entry.path() << ":" << n << ": " << line;
      }
    }
  }
  return files;
}

TEST(TraceDependencies, TraceIncludesOnlyTraceHeaders) { EXPECT_GT(expect_includes_only("trace", {"trace"}), 10u); }

// loadgen/ schedules queries and knows nothing of what answers them: no predictor, profiler, pipeline or eval header;
// the predictor side is xsp/eval/predictor_sut.h, its profilers switched by the run's RunSession.
TEST(LoadgenDependencies, LoadgenIncludesOnlyLoadgenTraceAndStatsHeaders) {
  EXPECT_GT(expect_includes_only("loadgen", {"loadgen", "trace", "stats"}), 4u);
}

}  // namespace
}  // namespace xsp
