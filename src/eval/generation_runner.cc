#include "xsp/eval/generation_runner.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "format.h"
#include "scoped_span.h"
#include "xsp/eval/session.h"
#include "xsp/loadgen/loadgen.h"
#include "xsp/stats/stability.h"
#include "xsp/stats/stats.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/graph_replay.h"
#include "xsp/trace/run_statistics.h"

namespace xsp {
namespace {

// A step of a measured request ranked for the tail: its duration, the request and the step (0 = first token).
struct StepRank {
  double ns = 0;
  std::size_t request = 0;
  int step = 0;
};
// Slowest first; ties: the earlier request, then the earlier step (stable, reproducible).
bool slower(const StepRank& a, const StepRank& b) {
  if (a.ns != b.ns) return a.ns > b.ns;
  if (a.request != b.request) return a.request < b.request;
  return a.step < b.step;
}

// Keeps the n largest StepRanks seen.
class TopSteps {
 public:
  explicit TopSteps(std::size_t n) : n_(n) {}
  void offer(const StepRank& s) {
    if (n_ == 0) return;
    if (top_.size() == n_ && !slower(s, top_.back())) return;
    top_.insert(std::upper_bound(top_.begin(), top_.end(), s, slower), s);
    if (top_.size() > n_) top_.pop_back();
  }
  const std::vector<StepRank>& top() const { return top_; }

 private:
  std::size_t n_;
  std::vector<StepRank> top_;
};

// What one request produced.
struct RequestOutcome {
  std::int64_t start_ns = 0, end_ns = 0;
  std::vector<std::int64_t> token_end_ns;         // per step
  std::vector<double> step_ns;                    // per step: prefill first, then each decode
  std::map<std::string, double> stage_ns;         // tokenize, detokenize, request
  std::vector<std::vector<std::int64_t>> tokens;  // per sequence
  std::vector<std::string> texts;                 // per sequence, when decoded
  std::uint64_t kv_cache_bytes = 0;
  std::map<int, SpanId> step_span;  // step -> its MODEL span id
};

struct Run {
  int batch = 1;
  TraceLevel level = TraceLevel::kModel;
};

struct RunTally;
struct Serving;
// A request's sequences: LoadGen sample indices, each naming its prompt (index mod the prompt count).
using Samples = std::span<const std::uint64_t>;

class GenerationRun {
 public:
  GenerationRun(const Manifest& manifest, Predictor& predictor, Generator& gen, const RunPlan& plan,
                RunSession& session)
      : manifest_(manifest),
        predictor_(predictor),
        gen_(gen),
        plan_(plan),
        o_(plan.generation),
        session_(session),
        clock_(session.clock()) {}

  RunRecord run(const Run& r, nlohmann::json& sample_output);

 private:
  static constexpr SpanId kAppSpan = 1;  // every run's APPLICATION span; requests' spans count on from 2
  loadgen::Settings settings(const Run& r) const;
  // LoadGen's query `q`, served inline: its sequences in requests of the run's batch size; the first token of the
  // first request is the query's first token, the end of the last its completion.
  void serve(Serving& sv, const loadgen::Query& q, loadgen::QueryCompleter& completer);
  void check_token_latencies(const std::vector<loadgen::GeneratedRequest>& generated, GenerationOutcome& g) const;
  GenerationOutcome outcome(const RunTally& t, const Run& r, const loadgen::GenerationMetrics& gm) const;
  Trace close_trace(RunTally& t, const Run& r, std::int64_t t0);
  RequestOutcome request(TraceRecorder* rec, SpanId app, Samples samples, int prompt_tokens, int output_tokens,
                         std::uint64_t synthetic_seed, std::vector<Tag> tags);
  // One request between the session's start and stop for the run's level (prefill and decode steps run different
  // ops on growing shapes: the framework profiler reads every op).
  RequestOutcome traced_request(TraceRecorder& rec, const Run& r, SpanId app, Samples samples, int prompt_tokens,
                                int output_tokens, std::uint64_t synthetic_seed, std::vector<Tag> tags);
  void check_interrupt() { session_.check_interrupt(); }
  // LoadGen reads the session's clock and waits through the plan's hook (a test's fake clock) or a sleep.
  class Timebase final : public loadgen::Timebase {
   public:
    Timebase(const Clock& clock, const GenerationPlan& o) : clock_(clock), o_(o) {}
    std::int64_t now_ns() const override { return clock_.now_ns(); }
    void wait_until(std::int64_t t) const override {
      if (o_.wait_until) return o_.wait_until(t);
      while (clock_.now_ns() < t)
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(t - clock_.now_ns(), 1'000'000)));
    }

   private:
    const Clock& clock_;
    const GenerationPlan& o_;
  };

  const Manifest& manifest_;
  Predictor& predictor_;
  Generator& gen_;
  const RunPlan& plan_;
  const GenerationPlan& o_;
  RunSession& session_;
  const Clock& clock_;
  const Timebase timebase_{clock_, o_};
  std::string clock_mapping_;
};

RequestOutcome GenerationRun::traced_request(TraceRecorder& rec, const Run& r, SpanId app, Samples samples,
                                             int prompt_tokens, int output_tokens, std::uint64_t synthetic_seed,
                                             std::vector<Tag> tags) {
  session_.start(rec, r.level, false);
  RequestOutcome out;
  try {
    out = request(&rec, app, samples, prompt_tokens, output_tokens, synthetic_seed, std::move(tags));
  } catch (...) {
    session_.stop();
    throw;
  }
  session_.stop();
  if (!session_.clock_mapping().empty()) clock_mapping_ = session_.clock_mapping();
  return out;
}

RequestOutcome GenerationRun::request(TraceRecorder* rec, SpanId app, Samples samples, int prompt_tokens,
                                      int output_tokens, std::uint64_t synthetic_seed, std::vector<Tag> tags) {
  const int batch = static_cast<int>(samples.size());
  RequestOutcome out;
  out.tokens.assign(static_cast<std::size_t>(batch), {});
  struct EndGuard {  // the cache is freed whatever happens
    Generator& g;
    ~EndGuard() { g.end(); }
  } guard{gen_};
  ScopedSpan req(clock_, rec, Level::kModel, kStageRequest, app, std::move(tags));
  out.start_ns = req.start_ns();
  std::vector<std::int64_t> ids;
  ids.reserve(static_cast<std::size_t>(batch) * static_cast<std::size_t>(prompt_tokens));
  {
    ScopedSpan s(clock_, rec, Level::kModel, kStageTokenize, req.id());
    if (!o_.prompts.empty()) {
      for (int j = 0; j < batch; ++j) {
        const std::size_t prompt = samples[static_cast<std::size_t>(j)] % o_.prompts.size();
        const std::vector<std::int64_t> v = o_.codec.encode(o_.prompts[prompt]);
        if (v.size() < static_cast<std::size_t>(prompt_tokens))
          throw std::runtime_error("prompt " + std::to_string(prompt) + " has " + std::to_string(v.size()) +
                                   " tokens, fewer than the " + std::to_string(prompt_tokens) + " asked for");
        ids.insert(ids.end(), v.begin(), v.begin() + prompt_tokens);
      }
    } else {
      // Synthetic: ids drawn from the vocabulary (nothing to tokenize; the span is kept so every request has the
      // same shape).
      std::mt19937_64 rng(synthetic_seed);
      std::uniform_int_distribution<std::int64_t> id(0, gen_.vocab_size() - 1);
      for (int k = 0; k < batch * prompt_tokens; ++k) ids.push_back(id(rng));
    }
    out.stage_ns[kStageTokenize] = static_cast<double>(s.close());
  }
  auto keep = [&](const std::vector<std::int64_t>& next) {
    if (next.size() != static_cast<std::size_t>(batch))
      throw std::runtime_error(predictor_.framework_name() + " generator returned " + std::to_string(next.size()) +
                               " tokens for a batch of " + std::to_string(batch));
    for (int j = 0; j < batch; ++j)
      out.tokens[static_cast<std::size_t>(j)].push_back(next[static_cast<std::size_t>(j)]);
  };
  {
    ScopedSpan s(clock_, rec, Level::kModel, kStagePrefill, req.id(), {{"step", 0}, {"tokens", prompt_tokens}});
    session_.set_parent(s.id());
    const auto first = gen_.prefill(ids, batch, prompt_tokens, output_tokens);
    out.step_ns.push_back(static_cast<double>(s.close()));
    out.token_end_ns.push_back(s.end_ns());
    out.step_span[0] = s.id();
    keep(first);
  }
  for (int step = 1; step < output_tokens; ++step) {
    ScopedSpan s(clock_, rec, Level::kModel, kStageDecode, req.id(),
                 {{"step", step}, {"position", prompt_tokens + step - 1}});
    session_.set_parent(s.id());
    const auto next = gen_.decode();
    out.step_ns.push_back(static_cast<double>(s.close()));
    out.token_end_ns.push_back(s.end_ns());
    out.step_span[step] = s.id();
    keep(next);
  }
  out.kv_cache_bytes = gen_.kv_cache_bytes();
  {
    ScopedSpan s(clock_, rec, Level::kModel, kStageDetokenize, req.id());
    if (o_.codec.decode)
      for (const auto& t : out.tokens) out.texts.push_back(o_.codec.decode(t));
    out.stage_ns[kStageDetokenize] = static_cast<double>(s.close());
  }
  out.stage_ns[kStageRequest] = static_cast<double>(req.close());
  out.end_ns = req.end_ns();
  return out;
}

// Everything a run accumulates request by request: the spans (MODEL spans of all, deeper ones of the tail
// requests), the token timings LoadGen's metrics read, the per-stage latencies and the slowest steps.
struct RunTally {
  explicit RunTally(std::size_t tail_steps) : top_first(tail_steps), top_decode(tail_steps) {}
  std::vector<Span> model_spans;
  std::map<std::size_t, std::vector<Span>> deep_spans;  // measured request -> its spans below MODEL level
  std::map<SpanId, std::size_t> span_index;             // MODEL span id -> position in model_spans
  std::vector<std::vector<SpanId>> step_ids;            // per measured request, per step: its MODEL span
  std::map<std::string, std::uint64_t> counters;
  TopSteps top_first, top_decode;
  std::vector<double> all_first, all_decode;
  std::vector<loadgen::GeneratedRequest> generated;
  std::vector<double> service_ns;
  std::map<std::string, std::vector<double>> stages;
  std::vector<std::int64_t> prompt_lengths, output_lengths;
  std::uint64_t kv_max = 0;
  std::uint64_t dropped_spans = 0;
  std::int64_t first_issue = std::numeric_limits<std::int64_t>::max(), last_token = 0;

  // Request k's trace and outcome, issued at `issued` (its arrival; closed loop: its start).
  void add(std::size_t k, Trace t, const RequestOutcome& out, std::int64_t issued, bool queued, int batch,
           int prompt_tokens, int output_tokens) {
    for (const auto& [name, value] : t.counters) counters[name] += value;
    first_issue = std::min(first_issue, issued);
    last_token = std::max(last_token, out.token_end_ns.back());
    for (Span& s : t.spans) {
      if (s.level == Level::kModel) {
        if (s.name == kStageRequest && queued) s.tags.emplace_back("queue_ns", out.start_ns - issued);
        span_index[s.id] = model_spans.size();
        model_spans.push_back(std::move(s));
      } else {
        deep_spans[k].push_back(std::move(s));
      }
    }
    step_ids.emplace_back();
    for (const auto& [step, id] : out.step_span) step_ids.back().push_back(id);
    for (int j = 0; j < batch; ++j) {
      loadgen::GeneratedRequest g;
      g.issued_ns = issued;
      g.input_tokens = prompt_tokens;
      g.token_ns = out.token_end_ns;
      generated.push_back(std::move(g));
    }
    service_ns.push_back(out.stage_ns.at(kStageRequest));
    for (const auto& [stage, ns] : out.stage_ns) stages[stage].push_back(ns);
    stages[kStagePrefill].push_back(out.step_ns.front());
    for (std::size_t i = 1; i < out.step_ns.size(); ++i) stages[kStageDecode].push_back(out.step_ns[i]);
    prompt_lengths.push_back(prompt_tokens);
    output_lengths.push_back(output_tokens);
    kv_max = std::max(kv_max, out.kv_cache_bytes);
    const double ttft = static_cast<double>(out.token_end_ns.front() - issued);
    all_first.push_back(ttft);
    top_first.offer({ttft, k, 0});
    for (std::size_t i = 1; i < out.step_ns.size(); ++i) {
      all_decode.push_back(out.step_ns[i]);
      top_decode.offer({out.step_ns[i], k, static_cast<int>(i)});
    }
  }

  // Full traces are kept for the requests holding a tail step and for the latest request (k); the others keep
  // their MODEL spans only, so memory stays bounded however long the run.
  void drop_deep_spans_outside_tail(std::size_t k) {
    std::set<std::size_t> wanted{k};
    for (const auto& s : top_first.top()) wanted.insert(s.request);
    for (const auto& s : top_decode.top()) wanted.insert(s.request);
    for (auto it = deep_spans.begin(); it != deep_spans.end();) {
      if (wanted.count(it->first)) {
        ++it;
      } else {
        dropped_spans += it->second.size();
        it = deep_spans.erase(it);
      }
    }
  }

  // The tail: which steps were the slowest, at which percentile of the run's steps, whether their full traces were
  // kept; their MODEL spans tagged tail, tail_rank, tail_percentile.
  std::vector<GenerationTailStep> tail_steps() {
    std::vector<GenerationTailStep> tail;
    auto tag_tail = [&](const std::vector<StepRank>& top, std::size_t total, const char* kind) {
      for (std::size_t i = 0; i < top.size(); ++i) {
        const StepRank& s = top[i];
        const double percentile = 100.0 * static_cast<double>(total - i) / static_cast<double>(total);
        const SpanId id = step_ids[s.request][static_cast<std::size_t>(s.step)];
        if (auto it = span_index.find(id); it != span_index.end()) {
          auto& tags = model_spans[it->second].tags;
          tags.emplace_back("tail", kind);
          tags.emplace_back("tail_rank", static_cast<std::int64_t>(i + 1));
          tags.emplace_back("tail_percentile", percentile);
        }
        tail.push_back({kind, static_cast<std::int64_t>(i + 1), static_cast<std::int64_t>(s.request), s.step, s.ns,
                        percentile, id, deep_spans.count(s.request) > 0});
      }
    };
    tag_tail(top_first.top(), all_first.size(), "first_token");
    tag_tail(top_decode.top(), all_decode.size(), "decode");
    return tail;
  }
};

// The run as a LoadGen test: the batch sweep as MultiStream (closed loop, a query of `batch` sequences), single-stream
// and server as theirs (a query of one sequence), offline as one query of every sequence served in batches. Both
// minimums as LoadGen's min_query_count and min_duration: there is no measuring until stable here, so
// max_duration_ms, which bounds that in the batch sweep, has nothing to bound.
loadgen::Settings GenerationRun::settings(const Run& r) const {
  const auto& m = plan_.measurement;
  loadgen::Settings s;
  const auto min_batches = static_cast<std::uint64_t>(std::max(1, m.min_batches));
  switch (o_.scenario) {
    case GenerationScenario::kBatchSweep:
      s.scenario = loadgen::Scenario::kMultiStream;
      s.samples_per_query = static_cast<std::uint64_t>(r.batch);
      s.min_query_count = min_batches;
      break;
    case GenerationScenario::kSingleStream:
      s.scenario = loadgen::Scenario::kSingleStream;
      s.min_query_count = std::max<std::uint64_t>(min_batches, o_.min_queries);
      break;
    case GenerationScenario::kServer:
      s.scenario = loadgen::Scenario::kServer;
      s.min_query_count = o_.min_queries;
      break;
    case GenerationScenario::kOffline:
      s.scenario = loadgen::Scenario::kOffline;
      s.min_query_count = o_.min_queries;
      break;
  }
  s.target_qps = o_.target_qps;
  s.min_duration_ms = static_cast<std::int64_t>(std::ceil(m.min_duration_ms));
  s.seed = plan_.inputs.seed;
  s.sample_count = std::max<std::size_t>(1, o_.prompts.size());
  s.timebase = &timebase_;
  return s;
}

// LoadGen's checks on token latencies: bounds in the server scenario (and single-stream when given), else the
// single-stream 90th-percentile estimates alone. Adds early_stopping (and valid, invalid_reason with bounds) to g.
void GenerationRun::check_token_latencies(const std::vector<loadgen::GeneratedRequest>& generated,
                                          GenerationOutcome& g) const {
  if (o_.scenario != GenerationScenario::kServer && o_.scenario != GenerationScenario::kSingleStream) return;
  loadgen::TokenLatencyBounds b;
  if (o_.bounds) {
    b = *o_.bounds;
  } else {
    b.ttft_ns = b.tpot_ns = std::numeric_limits<double>::max();
    b.percentile = 90;
  }
  const auto v = loadgen::check_token_latencies(generated, b);
  auto check = [&](const loadgen::TokenMetricCheck& c, bool bounded) {
    TokenLatencyCheck k;
    k.samples = static_cast<std::int64_t>(c.samples);
    k.percentile = b.percentile;
    k.estimate_ns = c.estimate_ns;
    k.enough_samples = c.enough_samples;
    k.min_samples = static_cast<std::int64_t>(c.min_samples);
    if (bounded) {
      k.bound_ns = c.bound_ns;
      k.meets_bound = c.meets_bound;
    }
    return k;
  };
  g.ttft_check = check(v.ttft, o_.bounds.has_value());
  g.tpot_check = check(v.tpot, o_.bounds.has_value());
  if (o_.bounds) {
    g.valid = v.valid;
    g.invalid_reason = v.reason;
  }
}

// RunRecord::generation: `gm` (the metrics over the measured requests, rates over first issue .. last token), each
// request's TTFT and TPOT, LoadGen's checks.
GenerationOutcome GenerationRun::outcome(const RunTally& t, const Run& r, const loadgen::GenerationMetrics& gm) const {
  GenerationOutcome g;
  g.requests = static_cast<std::int64_t>(t.service_ns.size());
  g.sequences = static_cast<std::int64_t>(gm.requests);
  g.sequences_per_request = r.batch;
  g.prompt_tokens = t.prompt_lengths;
  g.output_tokens = t.output_lengths;
  g.input_tokens = static_cast<std::int64_t>(gm.input_tokens);
  g.output_tokens_total = static_cast<std::int64_t>(gm.output_tokens);
  g.ttft_ns = gm.ttft_ns;
  g.tpot_ns = gm.tpot_ns;
  g.itl_ns = gm.itl_ns;
  g.e2e_ns = gm.e2e_ns;
  g.duration_ns = gm.duration_ns;
  g.input_tokens_per_s = gm.input_tokens_per_s;
  g.output_tokens_per_s = gm.output_tokens_per_s;
  g.requests_per_s = gm.requests_per_s;
  g.single_token_requests = static_cast<std::int64_t>(gm.single_token_requests);
  g.ttft_stability = gm.ttft_stability.verdict;
  g.tpot_stability = gm.tpot_stability.verdict;
  g.kv_cache_bytes = static_cast<std::int64_t>(t.kv_max);
  std::vector<double> ttft_values, tpot_values;
  for (const auto& q : t.generated) {
    ttft_values.push_back(static_cast<double>(q.token_ns.front() - q.issued_ns));
    if (q.token_ns.size() >= 2)
      tpot_values.push_back(static_cast<double>(q.token_ns.back() - q.token_ns.front()) /
                            static_cast<double>(q.token_ns.size() - 1));
  }
  g.ttft_values_ns = std::move(ttft_values);
  g.tpot_values_ns = std::move(tpot_values);
  check_token_latencies(t.generated, g);
  return g;
}

// The run's trace: its MODEL spans and the kept requests' deeper ones under the APPLICATION span, assembled.
Trace GenerationRun::close_trace(RunTally& t, const Run& r, std::int64_t t0) {
  Span app;
  app.id = kAppSpan;
  app.name = manifest_.name + " bs=" + std::to_string(r.batch) + " " + std::string(to_string(r.level)) + " generation";
  app.tags = {{"model", manifest_.name},
              {"framework", predictor_.framework_name()},
              {"batch_size", r.batch},
              {"trace_level", std::string(to_string(r.level))},
              {"scenario", std::string(to_string(o_.scenario))}};
  app.start_ns = t0;
  app.end_ns = clock_.now_ns();
  std::vector<Span> spans = std::move(t.model_spans);
  std::size_t kept_requests = 0;
  for (auto& [k, request_spans] : t.deep_spans) {
    ++kept_requests;
    spans.insert(spans.end(), std::make_move_iterator(request_spans.begin()),
                 std::make_move_iterator(request_spans.end()));
  }
  if (r.level > TraceLevel::kModel) {
    t.counters[stat::kGenerationTracedRequests] += t.service_ns.size();
    t.counters[stat::kGenerationKeptRequestTraces] += kept_requests;
    t.counters[stat::kGenerationDroppedSpans] += t.dropped_spans;
  }
  return close_run_trace(std::move(spans), std::move(app), t.counters, clock_mapping_, clock_);
}

// One run's state while LoadGen issues its queries.
struct Serving {
  Serving(const Run& run, RunTally& t, std::uint64_t seed, nlohmann::json& sample)
      : r(run), tally(t), lengths(seed), synthetic(seed), sample_output(sample) {}
  Run r;
  RunTally& tally;
  std::mt19937_64 lengths;  // prompt and output lengths, drawn request by request
  std::uint64_t synthetic;  // the next synthetic prompt's seed
  SpanId next_id = 0;
  std::size_t requests = 0;    // measured requests so far
  int done = 0, expected = 0;  // progress: requests (warm-up included) done, and in all (0: open-ended)
  bool queued = false;         // server, offline: a request may wait after its arrival (tagged queue_ns)
  bool counter_run = false;    // trace level hardware: every request's trace is kept
  nlohmann::json& sample_output;
  int draw(const TokenRange& range) {
    return range.min == range.max ? range.min : std::uniform_int_distribution<int>(range.min, range.max)(lengths);
  }
};

// The generator as LoadGen's system under test, served inline on the load generator's thread: one generator serves
// one request at a time, so a query waits in LoadGen's schedule (its latency counts from its arrival) and not in a
// queue of ours, and no thread hand-off sits in its TTFT.
class GenerationSut final : public loadgen::SystemUnderTest {
 public:
  using Serve = std::function<void(const loadgen::Query&, loadgen::QueryCompleter&)>;
  explicit GenerationSut(Serve serve) : serve_(std::move(serve)) {}
  std::string name() const override { return "generation"; }
  void start(loadgen::QueryCompleter& completer) override { completer_ = &completer; }
  void issue(const loadgen::Query& q) override { serve_(q, *completer_); }
  void stop() override { completer_ = nullptr; }

 private:
  Serve serve_;
  loadgen::QueryCompleter* completer_ = nullptr;
};

void GenerationRun::serve(Serving& sv, const loadgen::Query& q, loadgen::QueryCompleter& completer) {
  const auto batch = static_cast<std::size_t>(sv.r.batch);
  std::int64_t last_ns = q.issued_ns;
  for (std::size_t off = 0; off < q.samples.size(); off += batch) {
    check_interrupt();
    const Samples chunk = q.samples.subspan(off, std::min(batch, q.samples.size() - off));
    const int prompt_tokens = sv.draw(o_.prompt_tokens), output_tokens = sv.draw(o_.output_tokens);
    const std::size_t k = sv.requests++;
    std::vector<Tag> tags{{"request", static_cast<std::int64_t>(k)},
                          {"batch_size", static_cast<std::int64_t>(chunk.size())},
                          {"prompt_tokens", prompt_tokens},
                          {"output_tokens", output_tokens}};
    TraceRecorder rec(sv.next_id);
    const RequestOutcome out =
        traced_request(rec, sv.r, kAppSpan, chunk, prompt_tokens, output_tokens, sv.synthetic++, std::move(tags));
    Trace t = rec.take();
    sv.next_id = rec.peek_next_id();
    learn_graph_captures_from_copy(t);  // its spans below MODEL may be dropped before the run's trace is assembled
    if (off == 0) completer.first_token(q.id, out.token_end_ns.front());
    last_ns = out.end_ns;
    sv.tally.add(k, std::move(t), out, q.issued_ns, sv.queued, static_cast<int>(chunk.size()), prompt_tokens,
                 output_tokens);
    if (sv.r.level > TraceLevel::kModel && o_.tail_steps > 0 && !sv.counter_run)
      sv.tally.drop_deep_spans_outside_tail(k);
    if (!out.texts.empty()) {
      sv.sample_output = {{"batch_size", sv.r.batch},
                          {"trace_level", std::string(to_string(sv.r.level))},
                          {"prompt_tokens", prompt_tokens},
                          {"output_tokens", output_tokens},
                          {"prompt", o_.prompts.empty() ? std::string("(synthetic)")
                                                        : o_.prompts[chunk.front() % o_.prompts.size()].substr(0, 240)},
                          {"output", out.texts.front()}};
    }
    session_.progress(Progress{++sv.done, sv.expected, "request"});
  }
  completer.complete(q.id, last_ns);
}

RunRecord GenerationRun::run(const Run& r, nlohmann::json& sample_output) {
  const auto& m = plan_.measurement;
  RunTally tally(o_.tail_steps);
  Serving sv(r, tally, plan_.inputs.seed, sample_output);
  sv.next_id = kAppSpan + 1;
  // A counter run (trace level hardware) replays every kernel once per metric pass: its timings are never used
  // (SPEC §3), so it is a fixed number of requests (counter_iterations) in a closed loop, whatever the scenario,
  // every request's trace kept, and what it gives is each step's counters (analysis G5).
  const bool counter_run = r.level == TraceLevel::kHardware;
  loadgen::Settings settings = this->settings(r);
  if (counter_run) {
    settings.scenario = loadgen::Scenario::kMultiStream;
    settings.samples_per_query = static_cast<std::uint64_t>(r.batch);
    settings.min_query_count = settings.max_query_count =
        static_cast<std::uint64_t>(std::max(1, plan_.sweep.counter_iterations));
    settings.min_duration_ms = 0;
  }
  sv.counter_run = counter_run;
  sv.queued = settings.scenario == loadgen::Scenario::kServer || settings.scenario == loadgen::Scenario::kOffline;
  const int warmup = std::max(0, m.warmup_min_batches);
  if (sv.queued) {  // the requests LoadGen will issue are known: as loadgen::run() plans them
    const loadgen::PlannedRun planned = loadgen::planned_run(settings);
    const auto batch = static_cast<std::uint64_t>(r.batch);
    const auto requests = settings.scenario == loadgen::Scenario::kServer
                              ? planned.queries
                              : (planned.samples_per_query + batch - 1) / batch;  // Offline: one query, in batches
    sv.expected = static_cast<int>(requests) + warmup;
  }

  // Warm-up: the profilers run as in a measured request, into a recorder that is thrown away; outside LoadGen's
  // test, since an offline warm-up query would be every sequence.
  std::vector<std::uint64_t> warm_samples(static_cast<std::size_t>(r.batch));
  for (std::size_t j = 0; j < warm_samples.size(); ++j) warm_samples[j] = j % settings.sample_count;
  // A counter run warms up untraced: replaying kernels would warm nothing that the counters need.
  const Run warm{r.batch, counter_run ? TraceLevel::kModel : r.level};
  for (int w = 0; w < warmup; ++w) {
    check_interrupt();
    TraceRecorder rec(sv.next_id);
    (void)traced_request(rec, warm, kAppSpan, warm_samples, sv.draw(o_.prompt_tokens), sv.draw(o_.output_tokens),
                         sv.synthetic++, {});
    // Graph mode captures the decode step in the first request of a (batch, cache length): its replays in the
    // measured requests are attributed to the ops that were open at capture only if the capture is learned.
    learn_graph_captures(rec.take());
    session_.progress(Progress{++sv.done, sv.expected, "warm-up"});
  }

  const std::int64_t t0 = clock_.now_ns();
  GenerationSut sut([this, &sv](const loadgen::Query& q, loadgen::QueryCompleter& c) { serve(sv, q, c); });
  const loadgen::Result lg = loadgen::run(sut, settings);

  RunRecord run;
  run.batch_size = r.batch;
  run.trace_level = r.level;
  run.warmup_iterations = warmup;
  run.iterations = static_cast<int>(tally.service_ns.size());
  run.predict_latency_ns = tally.service_ns;
  for (auto& [stage, v] : tally.stages) run.stage_latency_ns[stage] = summarize(v);
  run.measurement.design = "generation";
  run.measurement.rule = m.rule;
  run.measurement.stability = assess_series(tally.service_ns, m.rule);
  run.measurement.warmup_batches = warmup;
  run.measurement.measure_ns = clock_.now_ns() - t0;
  const loadgen::GenerationMetrics gm = loadgen::generation_metrics(
      tally.generated, std::max<std::int64_t>(1, tally.last_token - tally.first_issue), m.rule);
  run.throughput_samples_per_s = gm.requests_per_s;
  GenerationOutcome g = outcome(tally, r, gm);
  g.loadgen = GenerationLoadgenView{loadgen::to_string(settings.scenario),
                                    static_cast<std::int64_t>(lg.query_count),
                                    lg.first_token_summary.p50,
                                    lg.summary.p50,
                                    lg.mean_issue_delay_ns,
                                    lg.harness_ns_per_query};
  g.tail = tally.tail_steps();
  run.trace = close_trace(tally, r, t0);
  if (counter_run) {
    run.measurement.design = "generation counters";
    run.measurement.stability.verdict = Verdict::kNotAssessed;  // replayed kernels: the timings are not the model's
    g.timings_used = false;
    g.valid.reset();
    g.invalid_reason.clear();
    g.ttft_check.reset();
    g.tpot_check.reset();
    g.counter_replay = "kernel";
    g.counters_unavailable = session_.counters_unavailable();
  }
  run.generation = std::move(g);
  return run;
}

}  // namespace

EvaluationRecord run_generation(const Manifest& manifest, Predictor& predictor, const RunPlan& plan,
                                RunSession& session) {
  const GenerationPlan& o = plan.generation;
  Generator* gen = predictor.generator();
  if (!gen)
    throw std::invalid_argument(predictor.framework_name() + " predictor: model " + manifest.name +
                                " was not loaded as a generation model (no generator)");
  // The plan is the request's; the loaded model may still hold fewer positions than its manifest said.
  const long positions = static_cast<long>(o.prompt_tokens.max) + o.output_tokens.max;
  if (positions > gen->max_positions())
    throw std::invalid_argument("generation: prompt_tokens max " + std::to_string(o.prompt_tokens.max) +
                                " + output_tokens max " + std::to_string(o.output_tokens.max) + " = " +
                                std::to_string(positions) + " positions, more than model " + manifest.name + "'s " +
                                std::to_string(gen->max_positions()));
  const std::vector<TraceLevel>& levels = plan.levels;

  std::vector<int> batches;
  switch (o.scenario) {
    case GenerationScenario::kBatchSweep:
      batches = plan.batch_sizes;
      break;
    case GenerationScenario::kSingleStream:
    case GenerationScenario::kServer:
      batches = {1};
      break;
    case GenerationScenario::kOffline:
      batches = {*std::max_element(plan.batch_sizes.begin(), plan.batch_sizes.end())};
      break;
  }

  EvaluationRecord record = detail::record_of(manifest, predictor, plan.device);
  record.scenario =
      o.scenario == GenerationScenario::kBatchSweep ? "generation" : "generation-" + std::string(to_string(o.scenario));
  record.batch_sizes = batches;
  record.trace_level = plan.trace_level;
  record.leveled = plan.leveled;
  nlohmann::json gs = {{"scenario", std::string(to_string(o.scenario))},
                       {"prompt_tokens", to_string(o.prompt_tokens)},
                       {"output_tokens", to_string(o.output_tokens)},
                       {"prompts", o.prompts.empty() ? nlohmann::json("synthetic") : nlohmann::json(o.prompts.size())},
                       {"seed", plan.inputs.seed},
                       {"tail_steps", o.tail_steps},
                       {"max_positions", gen->max_positions()},
                       {"vocab_size", gen->vocab_size()},
                       {"sampling", "greedy"}};
  if (const auto dims = gen->model_dimensions(); !dims.empty()) gs["model"] = dims;
  if (o.scenario == GenerationScenario::kServer || o.scenario == GenerationScenario::kOffline) {
    gs["target_qps"] = o.target_qps;
    gs["min_queries"] = o.min_queries;
  }
  if (o.bounds)
    gs["bounds"] = {
        {"ttft_ns", o.bounds->ttft_ns}, {"tpot_ns", o.bounds->tpot_ns}, {"percentile", o.bounds->percentile}};
  record.settings = {
      {"measurement", to_json(plan.measurement)}, {"generation", gs}, {"run_levels", nlohmann::json::array()}};
  for (auto l : levels) record.settings["run_levels"].push_back(std::string(to_string(l)));
  record.settings["sample_outputs"] = nlohmann::json::object();

  GenerationRun runner(manifest, predictor, *gen, plan, session);
  try {
    for (int b : batches) {
      for (TraceLevel level : levels) {
        nlohmann::json sample;
        record.runs.push_back(runner.run(Run{b, level}, sample));
        if (!sample.is_null()) record.settings["sample_outputs"][std::to_string(b) + "/" + run_name(level)] = sample;
      }
    }
  } catch (const RunInterrupted& i) {
    record.status = "incomplete";
    record.settings["interrupted"] = {{"signal", i.signal}, {"complete_runs", record.runs.size()}};
  }
  return record;
}

}  // namespace xsp
