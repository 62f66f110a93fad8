// Trace assembly + analyses A1-A7 throughput on a synthetic trace (default 1 M spans).
// Usage: bench_assembly [SPANS] [REPEATS]. Prints spans/s for each phase and the peak RSS.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "xsp/analysis/analyses.h"
#include "xsp/stats/stats.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/serialize.h"

using namespace xsp;

namespace {

// A ResNet-50-like run: per batch 4 MODEL spans, 180 top-level ops (placed by containment) each with
// 3 nested ops (placed by context), tags like the LibTorch profiler's.
RunRecord synthetic_run(std::size_t target_spans, std::uint64_t seed) {
  constexpr int kLayers = 180, kNested = 3;
  const std::size_t per_batch = 4 + kLayers * (1 + kNested);
  const std::size_t batches = std::max<std::size_t>(1, target_spans / per_batch);
  static const char* kTypes[] = {"aten::conv2d", "aten::batch_norm", "aten::relu_", "aten::add_", "aten::linear"};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dur(2000, 200000);
  RunRecord run;
  run.batch_size = 1;
  run.trace_level = TraceLevel::kFramework;
  run.iterations = static_cast<int>(batches);
  Trace& t = run.trace;
  t.spans.reserve(batches * per_batch + 1);
  SpanId next = 1;
  const SpanId app = next++;
  std::int64_t now = 0;
  std::vector<double> predict;
  for (std::size_t b = 0; b < batches; ++b) {
    const std::string batch = std::to_string(b);
    auto model = [&](const char* name, std::int64_t length) {
      Span s;
      s.id = next++;
      s.parent_id = app;
      s.parent_rule = ParentRule::kContext;
      s.level = Level::kModel;
      s.name = name;
      s.start_ns = now;
      s.end_ns = now + length;
      s.track = Track::host_thread(1);
      s.tags = {{"batch", batch}};
      t.spans.push_back(std::move(s));
      return t.spans.size() - 1;
    };
    model("input", 1000);
    now += 1000;
    model("preprocess", 5000);
    now += 5000;
    const std::size_t predict_index = model("predict", 0);
    const std::int64_t predict_start = now;
    for (int l = 0; l < kLayers; ++l) {
      Span op;
      op.id = next++;
      op.level = Level::kFramework;
      op.name = kTypes[l % 5];
      op.start_ns = now;
      op.track = Track::host_thread(1);
      op.tags = {{"module", "layer" + std::to_string(l / 40) + "." + std::to_string(l % 40) + ".conv"},
                 {"shapes", "[1,64,56,56],[64,64,3,3]"},
                 {"allocated_bytes", std::to_string(802816 * (l % 3))}};
      const SpanId op_id = op.id;
      std::int64_t inner = now + 100;
      for (int k = 0; k < kNested; ++k) {
        Span n;
        n.id = next++;
        n.parent_id = op_id;
        n.parent_rule = ParentRule::kContext;
        n.level = Level::kFramework;
        n.name = "aten::_inner";
        n.start_ns = inner;
        n.end_ns = inner + dur(rng);
        n.track = Track::host_thread(1);
        inner = n.end_ns + 50;
        t.spans.push_back(std::move(n));
      }
      op.end_ns = inner + 100;
      now = op.end_ns + 200;
      t.spans.push_back(std::move(op));
    }
    t.spans[predict_index].end_ns = now;
    predict.push_back(static_cast<double>(now - predict_start));
    now += 100;
    model("postprocess", 2000);
    now += 2000;
  }
  Span root;
  root.id = app;
  root.level = Level::kApplication;
  root.name = "application";
  root.start_ns = -1;
  root.end_ns = now + 1;
  root.track = Track::host_thread(1);
  t.spans.push_back(std::move(root));
  std::shuffle(t.spans.begin(), t.spans.end(), rng);  // profilers flush out of order
  run.predict_latency_ns = predict;
  run.stage_latency_ns[kStagePredict] = summarize(predict);
  run.throughput_samples_per_s = 1e9 / run.stage_latency_ns[kStagePredict].trimmed_mean;
  return run;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t spans = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  std::vector<double> assemble_s, analyze_s, encode_s;
  std::size_t n = 0, unparented = 0, rows = 0, blob_bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    EvaluationRecord record;
    record.batch_sizes = {1};
    record.trace_level = TraceLevel::kFramework;
    record.runs.push_back(synthetic_run(spans, 42 + static_cast<std::uint64_t>(r)));
    auto& trace = record.runs[0].trace;
    n = trace.spans.size();
    auto t0 = std::chrono::steady_clock::now();
    const auto report = assemble(trace);
    assemble_s.push_back(seconds_since(t0));
    unparented = report.unparented;
    t0 = std::chrono::steady_clock::now();
    const auto tables = run_analyses(record, {"A1", "A2", "A3", "A4", "A5", "A6", "A7"}, std::nullopt);
    analyze_s.push_back(seconds_since(t0));
    rows = 0;
    for (const auto& table : tables) rows += table.rows.size();
    t0 = std::chrono::steady_clock::now();
    blob_bytes = encode_trace(trace).size();
    encode_s.push_back(seconds_since(t0));
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto median = [](std::vector<double> v) { return percentile(std::move(v), 50); };
  std::printf("spans                     %zu (unparented after assembly: %zu, table rows: %zu)\n", n, unparented, rows);
  std::printf("assemble   median %.3f s   %.2f M spans/s\n", median(assemble_s), n / median(assemble_s) / 1e6);
  std::printf("A1-A7      median %.3f s   %.2f M spans/s\n", median(analyze_s), n / median(analyze_s) / 1e6);
  std::printf("both       median %.3f s   %.2f M spans/s\n", median(assemble_s) + median(analyze_s),
              n / (median(assemble_s) + median(analyze_s)) / 1e6);
  std::printf("encode     median %.3f s   %.1f MB compressed (%.1f bytes/span)\n", median(encode_s), blob_bytes / 1e6,
              static_cast<double>(blob_bytes) / static_cast<double>(n));
  std::printf("peak RSS   %.0f MB (whole process, %d repeats)\n", usage.ru_maxrss / 1024.0, repeats);
  return unparented == 0 ? 0 : 1;
}
