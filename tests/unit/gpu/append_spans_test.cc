// GpuActivityLog → spans → assemble(), on hand-made logs with known answers (docs/spans.md).
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "xsp/profilers/device_profiler.h"
#include "xsp/profilers/gpu_activity.h"
#include "xsp/trace/assembler.h"

namespace xsp {
namespace {

constexpr std::uint64_t kTid = 4242;

/// A recorder holding APPLICATION > predict (MODEL) > op (FRAMEWORK) on thread kTid, as the runner and the
/// framework profiler would make them. Ids 1, 2, 3.
struct Fixture {
  TraceRecorder recorder;
  SpanId app = 0, predict = 0, op = 0;

  Fixture() {
    app = recorder.next_id();
    predict = recorder.next_id();
    op = recorder.next_id();
    add(app, kNoSpan, Level::kApplication, "app", 0, 100'000);
    add(predict, app, Level::kModel, "predict", 1'000, 90'000);
    add(op, predict, Level::kFramework, "aten::add", 2'000, 10'000);
  }
  void add(SpanId id, SpanId parent, Level level, const char* name, std::int64_t s, std::int64_t e) {
    Span span;
    span.id = id;
    span.parent_id = parent;
    span.level = level;
    span.name = name;
    span.start_ns = s;
    span.end_ns = e;
    span.track = Track::host_thread(kTid);
    recorder.add(std::move(span));
  }
  Trace assembled(const GpuActivityLog& log) {
    append_spans(log, recorder);
    Trace t = recorder.take();
    assemble(t);
    return t;
  }
};

ApiRecord api(const char* name, std::uint32_t correlation, std::int64_t s, std::int64_t e, std::uint32_t cbid = 211) {
  ApiRecord a;
  a.name = name;
  a.cbid = cbid;
  a.correlation_id = correlation;
  a.start_ns = s;
  a.end_ns = e;
  a.thread_id = kTid;
  return a;
}

KernelRecord kernel(const char* name, std::uint32_t correlation, std::int64_t s, std::int64_t e,
                    std::uint32_t stream = 7) {
  KernelRecord k;
  k.name = name;
  k.correlation_id = correlation;
  k.start_ns = s;
  k.end_ns = e;
  k.device = 0;
  k.context = 1;
  k.stream = stream;
  k.grid_x = 4096;
  k.grid_y = 1;
  k.grid_z = 1;
  k.block_x = 256;
  k.block_y = 1;
  k.block_z = 1;
  k.registers_per_thread = 16;
  k.static_shared_bytes = 0;
  k.dynamic_shared_bytes = 1024;
  return k;
}

const Span& named(const Trace& t, std::string_view name) {
  for (const Span& s : t.spans) {
    if (s.name == name) return s;
  }
  static const Span missing{};
  ADD_FAILURE() << "no span named " << name;
  return missing;
}

const Span& by_id(const Trace& t, SpanId id) {
  for (const Span& s : t.spans) {
    if (s.id == id) return s;
  }
  static const Span missing{};
  ADD_FAILURE() << "no span with id " << id;
  return missing;
}

std::string tag(const Span& s, std::string_view key) { return std::string(s.tag(key).value_or("<absent>")); }

TEST(AppendSpans, KernelUnderApiUnderOpUnderPredict) {
  Fixture f;
  GpuActivityLog log;
  log.apis.push_back(api("cudaLaunchKernel", 11, 3'000, 4'000));
  log.external_correlations.push_back({11, f.op});
  log.kernels.push_back(kernel("add(float*, float*, float*, int)", 11, 20'000, 25'000));
  const Trace t = f.assembled(log);

  const Span& launch = named(t, "cudaLaunchKernel");
  EXPECT_EQ(launch.level, Level::kSystem);
  EXPECT_EQ(launch.parent_id, f.op);
  EXPECT_EQ(launch.parent_rule, ParentRule::kContext);  // known from the external correlation record
  EXPECT_EQ(launch.correlation_id, 11u);
  EXPECT_EQ(launch.track, Track::host_thread(kTid));
  EXPECT_EQ(tag(launch, "domain"), "runtime");
  EXPECT_EQ(tag(launch, "cbid"), "211");

  const Span& k = named(t, "add(float*, float*, float*, int)");
  EXPECT_EQ(k.level, Level::kKernel);
  EXPECT_EQ(k.parent_id, launch.id);
  EXPECT_EQ(k.parent_rule, ParentRule::kCorrelation);
  EXPECT_EQ(k.correlation_id, 11u);
  EXPECT_EQ(tag(k, "kind"), "kernel");
  EXPECT_EQ(tag(k, "grid"), "4096,1,1");
  EXPECT_EQ(tag(k, "block"), "256,1,1");
  // Numbers are typed from the profiler on (issue 11): exporters write them as numbers, not strings.
  EXPECT_EQ(k.find_tag("grid")->as_int_list(), (std::vector<std::int64_t>{4096, 1, 1}));
  EXPECT_EQ(k.find_tag("registers_per_thread")->type, TagType::kInt);
  EXPECT_EQ(k.find_tag("dynamic_shared_bytes")->type, TagType::kInt);
  EXPECT_EQ(k.find_tag("stream")->type, TagType::kInt);
  EXPECT_EQ(k.find_tag("kind")->type, TagType::kString);
  EXPECT_EQ(launch.find_tag("cbid")->type, TagType::kInt);
  EXPECT_EQ(k.track, Track::stream(0, 7));
  EXPECT_EQ(tag(k, "registers_per_thread"), "16");
  EXPECT_EQ(tag(k, "static_shared_bytes"), "0");
  EXPECT_EQ(tag(k, "dynamic_shared_bytes"), "1024");
  EXPECT_EQ(tag(k, "device"), "0");
  EXPECT_EQ(tag(k, "context"), "1");
  EXPECT_EQ(tag(k, "stream"), "7");
  EXPECT_FALSE(k.tag("queued_ns"));  // not reported → absent
  EXPECT_FALSE(k.tag("attribution"));

  // The whole chain up to the application.
  EXPECT_EQ(by_id(t, f.op).parent_id, f.predict);
  EXPECT_EQ(by_id(t, f.predict).parent_id, f.app);
  EXPECT_EQ(t.assembly.unparented, 0u);
  EXPECT_EQ(t.counters.at("cupti.orphan_activities"), 0u);
}

TEST(AppendSpans, LatencyTimestampsBecomeTags) {
  Fixture f;
  GpuActivityLog log;
  log.apis.push_back(api("cudaLaunchKernel", 11, 3'000, 4'000));
  KernelRecord k = kernel("k", 11, 20'000, 25'000);
  k.queued_ns = 3'500;
  k.submitted_ns = 5'000;
  log.kernels.push_back(k);
  const Trace t = f.assembled(log);
  EXPECT_EQ(tag(named(t, "k"), "queued_ns"), "3500");
  EXPECT_EQ(tag(named(t, "k"), "submitted_ns"), "5000");
}

TEST(AppendSpans, MemcpyAndMemsetTags) {
  Fixture f;
  GpuActivityLog log;
  log.apis.push_back(api("cudaMemcpyAsync", 21, 3'000, 3'500, 41));
  log.apis.push_back(api("cudaMemsetAsync", 22, 3'600, 3'900, 55));
  MemcpyRecord m;
  m.bytes = 1'000'000;
  m.copy_kind = CopyKind::kHtoD;
  m.src_kind = MemoryKind::kPinned;
  m.dst_kind = MemoryKind::kDevice;
  m.start_ns = 10'000;
  m.end_ns = 30'000;  // 20 µs → 5e10 B/s
  m.stream = 3;
  m.correlation_id = 21;
  log.memcpys.push_back(m);
  MemsetRecord s;
  s.bytes = 4096;
  s.value = 255;
  s.memory_kind = MemoryKind::kDevice;
  s.start_ns = 31'000;
  s.end_ns = 32'000;
  s.stream = 3;
  s.correlation_id = 22;
  log.memsets.push_back(s);
  const Trace t = f.assembled(log);

  const Span& copy = named(t, "Memcpy HtoD");
  EXPECT_EQ(copy.parent_id, named(t, "cudaMemcpyAsync").id);
  EXPECT_EQ(tag(copy, "kind"), "memcpy");
  EXPECT_EQ(tag(copy, "bytes"), "1000000");
  EXPECT_EQ(tag(copy, "copy_kind"), "HtoD");
  EXPECT_EQ(tag(copy, "src_kind"), "pinned");
  EXPECT_EQ(tag(copy, "dst_kind"), "device");
  EXPECT_EQ(copy.tag_int("bandwidth_bytes_per_s"), 50'000'000'000);
  EXPECT_EQ(copy.track, Track::stream(0, 3));

  const Span& set = named(t, "Memset");
  EXPECT_EQ(set.parent_id, named(t, "cudaMemsetAsync").id);
  EXPECT_EQ(tag(set, "kind"), "memset");
  EXPECT_EQ(tag(set, "bytes"), "4096");
  EXPECT_EQ(tag(set, "value"), "255");

  // No external ids: both calls are placed by containment on their thread, under the innermost span (the op).
  EXPECT_EQ(named(t, "cudaMemcpyAsync").parent_id, f.op);
  EXPECT_EQ(named(t, "cudaMemcpyAsync").parent_rule, ParentRule::kContainment);
}

TEST(AppendSpans, ZeroLengthMemcpyHasNoBandwidth) {
  Fixture f;
  GpuActivityLog log;
  log.apis.push_back(api("cudaMemcpy", 21, 3'000, 3'500));
  MemcpyRecord m;
  m.bytes = 8;
  m.copy_kind = CopyKind::kDtoH;
  m.start_ns = m.end_ns = 10'000;
  m.correlation_id = 21;
  log.memcpys.push_back(m);
  const Trace t = f.assembled(log);
  EXPECT_FALSE(named(t, "Memcpy DtoH").tag("bandwidth_bytes_per_s"));
}

TEST(AppendSpans, StreamTracks) {
  EXPECT_TRUE(Track::stream(1, 2).is_device());
  EXPECT_FALSE(Track::host_thread(kTid).is_device());
  EXPECT_EQ(to_string(Track::stream(1, 2)), "GPU 1 stream 2");
  EXPECT_EQ(to_string(Track::stream(0, 0xFFFFFFFFu)), "GPU 0 stream 4294967295");
  EXPECT_EQ(to_string(Track::host_thread(kTid)), "thread " + std::to_string(kTid));
  // A stream id equal to a thread id is still another track.
  EXPECT_NE(Track::stream(0, kTid), Track::host_thread(kTid));

  Fixture f;
  GpuActivityLog log;
  log.apis.push_back(api("cudaLaunchKernel", 1, 3'000, 3'100));
  log.apis.push_back(api("cudaLaunchKernel", 2, 3'200, 3'300));
  log.kernels.push_back(kernel("on7", 1, 20'000, 21'000, 7));
  log.kernels.push_back(kernel("on13", 2, 20'500, 22'000, 13));
  const Trace t = f.assembled(log);
  EXPECT_EQ(named(t, "on7").track, Track::stream(0, 7));
  EXPECT_EQ(named(t, "on13").track, Track::stream(0, 13));
  // Overlapping kernels on different streams never contain each other: each keeps its launch as parent.
  EXPECT_EQ(named(t, "on13").parent_rule, ParentRule::kCorrelation);
}

TEST(AppendSpans, GraphReplayedKernelsUnderGraphLaunch) {
  Fixture f;
  GpuActivityLog log;
  // Two replays of a 2-node graph inside the op: each replay's kernels share its launch's correlation id.
  log.apis.push_back(api("cudaGraphLaunch", 31, 3'000, 3'400, 311));
  log.apis.push_back(api("cudaGraphLaunch", 32, 3'500, 3'900, 311));
  log.external_correlations.push_back({31, f.op});
  log.external_correlations.push_back({32, f.op});
  for (std::uint32_t replay : {31u, 32u}) {
    for (std::uint64_t node : {1u, 2u}) {
      KernelRecord k = kernel(node == 1 ? "scale" : "offset", replay, 20'000 + replay * 100 + node * 10,
                              20'000 + replay * 100 + node * 10 + 5);
      k.graph_id = 9;
      k.graph_node_id = node;
      log.kernels.push_back(k);
    }
  }
  // A direct launch in the same log is not tagged.
  log.apis.push_back(api("cudaLaunchKernel", 33, 4'000, 4'100));
  log.kernels.push_back(kernel("direct", 33, 30'000, 31'000));
  const Trace t = f.assembled(log);

  int graph_kernels = 0;
  for (const Span& s : t.spans) {
    if (s.level != Level::kKernel || s.name == "direct") continue;
    ++graph_kernels;
    EXPECT_EQ(tag(s, "attribution"), "graph-launch");
    EXPECT_EQ(tag(s, "graph_id"), "9");
    const Span& parent = by_id(t, s.parent_id);
    EXPECT_EQ(parent.name, "cudaGraphLaunch");
    EXPECT_EQ(parent.correlation_id, s.correlation_id);
    EXPECT_EQ(parent.parent_id, f.op);
  }
  EXPECT_EQ(graph_kernels, 4);
  EXPECT_FALSE(named(t, "direct").tag("attribution"));
  EXPECT_FALSE(named(t, "direct").tag("graph_id"));
}

TEST(AppendSpans, OrphanActivityCountedAndKept) {
  Fixture f;
  GpuActivityLog log;
  log.apis.push_back(api("cudaLaunchKernel", 1, 3'000, 3'100));
  log.kernels.push_back(kernel("joined", 1, 20'000, 21'000));
  log.kernels.push_back(kernel("orphan", 999, 22'000, 23'000));
  MemcpyRecord m;
  m.copy_kind = CopyKind::kDtoD;
  m.correlation_id = 998;
  m.start_ns = 24'000;
  m.end_ns = 25'000;
  log.memcpys.push_back(m);
  const Trace t = f.assembled(log);
  EXPECT_EQ(t.counters.at("cupti.orphan_activities"), 2u);
  const Span& orphan = named(t, "orphan");
  EXPECT_EQ(orphan.correlation_id, 999u);
  EXPECT_EQ(orphan.parent_id, kNoSpan);  // kept, reported as unparented
  EXPECT_EQ(named(t, "Memcpy DtoD").parent_id, kNoSpan);
  EXPECT_EQ(t.assembly.unparented, 2u);
}

TEST(AppendSpans, RuntimeCorrelationIdRescuesMemcpy) {
  Fixture f;
  GpuActivityLog log;
  log.apis.push_back(api("cudaMemcpy", 40, 3'000, 3'500));
  MemcpyRecord m;
  m.copy_kind = CopyKind::kHtoD;
  m.correlation_id = 41;  // the driver call's id, whose record was filtered
  m.runtime_correlation_id = 40;
  m.start_ns = 24'000;
  m.end_ns = 25'000;
  log.memcpys.push_back(m);
  const Trace t = f.assembled(log);
  EXPECT_EQ(t.counters.at("cupti.orphan_activities"), 0u);
  EXPECT_EQ(named(t, "Memcpy HtoD").parent_id, named(t, "cudaMemcpy").id);
}

TEST(AppendSpans, ApiOutsideAnyOpPlacedUnderPredictByContainment) {
  Fixture f;
  GpuActivityLog log;
  log.apis.push_back(api("cudaStreamSynchronize", 50, 12'000, 80'000, 131));
  log.syncs.push_back({"stream_synchronize", 12'100, 79'900, 50, 1, 7});
  const Trace t = f.assembled(log);
  const Span& sync = named(t, "cudaStreamSynchronize");
  EXPECT_EQ(sync.parent_id, f.predict);
  EXPECT_EQ(sync.parent_rule, ParentRule::kContainment);
  EXPECT_EQ(tag(sync, "sync"), "stream_synchronize");
  EXPECT_EQ(tag(sync, "sync_stream"), "7");
}

TEST(AppendSpans, DanglingExternalIdFallsBackToContainment) {
  Fixture f;
  GpuActivityLog log;
  log.apis.push_back(api("cudaLaunchKernel", 60, 3'000, 3'100));
  log.external_correlations.push_back({60, 123456});  // an op the trace does not hold
  const Trace t = f.assembled(log);
  EXPECT_EQ(named(t, "cudaLaunchKernel").parent_id, f.op);
  EXPECT_EQ(named(t, "cudaLaunchKernel").parent_rule, ParentRule::kContainment);
  EXPECT_EQ(t.assembly.dangling_parent_ids, 1u);
}

TEST(AppendSpans, NvtxRangesNestByContainment) {
  Fixture f;
  GpuActivityLog log;
  log.markers.push_back({"outer", "cudnn", 2'500, 9'000, kTid});
  log.markers.push_back({"inner", "", 2'600, 8'000, kTid});
  log.markers.push_back({"mark", "", 2'700, 2'700, kTid});
  // An API call inside the inner range, without external id: containment puts it under the range.
  log.apis.push_back(api("cudaLaunchKernel", 70, 3'000, 3'100));
  const Trace t = f.assembled(log);
  const Span& outer = named(t, "outer");
  const Span& inner = named(t, "inner");
  EXPECT_EQ(outer.level, Level::kLibrary);
  EXPECT_EQ(outer.parent_id, f.op);
  EXPECT_EQ(tag(outer, "domain"), "cudnn");
  EXPECT_EQ(tag(inner, "domain"), "default");
  // Equal levels never contain each other (assembler rule c): both ranges sit under the op.
  EXPECT_EQ(inner.parent_id, f.op);
  EXPECT_EQ(named(t, "mark").parent_id, f.op);
  EXPECT_EQ(named(t, "cudaLaunchKernel").parent_id, inner.id);
}

TEST(AppendSpans, CountersCopiedAndOverheadSummed) {
  TraceRecorder recorder;
  GpuActivityLog log;
  log.counters["cupti.dropped_records"] = 3;
  log.counters["cupti.buffers_completed"] = 2;
  log.counters["cupti.filtered_api_records"] = 17;
  log.overheads.push_back({"cupti_buffer_flush", 100, 350, 0});
  log.overheads.push_back({"cupti_instrumentation", 400, 500, 0});
  append_spans(log, recorder);
  const Trace t = recorder.take();
  EXPECT_TRUE(t.spans.empty());
  EXPECT_EQ(t.counters.at("cupti.dropped_records"), 3u);
  EXPECT_EQ(t.counters.at("cupti.buffers_completed"), 2u);
  EXPECT_EQ(t.counters.at("cupti.filtered_api_records"), 17u);
  EXPECT_EQ(t.counters.at("cupti.overhead_ns"), 350u);
  EXPECT_EQ(t.counters.at("cupti.orphan_activities"), 0u);
}

TEST(AppendSpans, IdsComeFromTheRecorder) {
  Fixture f;  // ids 1..3 taken
  GpuActivityLog log;
  log.apis.push_back(api("cudaLaunchKernel", 1, 3'000, 3'100));
  log.kernels.push_back(kernel("k", 1, 20'000, 21'000));
  const Trace t = f.assembled(log);
  ASSERT_EQ(t.spans.size(), 5u);
  std::set<SpanId> ids;
  for (const Span& s : t.spans) ids.insert(s.id);
  EXPECT_EQ(ids, (std::set<SpanId>{1, 2, 3, 4, 5}));
}

TEST(Demangle, CxxNames) {
  EXPECT_EQ(demangle("_Z3addPfS_S_i"), "add(float*, float*, float*, int)");
  EXPECT_EQ(demangle("_Z5scaleIfEvPT_S0_i"), "void scale<float>(float*, float, int)");
  EXPECT_EQ(demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(demangle("plain_c_kernel"), "plain_c_kernel");
  EXPECT_EQ(demangle(nullptr), "");
}

TEST(DeviceProfilerFactory, LinksInEveryBuild) {
  // The test links xsp_device: the CUPTI profiler when the build has it, else xsp_gpu's stub.
#if defined(XSP_WITH_CUPTI)
  EXPECT_TRUE(have_device_profiler());
  const std::unique_ptr<DeviceProfiler> p = create_device_profiler();  // touches no GPU until start()
  EXPECT_EQ(p->name(), "cupti");
  EXPECT_NE(p->correlation_listener(), nullptr);
  p->stop();  // never started: a no-op
#else
  EXPECT_FALSE(have_device_profiler());
  try {
    create_device_profiler();
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("built without CUPTI"), std::string::npos);
  }
#endif
}

}  // namespace
}  // namespace xsp
