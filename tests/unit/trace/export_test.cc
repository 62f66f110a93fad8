#include "xsp/trace/export.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <streambuf>

#include "test_util.h"
#include "xsp/trace/assembler.h"

namespace xsp {
namespace {

using nlohmann::json;
using testing::make_span;

Trace sample_trace() {
  Trace t;
  t.clock.unix_offset_ns = 1'700'000'000'000'000'000;
  t.counters["cupti.dropped_records"] = 3;
  t.spans = {make_span(1, Level::kApplication, 1'000, 101'000, 1),
             make_span(2, Level::kModel, 1'500, 90'250, 1),
             make_span(3, Level::kSystem, 2'000, 2'750, 1, kNoSpan, /*corr=*/7),
             make_span(4, Level::kKernel, 50'000, 60'001, 99, kNoSpan, /*corr=*/7),
             make_span(5, Level::kKernel, 61'000, 62'000, 99),
             make_span(6, Level::kFramework, 1'800, 3'000, 1, /*parent=*/2),
             make_span(7, Level::kKernel, 55'000, 58'000, 99)};
  t.spans[1].tags = {{"batch_size", 32}, {"stage", "predict"}, {"batch", 0}};
  t.spans[2].parent_id = 6;  // the op issued the call (as the external correlation record says)
  t.spans[2].tags = {{"cbid", 211}, {"domain", "runtime"}};
  // Kernels 4 and 5 on GPU 0 stream 99 (99 is also a host thread id elsewhere: still another track); 7 overlaps 4
  // on GPU 1 stream 7, so one track per stream keeps both.
  t.spans[3].track = Track::stream(0, 99);
  t.spans[3].tags = {{"kind", "kernel"},
                     {"grid", {128, 2, 1}},
                     {"block", {256, 1, 1}},
                     {"registers_per_thread", 32},
                     {"static_shared_bytes", 1024},
                     {"dynamic_shared_bytes", 0},
                     {"stream", 99},
                     {"device", 0}};
  t.spans[4].track = Track::stream(0, 99);
  t.spans[4].tags = {{"kind", "memcpy"}, {"bytes", 4096}, {"bandwidth_bytes_per_s", std::int64_t{4'096'000'000}}};
  t.spans[6].track = Track::stream(1, 7);
  t.spans[6].tags = {{"kind", "kernel"}, {"achieved_occupancy", 0.625}};
  assemble(t);
  return t;
}

// Dump and parse again so the test sees exactly what a viewer would read.
json round_trip(const json& j) { return json::parse(j.dump()); }

TEST(ChromeTrace, Structure) {
  const Trace t = sample_trace();
  TraceResource res;
  res.service_name = "xsp-test";
  res.host_name = "node7";
  res.attributes = {{"model", "resnet50"}, {"batch_size", 32}};
  res.device_names = {{0, "NVIDIA H100"}};
  const json j = round_trip(to_chrome_trace(t, res));

  EXPECT_EQ(j.at("displayTimeUnit"), "ns");
  const json& events = j.at("traceEvents");
  ASSERT_TRUE(events.is_array());
  std::map<std::string, int> by_ph;
  std::map<SpanId, json> complete;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> thread_names;  // (pid, tid)
  std::map<std::uint64_t, std::string> process_names;
  for (const json& e : events) {
    ++by_ph[e.at("ph").get<std::string>()];
    // Every id fits 32 bits: Perfetto's JSON importer drops larger tids and JavaScript viewers round them.
    EXPECT_LT(e.at("pid").get<std::uint64_t>(), 1ULL << 32) << e;
    if (e.contains("tid")) EXPECT_LT(e.at("tid").get<std::uint64_t>(), 1ULL << 32) << e;
    if (e.at("ph") == "X" && e.at("args").contains("xsp.span_id")) {
      complete[e.at("args").at("xsp.span_id").get<SpanId>()] = e;
    }
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      thread_names[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
    }
    if (e.at("ph") == "M" && e.at("name") == "process_name") process_names[e.at("pid")] = e.at("args").at("name");
  }
  EXPECT_EQ(by_ph["X"], 8);  // 7 spans + ProfilerStep#0
  EXPECT_EQ(by_ph["s"], 1);  // kernel 4 was placed by correlation; 5 and 7 were not
  EXPECT_EQ(by_ph["f"], 1);
  // One process per GPU, named, and the host's; one thread per host thread and per stream.
  EXPECT_EQ(process_names.size(), 3u);
  EXPECT_EQ(process_names.at(kChromeHostPid), "xsp-test on node7");
  EXPECT_EQ(process_names.at(0), "GPU 0: NVIDIA H100");
  EXPECT_EQ(process_names.at(1), "GPU 1");
  EXPECT_EQ(thread_names.size(), 3u);
  EXPECT_EQ(thread_names.at({kChromeHostPid, 1}), "thread 1");
  EXPECT_EQ(thread_names.at({0, 99}), "stream 99");
  EXPECT_EQ(thread_names.at({1, 7}), "stream 7");

  const json& model = complete.at(2);
  EXPECT_EQ(model.at("name"), "model#2");
  EXPECT_EQ(model.at("cat"), "user_annotation");
  EXPECT_EQ(model.at("args").at("xsp.level"), "model");
  EXPECT_DOUBLE_EQ(model.at("ts").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(model.at("dur").get<double>(), 88.75);
  EXPECT_EQ(model.at("pid"), kChromeHostPid);
  EXPECT_EQ(model.at("tid"), 1);
  EXPECT_EQ(model.at("args").at("batch_size"), 32);  // a number, not "32"
  EXPECT_EQ(model.at("args").at("stage"), "predict");
  EXPECT_EQ(model.at("args").at("xsp.parent_id"), 1);
  EXPECT_EQ(model.at("args").at("xsp.parent_rule"), "containment");

  const json& op = complete.at(6);
  EXPECT_EQ(op.at("cat"), "cpu_op");
  EXPECT_EQ(op.at("args").at("External id"), 6);
  const json& call = complete.at(3);
  EXPECT_EQ(call.at("cat"), "cuda_runtime");
  EXPECT_EQ(call.at("args").at("correlation"), 7);
  EXPECT_EQ(call.at("args").at("External id"), 6);
  EXPECT_EQ(call.at("args").at("cbid"), 211);

  const json& kernel = complete.at(4);
  EXPECT_EQ(kernel.at("cat"), "kernel");
  EXPECT_EQ(kernel.at("pid"), 0);
  EXPECT_EQ(kernel.at("tid"), 99);
  EXPECT_DOUBLE_EQ(kernel.at("ts").get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(kernel.at("dur").get<double>(), 10.001);
  EXPECT_EQ(kernel.at("args").at("xsp.parent_rule"), "correlation");
  EXPECT_EQ(kernel.at("args").at("correlation"), 7);
  EXPECT_EQ(kernel.at("args").at("External id"), 6);  // through its launch, to the op
  EXPECT_EQ(kernel.at("args").at("grid"), json::array({128, 2, 1}));
  EXPECT_EQ(kernel.at("args").at("block"), json::array({256, 1, 1}));
  EXPECT_EQ(kernel.at("args").at("registers per thread"), 32);
  EXPECT_EQ(kernel.at("args").at("shared memory"), 1024);
  EXPECT_EQ(kernel.at("args").at("stream"), 99);
  const json& copy = complete.at(5);
  EXPECT_EQ(copy.at("cat"), "gpu_memcpy");
  EXPECT_EQ(copy.at("args").at("bytes"), 4096);
  EXPECT_DOUBLE_EQ(copy.at("args").at("memory bandwidth (GB/s)").get<double>(), 4.096);
  EXPECT_FALSE(copy.at("args").contains("correlation"));
  const json& other_gpu = complete.at(7);
  EXPECT_EQ(other_gpu.at("pid"), 1);
  EXPECT_EQ(other_gpu.at("tid"), 7);
  EXPECT_DOUBLE_EQ(other_gpu.at("args").at("achieved_occupancy").get<double>(), 0.625);

  int steps = 0;
  for (const json& e : events) {
    if (e.at("ph") == "X" && e.at("name") == "ProfilerStep#0") {
      ++steps;
      EXPECT_EQ(e.at("cat"), "user_annotation");
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 1.5);
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 88.75);
      EXPECT_EQ(e.at("args").at("xsp.derived"), true);
    }
    if (e.at("ph") == "s" && e.at("id") == 4) {
      EXPECT_EQ(e.at("cat"), "ac2g");
      EXPECT_EQ(e.at("pid"), kChromeHostPid);
      EXPECT_EQ(e.at("tid"), 1);  // the launching call's thread
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 2.0);
    }
    if (e.at("ph") == "f" && e.at("id") == 4) {
      EXPECT_EQ(e.at("bp"), "e");
      EXPECT_EQ(e.at("pid"), 0);
      EXPECT_EQ(e.at("tid"), 99);
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 50.0);
    }
  }
  EXPECT_EQ(steps, 1);

  const json& other = j.at("otherData");
  EXPECT_EQ(other.at("attributes").at("model"), "resnet50");
  EXPECT_EQ(other.at("attributes").at("batch_size"), 32);
  EXPECT_EQ(other.at("counters").at("cupti.dropped_records"), 3);
  EXPECT_EQ(other.at("assembly").at("by_correlation"), 1);
  EXPECT_EQ(other.at("unix_offset_ns"), t.clock.unix_offset_ns);
  EXPECT_EQ(j.at("deviceProperties").size(), 2u);
  EXPECT_EQ(j.at("deviceProperties")[0].at("name"), "NVIDIA H100");
}

TEST(ChromeTrace, EmptyTrace) {
  const json j = round_trip(to_chrome_trace(Trace{}, TraceResource{}));
  ASSERT_EQ(j.at("traceEvents").size(), 2u);  // the host process's name and sort index only
  EXPECT_EQ(j.at("traceEvents")[0].at("args").at("name"), "xsp");
}

const json* find_attribute(const json& attributes, const std::string& key) {
  for (const json& a : attributes) {
    if (a.at("key") == key) return &a.at("value");
  }
  return nullptr;
}

TEST(Otlp, Structure) {
  const Trace t = sample_trace();
  TraceResource res;
  res.service_name = "xsp-test";
  res.service_version = "0.4.0";
  res.host_name = "node7";
  res.instance_id = "4a1f0e8c-2b7d-4c9a-8e3f-0d1c2b3a4f5e";
  res.attributes = {{"framework", "libtorch"}, {"xsp.evaluation_id", 12}};
  const std::string trace_id = "0123456789abcdef0123456789abcdef";
  const json j = round_trip(to_otlp_json(t, res, trace_id));

  ASSERT_EQ(j.at("resourceSpans").size(), 1u);
  const json& rs = j.at("resourceSpans")[0];
  const json& rattrs = rs.at("resource").at("attributes");
  ASSERT_NE(find_attribute(rattrs, "service.name"), nullptr);
  EXPECT_EQ(find_attribute(rattrs, "service.name")->at("stringValue"), "xsp-test");
  EXPECT_EQ(find_attribute(rattrs, "service.version")->at("stringValue"), "0.4.0");
  EXPECT_EQ(find_attribute(rattrs, "host.name")->at("stringValue"), "node7");
  EXPECT_EQ(find_attribute(rattrs, "service.instance.id")->at("stringValue"), res.instance_id);
  EXPECT_EQ(find_attribute(rattrs, "framework")->at("stringValue"), "libtorch");
  EXPECT_EQ(find_attribute(rattrs, "xsp.evaluation_id")->at("intValue"), "12");
  ASSERT_EQ(rs.at("scopeSpans").size(), 1u);
  EXPECT_EQ(rs.at("scopeSpans")[0].at("scope").at("name"), "xsp");
  const json& spans = rs.at("scopeSpans")[0].at("spans");
  ASSERT_EQ(spans.size(), 7u);

  std::map<std::string, json> by_span_id;
  for (const json& s : spans) {
    EXPECT_EQ(s.at("traceId"), trace_id);
    EXPECT_EQ(s.at("kind"), 1);
    EXPECT_EQ(s.at("spanId").get<std::string>().size(), 16u);
    by_span_id[s.at("spanId")] = s;
  }
  EXPECT_EQ(by_span_id.size(), 7u);  // unique
  const json& root = by_span_id.at(otlp_span_id(trace_id, 1));
  EXPECT_FALSE(root.contains("parentSpanId"));
  EXPECT_EQ(root.at("startTimeUnixNano"), "1700000000000001000");
  EXPECT_EQ(root.at("endTimeUnixNano"), "1700000000000101000");
  EXPECT_EQ(find_attribute(root.at("attributes"), "xsp.level")->at("stringValue"), "application");
  EXPECT_EQ(find_attribute(root.at("attributes"), "thread.id")->at("intValue"), "1");

  const json& kernel = by_span_id.at(otlp_span_id(trace_id, 4));
  EXPECT_EQ(kernel.at("parentSpanId"), otlp_span_id(trace_id, 3));
  EXPECT_EQ(kernel.at("name"), "kernel#4");
  EXPECT_EQ(kernel.at("startTimeUnixNano"), "1700000000000050000");
  const json& ka = kernel.at("attributes");
  EXPECT_EQ(find_attribute(ka, "xsp.level")->at("stringValue"), "kernel");
  EXPECT_EQ(find_attribute(ka, "xsp.parent_rule")->at("stringValue"), "correlation");
  EXPECT_EQ(find_attribute(ka, "xsp.correlation_id")->at("intValue"), "7");
  EXPECT_EQ(find_attribute(ka, "xsp.span_id")->at("intValue"), "4");
  EXPECT_EQ(find_attribute(ka, "xsp.track")->at("stringValue"), "GPU 0 stream 99");
  EXPECT_EQ(find_attribute(ka, "xsp.stream")->at("intValue"), "99");
  EXPECT_EQ(find_attribute(ka, "registers_per_thread")->at("intValue"), "32");
  const json& grid = find_attribute(ka, "grid")->at("arrayValue").at("values");
  ASSERT_EQ(grid.size(), 3u);
  EXPECT_EQ(grid[1].at("intValue"), "2");
  EXPECT_DOUBLE_EQ(find_attribute(by_span_id.at(otlp_span_id(trace_id, 7)).at("attributes"), "achieved_occupancy")
                       ->at("doubleValue")
                       .get<double>(),
                   0.625);

  const json& model = by_span_id.at(otlp_span_id(trace_id, 2));
  EXPECT_EQ(model.at("parentSpanId"), otlp_span_id(trace_id, 1));
  EXPECT_EQ(find_attribute(model.at("attributes"), "batch_size")->at("intValue"), "32");

  EXPECT_FALSE(by_span_id.at(otlp_span_id(trace_id, 5)).contains("parentSpanId"));
}

// Two stores' "evaluation 1, run 1" get different random trace ids, and with them different span ids: Jaeger or
// Tempo never merge them. The same trace id gives the same span ids at every export.
TEST(Otlp, SpanIdsDependOnTheTraceIdAndAreUnique) {
  const std::string a = "0123456789abcdef0123456789abcdef", b = "f0e1d2c3b4a5968778695a4b3c2d1e0f";
  std::set<std::string> ids;
  for (std::uint64_t id = 1; id <= 10000; ++id) {
    EXPECT_TRUE(ids.insert(otlp_span_id(a, id)).second) << id;
    EXPECT_NE(otlp_span_id(a, id), otlp_span_id(b, id));
    EXPECT_EQ(otlp_span_id(a, id), otlp_span_id(a, id));
    EXPECT_NE(otlp_span_id(a, id), std::string(16, '0'));
  }
}

TEST(Otlp, HexIdsAndValidation) {
  Trace t;
  t.spans = {make_span(0xabcdef0123, Level::kModel, 0, 1), make_span(255, Level::kFramework, 0, 1, 1, 0xabcdef0123)};
  const std::string id(32, 'f');
  const json j = to_otlp_json(t, {}, id);
  const json& spans = j["resourceSpans"][0]["scopeSpans"][0]["spans"];
  EXPECT_EQ(spans[0]["spanId"], otlp_span_id(id, 0xabcdef0123));
  EXPECT_EQ(spans[1]["spanId"], otlp_span_id(id, 255));
  EXPECT_EQ(spans[1]["parentSpanId"], otlp_span_id(id, 0xabcdef0123));

  EXPECT_THROW(to_otlp_json(t, {}, "0123"), std::invalid_argument);
  EXPECT_THROW(to_otlp_json(t, {}, std::string(32, 'F')), std::invalid_argument);
  EXPECT_THROW(to_otlp_json(t, {}, std::string(31, 'a') + "g"), std::invalid_argument);
  EXPECT_THROW(to_otlp_json(t, {}, std::string(33, 'a')), std::invalid_argument);
  EXPECT_THROW(to_otlp_json(t, {}, std::string(32, '0')), std::invalid_argument);  // W3C: all zeros is invalid
}

// The streaming writers (export_run_trace's path) write exactly the in-memory documents' dump.
TEST(StreamedExport, WritersWriteTheDocumentsDumpByteForByte) {
  const Trace t = sample_trace();
  TraceResource res;
  res.service_name = "xsp-test";
  res.service_version = "0.4.0";
  res.host_name = "node\"7\"";
  res.attributes = {{"framework", "libtorch \u00e9"}, {"xsp.evaluation_id", 12}};
  res.device_names = {{0, "NVIDIA H100"}};
  const std::string id = "0123456789abcdef0123456789abcdef";
  std::ostringstream chrome, otlp;
  write_chrome_trace(chrome, t, res);
  write_otlp_json(otlp, t, res, id);
  EXPECT_EQ(chrome.str(), to_chrome_trace(t, res).dump());
  EXPECT_EQ(otlp.str(), to_otlp_json(t, res, id).dump());
  EXPECT_EQ(json::parse(chrome.str()).at("traceEvents").size(), to_chrome_trace(t, res).at("traceEvents").size());
  std::ostringstream empty_chrome, empty_otlp;
  write_chrome_trace(empty_chrome, Trace{}, TraceResource{});
  write_otlp_json(empty_otlp, Trace{}, TraceResource{}, id);
  EXPECT_EQ(empty_chrome.str(), to_chrome_trace(Trace{}, TraceResource{}).dump());
  EXPECT_EQ(empty_otlp.str(), to_otlp_json(Trace{}, TraceResource{}, id).dump());
  EXPECT_EQ(json::parse(empty_otlp.str())["resourceSpans"][0]["scopeSpans"][0]["spans"], json::array());
}

TEST(StreamedExport, ABadTraceIdThrowsBeforeAnythingIsWritten) {
  std::ostringstream out;
  EXPECT_THROW(write_otlp_json(out, sample_trace(), {}, std::string(32, '0')), std::invalid_argument);
  EXPECT_EQ(out.str(), "");
}

/// A stream buffer that accepts `limit` bytes and then fails every write, as a full disk does; counts what was
/// offered to it.
class FullDisk : public std::streambuf {
 public:
  explicit FullDisk(std::size_t limit) : limit_(limit) {}
  std::size_t offered = 0;

 protected:
  int_type overflow(int_type c) override {
    ++offered;
    return offered > limit_ ? traits_type::eof() : c;
  }
  std::streamsize xsputn(const char*, std::streamsize n) override {
    offered += static_cast<std::size_t>(n);
    return offered > limit_ ? 0 : n;
  }

 private:
  std::size_t limit_;
};

// Once the stream fails the writers stop instead of formatting millions of events for nothing.
TEST(StreamedExport, WritersStopOnceTheStreamFails) {
  Trace t;
  for (SpanId i = 1; i <= 5000; ++i) {
    const auto start = static_cast<std::int64_t>(1000 * i);
    t.spans.push_back(make_span(i, Level::kFramework, start, start + 500, 3));
  }
  const std::string id = "0123456789abcdef0123456789abcdef";
  std::ostringstream whole;
  write_otlp_json(whole, t, {}, id);
  ASSERT_GT(whole.str().size(), 1'000'000u);
  for (int format = 0; format < 2; ++format) {
    SCOPED_TRACE(format == 0 ? "chrome" : "otlp");
    FullDisk disk(10'000);
    std::ostream out(&disk);
    if (format == 0) {
      write_chrome_trace(out, t, {});
    } else {
      write_otlp_json(out, t, {}, id);
    }
    EXPECT_TRUE(out.fail());
    EXPECT_LT(disk.offered, 20'000u) << "kept writing after the stream failed";
  }
}

}  // namespace
}  // namespace xsp
