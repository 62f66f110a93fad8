// The CLI's habits (what a new user meets first): every misuse is one line "xsp: error: ..." naming what was wrong,
// with "did you mean" for a mistyped command or option and "see `xsp CMD --help`", exit 2; --version; `list` with
// --format, --limit, --model and --since; `evaluate --format json`; tables that fit the terminal (under a real pty
// at 80 and 200 columns); progress lines when stderr is not a terminal; `show` saying each fact once.
// In-process, on a fake framework of its own name.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <sstream>

#include "cli_harness.h"
#include "common.h"
#include "usage.h"
#include "xsp/analysis/table.h"
#include "xsp/store/store.h"
#include "xsp/system/machine_state.h"
#include "xsp/system/system_info.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a pty ends lines in "\r\n"
    out.push_back(line);
  }
  return out;
}

// Terminal columns of a UTF-8 line (one per code point, as the table renderer counts).
std::size_t width_of(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

/// Sets an environment variable for a scope (nullptr: unsets it) and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class Habits : public testing::CliHarness {
 protected:
  void SetUp() override { make_zoo("habits-fake", "habits_model"); }
  std::string store() const { return (dir_ / "s.db").string(); }
  std::string zoo() const { return (dir_ / "zoo").string(); }

  int evaluate(std::vector<std::string> extra) {
    std::vector<std::string> args{
        "--zoo",           zoo(), "--store",           store(), "evaluate", "habits_model", "--synthetic",
        "--warmup-min-ms", "50",  "--min-duration-ms", "50"};
    args.insert(args.end(), extra.begin(), extra.end());
    return xsp(args);
  }

  // Hand-made evaluations of known models and dates (no runs: the listing is what is tested).
  void save_listings() {
    auto s = Store::open(store());
    struct Made {
      const char* model;
      const char* created_at;
    };
    for (const Made& m : {Made{"ResNet18", "2026-01-01T10:00:00Z"}, Made{"ResNet50", "2026-02-01T10:00:00Z"},
                          Made{"MobileNet_v2", "2026-03-01T10:00:00Z"}, Made{"ResNet18", "2026-03-05T12:00:00Z"}}) {
      EvaluationRecord r;
      r.model_name = m.model;
      r.model_version = "1.0.0";
      r.framework_name = "libtorch";
      r.framework_version = "1.13.0";
      r.batch_sizes = {1, 8};
      r.created_at = m.created_at;
      s->save(r);
    }
  }

  // The ids `xsp list --format json ARGS` prints, in order.
  std::vector<std::int64_t> listed(std::vector<std::string> args) {
    std::vector<std::string> all{"--store", store(), "list", "--format", "json"};
    all.insert(all.end(), args.begin(), args.end());
    EXPECT_EQ(xsp(all), 0) << err_;
    std::vector<std::int64_t> ids;
    const auto j = nlohmann::json::parse(out_);
    for (const auto& row : j["rows"]) ids.push_back(row["id"].get<std::int64_t>());
    return ids;
  }
};

// --- Usage errors -------------------------------------------------------------------------------------------------

struct Misuse {
  std::vector<std::string> args;
  std::string message;  // what the one line must hold
};

TEST_F(Habits, EveryMisuseIsOneLineNamingWhatWasWrongWithExitTwo) {
  const std::vector<Misuse> cases = {
      {{"lst"}, "; did you mean 'list'? (see `xsp --help`)"},
      {{"evalute", "m"}, "unknown command 'evalute' for xsp; expected models, evaluate, list"},
      {{"trace", "exprt", "1"},
       "unknown command 'exprt' for xsp trace; expected export or convert; did you mean 'export'?"},
      {{"frobnicate"}, "unknown command 'frobnicate' for xsp; expected models, evaluate, list"},
      {{"list", "--limt", "5"}, "unknown option '--limt' for xsp list; did you mean --limit? (see `xsp list --help`)"},
      {{"show", "1", "--formt", "json"}, "unknown option '--formt' for xsp show; did you mean --format?"},
      {{"list", "--stroe", "x.db"}, "did you mean --store?"},  // a global option, after the command
      {{"list", "--zzzzzz"}, "unknown option '--zzzzzz' for xsp list (see `xsp list --help`)"},
      {{"list", "5"}, "unexpected argument '5' for xsp list"},
      {{"show"}, "xsp show: id is required: evaluation id (see `xsp show --help`)"},
      {{"show", "abc"}, "id: expected a whole number, got 'abc' (see `xsp show --help`)"},
      {{"list", "--store"}, "--store needs a value"},
      {{"list", "--format", "yaml"}, "--format: expected table, csv or json, got 'yaml' (see `xsp list --help`)"},
      {{"show", "1", "--format", "xml"}, "--format: expected table, csv or json, got 'xml'"},
      {{"analyze", "1", "--format", "yaml"}, "--format: expected table, csv or json, got 'yaml' (see `xsp analyze"},
      {{"evaluate", "habits_model", "--format", "csv"}, "--format: expected text or json, got 'csv'"},
      {{"list", "--since", "yesterday"}, "--since: expected a UTC date YYYY-MM-DD or time"},
      {{"list", "--since", "2026-13-01"}, "got '2026-13-01'"},
      {{"list", "--since", "2026-01-01T25:00"}, "got '2026-01-01T25:00'"},
      {{"list", "--limit", "0"}, "--limit: must be at least 1, got 0"},
      {{"list", "--limit", "-3"}, "--limit: must be at least 1, got -3"},
      {{"list", "--limit", "many"}, "--limit: expected a whole number of at least 1, got 'many'"},
  };
  for (const Misuse& c : cases) {
    std::vector<std::string> args{"--zoo", zoo(), "--store", store()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string shown;
    for (const auto& a : c.args) shown += " " + a;
    SCOPED_TRACE("xsp" + shown);
    EXPECT_EQ(xsp(args), 2) << err_;
    expect_one_line_error(c.message);
    EXPECT_NE(err_.find("--help`)"), std::string::npos) << "no pointer to --help: " << err_;
    EXPECT_EQ(err_.find("not expected"), std::string::npos) << "CLI11's own words: " << err_;
    EXPECT_EQ(out_, "");
  }
  EXPECT_FALSE(fs::exists(store())) << "a usage error opened (and created) the store";
}

TEST(DidYouMean, SuggestsTheClosestNameOnlyWhenItIsClose) {
  EXPECT_EQ(cli::edit_distance("list", "lst"), 1u);
  EXPECT_EQ(cli::edit_distance("--limit", "--limt"), 1u);
  EXPECT_EQ(cli::edit_distance("evaluate", "EVALUATE"), 0u);
  EXPECT_EQ(cli::edit_distance("", "abc"), 3u);
  const std::vector<std::string> commands{"models", "evaluate", "list", "show", "analyze", "compare"};
  EXPECT_EQ(cli::did_you_mean("lst", commands), "list");
  EXPECT_EQ(cli::did_you_mean("evalute", commands), "evaluate");
  EXPECT_EQ(cli::did_you_mean("anlyze", commands), "analyze");
  EXPECT_EQ(cli::did_you_mean("frobnicate", commands), std::nullopt);
  EXPECT_EQ(cli::did_you_mean("xyz", commands), std::nullopt);
  const std::vector<std::string> options{"--format", "--limit", "--model", "--since", "--store"};
  EXPECT_EQ(cli::did_you_mean("--lim", options), "--limit");   // a prefix of one name
  EXPECT_EQ(cli::did_you_mean("--s", options), std::nullopt);  // a prefix of two, and too short
  EXPECT_EQ(cli::did_you_mean("--modle", options), "--model");
}

TEST_F(Habits, VersionPrintsTheProjectVersionAndWhatThisBuildHas) {
  ASSERT_EQ(xsp({"--version"}), 0) << err_;
  EXPECT_EQ(out_.rfind("xsp " + xsp_version(), 0), 0u) << out_;
  EXPECT_EQ(xsp_version(), "0.1.0");  // CMakeLists.txt project(VERSION): update both together
  EXPECT_NE(out_.find("\npredictors: "), std::string::npos) << out_;
  EXPECT_NE(out_.find("habits-fake"), std::string::npos) << "the registered predictors: " << out_;
  EXPECT_NE(out_.find("\nprofilers: "), std::string::npos) << out_;
  EXPECT_NE(out_.find("\nstores: SQLite"), std::string::npos) << out_;
  EXPECT_EQ(err_, "");
  ASSERT_EQ(xsp({"--help"}), 0);
  EXPECT_NE(out_.find("--version"), std::string::npos) << out_;
}

// --- xsp list -----------------------------------------------------------------------------------------------------

TEST_F(Habits, ListFiltersByModelAndDateAndLimitsToTheNewest) {
  save_listings();  // ids 1..4: ResNet18 Jan, ResNet50 Feb, MobileNet_v2 Mar 1, ResNet18 Mar 5
  EXPECT_EQ(listed({}), (std::vector<std::int64_t>{4, 3, 2, 1}));
  EXPECT_EQ(listed({"--model", "resnet"}), (std::vector<std::int64_t>{4, 2, 1}));
  EXPECT_EQ(listed({"--model", "RESNET18"}), (std::vector<std::int64_t>{4, 1}));
  EXPECT_EQ(listed({"--model", "mobilenet-v2"}), (std::vector<std::int64_t>{3}));  // '-' and '_' alike
  EXPECT_EQ(listed({"--model", "vgg"}), (std::vector<std::int64_t>{}));
  EXPECT_EQ(listed({"--since", "2026-02-01"}), (std::vector<std::int64_t>{4, 3, 2}));
  EXPECT_EQ(listed({"--since", "2026-03-05T12:00"}), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(listed({"--since", "2026-03-05T12:00:01Z"}), (std::vector<std::int64_t>{}));
  EXPECT_EQ(listed({"--limit", "2"}), (std::vector<std::int64_t>{4, 3}));
  EXPECT_EQ(listed({"--model", "resnet", "--limit", "2"}), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(listed({"--model", "resnet", "--since", "2026-01-15", "--limit", "5"}), (std::vector<std::int64_t>{4, 2}));

  ASSERT_EQ(xsp({"--store", store(), "list", "--format", "csv", "--limit", "1"}), 0) << err_;
  const auto csv = lines_of(out_);
  ASSERT_EQ(csv.size(), 2u) << out_;
  EXPECT_EQ(csv[0], "id,created_at,status,model,framework,device,trace_level,batch_sizes,runs");
  EXPECT_EQ(csv[1].rfind("4,2026-03-05T12:00:00Z,complete,ResNet18 1.0.0,libtorch,", 0), 0u) << csv[1];

  ScopedEnv columns("COLUMNS", "200");
  ASSERT_EQ(xsp({"--store", store(), "list", "--limit", "2"}), 0) << err_;
  EXPECT_NE(out_.find("note: the newest 2 of 4 matching evaluations (--limit)"), std::string::npos) << out_;
}

// --- xsp evaluate --format json -----------------------------------------------------------------------------------

TEST_F(Habits, EvaluateJsonIsOneObjectOnStdoutWithTheIdAndHeadline) {
  ASSERT_EQ(evaluate({"--batch-sizes", "1,2", "--format", "json"}), 0) << err_;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(out_)) << out_;  // the whole of stdout is the object
  EXPECT_EQ(j["id"], 1);
  EXPECT_TRUE(std::regex_match(j["uuid"].get<std::string>(), std::regex("[0-9a-f-]{36}"))) << j["uuid"];
  EXPECT_EQ(j["model"]["name"], "habits_model");
  EXPECT_EQ(j["framework"]["name"], "habits-fake");
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["scenario"], "batch-sweep");
  EXPECT_EQ(j["batch_sizes"], nlohmann::json::array({1, 2}));
  ASSERT_EQ(j["runs"].size(), 2u) << j.dump(2);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& run = j["runs"][i];
    EXPECT_EQ(run["batch_size"], static_cast<int>(i + 1));
    const double p50 = run["p50_ms"], p90 = run["p90_ms"], p99 = run["p99_ms"];
    EXPECT_GT(p50, 0);
    EXPECT_LE(p50, p90);
    EXPECT_LE(p90, p99);
    EXPECT_GT(run["throughput_samples_per_s"].get<double>(), 0);
  }
  // Progress went to stderr, not into the JSON.
  EXPECT_NE(err_.find("xsp: progress: "), std::string::npos) << err_;

  // The text output names the id and where to look next.
  ASSERT_EQ(evaluate({"--no-progress"}), 0) << err_;
  const auto text = lines_of(out_);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back().rfind("stored as evaluation 2 in " + store() + "; see: xsp show 2", 0), 0u) << text.back();
  EXPECT_EQ(err_, "");
}

// --- Progress when stderr is not a terminal -----------------------------------------------------------------------

TEST_F(Habits, PipedProgressIsALinePerBatchSizeStartedAndFinished) {
  ASSERT_EQ(evaluate({"--batch-sizes", "1,4"}), 0) << err_;  // the harness captures stderr: not a terminal
  const std::regex done(R"(xsp: progress: habits_model bs (\d+) M: done in \d+\.\d s)");
  std::vector<std::string> events;
  for (const auto& line : lines_of(err_)) {
    std::smatch m;
    if (line == "xsp: progress: habits_model bs 1 M: started" || line == "xsp: progress: habits_model bs 4 M: started")
      events.push_back("start " + line.substr(std::string("xsp: progress: habits_model bs ").size(), 1));
    else if (std::regex_match(line, m, done))
      events.push_back("done " + m[1].str());
    else
      ADD_FAILURE() << "unexpected stderr line: " << line;
  }
  EXPECT_EQ(events, (std::vector<std::string>{"start 1", "done 1", "start 4", "done 4"})) << err_;
  EXPECT_EQ(out_.find('\r'), std::string::npos);

  cli::ProgressBar off(false, false);  // --no-progress: nothing at all
  ::testing::internal::CaptureStderr();
  off.update(Progress{1, 10, "x bs 1 M: warm-up"});
  off.finish();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(Habits, TheTerminalBarIsClearedBeforeTheSummary) {
  ::testing::internal::CaptureStderr();
  {
    cli::ProgressBar bar(true, true);
    bar.update(Progress{5, 10, "m bs 1 M: measuring"});
    bar.finish();
    bar.finish();  // idempotent: one clear
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("\r[###############...............]  50% m bs 1 M: measuring", 0), 0u) << err;
  EXPECT_EQ(count_of(err, "\r\033[K"), 1u) << err;
  EXPECT_EQ(err.substr(err.size() - 4), "\r\033[K") << "the line is cleared last";
}

// --- Tables that fit the terminal ---------------------------------------------------------------------------------

TEST(TableWidth, ColumnsAreLeftOutByPriorityAndNamedInANote) {
  Table t;
  t.id = "T";
  t.title = "a table wider than the terminal, with a title long enough to need wrapping at forty columns";
  t.columns = {{"key"}, {"kernel", "", true, false, 0}, {"a_ms"}, {"b_ms"}, {"c_ms", "", true, false, 5}};
  t.columns[1].symbol = true;
  t.rows.push_back({Cell("row-1"),
                    Cell("void at::native::(anonymous namespace)::very_long_kernel_name_for_testing<float, 4>(int)"),
                    Cell(1.0), Cell(2.0), Cell(3.0)});
  t.notes.push_back("values from a hand-made row");
  const std::string wide = render_text(t, 3, 0);
  EXPECT_EQ(wide, render_text(t)) << "0 = no limit, as before";
  EXPECT_EQ(wide.find("left out"), std::string::npos);

  const std::string narrow = render_text(t, 3, 40);
  for (const auto& line : lines_of(narrow)) EXPECT_LE(width_of(line), 40u) << line;
  const auto lines = lines_of(narrow);
  std::size_t header = 0;
  while (header < lines.size() && lines[header].rfind("key", 0) != 0) ++header;
  ASSERT_LT(header, lines.size()) << narrow;
  // c_ms has the higher priority: b_ms and a_ms go first (rightmost first), the key never.
  EXPECT_NE(lines[header].find("c_ms"), std::string::npos) << narrow;
  EXPECT_EQ(lines[header].find("b_ms"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("note: 2 columns left out to fit 40"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("a_ms, b_ms; see"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("--format csv"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("row-1"), std::string::npos) << narrow;

  // Wide enough for everything once the symbol is cut to 24 columns: nothing left out.
  const std::string symbol_cut = render_text(t, 3, 66);
  for (const auto& line : lines_of(symbol_cut)) EXPECT_LE(width_of(line), 66u) << line;
  EXPECT_EQ(symbol_cut.find("left out"), std::string::npos) << symbol_cut;
  EXPECT_NE(symbol_cut.find("_kernel_name_for_testing<…>(…)  1.000  2.000  3.000"), std::string::npos) << symbol_cut;
}

TEST_F(Habits, ListFollowsColumnsFromTheEnvironment) {
  save_listings();
  {
    ScopedEnv columns("COLUMNS", "60");
    ASSERT_EQ(xsp({"--store", store(), "list"}), 0) << err_;
  }
  for (const auto& line : lines_of(out_)) EXPECT_LE(width_of(line), 60u) << line;
  EXPECT_NE(out_.find("left out to fit 60 terminal columns: "), std::string::npos) << out_;
  {
    ScopedEnv columns("COLUMNS", nullptr);  // captured stdout is no terminal: no limit
    ASSERT_EQ(xsp({"--store", store(), "list"}), 0) << err_;
  }
  EXPECT_EQ(out_.find("left out"), std::string::npos) << out_;
}

// Runs `xsp ARGS` in a child on a pseudo-terminal `columns` wide (COLUMNS unset: the window size is what counts) and
// returns what it printed; fails the test after 30 s.
std::string on_pty(const std::vector<std::string>& args, unsigned short columns) {
  winsize size{};
  size.ws_col = columns;
  size.ws_row = 50;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &size);
  if (pid == 0) {
    ::unsetenv("COLUMNS");
    std::vector<const char*> argv{"xsp"};
    for (const auto& a : args) argv.push_back(a.c_str());
    const int rc = cli::run_cli(static_cast<int>(argv.size()), argv.data());
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(rc);
  }
  EXPECT_GT(pid, 0) << "forkpty failed";
  if (pid <= 0) return {};
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO: the child closed the terminal
    out.append(buf, static_cast<std::size_t>(n));
  }
  if (std::chrono::steady_clock::now() >= deadline) {
    ::kill(pid, SIGKILL);
    ADD_FAILURE() << "xsp on a pty did not finish in 30 s";
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  return out;
}

TEST_F(Habits, TablesFitARealTerminalOf80And200Columns) {
  save_listings();
  ASSERT_EQ(evaluate({"--batch-sizes", "1,2", "--no-progress"}), 0) << err_;  // id 5, for analyze
  for (const unsigned short columns : {80, 200}) {
    SCOPED_TRACE(std::to_string(columns) + " columns");
    for (const std::vector<std::string>& args : {std::vector<std::string>{"--store", store(), "list"},
                                                 std::vector<std::string>{"--store", store(), "analyze", "5"},
                                                 std::vector<std::string>{"--store", store(), "show", "5"}}) {
      const std::string out = on_pty(args, columns);
      const auto lines = lines_of(out);
      ASSERT_GT(lines.size(), 3u) << out;
      for (const auto& line : lines) EXPECT_LE(width_of(line), columns) << line;
      if (args[2] == "list") {
        const bool has_header = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
          return l.rfind("id  created_at", 0) == 0;  // the key column first, the next one kept too
        });
        EXPECT_TRUE(has_header) << out;
        EXPECT_NE(out.find("ResNet18 1.0.0"), std::string::npos) << out;
        EXPECT_EQ(out.find("left out") != std::string::npos, columns == 80) << out;
      }
    }
  }
}

// --- xsp show -----------------------------------------------------------------------------------------------------

TEST_F(Habits, ShowSaysEachFactOnce) {
  {
    auto s = Store::open(store());
    EvaluationRecord r;
    r.model_name = "ResNet18";
    r.model_version = "1.0.0";
    r.framework_name = "libtorch";
    r.framework_version = "1.13.0";
    r.batch_sizes = {1, 2};
    r.manifest_yaml =
        "name: ResNet18\nversion: 1.0.0\ndescription: random weights\nframework:\n  name: libtorch\n"
        "  version: \">=1.0\"\nmodel:\n  graph_path: r.pt\n  checksum: sha256:" +
        std::string(64, 'a') +
        "\ninputs:\n  - type: tensor\n"
        "    element_type: float32\n    dimensions: [4]\noutputs:\n  - type: classification\n"
        "attributes:\n  weights: random (seed 0)\n";
    r.settings = nlohmann::json::parse(R"({"measurement": {"min_batches": 10},
        "request": {"measurement": {"min_batches": 10}, "model": "resnet18"},
        "sample_outputs": {"1": [{"labels": ["tench"]}]}})");
    r.system = nlohmann::json::parse(R"({"framework": {"name": "libtorch", "version": "1.13.0",
        "threads": {"intra_op": 4, "inter_op": 2}, "backends": {"MKL": "available", "OpenMP": "available"}}})");
    MachineState start;
    start.nvml_status = "absent (libnvidia-ml.so.1 not found)";
    start.cpu.logical_cpus = 2;
    for (int b : {1, 2}) {
      RunRecord run;
      run.batch_size = b;
      run.iterations = 10;
      run.predict_latency_ns = std::vector<double>(10, 1e6 * b);
      run.machine_state = {{"start", to_json(start)}, {"end", to_json(start)}};
      r.runs.push_back(run);
    }
    s->save(r);
  }
  ASSERT_EQ(xsp({"--store", store(), "show", "1"}), 0) << err_;
  EXPECT_EQ(count_of(out_, "nvml absent"), 1u) << out_;
  EXPECT_EQ(count_of(out_, "measurement:"), 1u) << out_;
  EXPECT_EQ(count_of(out_, "min_batches"), 1u) << out_;
  EXPECT_EQ(out_.find("the run's warnings"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("WARNING"), std::string::npos) << out_;
  EXPECT_NE(out_.find("\n  sample_outputs:  (random weights: labels are not meaningful)\n    1:\n"), std::string::npos)
      << out_;
  EXPECT_NE(out_.find("framework: libtorch 1.13.0\n  intra-op threads  4\n  inter-op threads  2\n  MKL   "),
            std::string::npos)
      << out_;
  EXPECT_NE(out_.find("\n  OpenMP            available\n"), std::string::npos) << out_;
}

TEST_F(Habits, ShowOfAnOldEvaluationWithoutFrameworkFactsPrintsNone) {
  ASSERT_EQ(evaluate({"--no-progress"}), 0) << err_;  // the fake predictor records no threads or backends
  ASSERT_EQ(xsp({"--store", store(), "show", "1"}), 0) << err_;
  EXPECT_NE(out_.find("framework: habits-fake 1.0.0\n"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("intra-op threads"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("random weights"), std::string::npos) << out_;
}

}  // namespace
}  // namespace xsp
