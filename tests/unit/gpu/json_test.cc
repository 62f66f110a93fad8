// JSON (fixture) form of a GpuActivityLog: round trip, errors naming the field, and any recorded fixtures.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "xsp/profilers/gpu_activity.h"
#include "xsp/trace/assembler.h"

namespace xsp {
namespace {

using nlohmann::json;

GpuActivityLog sample_log() {
  GpuActivityLog log;
  log.clock_mapping = "cupti timestamp callback: CLOCK_MONOTONIC";
  log.counters = {{"cupti.records", 9}, {"cupti.dropped_records", 0}, {"cupti.buffers_completed", 1}};
  KernelRecord k;
  k.name = "add(float*, float*, float*, int)";
  k.start_ns = 1'000'000'000'123;
  k.end_ns = 1'000'000'004'000;
  k.queued_ns = 1'000'000'000'001;
  k.submitted_ns = 1'000'000'000'050;
  k.device = 1;
  k.context = 2;
  k.stream = 13;
  k.correlation_id = 77;
  k.grid_x = 4096;
  k.grid_y = 2;
  k.grid_z = 1;
  k.block_x = 256;
  k.block_y = 1;
  k.block_z = 1;
  k.registers_per_thread = 32;
  k.static_shared_bytes = 48;
  k.dynamic_shared_bytes = 4096;
  k.graph_id = 5;
  k.graph_node_id = 0xFFFF'FFFF'FFFFull;
  log.kernels.push_back(k);
  MemcpyRecord m;
  m.bytes = 1 << 20;
  m.copy_kind = CopyKind::kDtoH;
  m.src_kind = MemoryKind::kDevice;
  m.dst_kind = MemoryKind::kPageable;
  m.start_ns = 5;
  m.end_ns = 9;
  m.correlation_id = 78;
  m.runtime_correlation_id = 79;
  log.memcpys.push_back(m);
  MemsetRecord s;
  s.bytes = 64;
  s.value = 7;
  s.memory_kind = MemoryKind::kManaged;
  s.start_ns = 10;
  s.end_ns = 11;
  log.memsets.push_back(s);
  ApiRecord a;
  a.domain = ApiDomain::kDriver;
  a.cbid = 307;
  a.name = "cuLaunchKernel";
  a.start_ns = 1;
  a.end_ns = 3;
  a.thread_id = 123456;
  a.correlation_id = 77;
  a.return_value = 0;
  log.apis.push_back(a);
  log.external_correlations.push_back({77, 42});
  log.markers.push_back({"range", "my_domain", 0, 20, 123456});
  log.syncs.push_back({"context_synchronize", 12, 15, 80, 2, 0xFFFFFFFFu});
  log.overheads.push_back({"cupti_buffer_flush", 30, 40, 0});
  return log;
}

TEST(GpuActivityJson, RoundTrip) {
  const GpuActivityLog log = sample_log();
  const json j = to_json(log);
  EXPECT_EQ(j.at("format"), "xsp-gpu-activity-v1");
  EXPECT_EQ(j.at("memcpys")[0].at("copy_kind"), "DtoH");
  EXPECT_EQ(gpu_activity_log_from_json(j), log);
  // And through text, as a fixture file goes.
  EXPECT_EQ(gpu_activity_log_from_json(json::parse(j.dump(1))), log);
}

TEST(GpuActivityJson, EmptyLogAndOptionalFields) {
  EXPECT_EQ(gpu_activity_log_from_json(to_json(GpuActivityLog{})), GpuActivityLog{});
  const json j = json::parse(R"({"format": "xsp-gpu-activity-v1",
      "kernels": [{"name": "k", "start_ns": 1, "end_ns": 2}]})");
  const GpuActivityLog log = gpu_activity_log_from_json(j);
  ASSERT_EQ(log.kernels.size(), 1u);
  EXPECT_EQ(log.kernels[0].name, "k");
  EXPECT_EQ(log.kernels[0].correlation_id, 0u);
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    gpu_activity_log_from_json(json::parse(text));
    ADD_FAILURE() << "no error for " << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(GpuActivityJson, ErrorsNameTheField) {
  expect_error(R"([])", "(root): expected an object");
  expect_error(R"({"kernels": []})", "format");
  expect_error(R"({"format": "something-else"})", "format");
  expect_error(R"({"format": "xsp-gpu-activity-v1", "kernels": {}})", "kernels: expected an array");
  expect_error(R"({"format": "xsp-gpu-activity-v1", "kernels": [{"name": "a", "start_ns": 1, "end_ns": 2},
                 {"name": "b", "start_ns": "1", "end_ns": 2}]})",
               "kernels[1].start_ns: expected an integer");
  expect_error(R"({"format": "xsp-gpu-activity-v1", "apis": [{"start_ns": 1, "end_ns": 2}]})", "apis[0].name: missing");
  expect_error(R"({"format": "xsp-gpu-activity-v1", "memcpys": [{"copy_kind": "HtoX", "start_ns": 1, "end_ns": 2}]})",
               "memcpys[0].copy_kind: unknown value \"HtoX\"");
  expect_error(R"({"format": "xsp-gpu-activity-v1", "kernels": [{"name": "k", "start_ns": 1, "end_ns": 2,
                 "stream": -1}]})",
               "kernels[0].stream: expected a non-negative integer");
  expect_error(R"({"format": "xsp-gpu-activity-v1", "kernels": [{"name": "k", "start_ns": 1, "end_ns": 2,
                 "stream": 4294967296}]})",
               "kernels[0].stream: out of range");
  expect_error(R"({"format": "xsp-gpu-activity-v1", "counters": {"cupti.records": "many"}})",
               "counters.cupti.records: expected an integer");
  expect_error(R"({"format": "xsp-gpu-activity-v1", "markers": [7]})", "markers[0]: expected an object");
  expect_error(R"({"format": "xsp-gpu-activity-v1", "apis": [{"name": "x", "start_ns": 1, "end_ns": 2,
                 "domain": "kernel"}]})",
               "apis[0].domain: unknown value");
}

TEST(GpuActivityJson, EnumTextRoundTrips) {
  for (int i = 0; i <= static_cast<int>(CopyKind::kPtoP); ++i) {
    const auto k = static_cast<CopyKind>(i);
    EXPECT_EQ(parse_copy_kind(to_string(k)), k);
  }
  for (int i = 0; i <= static_cast<int>(MemoryKind::kManagedStatic); ++i) {
    const auto k = static_cast<MemoryKind>(i);
    EXPECT_EQ(parse_memory_kind(to_string(k)), k);
  }
  EXPECT_EQ(parse_api_domain("driver"), ApiDomain::kDriver);
  EXPECT_EQ(parse_api_domain("Driver"), std::nullopt);
}

// Logs recorded on a GPU machine (XSP_DUMP_GPU_ACTIVITY) and committed under tests/fixtures/gpu/: each one must
// parse and assemble with every device record joined to an API call (skipped while none are committed).
TEST(GpuActivityJson, RecordedFixturesAssemble) {
  const std::filesystem::path dir = std::filesystem::path(XSP_TEST_FIXTURES) / "gpu";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no fixtures in " << dir;
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++seen;
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path());
    const GpuActivityLog log = gpu_activity_log_from_json(json::parse(in));
    EXPECT_EQ(gpu_activity_log_from_json(to_json(log)), log);
    TraceRecorder recorder;
    append_spans(log, recorder);
    Trace t = recorder.take();
    assemble(t);
    EXPECT_EQ(t.counters.at("cupti.orphan_activities"), 0u);
    int kernels = 0, graph_kernels = 0, ranges = 0;
    for (const Span& s : t.spans) {
      if (s.level == Level::kKernel) {
        EXPECT_NE(s.parent_id, kNoSpan) << s.name;
        EXPECT_TRUE(s.track.is_device()) << s.name;
        if (s.tag("kind") == std::optional<std::string_view>("kernel")) ++kernels;
        if (s.tag("attribution")) ++graph_kernels;
      }
      if (s.level == Level::kLibrary) ++ranges;
    }
    // xsp_cupti_selftest's workload (tools/cupti_selftest.cu): 1 + 2x2 graph kernels, one NVTX range.
    if (entry.path().filename().string().starts_with("selftest")) {
      EXPECT_EQ(kernels, 5);
      EXPECT_EQ(graph_kernels, 4);
      EXPECT_EQ(ranges, 1);
      EXPECT_EQ(log.clock_mapping, "cupti timestamp callback: CLOCK_MONOTONIC");
    }
  }
  if (seen == 0) GTEST_SKIP() << "no fixtures in " << dir;
}

}  // namespace
}  // namespace xsp
