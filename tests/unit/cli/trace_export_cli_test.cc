// `xsp trace export` for traces of any size (docs/exports.md): --max-bytes shards a Perfetto export into numbered
// files, --batches A:B keeps a window of measured batches in every format, and bad values of either are usage errors
// (exit 2) naming the option and the value, with nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "cli_harness.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

class TraceExportCli : public testing::CliHarness {
 protected:
  void SetUp() override {
    make_zoo("trace-export-fake", "trace_export_model");
    ASSERT_EQ(
        xsp({"--zoo", (dir_ / "zoo").string(), "--store", store(), "evaluate", "trace_export_model", "--synthetic",
             "--trace-level", "framework", "--warmup-min-ms", "50", "--min-duration-ms", "200", "--no-progress"}),
        0)
        << err_;
  }
  std::string store() const { return (dir_ / "s.db").string(); }
  int export_trace(std::vector<std::string> extra) {
    std::vector<std::string> args{"--store", store(), "trace", "export", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return xsp(args);
  }
  std::size_t files_in(const fs::path& dir) const {
    if (!fs::exists(dir)) return 0;
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
  }
};

TEST_F(TraceExportCli, MaxBytesShardsIntoNumberedFiles) {
  const fs::path out = dir_ / "out" / "run.pftrace";
  fs::create_directories(out.parent_path());
  ASSERT_EQ(export_trace({"--format", "perfetto", "--max-bytes", "2K", "-o", out.string()}), 0) << err_;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "run-001.pftrace"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "run-002.pftrace")) << out_;
  for (const auto& f : fs::directory_iterator(dir_ / "out")) {
    EXPECT_GT(fs::file_size(f.path()), 0u) << f.path();
    EXPECT_TRUE(std::regex_match(f.path().filename().string(), std::regex("run-[0-9]{3}\\.pftrace"))) << f.path();
  }
  EXPECT_NE(out_.find("run-001.pftrace, "), std::string::npos) << out_;
}

TEST_F(TraceExportCli, BatchesWindowInEveryFormat) {
  for (const char* format : {"perfetto", "chrome", "otlp", "sqlite"}) {
    const fs::path out = dir_ / (std::string("w.") + format);
    ASSERT_EQ(export_trace({"--format", format, "--batches", "1:2", "-o", out.string()}), 0) << format << ": " << err_;
    EXPECT_GT(fs::file_size(out), 0u) << format;
  }
}

TEST_F(TraceExportCli, BadValuesAreUsageErrorsNamingOptionAndValue) {
  const fs::path out_dir = dir_ / "bad";
  fs::create_directories(out_dir);
  const std::string out = (out_dir / "t.pftrace").string();
  EXPECT_EQ(export_trace({"--format", "perfetto", "--batches", "5:3", "-o", out}), 2);
  expect_one_line_error("--batches '5:3': the first batch 5 comes after the last 3");
  EXPECT_EQ(export_trace({"--format", "chrome", "--batches", "one:3", "-o", out}), 2);
  expect_one_line_error("--batches 'one:3': the first batch 'one' is not a batch number");
  EXPECT_EQ(export_trace({"--format", "perfetto", "--batches", "7", "-o", out}), 2);
  expect_one_line_error("--batches '7': expected A:B");
  EXPECT_EQ(export_trace({"--format", "perfetto", "--batches", "0:100000", "-o", out}), 2);
  expect_one_line_error("--batches '0:100000': the trace has no measured batch 100000 (its batches: 0 to ");
  EXPECT_EQ(export_trace({"--format", "sqlite", "--batches", "0:100000", "-o", out}), 2);
  expect_one_line_error("--batches '0:100000': the trace has no measured batch 100000");
  EXPECT_EQ(export_trace({"--format", "perfetto", "--max-bytes", "0", "-o", out}), 2);
  expect_one_line_error("--max-bytes: expected a positive number of bytes (suffixes K, M, G: x1024), got '0'");
  EXPECT_EQ(export_trace({"--format", "perfetto", "--max-bytes", "12Q", "-o", out}), 2);
  expect_one_line_error("got '12Q'");
  EXPECT_EQ(export_trace({"--format", "chrome", "--max-bytes", "1M", "-o", out}), 2);
  expect_one_line_error("--max-bytes: shards --format perfetto only, not chrome");
  EXPECT_EQ(files_in(out_dir), 0u) << "a refused export wrote something";
}

}  // namespace
}  // namespace xsp
