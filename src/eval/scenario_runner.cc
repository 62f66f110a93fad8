// Glue between the load generator (xsp::loadgen) and the evaluation record/store: see scenario_runner.h.
#include "xsp/eval/scenario_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "format.h"
#include "xsp/analysis/analyses.h"
#include "xsp/eval/predictor_sut.h"
#include "xsp/eval/session.h"
#include "xsp/eval/tail_traces.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/pipeline/tasks.h"
#include "xsp/stats/stats.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/graph_replay.h"

namespace xsp {
namespace {

// Prepared inputs: `count` samples of every model input, back to back per input, plus each input's per-sample
// shape. Float inputs (images, synthetic tensors) in `data`, integer ones (token ids, attention masks) in `int_data`.
struct SampleLibrary {
  struct Input {
    std::string name;
    std::vector<std::int64_t> dims;  // per sample
    std::size_t numel = 1;           // values per sample
    bool integer = false;
    std::vector<float> data;
    std::vector<std::int64_t> int_data;
  };
  std::vector<Input> inputs;
  std::size_t count = 0;
  std::vector<SkippedInput> skipped;  // images left out (InputPlan::skip_bad_inputs)
  bool several = false;               // the model runs through predict_all() (the task pipeline's models)
};

// Samples × per-sample values of a library input, as Tensor shapes count them.
std::vector<std::int64_t> library_shape(std::size_t count, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> shape{static_cast<std::int64_t>(count)};
  shape.insert(shape.end(), dims.begin(), dims.end());
  return shape;
}

SampleLibrary::Input library_input(Tensor batch) {
  SampleLibrary::Input in;
  in.name = batch.name;
  in.dims.assign(batch.shape.begin() + 1, batch.shape.end());
  for (std::int64_t d : in.dims) in.numel *= static_cast<std::size_t>(d);
  in.integer = batch.is_int();
  in.data = std::move(batch.data);
  in.int_data = std::move(batch.int_data);
  return in;
}

SampleLibrary prepare_library(const Manifest& manifest, const RunPlan& plan) {
  if (manifest.inputs.empty()) throw std::invalid_argument("manifest " + manifest.path.string() + " has no input");
  const InputSpec& spec = manifest.inputs.front();
  SampleLibrary lib;
  lib.several = uses_task_pipeline(manifest);
  std::vector<std::int64_t> dims(spec.dimensions.begin(), spec.dimensions.end());
  const auto text = std::find_if(manifest.inputs.begin(), manifest.inputs.end(),
                                 [](const InputSpec& in) { return in.type == "text"; });
  if (text != manifest.inputs.end()) {
    // A text model's library: its texts tokenized once (validate() loaded them and the tokenizer), every input's
    // tensor {texts, L}.
    const TextBatcher batcher(manifest, *plan.inputs.tokenizer);
    check_tensor_bytes(library_shape(plan.inputs.texts.size(), {batcher.length()}), plan.inputs.max_batch_bytes,
                       "sample library of " + std::to_string(plan.inputs.texts.size()) + " texts");
    for (Tensor& t : batcher.run(plan.inputs.texts)) lib.inputs.push_back(library_input(std::move(t)));
    lib.count = plan.inputs.texts.size();
  } else if (plan.inputs.synthetic) {
    if (plan.scenario.synthetic_samples == 0) throw std::invalid_argument("synthetic sample count must be > 0");
    // One seeded batch sliced into samples: same seed -> same library, hence comparable runs.
    Tensor t = synthetic_batch(spec.dimensions, static_cast<int>(plan.scenario.synthetic_samples),
                               plan.scenario.settings.seed, plan.inputs.max_batch_bytes);
    t.name = spec.name;
    lib.count = plan.scenario.synthetic_samples;
    lib.inputs.push_back(library_input(std::move(t)));
  } else {
    // Decode and pre-process every image once, before the timed region: the SUT then measures predict only.
    const Preprocessor pre(spec, plan.inputs.max_batch_bytes);
    const auto files = list_images(plan.inputs.images_dir);
    check_tensor_bytes(library_shape(files.size(), dims), plan.inputs.max_batch_bytes,
                       "sample library of " + plan.inputs.images_dir.string());
    std::vector<Tensor> prepared;
    lib.skipped = screen_inputs(files, pre, plan.inputs.skip_bad_inputs, &prepared).skipped;
    SampleLibrary::Input in;
    in.name = spec.name;
    in.dims = dims;
    for (std::int64_t d : dims) in.numel *= static_cast<std::size_t>(d);
    for (const Tensor& t : prepared) {
      in.data.insert(in.data.end(), t.data.begin(), t.data.end());
      ++lib.count;
    }
    lib.inputs.push_back(std::move(in));
  }
  for (const auto& in : lib.inputs)
    if ((in.integer ? in.int_data.size() : in.data.size()) != lib.count * in.numel)
      throw std::runtime_error("prepared inputs do not match the manifest's input dimensions");
  return lib;
}

// The batch of `idx` (sample index modulo the library's size) of every library input; runs on the SUT's worker.
std::vector<Tensor> build_batch(const SampleLibrary& lib, std::span<const std::uint64_t> idx) {
  std::vector<Tensor> batch;
  batch.reserve(lib.inputs.size());
  for (const SampleLibrary::Input& in : lib.inputs) {
    Tensor t;
    t.name = in.name;
    t.integer = in.integer;
    t.shape = library_shape(idx.size(), in.dims);
    const auto copy = [&](const auto& from, auto& to) {
      to.resize(idx.size() * in.numel);
      for (std::size_t i = 0; i < idx.size(); ++i) {
        const auto src = from.begin() + static_cast<std::ptrdiff_t>((idx[i] % lib.count) * in.numel);
        std::copy(src, src + static_cast<std::ptrdiff_t>(in.numel),
                  to.begin() + static_cast<std::ptrdiff_t>(i * in.numel));
      }
    };
    if (in.integer)
      copy(in.int_data, t.int_data);
    else
      copy(in.data, t.data);
    batch.push_back(std::move(t));
  }
  return batch;
}

// What one run leaves behind after its adapter is gone: find_peak_qps destroys each SUT it gets from the
// factory, so the first predictor error and the predict timings are copied out in stop().
struct RunCapture {
  std::string error;
  std::vector<BatchTiming> timings;
  std::unique_ptr<TraceRecorder> recorder;  // with tail tracing
};

class CapturingSut final : public loadgen::SystemUnderTest {
 public:
  CapturingSut(std::unique_ptr<PredictorSut> inner, RunCapture* capture)
      : inner_(std::move(inner)), capture_(capture) {}
  std::string name() const override { return inner_->name(); }
  void start(loadgen::QueryCompleter& c) override { inner_->start(c); }
  void issue(const loadgen::Query& q) override { inner_->issue(q); }
  void stop() override {
    inner_->stop();
    capture_->error = inner_->first_error();
    capture_->timings = inner_->timings();
  }

 private:
  std::unique_ptr<PredictorSut> inner_;
  RunCapture* capture_;
};

ScenarioOutcome scenario_outcome(const loadgen::Result& r) {
  ScenarioOutcome o;
  o.scenario = loadgen::to_string(r.settings.scenario);
  o.percentile = r.percentile;
  o.query_count = static_cast<std::int64_t>(r.query_count);
  o.sample_count = static_cast<std::int64_t>(r.sample_count);
  o.duration_ns = r.duration_ns;
  o.target_latency_ns = r.target_latency_ns;
  o.qps_with_overhead = r.qps_with_overhead;
  o.qps_without_overhead = r.qps_without_overhead;
  o.samples_per_second = r.samples_per_second;
  o.harness_ns_total = r.harness_ns_total;
  o.harness_ns_per_query = r.harness_ns_per_query;
  o.mean_issue_delay_ns = r.mean_issue_delay_ns;
  o.overlatency_count = static_cast<std::int64_t>(r.overlatency_count);
  o.early_stopping_latency_ns = r.early_stopping_latency_ns;
  o.early_stopping_percentile = r.early_stopping_percentile;
  o.target_qps = r.settings.target_qps;
  o.latency_bound_ns = r.settings.latency_bound_ns;
  o.meets_bound = r.meets_bound;
  o.p50_ns = r.summary.p50;
  o.p99_ns = r.summary.p99;
  return o;
}

nlohmann::json settings_json(const loadgen::Settings& s, const RunPlan& plan) {
  const ScenarioPlan& o = plan.scenario;
  return {{"scenario", loadgen::to_string(s.scenario)},
          {"seed", s.seed},
          {"min_duration_ms", s.min_duration_ms},
          {"min_query_count", s.min_query_count},
          {"max_query_count", s.max_query_count},
          {"target_percentile", s.percentile()},
          {"latency_bound_ns", s.latency_bound_ns},
          {"target_qps", s.target_qps},
          {"samples_per_query", s.samples_per_query},
          {"sample_count", s.sample_count},
          {"warmup_queries", s.warmup_queries},
          {"early_stopping_confidence", s.early_stopping_confidence},
          {"max_batch", o.max_batch},
          {"find_peak_qps", o.find_peak_qps},
          {"trace_tail", o.trace_tail},
          {"trace_level", std::string(to_string(plan.trace_level))},
          {"measured", "predict only (inputs prepared before the run; batch assembly copy included)"}};
}

RunRecord to_run(const loadgen::Result& r, int batch_size) {
  RunRecord run;
  run.batch_size = batch_size;
  run.trace_level = TraceLevel::kModel;
  run.warmup_iterations = static_cast<int>(r.settings.warmup_queries);
  run.iterations = static_cast<int>(r.query_count);
  run.predict_latency_ns.assign(r.latency_ns.begin(), r.latency_ns.end());
  // Filled so that generic consumers (print_summary, analyses) that expect a predict summary keep working.
  run.stage_latency_ns[kStagePredict] = summarize(run.predict_latency_ns);
  run.throughput_samples_per_s = r.samples_per_second;
  return run;
}

// Predict calls of the measured queries (warm-up queries are served first, one at a time).
std::vector<double> measured_batch_latencies(const RunCapture& c, std::uint64_t warmup_queries) {
  std::vector<double> out;
  out.reserve(c.timings.size());
  for (const auto& t : c.timings)
    if (t.sequence >= warmup_queries) out.push_back(static_cast<double>(t.end_ns - t.start_ns));
  return out;
}

// The largest batch predict() sees: what a run's batch_size records.
int largest_batch(const loadgen::Settings& settings, std::size_t max_batch) {
  if (settings.scenario == loadgen::Scenario::kMultiStream)
    return static_cast<int>(std::min<std::uint64_t>(settings.samples_per_query, max_batch));
  if (settings.scenario == loadgen::Scenario::kOffline) return static_cast<int>(max_batch);
  return 1;
}

}  // namespace

EvaluationRecord run_scenario(const Manifest& manifest, Predictor& predictor, const RunPlan& plan,
                              RunSession& session) {
  const SampleLibrary lib = prepare_library(manifest, plan);
  if (lib.count == 0) throw std::runtime_error("no input samples");

  loadgen::Settings settings = plan.scenario.settings;
  settings.sample_count = lib.count;
  settings.interrupt = session.interrupt_flag();
  auto signal_now = [&session] { return session.interrupt_signal(); };
  int interrupted = 0;

  // Runs on the adapter's worker thread; copies the prepared samples (sample index modulo library size).
  BatchBuilder build = [&lib](std::span<const std::uint64_t> idx) { return build_batch(lib, idx); };

  const std::vector<std::size_t> max_batches = plan.scenario.sweep_batch_sizes.empty()
                                                   ? std::vector<std::size_t>{plan.scenario.max_batch}
                                                   : plan.scenario.sweep_batch_sizes;

  EvaluationRecord record = detail::record_of(manifest, predictor, plan.device);
  record.scenario = loadgen::to_string(settings.scenario);
  record.trace_level = plan.scenario.trace_tail > 0 ? plan.trace_level : TraceLevel::kModel;
  for (std::size_t mb : max_batches) record.batch_sizes.push_back(largest_batch(settings, mb));
  record.settings = {{"scenario_settings", settings_json(settings, plan)},
                     {"inputs", !plan.inputs.texts.empty() ? "texts"
                                : plan.inputs.synthetic    ? "synthetic"
                                                           : plan.inputs.images_dir.string()},
                     {"input_count", lib.count}};
  if (plan.inputs.skip_bad_inputs && !plan.inputs.synthetic)
    record.settings.update(detail::skipped_inputs_json(lib.skipped));
  for (const SkippedInput& s : lib.skipped) spdlog::warn("input left out: {}", s.reason);

  // Per-query tracing runs on the SUT's worker thread, its profilers switched there by the session.
  const std::string app_name = manifest.name + " " + record.scenario;
  nlohmann::json sweep_rows = nlohmann::json::array();
  std::vector<std::pair<int, double>> sweep_throughput;
  std::vector<BatchThroughput> sweep_points;
  for (std::size_t mb : max_batches) {
    if (const int sig = signal_now(); sig != 0) {
      interrupted = sig;
      break;
    }
    const int batch_size = largest_batch(settings, mb);
    std::vector<std::unique_ptr<RunCapture>> captures;  // one per run, in run order (one factory call per run)
    auto factory = [&]() -> std::unique_ptr<loadgen::SystemUnderTest> {
      auto& c = *captures.emplace_back(std::make_unique<RunCapture>());
      SutTracing tracing;
      if (plan.scenario.trace_tail > 0) {
        c.recorder = std::make_unique<TraceRecorder>();
        tracing.recorder = c.recorder.get();
        tracing.session = &session;
        tracing.level = plan.trace_level;
      }
      return std::make_unique<CapturingSut>(std::make_unique<PredictorSut>(predictor, build, mb, tracing, lib.several),
                                            &c);
    };
    std::vector<loadgen::Result> results;
    if (plan.scenario.find_peak_qps) {
      auto peak = loadgen::find_peak_qps(factory, settings);
      results = std::move(peak.tried);
      record.settings["peak_qps"] = peak.peak_qps;
    } else {
      auto sut = factory();
      results.push_back(loadgen::run(*sut, settings));
    }
    for (const auto& c : captures)
      if (!c->error.empty())
        throw std::runtime_error("predict failed during the " + record.scenario + " run: " + c->error);
    if (captures.size() != results.size())
      throw std::logic_error("scenario runner: " + std::to_string(captures.size()) + " SUTs for " +
                             std::to_string(results.size()) + " runs");
    // A run cut by a signal is not a result: only the runs before it are kept.
    if (!results.empty() && results.back().interrupted) {
      results.pop_back();
      captures.pop_back();
      interrupted = signal_now();
    }
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      RunCapture& c = *captures[i];
      RunRecord run = to_run(r, batch_size);
      ScenarioOutcome outcome = scenario_outcome(r);
      const std::vector<double> batch_ns = measured_batch_latencies(c, r.settings.warmup_queries);
      const LatencySummary batches = summarize(batch_ns);
      outcome.batches = static_cast<std::int64_t>(batch_ns.size());
      outcome.batch_p50_ns = batches.p50;
      outcome.batch_p99_ns = batches.p99;
      outcome.batch_trimmed_mean_ns = batches.trimmed_mean;
      // Offline's one query is the whole run: the predict stage is what one batch costs, as in A1.
      if (settings.scenario == loadgen::Scenario::kOffline && !batch_ns.empty())
        run.stage_latency_ns[kStagePredict] = batches;
      if (c.recorder) {
        run.trace = c.recorder->take();
        run.trace.clock.unix_offset_ns = unix_offset_now_ns();
        run.trace.clock.device_clock_mapping = session.clock_mapping();
        // Under --cuda-graphs each batch size's graph is captured in the first query that runs it (a warm-up query,
        // usually), whose spans the tail selection drops: learn the capture first, so its replays are attributed.
        learn_graph_captures_from_copy(run.trace);
        TailTraceSelection sel = keep_tail_query_traces(run.trace, r, plan.scenario.trace_tail, app_name);
        assemble(run.trace);
        run.trace_level = plan.trace_level;
        sel.trace_level = std::string(to_string(plan.trace_level));
        outcome.tail_traces = std::move(sel);
      }
      if (!plan.scenario.sweep_batch_sizes.empty()) {
        sweep_rows.push_back({{"batch_size", batch_size},
                              {"samples_per_second", number_or_null(r.samples_per_second)},
                              {"batch_p99_ms", number_or_null(batches.p99 / 1e6)}});
        sweep_throughput.emplace_back(batch_size, r.samples_per_second);
        sweep_points.push_back({batch_size, r.samples_per_second, batch_ns.empty() ? std::nan("") : batches.p99 / 1e6});
      }
      run.scenario_result = std::move(outcome);
      record.runs.push_back(std::move(run));
    }
    if (interrupted) break;
  }
  if (interrupted) {
    record.status = "incomplete";
    record.settings["interrupted"] = {{"signal", interrupted}, {"complete_runs", record.runs.size()}};
  }
  if (!plan.scenario.sweep_batch_sizes.empty()) {
    // SPEC §4 A1's rule, the same function `xsp analyze --analysis A1` uses, on the Offline throughput.
    const auto best = plan.scenario.sweep_latency_bound_ms
                          ? optimal_batch_size_within_bound(sweep_points, *plan.scenario.sweep_latency_bound_ms)
                          : optimal_batch_size(sweep_throughput);
    record.settings["sweep"] = {
        {"rule", plan.scenario.sweep_latency_bound_ms
                     ? "highest samples/s whose per-batch p99 predict latency meets the bound (SPEC §4 A1)"
                     : "smallest batch after which doubling raises samples/s by <= 5% (SPEC §4 A1)"},
        {"latency_bound_ms", plan.scenario.sweep_latency_bound_ms
                                 ? nlohmann::json(*plan.scenario.sweep_latency_bound_ms)
                                 : nlohmann::json(nullptr)},
        {"optimal_batch_size", best ? nlohmann::json(*best) : nlohmann::json(nullptr)},
        {"rows", std::move(sweep_rows)}};
  }
  return record;
}

std::string format_scenario_record(const EvaluationRecord& record) {
  const auto& s = record.settings;
  const auto& ss = s.value("scenario_settings", nlohmann::json::object());
  const double pct = ss.value("target_percentile", 90.0);
  const double confidence = ss.value("early_stopping_confidence", 0.99);
  const bool peak = ss.value("find_peak_qps", false);
  auto num = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::nan("");
  };
  std::ostringstream os;
  os << "scenario " << record.scenario << " on " << record.model_name << " " << record.model_version << " ("
     << record.framework_name << " " << record.framework_version << ", " << record.device << "), seed "
     << ss.value("seed", std::uint64_t{0}) << ", inputs " << s.value("inputs", std::string()) << "\n"
     << "measured: predict only (inputs prepared before the run); latencies per query, ms; percentiles "
        "recomputed from the stored raw latencies\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %-13s %8s %9s %10s %8s %8s %8s %8s %8s %8s %11s %11s %9s %11s %6s\n", "run",
                "scenario", "queries", "samples", "dur ms", "p50", "p90", "p95", "p99", "p99.9", "trimmed",
                "qps+harness", "qps-harness", "harn ns/q", "early-stop", peak ? "pass" : "");
  os << line;
  for (std::size_t i = 0; i < record.runs.size(); ++i) {
    const auto& run = record.runs[i];
    const ScenarioOutcome r = run.scenario_result.value_or(ScenarioOutcome{});
    const LatencySummary sum = summarize(run.predict_latency_ns);
    std::vector<std::int64_t> raw(run.predict_latency_ns.begin(), run.predict_latency_ns.end());
    const double es = loadgen::early_stopping_latency(std::move(raw), pct, confidence);
    std::string rate = record.scenario;
    if (s.contains("sweep")) rate += " bs" + std::to_string(run.batch_size);
    if (peak) {
      char q[32];
      std::snprintf(q, sizeof q, "@%.1f", r.target_qps);
      rate += q;
    }
    std::snprintf(line, sizeof line,
                  "%-5zu %-13s %8zu %9.0f %10.1f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %11.1f %11.1f %9.0f %11.3f %6s\n",
                  i + 1, rate.c_str(), run.predict_latency_ns.size(), static_cast<double>(r.sample_count),
                  static_cast<double>(r.duration_ns) / 1e6, sum.p50 / 1e6, sum.p90 / 1e6, sum.p95 / 1e6, sum.p99 / 1e6,
                  sum.p999 / 1e6, sum.trimmed_mean / 1e6, r.qps_with_overhead, r.qps_without_overhead,
                  r.harness_ns_per_query, es / 1e6, peak ? (r.meets_bound ? "pass" : "fail") : "");
    os << line;
  }
  os << "early-stop = early-stopping estimate of the p" << pct << " latency with " << confidence * 100
     << "% confidence (nan: too few queries)";
  if (record.scenario == "offline") os << "; offline QPS columns are samples/s";
  os << "\n";
  if (record.scenario == "server")
    os << "server: target QPS " << ss.value("target_qps", 0.0) << ", p" << pct << " bound "
       << ss.value("latency_bound_ns", std::int64_t{0}) / 1e6 << " ms\n";
  if (peak)
    os << "peak QPS: " << s.value("peak_qps", 0.0) << " (highest tried rate whose p" << pct << " met the bound)\n";
  if (s.contains("sweep") && s["sweep"].is_object()) {
    const auto& sw = s["sweep"];
    os << "offline batch-size sweep (samples/s per max batch; batch p99 = p99 of one predict call):\n";
    std::snprintf(line, sizeof line, "  %6s %12s %10s %8s\n", "batch", "samples/s", "vs prev", "p99 ms");
    os << line;
    double prev = std::nan("");
    const auto optimal = sw.value("optimal_batch_size", nlohmann::json(nullptr));
    for (const auto& row : sw.value("rows", nlohmann::json::array())) {
      const double thr = num(row, "samples_per_second");
      char gain[32] = "";
      if (std::isfinite(prev) && prev > 0) std::snprintf(gain, sizeof gain, "%+.1f%%", 100.0 * (thr / prev - 1));
      const bool is_best = optimal.is_number() && optimal.get<int>() == row.value("batch_size", 0);
      std::snprintf(line, sizeof line, "  %6d %12.1f %10s %8.3f%s\n", row.value("batch_size", 0), thr, gain,
                    num(row, "batch_p99_ms"), is_best ? "  <- optimal" : "");
      os << line;
      prev = thr;
    }
    os << "optimal batch size: " << (optimal.is_number() ? std::to_string(optimal.get<int>()) : std::string("none"));
    if (sw.contains("latency_bound_ms") && sw["latency_bound_ms"].is_number())
      os << " under a per-batch p99 bound of " << sw["latency_bound_ms"].get<double>() << " ms";
    os << " (" << sw.value("rule", std::string()) << ")\n";
  }
  bool any_tail = false;
  for (std::size_t i = 0; i < record.runs.size(); ++i) {
    const auto& res = record.runs[i].scenario_result;
    if (!res || !res->tail_traces) continue;
    any_tail = true;
    const TailTraceSelection& tt = *res->tail_traces;
    os << "run " << i + 1 << " tail traces (" << (tt.trace_level.empty() ? "model" : tt.trace_level) << " level, "
       << tt.traced_queries << " queries traced): kept";
    for (const KeptQuery& k : tt.kept) {
      char q[160];
      std::snprintf(q, sizeof q, " query %llu (%s, rank %llu, p%.2f, %.3f ms, %zu spans);",
                    static_cast<unsigned long long>(k.query), k.kind.c_str(), static_cast<unsigned long long>(k.rank),
                    k.percentile, static_cast<double>(k.latency_ns) / 1e6, k.spans);
      os << q;
    }
    os << " dropped " << tt.dropped_query_traces << " query traces (" << tt.dropped_spans
       << " spans), summarized in the table above\n";
  }
  if (any_tail)
    os << "open a kept query: xsp trace export " << record.id << " --run N -o trace.json (Chrome/Perfetto)\n";
  return os.str();
}

}  // namespace xsp
