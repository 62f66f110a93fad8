#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

#include "test_util.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/export.h"

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
             make_span(5, Level::kKernel, 61'000, 62'000, 99)};
  t.spans[1].tags = {{"batch_size", "32"}, {"stage", "predict"}};
  assemble(t);
  return t;
}

// Dump and parse again so the test sees exactly what a viewer would read.
json round_trip(const json& j) { return json::parse(j.dump()); }

TEST(ChromeTrace, Structure) {
  const Trace t = sample_trace();
  TraceResource res;
  res.service_name = "xsp-test";
  res.attributes = {{"model", "resnet50"}};
  const json j = round_trip(to_chrome_trace(t, res));

  EXPECT_EQ(j.at("displayTimeUnit"), "ns");
  const json& events = j.at("traceEvents");
  ASSERT_TRUE(events.is_array());
  std::map<std::string, int> by_ph;
  std::map<SpanId, json> complete;
  std::map<std::uint64_t, std::string> thread_names;
  std::string process_name;
  for (const json& e : events) {
    ++by_ph[e.at("ph").get<std::string>()];
    EXPECT_EQ(e.at("pid"), 1);
    if (e.at("ph") == "X") complete[e.at("args").at("xsp.span_id").get<SpanId>()] = e;
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      thread_names[e.at("tid").get<std::uint64_t>()] = e.at("args").at("name");
    }
    if (e.at("ph") == "M" && e.at("name") == "process_name") process_name = e.at("args").at("name");
  }
  EXPECT_EQ(by_ph["X"], 5);
  EXPECT_EQ(by_ph["M"], 3);  // process + threads 1 and 99
  EXPECT_EQ(by_ph["s"], 1);
  EXPECT_EQ(by_ph["f"], 1);
  EXPECT_EQ(events.size(), 10u);
  EXPECT_EQ(process_name, "xsp-test");
  EXPECT_EQ(thread_names.at(1), "thread 1");
  EXPECT_EQ(thread_names.at(99), "device track 99");

  const json& model = complete.at(2);
  EXPECT_EQ(model.at("name"), "model#2");
  EXPECT_EQ(model.at("cat"), "model");
  EXPECT_DOUBLE_EQ(model.at("ts").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(model.at("dur").get<double>(), 88.75);
  EXPECT_EQ(model.at("tid"), 1);
  EXPECT_EQ(model.at("args").at("batch_size"), "32");
  EXPECT_EQ(model.at("args").at("stage"), "predict");
  EXPECT_EQ(model.at("args").at("xsp.parent_id"), 1);
  EXPECT_EQ(model.at("args").at("xsp.parent_rule"), "containment");

  const json& kernel = complete.at(4);
  EXPECT_EQ(kernel.at("cat"), "kernel");
  EXPECT_EQ(kernel.at("tid"), 99);
  EXPECT_DOUBLE_EQ(kernel.at("ts").get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(kernel.at("dur").get<double>(), 10.001);
  EXPECT_EQ(kernel.at("args").at("xsp.parent_rule"), "correlation");
  EXPECT_EQ(kernel.at("args").at("xsp.correlation_id"), 7);

  for (const json& e : events) {
    if (e.at("ph") == "s") {
      EXPECT_EQ(e.at("id"), 4);
      EXPECT_EQ(e.at("tid"), 1);  // the launching call's thread
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 2.0);
    }
    if (e.at("ph") == "f") {
      EXPECT_EQ(e.at("id"), 4);
      EXPECT_EQ(e.at("bp"), "e");
      EXPECT_EQ(e.at("tid"), 99);
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 50.0);
    }
  }

  const json& other = j.at("otherData");
  EXPECT_EQ(other.at("attributes").at("model"), "resnet50");
  EXPECT_EQ(other.at("counters").at("cupti.dropped_records"), 3);
  EXPECT_EQ(other.at("assembly").at("by_correlation"), 1);
  EXPECT_EQ(other.at("assembly").at("unparented"), 1);
  EXPECT_EQ(other.at("unix_offset_ns"), t.clock.unix_offset_ns);
}

TEST(ChromeTrace, EmptyTrace) {
  const json j = round_trip(to_chrome_trace(Trace{}, TraceResource{}));
  ASSERT_EQ(j.at("traceEvents").size(), 1u);  // the process name only
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
  res.attributes = {{"framework", "libtorch"}};
  const std::string trace_id = "0123456789abcdef0123456789abcdef";
  const json j = round_trip(to_otlp_json(t, res, trace_id));

  ASSERT_EQ(j.at("resourceSpans").size(), 1u);
  const json& rs = j.at("resourceSpans")[0];
  const json& rattrs = rs.at("resource").at("attributes");
  ASSERT_NE(find_attribute(rattrs, "service.name"), nullptr);
  EXPECT_EQ(find_attribute(rattrs, "service.name")->at("stringValue"), "xsp-test");
  EXPECT_EQ(find_attribute(rattrs, "framework")->at("stringValue"), "libtorch");
  ASSERT_EQ(rs.at("scopeSpans").size(), 1u);
  EXPECT_EQ(rs.at("scopeSpans")[0].at("scope").at("name"), "xsp");
  const json& spans = rs.at("scopeSpans")[0].at("spans");
  ASSERT_EQ(spans.size(), 5u);

  std::map<std::string, json> by_span_id;
  for (const json& s : spans) {
    EXPECT_EQ(s.at("traceId"), trace_id);
    EXPECT_EQ(s.at("kind"), 1);
    EXPECT_EQ(s.at("spanId").get<std::string>().size(), 16u);
    by_span_id[s.at("spanId")] = s;
  }
  const json& root = by_span_id.at("0000000000000001");
  EXPECT_FALSE(root.contains("parentSpanId"));
  EXPECT_EQ(root.at("startTimeUnixNano"), "1700000000000001000");
  EXPECT_EQ(root.at("endTimeUnixNano"), "1700000000000101000");
  EXPECT_EQ(find_attribute(root.at("attributes"), "xsp.level")->at("stringValue"), "application");

  const json& kernel = by_span_id.at("0000000000000004");
  EXPECT_EQ(kernel.at("parentSpanId"), "0000000000000003");
  EXPECT_EQ(kernel.at("name"), "kernel#4");
  EXPECT_EQ(kernel.at("startTimeUnixNano"), "1700000000000050000");
  EXPECT_EQ(find_attribute(kernel.at("attributes"), "xsp.level")->at("stringValue"), "kernel");
  EXPECT_EQ(find_attribute(kernel.at("attributes"), "xsp.parent_rule")->at("stringValue"), "correlation");
  EXPECT_EQ(find_attribute(kernel.at("attributes"), "xsp.correlation_id")->at("intValue"), "7");
  EXPECT_EQ(find_attribute(kernel.at("attributes"), "xsp.thread_id")->at("intValue"), "99");

  const json& model = by_span_id.at("0000000000000002");
  EXPECT_EQ(model.at("parentSpanId"), "0000000000000001");
  EXPECT_EQ(find_attribute(model.at("attributes"), "batch_size")->at("stringValue"), "32");

  EXPECT_FALSE(by_span_id.at("0000000000000005").contains("parentSpanId"));
}

TEST(Otlp, HexIdsAndValidation) {
  Trace t;
  t.spans = {make_span(0xabcdef0123, Level::kModel, 0, 1), make_span(255, Level::kFramework, 0, 1, 1, 0xabcdef0123)};
  const json j = to_otlp_json(t, {}, std::string(32, 'f'));
  const json& spans = j["resourceSpans"][0]["scopeSpans"][0]["spans"];
  EXPECT_EQ(spans[0]["spanId"], "000000abcdef0123");
  EXPECT_EQ(spans[1]["spanId"], "00000000000000ff");
  EXPECT_EQ(spans[1]["parentSpanId"], "000000abcdef0123");

  EXPECT_THROW(to_otlp_json(t, {}, "0123"), std::invalid_argument);
  EXPECT_THROW(to_otlp_json(t, {}, std::string(32, 'F')), std::invalid_argument);
  EXPECT_THROW(to_otlp_json(t, {}, std::string(31, 'a') + "g"), std::invalid_argument);
  EXPECT_THROW(to_otlp_json(t, {}, std::string(33, 'a')), std::invalid_argument);
}

}  // namespace
}  // namespace xsp
