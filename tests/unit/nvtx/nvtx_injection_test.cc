// The injection library end to end, without a GPU: tests/programs/nvtx_program.cc runs with NVTX_INJECTION64_PATH
// naming libxsp_inject.so, and the trace part it leaves holds its ranges with the right names, levels, nesting,
// tracks and durations (known sleeps inside); its exit status and output are its own.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "xsp/trace/run_statistics.h"
#include "xsp/trace/serialize.h"
#include "xsp/trace/trace.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

#ifdef XSP_TEST_NVTX_PROGRAM

struct Ran {
  int exit_code = -1;
  std::string out;
  std::map<std::string, Trace> parts;  // by file name
};

// Runs the program with the injection library, its stdout into a file, and reads the parts it left.
Ran run_program(const fs::path& dir, const std::vector<std::string>& args, bool inject = true) {
  fs::create_directories(dir / "parts");
  const fs::path out = dir / "stdout.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    if (inject) ::setenv("NVTX_INJECTION64_PATH", XSP_TEST_INJECT_LIB, 1);
    ::setenv("XSP_PROFILE_DIR", (dir / "parts").c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(XSP_TEST_NVTX_PROGRAM)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  Ran r;
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  r.out = text.str();
  for (const auto& e : fs::directory_iterator(dir / "parts")) {
    std::ifstream p(e.path(), std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(p)), std::istreambuf_iterator<char>());
    r.parts[e.path().filename().string()] = decode_trace(bytes);
  }
  return r;
}

const Span* named(const Trace& t, const std::string& name) {
  for (const Span& s : t.spans)
    if (s.name == name) return &s;
  return nullptr;
}

class NvtxInjection : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xsp-nvtx-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(NvtxInjection, TheProgramsRangesBecomeSpansWithTheirNestingLevelsAndTracks) {
  const Ran r = run_program(dir_, {"--exit", "3"});
  EXPECT_EQ(r.exit_code, 3);  // the program's own status
  EXPECT_EQ(r.out, "hello from the program\n");
  ASSERT_EQ(r.parts.size(), 1u);
  const Trace& t = r.parts.begin()->second;
  EXPECT_EQ(r.parts.begin()->first.rfind("nvtx-", 0), 0u);
  ASSERT_EQ(t.spans.size(), 7u);  // the six ranges and the process's APPLICATION span
  EXPECT_EQ(t.counters.at(stat::kNvtxRanges), 6u);
  // The process: one APPLICATION span on its main thread (tid = pid), parent of the ranges that have no other, and
  // its entry naming the threads, with its command line.
  ASSERT_EQ(t.processes.size(), 1u);
  const TraceProcess& process = t.processes.front();
  EXPECT_NE(process.name.find("--exit 3"), std::string::npos) << process.name;
  EXPECT_EQ(process.thread_ids.size(), 2u);
  const Span& root = t.spans.front();
  EXPECT_EQ(root.level, Level::kApplication);
  EXPECT_EQ(root.parent_id, kNoSpan);
  EXPECT_EQ(root.track, Track::host_thread(static_cast<std::uint64_t>(process.pid)));
  EXPECT_EQ(root.name, process.name);
  EXPECT_EQ(t.counters.at(stat::kNvtxUnmatchedPops), 0u);
  EXPECT_EQ(t.counters.at(stat::kNvtxOpenAtEnd), 0u);
  const Span* infer = named(t, "infer");
  const Span* linear = named(t, "aten::linear");
  const Span* gemm = named(t, "cublasSgemm_v2");
  const Span* step = named(t, "worker step");
  const Span* request = named(t, "request");
  ASSERT_TRUE(infer && linear && gemm && step && request);
  const std::int64_t ms = 1'000'000;
  // infer: 10 + 10 + 5 + 15 ms of sleeps; each child inside it, on the main thread, its context child.
  EXPECT_EQ(infer->level, Level::kModel);
  EXPECT_GE(infer->duration_ns(), 40 * ms);
  EXPECT_LT(infer->duration_ns(), 400 * ms);
  EXPECT_EQ(linear->level, Level::kFramework);
  EXPECT_EQ(linear->parent_id, infer->id);
  EXPECT_EQ(linear->tag("sequence"), std::optional<std::string_view>("3"));
  EXPECT_EQ(linear->tag("shapes"), std::optional<std::string_view>("[2,8],[4,8],[4]"));
  EXPECT_GE(linear->duration_ns(), 10 * ms);
  EXPECT_EQ(gemm->level, Level::kLibrary);
  EXPECT_EQ(gemm->parent_id, infer->id);
  EXPECT_EQ(gemm->tag("domain"), std::optional<std::string_view>("cuBLAS"));
  EXPECT_GE(gemm->duration_ns(), 5 * ms);
  EXPECT_GE(gemm->start_ns, linear->end_ns);
  EXPECT_EQ(linear->track, infer->track);
  EXPECT_EQ(gemm->track, infer->track);
  // The worker's registered-string range: its own thread, its domain and category.
  EXPECT_NE(step->track, infer->track);
  EXPECT_EQ(step->level, Level::kModel);
  EXPECT_EQ(step->tag("domain"), std::optional<std::string_view>("my_app"));
  EXPECT_EQ(step->tag("category"), std::optional<std::string_view>("7"));
  EXPECT_GE(step->duration_ns(), 15 * ms);
  EXPECT_EQ(step->parent_id, root.id);  // its thread had no range open: the process holds it
  EXPECT_EQ(infer->parent_id, root.id);
  for (const Span& s : t.spans) {
    EXPECT_GE(s.start_ns, root.start_ns) << s.name;
    EXPECT_LE(s.end_ns, root.end_ns) << s.name;
  }
  // request: started on the main thread, ended by the worker after its step; a start/end range, not on a stack.
  EXPECT_EQ(request->track, infer->track);
  EXPECT_EQ(request->tag("nvtx"), std::optional<std::string_view>("start"));
  EXPECT_GE(request->end_ns, step->end_ns);
  EXPECT_GE(request->duration_ns(), 20 * ms);
  // A range of a library with its own NVTX instance, initialized after the program's: in the same part.
  const Span* plugin = named(t, "plugin range");
  ASSERT_NE(plugin, nullptr);
  EXPECT_GE(plugin->duration_ns(), 5 * ms);
  EXPECT_GE(plugin->start_ns, infer->end_ns);
}

TEST_F(NvtxInjection, AForkedChildWritesItsOwnPartWithOnlyItsOwnRanges) {
  const Ran r = run_program(dir_, {"--fork"});
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.parts.size(), 2u);
  std::size_t with_child = 0;
  std::optional<Track> child_track, parent_track;
  for (const auto& [file, t] : r.parts) {
    if (const Span* child = named(t, "child range"); child != nullptr) {
      ++with_child;
      EXPECT_EQ(t.spans.size(), 2u) << file;  // its process span and its range, not the parent's ranges
      EXPECT_GE(child->duration_ns(), 5'000'000);
      child_track = child->track;
    } else {
      EXPECT_EQ(t.spans.size(), 7u) << file;
      if (const Span* infer = named(t, "infer")) parent_track = infer->track;
    }
  }
  EXPECT_EQ(with_child, 1u);
  // The child's thread is its own, not the parent's forking thread (whose id the child inherited a cache of).
  ASSERT_TRUE(child_track && parent_track);
  EXPECT_NE(*child_track, *parent_track);
}

TEST_F(NvtxInjection, WithoutTheLibraryTheProgramRunsAndLeavesNothing) {
  const Ran r = run_program(dir_, {"--exit", "5"}, false);
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_EQ(r.out, "hello from the program\n");
  EXPECT_TRUE(r.parts.empty());
}

#else
TEST(NvtxInjection, NeedsTheInjectionLibrary) {
  GTEST_SKIP() << "this build has no injection library (NVTX v3 headers not found)";
}
#endif

}  // namespace
}  // namespace xsp
