// Store::open_trace_blob and Store::load_without_traces, on both backends: a stored trace read back in pieces
// decodes to the trace that was saved, and a record loads without its traces.
#include <gtest/gtest.h>

#include <algorithm>

#include "minimal_record.h"
#include "store_backends.h"
#include "xsp/trace/serialize.h"

namespace xsp {
namespace {

using testing::Backend;
using testing::make_span;

class TraceBlobs : public testing::StoreBackends {};

// A trace big enough that its blob takes several pieces of the PostgreSQL reader (1 MiB) and of the decoder.
Trace big_trace(std::size_t spans) {
  Trace t;
  t.counters = {{"framework.dropped_spans", 3}};
  t.processes = {{42, "python3 serve.py", {4242}}};
  std::uint64_t state = 12345;
  for (std::size_t i = 0; i < spans; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // incompressible-ish names and tags
    t.spans.push_back(make_span(i + 1, kNoSpan, Level::kFramework, "op" + std::to_string(state % 100000),
                                static_cast<std::int64_t>(i) * 100, static_cast<std::int64_t>(i) * 100 + 50,
                                {{"seq", static_cast<std::int64_t>(state >> 20)}}));
  }
  return t;
}

Trace read_in_pieces(BlobReader& blob, std::size_t piece) {
  TraceBlobReader reader(
      [&](std::uint8_t* out, std::size_t max_bytes) { return blob.read(out, std::min(max_bytes, piece)); }, piece);
  Trace t = reader.header();
  Span s;
  while (reader.next(s)) t.spans.push_back(s);
  t.processes = reader.processes();
  return t;
}

TEST_P(TraceBlobs, ChunkedReadDecodesToTheSavedTrace) {
  auto store = open();
  EvaluationRecord r = testing::minimal_record("m");
  r.runs[0].trace = big_trace(200'000);
  RunRecord second = r.runs[0];
  second.trace = big_trace(3);
  r.runs.push_back(second);
  store->save(r);

  const std::vector<std::uint8_t> encoded = encode_trace(r.runs[0].trace);
  auto blob = store->open_trace_blob(r.runs[0].id);
  ASSERT_NE(blob, nullptr);
  EXPECT_EQ(blob->size_bytes(), encoded.size());
  ASSERT_GT(encoded.size(), std::size_t{1} << 20) << "the test wants a blob of several PostgreSQL pieces";
  // Another call on the store between pieces does not disturb the reader.
  const auto loaded = store->load_without_traces(r.id);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(read_in_pieces(*blob, 100'000), r.runs[0].trace);
  std::uint8_t byte = 0;
  EXPECT_EQ(blob->read(&byte, 1), 0u);  // at the end

  auto small = store->open_trace_blob(r.runs[1].id);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(read_in_pieces(*small, 7), r.runs[1].trace);

  EXPECT_EQ(store->open_trace_blob(r.runs[1].id + 1000), nullptr);
}

TEST_P(TraceBlobs, LoadWithoutTracesIsLoadLessTheTraces) {
  auto store = open();
  EvaluationRecord r = testing::minimal_record("m");
  r.runs[0].trace = big_trace(10);
  store->save(r);
  const auto full = store->load(r.id);
  auto light = store->load_without_traces(r.id);
  ASSERT_TRUE(full && light);
  ASSERT_EQ(light->runs.size(), 1u);
  EXPECT_TRUE(light->runs[0].trace.spans.empty());
  EXPECT_EQ(light->runs[0].trace_id, full->runs[0].trace_id);
  light->runs[0].trace = full->runs[0].trace;
  EXPECT_EQ(nlohmann::json(light->runs[0].stage_latency_ns.size()),
            nlohmann::json(full->runs[0].stage_latency_ns.size()));
  EXPECT_EQ(light->runs[0].predict_latency_ns, full->runs[0].predict_latency_ns);
  EXPECT_EQ(light->model_name, full->model_name);
  EXPECT_FALSE(store->load_without_traces(r.id + 1));
}

// A run deleted (through the same store) between pieces fails the read, naming the run: PostgreSQL reads one piece
// per query, SQLite's blob handle is expired by the delete (SQLITE_ABORT).
TEST_P(TraceBlobs, RunDeletedWhileReadFailsClearly) {
  auto store = open();
  EvaluationRecord r = testing::minimal_record("m");
  r.runs[0].trace = big_trace(200'000);
  store->save(r);
  auto blob = store->open_trace_blob(r.runs[0].id);
  ASSERT_NE(blob, nullptr);
  std::vector<std::uint8_t> buf(1000);
  ASSERT_EQ(blob->read(buf.data(), buf.size()), buf.size());
  store->remove(r.id);
  try {
    for (;;) {
      if (blob->read(buf.data(), buf.size()) == 0) break;
    }
    FAIL() << "read a deleted run's trace to its end";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("run " + std::to_string(r.runs[0].id)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("deleted"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TraceBlobs, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         testing::backend_name);

}  // namespace
}  // namespace xsp
