// The generation runner on a fake generator whose per-step latencies the test chooses, on a fake clock: the spans of
// each request, the token latencies (exact), the tail traces and the scenarios' token-latency checks.
#include "xsp/eval/generation_runner.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fake_clock.h"
#include "fake_graph_profiler.h"
#include "fake_model.h"
#include "run_helpers.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/registry.h"

namespace xsp {
namespace {

using testing::FakeClock;
using testing::FakeDeviceProfiler;
using testing::FakeFrameworkProfiler;
using testing::FakeGraphProfiler;

// Per-step latencies: tokenize/detokenize through the codec, prefill = prefill_ns, decode step i = decode_ns(i);
// `slow` makes chosen (request, step) pairs slower, counted over every request the generator serves.
struct StepModel {
  double tokenize_ns = 1'000;
  double detokenize_ns = 2'000;
  double prefill_ns = 5'000'000;
  double decode_ns = 1'000'000;
  std::map<std::pair<int, int>, double> slow;  // (request served, step) -> latency
};

// Stands in for the CUPTI counter profiler: while on, the fake generator's every step adds one HARDWARE span (a
// "kernel") with known counters inside the step's interval, as a replayed kernel's range would.
class FakeCounterProfiler final : public DeviceProfiler {
 public:
  std::string name() const override { return "fake-counters"; }
  void start(TraceRecorder& recorder, const DeviceProfilerOptions&) override { recorder_ = &recorder; }
  void stop() override { recorder_ = nullptr; }
  OpCorrelationListener* correlation_listener() override { return nullptr; }
  std::string clock_mapping() const override { return "fake"; }
  // Prefill: 8 MFLOP over 4 MB of DRAM (2 FLOP/byte); a decode step: 1 MFLOP over 1 MB (1 FLOP/byte).
  void kernel(bool prefill, std::int64_t start_ns, std::int64_t end_ns) {
    if (recorder_ == nullptr) return;
    Span s;
    s.id = recorder_->next_id();
    s.level = Level::kHardware;
    s.name = prefill ? "fake_prefill_kernel" : "fake_decode_kernel";
    s.start_ns = start_ns;
    s.end_ns = end_ns;
    s.track = Track::host_thread(current_thread_id());
    s.tags = {{"fp32_flops", prefill ? 8e6 : 1e6},
              {"dram_read_bytes", prefill ? 3e6 : 9e5},
              {"dram_write_bytes", prefill ? 1e6 : 1e5},
              {"range_index", static_cast<std::int64_t>(ranges++)}};
    recorder_->add(std::move(s));
  }
  std::int64_t ranges = 0;

 private:
  TraceRecorder* recorder_ = nullptr;
};

class FakeGenerator final : public Generator {
 public:
  FakeGenerator(FakeClock& clock, const StepModel& model) : clock_(clock), model_(model) {}
  FakeCounterProfiler* counters = nullptr;
  FakeGraphProfiler* graphs = nullptr;
  int max_positions() const override { return 256; }
  int vocab_size() const override { return 100; }
  std::vector<std::int64_t> prefill(const std::vector<std::int64_t>& ids, int batch, int prompt_tokens,
                                    int max_new) override {
    EXPECT_FALSE(open_);
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(batch * prompt_tokens));
    for (auto id : ids) EXPECT_TRUE(id >= 0 && id < 100) << id;
    open_ = true;
    batch_ = batch;
    step_ = 0;
    max_new_ = max_new;
    prompt_lengths.push_back(prompt_tokens);
    advance();
    return std::vector<std::int64_t>(static_cast<std::size_t>(batch), 7);
  }
  std::vector<std::int64_t> decode() override {
    EXPECT_TRUE(open_);
    EXPECT_LT(step_ + 1, max_new_);
    ++step_;
    advance();
    return std::vector<std::int64_t>(static_cast<std::size_t>(batch_), 8 + step_ % 10);
  }
  std::uint64_t kv_cache_bytes() const override { return open_ ? 1000u * static_cast<std::uint64_t>(batch_) : 0; }
  void end() override {
    if (open_) ++served;
    open_ = false;
  }
  int served = 0;
  std::vector<int> prompt_lengths;

 private:
  void advance() {
    const auto slow = model_.slow.find({served, step_});
    const double ns = slow != model_.slow.end() ? slow->second : step_ == 0 ? model_.prefill_ns : model_.decode_ns;
    if (graphs != nullptr && step_ > 0) {
      const std::int64_t start = clock_.now_ns();
      clock_.advance(ns);
      return graphs->step(start, clock_.now_ns());
    }
    if (counters == nullptr || slow != model_.slow.end()) return clock_.advance(ns);
    // The kernel strictly inside the step: 1 ns from either end.
    clock_.advance(1);
    const std::int64_t start = clock_.now_ns();
    clock_.advance(ns - 2);
    counters->kernel(step_ == 0, start, clock_.now_ns());
    clock_.advance(1);
  }
  FakeClock& clock_;
  StepModel model_;
  bool open_ = false;
  int batch_ = 1, step_ = 0, max_new_ = 0;
};

class FakeGenPredictor final : public Predictor {
 public:
  FakeGenPredictor(FakeClock& clock, const StepModel& model) : gen_(clock, model), profiler_(clock) {}
  std::string framework_name() const override { return "fake"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest&, const DeviceSpec&) override {}
  Tensor predict(const Tensor&) override { throw std::logic_error("not a classifier"); }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return &profiler_; }
  Generator* generator() override { return &gen_; }
  FakeGenerator gen_;
  FakeFrameworkProfiler profiler_;
};

Manifest gpt_manifest() {
  Manifest m;
  m.name = "FakeGPT";
  m.version = "1.0.0";
  return m;
}

struct Fixture {
  FakeClock clock;
  StepModel model;
  std::unique_ptr<FakeGenPredictor> predictor;
  RunPlan o;
  std::atomic<int>* interrupt = nullptr;
  std::function<void(FakeGenPredictor&)> on_predictor;  // set up the predictor once made (e.g. its counter hook)
  Fixture() {
    o.measurement.warmup_min_batches = 1;
    o.measurement.min_batches = 4;
    o.measurement.min_duration_ms = 0;
    o.measurement.max_duration_ms = 60'000;
    o.measurement.rule.windows = 2;
    o.generation.prompt_tokens = {8, 8};
    o.generation.output_tokens = {5, 5};
    // 1 µs to tokenize, 2 µs to detokenize, through the fake clock.
    o.generation.codec.encode = [this](std::string_view text) {
      clock.advance(model.tokenize_ns);
      std::vector<std::int64_t> ids;
      for (char c : text) ids.push_back(static_cast<unsigned char>(c) % 100);
      return ids;
    };
    o.generation.codec.decode = [this](const std::vector<std::int64_t>& ids) {
      clock.advance(model.detokenize_ns);
      return std::string(ids.size(), 'x');
    };
    o.generation.prompts = {"the quick brown fox jumps", "over the lazy dog again and again"};
  }
  EvaluationRecord run() { return run(SessionOptions{}); }
  EvaluationRecord run(SessionOptions session) {
    session.clock = &clock;
    session.record_machine_state = false;
    session.interrupt = interrupt;
    predictor = std::make_unique<FakeGenPredictor>(clock, model);
    if (on_predictor) on_predictor(*predictor);
    return testing::generation(gpt_manifest(), *predictor, o, std::move(session));
  }
};

const Span* child(const Trace& t, const Span& parent, const std::string& name, int step = -1) {
  for (const Span& s : t.spans)
    if (s.parent_id == parent.id && s.name == name &&
        (step < 0 || s.tag("step") == std::optional<std::string_view>(std::to_string(step))))
      return &s;
  return nullptr;
}

std::vector<const Span*> named(const Trace& t, const std::string& name) {
  std::vector<const Span*> out;
  for (const Span& s : t.spans)
    if (s.name == name) out.push_back(&s);
  return out;
}

TEST(GenerationRunner, EveryRequestHasItsStepSpansInOrderUnderOneRequestSpan) {
  Fixture f;
  const EvaluationRecord rec = f.run();
  ASSERT_EQ(rec.runs.size(), 1u);
  const RunRecord& run = rec.runs[0];
  EXPECT_EQ(run.iterations, 4);
  EXPECT_EQ(f.predictor->gen_.served, 5);  // 1 warm-up + 4 measured
  const auto requests = named(run.trace, kStageRequest);
  ASSERT_EQ(requests.size(), 4u);
  for (const Span* r : requests) {
    const Span* tok = child(run.trace, *r, kStageTokenize);
    const Span* pre = child(run.trace, *r, kStagePrefill, 0);
    const Span* detok = child(run.trace, *r, kStageDetokenize);
    ASSERT_TRUE(tok && pre && detok);
    EXPECT_LE(tok->end_ns, pre->start_ns);
    std::int64_t last_end = pre->end_ns;
    for (int step = 1; step < 5; ++step) {
      const Span* d = child(run.trace, *r, kStageDecode, step);
      ASSERT_NE(d, nullptr) << "step " << step;
      EXPECT_GE(d->start_ns, last_end);
      EXPECT_EQ(d->duration_ns(), 1'000'000);
      last_end = d->end_ns;
    }
    EXPECT_EQ(child(run.trace, *r, kStageDecode, 5), nullptr) << "one prefill + 4 decodes = 5 tokens";
    EXPECT_GE(detok->start_ns, last_end);
    EXPECT_EQ(pre->duration_ns(), 5'000'000);
    EXPECT_EQ(tok->duration_ns(), 1'000);
    EXPECT_EQ(detok->duration_ns(), 2'000);
    EXPECT_EQ(r->tag("output_tokens"), std::optional<std::string_view>("5"));
    EXPECT_EQ(r->parent_id, 1u);
  }
  // The generated texts: 5 tokens each.
  EXPECT_EQ(rec.settings["sample_outputs"]["1/M"]["output"], "xxxxx");
}

TEST(GenerationRunner, TokenLatenciesAreExactOnKnownStepTimes) {
  Fixture f;
  const RunRecord run = f.run().runs.at(0);
  const GenerationOutcome& g = run.generation.value();
  // TTFT = tokenize (1 µs) + prefill (5 ms); TPOT = decode (1 ms); E2E = TTFT + 4 decodes.
  EXPECT_DOUBLE_EQ(g.ttft_ns.p50, 5'001'000);
  EXPECT_DOUBLE_EQ(g.ttft_ns.p99, 5'001'000);
  EXPECT_DOUBLE_EQ(g.tpot_ns.p50, 1'000'000);
  EXPECT_DOUBLE_EQ(g.itl_ns.max, 1'000'000);
  EXPECT_DOUBLE_EQ(g.e2e_ns.p50, 9'001'000);
  EXPECT_EQ(g.requests, 4);
  EXPECT_EQ(g.output_tokens_total, 20);
  EXPECT_EQ(g.input_tokens, 32);
  EXPECT_EQ(g.kv_cache_bytes, 1000);
  EXPECT_EQ(g.prompt_tokens, (std::vector<std::int64_t>{8, 8, 8, 8}));
  // Stages: every decode step, and the request's service time = 1 + 5000 + 4000 + 2 µs.
  EXPECT_EQ(run.stage_latency_ns.at(kStageDecode).n, 16u);
  EXPECT_DOUBLE_EQ(run.stage_latency_ns.at(kStagePrefill).p50, 5'000'000);
  ASSERT_EQ(run.predict_latency_ns.size(), 4u);
  EXPECT_DOUBLE_EQ(run.predict_latency_ns[0], 9'003'000);
  // LoadGen ran the requests (the batch sweep as MultiStream: a query of `batch` sequences) and took each query's
  // first token from the generator: its TTFT is the generation's, its latency the request's service time.
  EXPECT_EQ(g.loadgen->scenario, "multi-stream");
  EXPECT_EQ(g.loadgen->queries, 4);
  EXPECT_DOUBLE_EQ(g.loadgen->ttft_p50_ns, 5'001'000);
  EXPECT_DOUBLE_EQ(g.loadgen->latency_p50_ns, 9'003'000);
}

TEST(GenerationRunner, BatchedRequestsCountEverySequence) {
  Fixture f;
  f.o.batch_sizes = {1, 3};
  const EvaluationRecord rec = f.run();
  ASSERT_EQ(rec.runs.size(), 2u);
  const GenerationOutcome& g3 = rec.runs[1].generation.value();
  EXPECT_EQ(rec.runs[1].batch_size, 3);
  EXPECT_EQ(g3.requests, 4);
  EXPECT_EQ(g3.sequences, 12);  // 4 requests × 3 sequences
  EXPECT_EQ(g3.output_tokens_total, 60);
  EXPECT_EQ(g3.kv_cache_bytes, 3000);
}

TEST(GenerationRunner, PromptAndOutputLengthsAreDrawnFromTheirRangesAndRecorded) {
  Fixture f;
  f.o.generation.prompts = {std::string(40, 'a')};
  f.o.generation.prompt_tokens = {2, 6};
  f.o.generation.output_tokens = {1, 4};
  f.o.measurement.min_batches = 50;
  const RunRecord run = f.run().runs.at(0);
  std::set<int> prompts, outputs;
  for (int p : run.generation->prompt_tokens) prompts.insert(p);
  for (int n : run.generation->output_tokens) outputs.insert(n);
  EXPECT_EQ(prompts, (std::set<int>{2, 3, 4, 5, 6}));
  EXPECT_EQ(outputs, (std::set<int>{1, 2, 3, 4}));
  // One-token requests have a TTFT but no TPOT.
  std::size_t ones = 0;
  for (int n : run.generation->output_tokens) ones += n == 1;
  EXPECT_EQ(run.generation->single_token_requests, static_cast<std::int64_t>(ones));
  EXPECT_EQ(run.generation->tpot_values_ns.size(), 50 - ones);
  // Each request's decode spans = its output tokens − 1.
  std::size_t decodes = named(run.trace, kStageDecode).size(), expected = 0;
  for (int n : run.generation->output_tokens) expected += static_cast<std::size_t>(n - 1);
  EXPECT_EQ(decodes, expected);
}

TEST(GenerationRunner, TailKeepsTheSlowestStepsWithTheirFrameworkSpans) {
  Fixture f;
  f.o.trace_level = TraceLevel::kFramework;
  f.o.measurement.min_batches = 20;
  f.o.generation.tail_steps = 2;
  // Requests served: 0 is the warm-up. Request 6 (measured 5) has a slow step 3, request 11 (measured 10) a slower
  // step 2, request 15 (measured 14) the slowest first token.
  f.model.slow[{6, 3}] = 7'000'000;
  f.model.slow[{11, 2}] = 9'000'000;
  f.model.slow[{15, 0}] = 50'000'000;
  const RunRecord run = f.run().runs.at(0);
  const auto& tail = run.generation->tail;
  ASSERT_EQ(tail.size(), 4u);  // 2 first tokens + 2 decode steps
  EXPECT_EQ(tail[0].kind, "first_token");
  EXPECT_EQ(tail[0].request, 14);
  EXPECT_EQ(tail[0].rank, 1);
  EXPECT_DOUBLE_EQ(tail[0].percentile, 100.0);
  EXPECT_EQ(tail[2].kind, "decode");
  EXPECT_EQ(tail[2].request, 10);
  EXPECT_EQ(tail[2].step, 2);
  EXPECT_DOUBLE_EQ(tail[2].latency_ns, 9'000'000);
  EXPECT_EQ(tail[3].request, 5);
  EXPECT_EQ(tail[3].step, 3);
  // 20 requests × 4 decode steps: the second slowest is at 100·79/80.
  EXPECT_DOUBLE_EQ(tail[3].percentile, 100.0 * 79 / 80);
  for (const auto& t : tail) EXPECT_TRUE(t.full_trace) << t.kind << " " << t.rank;
  // The slow decode span is tagged and keeps its framework op.
  const Span* slow = nullptr;
  for (const Span& s : run.trace.spans)
    if (s.id == tail[2].span_id) slow = &s;
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->name, kStageDecode);
  EXPECT_EQ(slow->tag("tail"), std::optional<std::string_view>("decode"));
  EXPECT_EQ(slow->tag("tail_rank"), std::optional<std::string_view>("1"));
  EXPECT_EQ(slow->duration_ns(), 9'000'000);
  std::size_t ops_under_slow = 0;
  for (const Span& s : run.trace.spans) ops_under_slow += s.level == Level::kFramework && s.parent_id == slow->id;
  EXPECT_EQ(ops_under_slow, 1u);
  // Framework spans are kept for the tail requests and the last one only: 3 tail requests (14, 10, 5; the two
  // slowest first tokens are 14 and one of the equal others: the earliest, 0) + the last (19).
  std::set<std::string> with_ops;
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : run.trace.spans) by_id[s.id] = &s;
  for (const Span& s : run.trace.spans)
    if (s.level == Level::kFramework)
      with_ops.insert(std::string(*by_id.at(by_id.at(s.parent_id)->parent_id)->tag("request")));
  EXPECT_EQ(with_ops, (std::set<std::string>{"0", "5", "10", "14", "19"}));
  EXPECT_EQ(run.trace.counters.at("generation.kept_request_traces"), 5u);
  EXPECT_EQ(run.trace.counters.at("generation.traced_requests"), 20u);
  // MODEL spans of every request stay.
  EXPECT_EQ(named(run.trace, kStageRequest).size(), 20u);
}

void make_server(Fixture& f, loadgen::TokenLatencyBounds bounds) {
  f.o.generation.scenario = GenerationScenario::kServer;
  f.o.generation.prompts.clear();    // synthetic prompts
  f.o.generation.min_queries = 600;  // enough for p99 at 99% confidence (459)
  f.o.generation.target_qps = 50;    // a request every 20 ms on average, served in ~9 ms: some queueing
  f.o.measurement.min_duration_ms = 0;
  f.o.generation.wait_until = [&f](std::int64_t t) { f.clock.advance(static_cast<double>(t - f.clock.now_ns())); };
  f.o.generation.bounds = bounds;
}

TEST(GenerationRunner, ServerTtftIncludesTheWaitAndEarlyStoppingIsDecidedPerMetric) {
  Fixture f;
  // TPOT is 1 ms: a bound of 0.9 ms cannot hold.
  make_server(f, loadgen::TokenLatencyBounds{1e9, 0.9e6, 99});
  const EvaluationRecord rec = f.run();
  const GenerationOutcome& g = rec.runs.at(0).generation.value();
  EXPECT_EQ(g.requests, 600);
  EXPECT_EQ(g.sequences, 600);
  EXPECT_FALSE(g.valid.value());
  const std::string reason = g.invalid_reason;
  EXPECT_EQ(reason.rfind("TPOT", 0), 0u) << reason;  // TPOT alone failed
  EXPECT_TRUE(g.ttft_check->meets_bound.value());
  EXPECT_TRUE(g.tpot_check->enough_samples);
  EXPECT_DOUBLE_EQ(g.tpot_check->estimate_ns, 1e6);
  // Poisson arrivals bunch up: some requests wait, and their TTFT (arrival to first token) exceeds the service's.
  EXPECT_GT(g.ttft_ns.max, 5'000'000);
  EXPECT_DOUBLE_EQ(g.ttft_ns.min, 5'000'000);  // synthetic: nothing to tokenize
  EXPECT_EQ(rec.scenario, "generation-server");
  // LoadGen's own first-token latency (from each query's scheduled arrival) is the generation's TTFT.
  EXPECT_EQ(g.loadgen->scenario, "server");
  EXPECT_EQ(g.loadgen->queries, 600);
  EXPECT_DOUBLE_EQ(g.loadgen->ttft_p50_ns, g.ttft_ns.p50);
  EXPECT_GT(g.loadgen->mean_issue_delay_ns, 0);  // served inline: late arrivals wait in LoadGen

  // TTFT bounded at the service time fails on the waits, TPOT bounded above 1 ms holds.
  Fixture t;
  make_server(t, loadgen::TokenLatencyBounds{5.0e6, 1.1e6, 99});
  const GenerationOutcome g2 = t.run().runs.at(0).generation.value();
  EXPECT_FALSE(g2.valid.value());
  EXPECT_EQ(g2.invalid_reason.rfind("TTFT", 0), 0u) << g2.invalid_reason;
  EXPECT_TRUE(g2.tpot_check->meets_bound.value());

  Fixture ok;
  make_server(ok, loadgen::TokenLatencyBounds{1e9, 1.1e6, 99});
  const GenerationOutcome g3 = ok.run().runs.at(0).generation.value();
  EXPECT_TRUE(g3.valid.value()) << g3.invalid_reason;
}

TEST(GenerationRunner, AHardwareRunGivesCountersPerDecodeStepAndNoTimings) {
  Fixture f;
  FakeDeviceProfiler device(f.clock);
  FakeCounterProfiler counters;
  f.o.trace_level = TraceLevel::kHardware;
  f.o.sweep.counter_iterations = 2;
  SessionOptions session;
  session.profilers.device = &device;
  session.profilers.counters = &counters;
  f.on_predictor = [&counters](FakeGenPredictor& p) { p.gen_.counters = &counters; };
  const EvaluationRecord rec = f.run(session);
  // Kernel level (timed, through LoadGen as usual), then the counter run.
  ASSERT_EQ(rec.runs.size(), 2u);
  EXPECT_EQ(rec.runs[0].trace_level, TraceLevel::kKernel);
  EXPECT_EQ(rec.runs[0].generation->requests, 4);
  const RunRecord& hw = rec.runs[1];
  EXPECT_EQ(hw.trace_level, TraceLevel::kHardware);
  EXPECT_EQ(hw.generation->requests, 2);  // counter_iterations, not the timed run's minimums
  EXPECT_EQ(hw.generation->loadgen->queries, 2);
  EXPECT_FALSE(hw.generation->timings_used);
  EXPECT_EQ(hw.measurement.stability.verdict, Verdict::kNotAssessed);
  EXPECT_EQ(hw.generation->counter_replay, "kernel");
  // Every step of both requests holds its kernel: one HARDWARE span under each prefill / decode span.
  EXPECT_EQ(counters.ranges, 10);  // 2 requests x 5 steps (the warm-up ran untraced)
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : hw.trace.spans) by_id[s.id] = &s;
  int placed = 0;
  for (const Span& s : hw.trace.spans) {
    if (s.level != Level::kHardware) continue;
    const Span& step = *by_id.at(s.parent_id);
    EXPECT_EQ(step.name, s.name == "fake_prefill_kernel" ? kStagePrefill : kStageDecode) << s.name;
    ++placed;
  }
  EXPECT_EQ(placed, 10);
  // Per step (analysis G5 over the counter run's trace): the mean over the 2 requests; FLOP/byte = flops / (read +
  // write).
  const std::vector<Table> g5 = run_analyses(rec, {"G5"}, std::nullopt);
  ASSERT_EQ(g5.size(), 1u);
  const Table& t = g5[0];
  ASSERT_EQ(t.rows.size(), 5u);
  auto num = [&t](std::size_t row, std::string_view col) {
    const Cell& c = cell(t, t.rows[row], col);
    return std::holds_alternative<double>(c) ? std::get<double>(c) : static_cast<double>(std::get<std::int64_t>(c));
  };
  EXPECT_EQ(num(0, "step"), 0);
  EXPECT_EQ(num(0, "samples"), 2);
  EXPECT_DOUBLE_EQ(num(0, "kernels"), 1.0);
  EXPECT_DOUBLE_EQ(num(0, "gflops"), 8e-3);
  EXPECT_DOUBLE_EQ(num(0, "dram_mb"), 4.0);
  EXPECT_DOUBLE_EQ(num(0, "arithmetic_intensity"), 2.0);
  for (std::size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(num(i, "step"), static_cast<double>(i));
    EXPECT_DOUBLE_EQ(num(i, "gflops"), 1e-3);
    EXPECT_DOUBLE_EQ(num(i, "arithmetic_intensity"), 1.0);
  }
  EXPECT_NE(t.notes.at(0).find("kernel replay"), std::string::npos) << t.notes.at(0);
}

// Graph mode captures the decode step once, in the first request; the replays of every later request go under the
// captured op even when the capturing request's spans below MODEL level were dropped (not a tail request) or were a
// warm-up's, thrown away.
void expect_every_replay_under_the_captured_op(int warmups) {
  Fixture f;
  FakeDeviceProfiler device(f.clock);
  FakeGraphProfiler graphs;
  graphs.node = 101 + 1000 * warmups;
  f.o.trace_level = TraceLevel::kKernel;
  f.o.leveled = false;
  f.o.measurement.warmup_min_batches = warmups;
  f.o.measurement.min_batches = 8;
  f.o.generation.tail_steps = 1;
  // The tail is elsewhere: request 4's first token and request 6's decode step 2 (counted from the first served).
  f.model.slow[{warmups + 4, 0}] = 9'000'000;
  f.model.slow[{warmups + 6, 2}] = 3'000'000;
  SessionOptions session;
  session.profilers.device = &graphs;
  f.on_predictor = [&graphs](FakeGenPredictor& p) { p.gen_.graphs = &graphs; };
  const EvaluationRecord rec = f.run(session);
  ASSERT_TRUE(graphs.captured);
  const RunRecord& run = rec.runs.back();
  ASSERT_EQ(run.trace_level, TraceLevel::kKernel);
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : run.trace.spans) by_id[s.id] = &s;
  // The capture's op was in request 0 (or the warm-up): its spans below MODEL level are gone from the run's trace.
  std::size_t captured_ops = 0, replayed = 0;
  for (const Span& s : run.trace.spans) {
    if (s.name == "fake::attention" && !s.tag("replayed_from")) ++captured_ops;
    if (s.level != Level::kKernel || !s.tag("graph_id")) continue;
    ++replayed;
    EXPECT_EQ(s.tag("attribution"), std::optional<std::string_view>("graph-node"));
    const Span& op = *by_id.at(s.parent_id);
    EXPECT_EQ(op.name, "fake::attention");
    EXPECT_EQ(op.tag("replayed_from"), std::optional<std::string_view>("cuda-graph"));
    EXPECT_EQ(op.tag("module"), std::optional<std::string_view>("h.0.attn"));
  }
  EXPECT_EQ(captured_ops, 0u);
  // Kept: the tail requests (4, 6) and the last (7), 4 decode steps each.
  EXPECT_EQ(replayed, 12u);
  EXPECT_EQ(run.trace.counters.at("cuda_graph.attributed_activities"), 12u);
  EXPECT_EQ(run.trace.counters.at("cuda_graph.unknown_capture_context"), 0u);
}

TEST(GenerationRunner, ReplaysOfADecodeGraphCapturedInADroppedRequestGoUnderTheCapturedOp) {
  expect_every_replay_under_the_captured_op(0);
}

TEST(GenerationRunner, ReplaysOfADecodeGraphCapturedInTheWarmUpGoUnderTheCapturedOp) {
  expect_every_replay_under_the_captured_op(1);
}

TEST(GenerationRunner, TooFewRequestsForEarlyStoppingIsSaid) {
  Fixture f;
  f.o.generation.scenario = GenerationScenario::kSingleStream;
  f.o.generation.min_queries = 10;
  f.o.generation.bounds = loadgen::TokenLatencyBounds{1e9, 1e9, 99};
  const GenerationOutcome g = f.run().runs.at(0).generation.value();
  EXPECT_FALSE(g.valid.value());
  EXPECT_FALSE(g.ttft_check->enough_samples);
  EXPECT_EQ(g.ttft_check->min_samples, 459);
}

TEST(GenerationRunner, OfflineIssuesEverySequenceAtTheStartInBatches) {
  Fixture f;
  f.o.generation.scenario = GenerationScenario::kOffline;
  f.o.batch_sizes = {4};
  f.o.generation.min_queries = 10;
  f.o.measurement.min_duration_ms = 0;
  const EvaluationRecord rec = f.run();
  const RunRecord& run = rec.runs.at(0);
  EXPECT_EQ(run.generation->sequences, 10);  // batches of 4, 4, 2
  EXPECT_EQ(run.generation->requests, 3);
  EXPECT_EQ(named(run.trace, kStageRequest).size(), 3u);
  // All issued at once: the last batch's TTFT includes the two batches before it (2 × 9.0 ms + its own TTFT).
  // Batch of 4: 4 µs to tokenize, 5 ms prefill, 4 × 1 ms decode, 8 µs to detokenize = 9.012 ms; the batch of 2
  // tokenizes in 2 µs.
  EXPECT_DOUBLE_EQ(run.generation->ttft_ns.max, 2 * 9'012'000.0 + 5'002'000);
}

TEST(GenerationRunner, BadOptionsAreRefusedBeforeAnythingRuns) {
  Fixture f;
  f.o.generation.prompt_tokens = {200, 200};
  f.o.generation.output_tokens = {100, 100};
  EXPECT_THROW(
      {
        try {
          f.run();
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("300 positions"), std::string::npos) << e.what();
          throw;
        }
      },
      std::invalid_argument);
  EXPECT_EQ(f.predictor->gen_.served, 0);
  EXPECT_THROW(parse_token_range("0"), std::invalid_argument);
  EXPECT_THROW(parse_token_range("9:3"), std::invalid_argument);
  EXPECT_THROW(parse_token_range("4:x"), std::invalid_argument);
  EXPECT_EQ(parse_token_range("16:64"), (TokenRange{16, 64}));
}

TEST(GenerationRunner, AnInterruptKeepsTheFinishedRuns) {
  Fixture f;
  f.o.batch_sizes = {1, 2};
  std::atomic<int> sig{0};
  f.interrupt = &sig;
  int requests = 0;
  auto progress = [&](const Progress&) {
    if (++requests == 7) sig = 15;  // during the second run
  };
  SessionOptions session;
  session.progress = progress;
  const EvaluationRecord rec = f.run(std::move(session));
  EXPECT_EQ(rec.status, "incomplete");
  ASSERT_EQ(rec.runs.size(), 1u);
  EXPECT_EQ(rec.settings["interrupted"]["signal"], 15);
}

}  // namespace
}  // namespace xsp
