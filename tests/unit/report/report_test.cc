// The HTML report's content, without a browser (tests/browser/report_test.sh renders it in Chromium): the timeline
// of the recorded H200 kernel-level run holds exactly the spans under its last predict span, each chart's expected
// marks follow its data, the page references nothing outside itself, and text from the record is escaped.
#include "xsp/report/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "../analysis/trace_builder.h"
#include "../store/temp_dir.h"
#include "xsp/serve/serving.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;

namespace xsp {
namespace {

EvaluationRecord gpu_fixture(const testing::TempDir& dir) {
  const fs::path copy = dir.path() / "gpu.db";  // never open the committed fixture in place: opening may migrate it
  fs::copy_file(fs::path(XSP_TEST_FIXTURES) / "gpu" / "resnet18_bs1_kernel_h200.db", copy);
  auto record = Store::open(copy, StoreAccess::kRead)->load(1);
  EXPECT_TRUE(record.has_value());
  return *record;
}

const RunRecord& deepest_run(const EvaluationRecord& r) {
  const RunRecord* best = &r.runs.front();
  for (const RunRecord& run : r.runs)
    if (run.trace_level > best->trace_level) best = &run;
  return *best;
}

TEST(Report, TimelineHoldsExactlyTheSpansOfTheLastMeasuredBatch) {
  testing::TempDir dir;
  const EvaluationRecord r = gpu_fixture(dir);
  const RunRecord& run = deepest_run(r);
  ASSERT_EQ(run.trace_level, TraceLevel::kKernel);

  // The known answer, computed here independently: the last predict span and everything whose parents reach it.
  const Span* predict = nullptr;
  for (const Span& s : run.trace.spans)
    if (s.level == Level::kModel && s.name == "predict" && (!predict || s.start_ns > predict->start_ns)) predict = &s;
  ASSERT_NE(predict, nullptr);
  std::unordered_map<SpanId, const Span*> by_id;
  for (const Span& s : run.trace.spans) by_id[s.id] = &s;
  std::size_t under = 0;
  std::set<std::string> levels;
  for (const Span& s : run.trace.spans) {
    for (const Span* p = &s; p != nullptr;) {
      if (p->id == predict->id) {
        ++under;
        levels.insert(std::string(to_string(s.level)));
        break;
      }
      auto it = by_id.find(p->parent_id);
      p = it == by_id.end() ? nullptr : it->second;
    }
  }
  ASSERT_GT(under, 10u);
  EXPECT_TRUE(levels.count("kernel")) << "the batch's kernels are in the timeline";
  EXPECT_TRUE(levels.count("framework"));

  const auto chart = timeline_chart(run, "t", 100000);
  ASSERT_TRUE(chart.has_value());
  EXPECT_TRUE(chart->timeline);
  const auto& values = chart->spec["data"]["values"];
  EXPECT_EQ(values.size(), under);
  EXPECT_EQ(chart->expected_marks, static_cast<long>(under));
  const auto& layers = chart->spec["layer"];
  ASSERT_EQ(layers.size(), 3u);  // boxes, their names, launch → kernel links
  EXPECT_EQ(layers[0]["name"], "main");
  EXPECT_EQ(layers[0]["params"][0]["bind"], "scales");  // zoom and pan
  EXPECT_EQ(layers[1]["mark"]["type"], "text");
  EXPECT_EQ(layers[1]["encoding"]["text"]["field"], "name");
  EXPECT_EQ(chart->spec["params"][0]["name"], "search");
  bool predict_at_zero = false, gpu_lane = false;
  for (const auto& v : values) {
    EXPECT_LE(v["start_ms"].get<double>(), v["end_ms"].get<double>());
    if (v["name"] == "predict") {
      predict_at_zero = v["start_ms"].get<double>() == 0.0;
      EXPECT_TRUE(v["lane"].get<std::string>().ends_with(" · 0")) << v["lane"];
    }
    if (v["level"] == "kernel") {
      EXPECT_EQ(v["lane"].get<std::string>().rfind("GPU ", 0), 0u) << "kernels sit on their GPU stream's lane";
      gpu_lane = true;
    }
  }
  EXPECT_TRUE(predict_at_zero);
  EXPECT_TRUE(gpu_lane);
  // Every launch → kernel link goes from a host thread's lane to a GPU stream's lane.
  const auto& flows = layers[2]["data"]["values"];
  EXPECT_GT(flows.size(), 10u);
  for (const auto& f : flows) {
    EXPECT_EQ(f["from_lane"].get<std::string>().rfind("thread ", 0), 0u) << f;
    EXPECT_EQ(f["to_lane"].get<std::string>().rfind("GPU ", 0), 0u) << f;
    EXPECT_LE(f["launch_ms"].get<double>(), f["kernel_ms"].get<double>()) << "a kernel starts after its launch";
  }

  // A cap keeps the longest spans.
  const auto capped = timeline_chart(run, "t", 5);
  ASSERT_TRUE(capped.has_value());
  EXPECT_EQ(capped->spec["data"]["values"].size(), 5u);
  bool has_predict = false;
  for (const auto& v : capped->spec["data"]["values"]) has_predict = has_predict || v["name"] == "predict";
  EXPECT_TRUE(has_predict) << "the predict span is the longest of its batch";
}

// Lanes on a hand-made trace with known nesting: one per thread and depth, by intervals; kernels on their stream.
TEST(Report, TimelineLanesFollowNestingPerTrack) {
  Trace trace;
  const Track t1 = Track::host_thread(11), t2 = Track::host_thread(22), gpu = Track::stream(0, 7);
  auto add = [&](SpanId id, SpanId parent, Level level, const char* name, std::int64_t start, std::int64_t end,
                 Track track, std::uint64_t correlation = 0) {
    Span s;
    s.id = id;
    s.parent_id = parent;
    s.level = level;
    s.name = name;
    s.start_ns = start;
    s.end_ns = end;
    s.track = track;
    s.correlation_id = correlation;
    trace.spans.push_back(s);
  };
  add(1, kNoSpan, Level::kModel, "predict", 1000, 2000, t1);
  add(2, 1, Level::kFramework, "aten::linear", 1100, 1500, t1);
  add(3, 2, Level::kFramework, "aten::addmm", 1200, 1400, t1, 42);  // an op may carry its launch's id too
  add(4, 3, Level::kLibrary, "cudaLaunchKernel", 1250, 1260, t1, 42);
  add(5, 1, Level::kFramework, "aten::relu", 1600, 1900, t1);
  add(6, 1, Level::kFramework, "worker op", 1100, 1300, t2);  // another thread: its own lanes from depth 0
  add(7, 4, Level::kKernel, "gemm", 1300, 1450, gpu, 42);
  add(8, kNoSpan, Level::kModel, "other batch", 5000, 6000, t1);  // not under the root: left out
  const auto chart = span_timeline_chart(trace, trace.spans[0], "t", "e", 100);
  ASSERT_TRUE(chart.has_value());
  std::map<std::string, std::string> lane;
  for (const auto& v : chart->spec["data"]["values"]) lane[v["name"]] = v["lane"];
  EXPECT_EQ(lane.size(), 7u);
  EXPECT_EQ(lane["predict"], "thread 11 · 0");
  EXPECT_EQ(lane["aten::linear"], "thread 11 · 1");
  EXPECT_EQ(lane["aten::addmm"], "thread 11 · 2");
  EXPECT_EQ(lane["cudaLaunchKernel"], "thread 11 · 3");
  EXPECT_EQ(lane["aten::relu"], "thread 11 · 1");
  EXPECT_EQ(lane["worker op"], "thread 22");  // one depth on its thread: no depth suffix
  EXPECT_EQ(lane["gemm"], "GPU 0 stream 7");
  // Lane order: the root's thread by depth, the other threads, then the streams.
  const auto& order = chart->spec["layer"][0]["encoding"]["y"]["sort"];
  EXPECT_EQ(order, nlohmann::json({"thread 11 · 0", "thread 11 · 1", "thread 11 · 2", "thread 11 · 3", "thread 22",
                                   "GPU 0 stream 7"}));
  const auto& flows = chart->spec["layer"][2]["data"]["values"];
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0]["from_lane"], "thread 11 · 3");  // the launch call itself, not the op carrying its id
  EXPECT_EQ(flows[0]["to_lane"], "GPU 0 stream 7");
  EXPECT_DOUBLE_EQ(flows[0]["launch_ms"].get<double>(), 250e-6);
  EXPECT_DOUBLE_EQ(flows[0]["kernel_ms"].get<double>(), 300e-6);
  // The root alone is no timeline.
  EXPECT_FALSE(span_timeline_chart(trace, trace.spans[7], "t", "e", 100).has_value());
}

// A hand-made two-point sweep of xsp bench-serve: point p (0, 1) has 3 requests, request i of it sent at 1 s + i s,
// its first token (10 + 10 p + i) ms later and then 3 more tokens 2 ms apart (4 output tokens).
serve::ServingStudy serving_sweep() {
  serve::ServingStudy study;
  study.sweep = serve::Sweep{"request-rate", {2, 4}};
  for (int p = 0; p < 2; ++p) {
    serve::ServingPoint point;
    point.parameter = "request-rate";
    point.value = p == 0 ? 2 : 4;
    point.run.start_ns = 1'000'000'000;
    for (int i = 0; i < 3; ++i) {
      serve::RequestResult r;
      r.request_id = "p" + std::to_string(p) + "r" + std::to_string(i);
      r.arrival_ns = r.sent_ns = 1'000'000'000LL * (1 + i);
      const std::int64_t first = r.sent_ns + (10 + 10 * p + i) * 1'000'000LL;
      r.token_ns = {first, first + 2'000'000, first + 4'000'000, first + 6'000'000};
      r.done_ns = r.token_ns.back();
      r.output_tokens = 4;
      r.prompt_tokens = 16;
      r.usage_reported = true;
      r.ok = true;
      point.run.requests.push_back(r);
    }
    point.run.end_ns = point.run.requests.back().done_ns;
    point.run.issue_window_ns = point.run.end_ns - point.run.start_ns;
    point.summary = serve::summarize(point.run, study.bounds);
    study.points.push_back(std::move(point));
  }
  return study;
}

// A serving evaluation's report: a sentence per point, the S1–S3 tables, TTFT/TPOT/ITL/E2E distributions per point
// from its requests, and the sweep's throughput-latency curve with a point per (sweep value, figure).
TEST(Report, ServingEvaluationShowsItsPointsDistributionsAndSweepCurve) {
  EvaluationRecord r = serve::serving_record(serving_sweep());
  r.id = 7;
  ReportEvaluation e{r, {}};
  const std::vector<ReportChart> charts = report_charts({e}, {});
  ASSERT_EQ(charts.size(), 9u);  // 4 distributions × 2 points, the sweep curve
  // Point 1's TTFT: 20, 21, 22 ms; its TPOT: 2 ms each; its ITL: 9 gaps of 2 ms; its E2E 26, 27, 28 ms.
  const ReportChart& ttft1 = charts[4];
  EXPECT_NE(ttft1.title.find("TTFT at request-rate 4: 3 values, p50 21"), std::string::npos) << ttft1.title;
  std::vector<double> ms;
  for (const auto& v : ttft1.spec["data"]["values"]) ms.push_back(v["ms"].get<double>());
  EXPECT_EQ(ms, (std::vector<double>{20, 21, 22}));
  EXPECT_EQ(charts[6].spec["data"]["values"].size(), 9u);  // point 1's ITL
  EXPECT_NE(charts[7].title.find("E2E at request-rate 4: 3 values, p50 27"), std::string::npos) << charts[7].title;
  const ReportChart& sweep = charts[8];
  ASSERT_EQ(sweep.spec["data"]["values"].size(), 8u);
  EXPECT_EQ(sweep.expected_marks, 8);
  for (const auto& v : sweep.spec["data"]["values"]) {
    const serve::ServingSummary& s = serving_sweep().points[v["order"].get<int>()].summary;
    EXPECT_DOUBLE_EQ(v["output_tokens_per_s"].get<double>(), s.output_tokens_per_s);
    if (v["figure"] == "TTFT p50") EXPECT_DOUBLE_EQ(v["ms"].get<double>(), v["order"] == 0 ? 11.0 : 21.0);
    if (v["figure"] == "TPOT p99") EXPECT_DOUBLE_EQ(v["ms"].get<double>(), 2.0);
    EXPECT_EQ(v["request-rate"], v["order"] == 0 ? 2 : 4);
  }
  if (!report_assets_available()) GTEST_SKIP() << "built without tools/vega/node_modules: the page is not rendered";
  const std::string html = render_report({e}, {});
  EXPECT_NE(html.find("At request-rate 2: 3 of 3 requests"), std::string::npos);
  EXPECT_NE(html.find("S1 Serving summary"), std::string::npos);
  EXPECT_NE(html.find("S3 Failed requests by reason"), std::string::npos);
  EXPECT_EQ(html.find("Summary tables: runs"), std::string::npos);  // no runs: no empty per-batch table
}

// With the server profiled (a server trace window as the evaluation's run), the slowest first token of point 0
// (request p0r2: sent at 3 s, its first token 12 ms later) is read out and drawn as a timeline of exactly the server
// spans that overlap it, clipped to it.
TEST(Report, TheSlowestTokenIsDrawnWithTheServersSpansDuringIt) {
  EvaluationRecord r = serve::serving_record(serving_sweep());
  r.id = 8;
  RunRecord server;
  server.trace_level = TraceLevel::kKernel;
  constexpr std::int64_t kS = 1'000'000'000, kMs = 1'000'000;
  const Track thread = Track::host_thread(10), stream = Track::stream(0, 7);
  const std::vector<Tag> nvtx = {{"nvtx", "push"}};
  testing::TraceBuilder b;
  const SpanId app = b.add(Level::kApplication, "server", 0, 10 * kS, kNoSpan, {}, thread);
  const SpanId step = b.add(Level::kModel, "decode_step", 3 * kS - 2 * kMs, 3 * kS + 5 * kMs, app, nvtx, thread);
  b.add(Level::kKernel, "gemm", 3 * kS + 1 * kMs, 3 * kS + 2 * kMs, step, {}, stream);
  b.add(Level::kModel, "decode_step", 3 * kS + 5 * kMs, 3 * kS + 20 * kMs, app, nvtx, thread);
  b.add(Level::kModel, "decode_step", 5 * kS, 5 * kS + 10 * kMs, app, nvtx, thread);  // outside the interval
  server.trace = std::move(b.trace);
  r.runs.push_back(std::move(server));
  ReportEvaluation e{r, {}};
  const std::vector<ReportChart> charts = report_charts({e}, {});
  const ReportChart* first_token = nullptr;
  for (const ReportChart& c : charts)
    if (c.title.rfind("The slowest first token of request p0r2 (12.0 ms)", 0) == 0) first_token = &c;
  ASSERT_NE(first_token, nullptr);
  EXPECT_TRUE(first_token->timeline);
  std::map<std::string, std::pair<double, double>> drawn;  // name@start → (start, end) ms from the send
  for (const auto& v : first_token->spec["data"]["values"])
    drawn[v["name"].get<std::string>() + "@" + std::to_string(v["start_ms"].get<double>())] = {
        v["start_ms"].get<double>(), v["end_ms"].get<double>()};
  EXPECT_EQ(drawn.size(), 4u);  // server, both decode steps that overlap it, the kernel; not the one at 5 s
  EXPECT_EQ(first_token->expected_marks, 4);
  EXPECT_EQ(drawn.at("server@0.000000"), (std::pair<double, double>{0, 12}));      // clipped to the interval
  EXPECT_EQ(drawn.at("decode_step@0.000000"), (std::pair<double, double>{0, 5}));  // began before the send
  EXPECT_EQ(drawn.at("gemm@1.000000"), (std::pair<double, double>{1, 2}));
  EXPECT_EQ(drawn.at("decode_step@5.000000"), (std::pair<double, double>{5, 12}));  // ends after the first token
  if (!report_assets_available()) GTEST_SKIP() << "built without tools/vega/node_modules: the page is not rendered";
  const std::string html = render_report({e}, {});
  EXPECT_NE(html.find("The slowest first token on the server"), std::string::npos);
  EXPECT_NE(html.find("the max TTFT of request p0r2 (12 ms) overlaps"), std::string::npos);
}

TEST(Report, ChartsExpectOneMarkPerRowTheyCanDraw) {
  testing::TempDir dir;
  ReportEvaluation e{gpu_fixture(dir), {}};
  const auto charts = report_charts({e}, {});
  ASSERT_GE(charts.size(), 5u);
  std::set<std::string> ids;
  for (const ReportChart& c : charts) {
    SCOPED_TRACE(c.title);
    EXPECT_TRUE(ids.insert(c.element_id).second) << "element ids are unique";
    EXPECT_FALSE(c.spec.is_null());
    if (c.expected_marks < 0) continue;
    // The main unit is named, and it has at most as many marks as data rows.
    const nlohmann::json* u = &c.spec;
    while (u->contains("layer")) u = &(*u)["layer"][0];
    const auto& unit = *u;
    EXPECT_EQ(unit["name"], "main");
    const auto& data = unit.contains("data") ? unit["data"] : c.spec["data"];
    EXPECT_LE(c.expected_marks, static_cast<long>(data["values"].size()));
    EXPECT_GT(c.expected_marks, 0);
  }
}

TEST(Report, ThePageIsSelfContainedAndEscapesRecordText) {
  if (!report_assets_available()) GTEST_SKIP() << "built without tools/vega/node_modules";
  testing::TempDir dir;
  ReportEvaluation e{gpu_fixture(dir), {}};
  e.record.model_name = "<script>alert('x')</script>";
  std::size_t count = 0;
  const std::string html = render_report({e}, {}, &count);
  EXPECT_GT(count, 5u);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos) << "record text reached the page unescaped";
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  // The licences of the inlined libraries are in the file.
  EXPECT_NE(html.find("vega-embed 7.3.0"), std::string::npos);
  EXPECT_NE(html.find("University of Washington Interactive Data Lab"), std::string::npos);
  EXPECT_NE(html.find("Redistribution and use in source and binary forms"), std::string::npos);
  // The chart data block parses back and names a div for each chart.
  const std::string open = "<script id=\"xsp-charts\" type=\"application/json\">";
  const auto at = html.find(open);
  ASSERT_NE(at, std::string::npos);
  const auto end = html.find("</script>", at);
  const auto charts = nlohmann::json::parse(html.substr(at + open.size(), end - at - open.size()));
  ASSERT_EQ(charts.size(), count);
  for (const auto& c : charts)
    EXPECT_NE(html.find("id=\"" + c["id"].get<std::string>() + "\""), std::string::npos) << c["id"];
  EXPECT_THROW(render_report({}, {}), std::invalid_argument);
}

// An analysis section holds a table (and a chart); the analyses without rows are one list grouped by why, each id
// once; the headline comes first.
TEST(Report, NoPlaceholderSections) {
  if (!report_assets_available()) GTEST_SKIP() << "built without tools/vega/node_modules";
  testing::TempDir dir;
  const std::string html = render_report({ReportEvaluation{gpu_fixture(dir), {}}}, {});
  std::size_t articles = 0;
  for (std::size_t at = html.find("<article class=\"analysis\""); at != std::string::npos;
       at = html.find("<article class=\"analysis\"", at + 1)) {
    ++articles;
    const std::string article = html.substr(at, html.find("</article>", at) - at);
    EXPECT_NE(article.find("<table>"), std::string::npos) << article.substr(0, 200);
  }
  EXPECT_GT(articles, 5u);
  const auto list = html.find("<div class=\"not-shown\">");
  ASSERT_NE(list, std::string::npos) << "the fixture has no counter run: A9, A12, A14 ... are listed";
  const std::string not_shown = html.substr(list, html.find("</div>", list) - list);
  EXPECT_NE(not_shown.find("A9"), std::string::npos);
  EXPECT_EQ(not_shown.find("A9"), not_shown.rfind("A9")) << "each id once";
  // A classification run is neither a generation nor a serving evaluation: their analyses are not even listed.
  EXPECT_EQ(not_shown.find("G1"), std::string::npos);
  EXPECT_EQ(not_shown.find("serving-tail"), std::string::npos);
  const auto headline = html.find("<div class=\"headline\">");
  ASSERT_NE(headline, std::string::npos);
  EXPECT_LT(headline, html.find("<article class=\"analysis\""));
  EXPECT_NE(html.find("Top kernel"), std::string::npos);  // the fixture is a kernel run
}

}  // namespace
}  // namespace xsp
