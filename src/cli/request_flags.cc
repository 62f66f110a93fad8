// The request flags of `xsp evaluate` and `xsp submit` (request_flags.h).
#include "request_flags.h"

#include "common.h"

namespace xsp::cli {
namespace {

// Request fields (RequestError::field()) and the flags that set them.
const std::map<std::string, std::string>& flag_of_field() {
  static const std::map<std::string, std::string> m = {
      {"model", "MODEL"},
      {"zoo", "--zoo"},
      {"framework", "--framework"},
      {"device", "--device"},
      {"device_index", "--device"},
      {"batch_sizes", "--batch-sizes"},
      {"trace_level", "--trace-level"},
      {"leveled", "--leveled"},
      {"counter_iterations", "--counter-iterations"},
      {"measurement.warmup_min_batches", "--warmup"},
      {"measurement.warmup_min_ms", "--warmup-min-ms"},
      {"measurement.warmup_max_ms", "--warmup-max-ms"},
      {"measurement.warmup_block_ms", "--warmup-block-ms"},
      {"measurement.min_batches", "--min-batches"},
      {"measurement.min_duration_ms", "--min-duration-ms"},
      {"measurement.max_duration_ms", "--max-duration-ms"},
      {"measurement.stability_windows", "--stability-windows"},
      {"measurement.stability_tolerance", "--stability-tolerance"},
      {"measurement.level_order", "--level-order"},
      {"measurement.max_traced_batches", "--trace-batches"},
      {"inputs.images_dir", "--inputs"},
      {"inputs.synthetic", "--synthetic"},
      {"inputs.dataset", "--dataset"},
      {"inputs.accuracy", "--accuracy"},
      {"inputs.skip_bad_inputs", "--skip-bad-inputs"},
      {"max_batch_bytes", "--max-batch-bytes"},
      {"scenario.scenario", "--scenario"},
      {"scenario.min_queries", "--min-queries"},
      {"scenario.target_qps", "--target-qps"},
      {"scenario.latency_bound_ms", "--latency-bound-ms"},
      {"scenario.samples_per_query", "--samples-per-query"},
      {"scenario.percentile", "--percentile"},
      {"scenario.find_peak_qps", "--find-peak-qps"},
      {"scenario.max_batch", "--max-batch"},
      {"scenario.trace_tail", "--trace-tail"},
      {"scenario.sweep_batch_sizes", "--batch-sizes"},
      {"precision", "--precision"},
      {"cuda_graphs", "--cuda-graphs"},
      {"generation.prompt_tokens", "--prompt-tokens"},
      {"generation.output_tokens", "--output-tokens"},
      {"generation.prompts_file", "--prompts"},
      {"generation.ttft_bound_ms", "--ttft-bound-ms"},
      {"generation.tpot_bound_ms", "--tpot-bound-ms"},
      {"generation.tail_steps", "--tail-steps"},
  };
  return m;
}

void add_profiler_flags(CLI::App* sub, RequestFlags& a) {
  for (const EnvOverride& e : env_overrides()) {
    if (e.option.rfind("cupti.", 0) != 0 && e.option.rfind("counters.", 0) != 0) continue;
    const std::string help = e.meaning + " (env " + e.variable + ")";
    CLI::Option* opt = nullptr;
    if (!e.switch_value.empty())
      opt = sub->add_flag(e.flag, a.profiler_switches[e.option], help);
    else
      opt = sub->add_option(e.flag, a.profiler_values[e.option], help);
    opt->group("Profilers (trace levels library..hardware)");
    a.profiler_flags.emplace_back(&e, opt);
  }
}

// Defaults, then XSP_* variables, then the flags given.
void apply_profiler_flags(RequestFlags& a) {
  apply_env_overrides(a.request.cupti, a.request.counters);
  for (const auto& [e, opt] : a.profiler_flags) {
    if (opt->count() == 0) continue;
    const std::string value = e->switch_value.empty() ? a.profiler_values[e->option] : e->switch_value;
    try {
      set_profiler_option(a.request.cupti, a.request.counters, e->option, value);
    } catch (const std::invalid_argument& err) {
      throw CLI::ValidationError(e->flag, err.what());
    }
  }
}

}  // namespace

void to_request(RequestFlags& a) {
  EvaluationRequest& r = a.request;
  r.device = a.device;
  r.device_index = 0;
  if (const auto colon = a.device.find(':'); colon != std::string::npos) {
    r.device = a.device.substr(0, colon);
    try {
      std::size_t used = 0;
      r.device_index = std::stoi(a.device.substr(colon + 1), &used);
      if (used != a.device.size() - colon - 1) throw std::invalid_argument(a.device);
    } catch (const std::exception&) {
      throw CLI::ValidationError("--device", "expected cpu, cuda or cuda:N, got '" + a.device + "'");
    }
  }
  const auto level = parse_trace_level(a.trace_level);
  if (!level)
    throw CLI::ValidationError("--trace-level",
                               "expected model|framework|library|system|kernel|hardware, got '" + a.trace_level + "'");
  r.trace_level = *level;
  try {
    r.measurement.order = parse_level_order(a.level_order);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--level-order", e.what());
  }
  const auto batch_sizes = parse_int_list(a.batch_sizes, "--batch-sizes");
  if (!a.scenario.empty()) {
    ScenarioRequest s = a.s;
    s.scenario = a.scenario;
    if (a.batch_sizes_opt->count() > 0) s.sweep_batch_sizes = batch_sizes;
    if (a.latency_opt->count() > 0) s.latency_bound_ms = a.latency_bound_ms;
    if (a.max_batch_opt->count() > 0) s.max_batch = a.max_batch;
    if (a.tail_opt->count() > 0) s.trace_tail = a.trace_tail;
    r.scenario = s;
  } else {
    r.batch_sizes = batch_sizes;
  }
  auto range = [](const std::string& text, const char* flag) {
    try {
      return parse_token_range(text);
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError(flag, e.what());
    }
  };
  r.generation.prompt_tokens = range(a.prompt_tokens, "--prompt-tokens");
  if (!a.output_tokens.empty()) r.generation.output_tokens = range(a.output_tokens, "--output-tokens");
  apply_profiler_flags(a);
}

CLI::ValidationError flag_error(const RequestError& e) {
  const auto& flags = flag_of_field();
  const auto it = flags.find(e.field());
  const std::string message = std::string(e.what()).substr(e.field().size() + 2);
  return CLI::ValidationError(it != flags.end() ? it->second : e.field(), message);
}

namespace {

// Measurement flags (SPEC §3; docs/measurement.md).
void add_measurement_flags(CLI::App* sub, RequestFlags& a) {
  MeasurementOptions& m = a.request.measurement;
  const std::string mg = "Measurement (SPEC §3; docs/measurement.md)";
  sub->add_option("--warmup", m.warmup_min_batches, "warm-up batches per level, at least (never measured)")
      ->capture_default_str()
      ->group(mg);
  sub->add_option("--warmup-min-ms", m.warmup_min_ms, "warm up at least this long, and until the warm-up windows agree")
      ->capture_default_str()
      ->group(mg);
  sub->add_option("--warmup-max-ms", m.warmup_max_ms,
                  "stop warming up after this long even if the windows never agreed (recorded); 0 = exactly --warmup "
                  "batches")
      ->capture_default_str()
      ->group(mg);
  sub->add_option("--min-batches,--iterations", m.min_batches, "measured batches per level, at least")
      ->capture_default_str()
      ->group(mg);
  sub->add_option("--min-duration-ms", m.min_duration_ms,
                  "measure each level at least this long (LoadGen min_duration; trtexec --duration); scenarios: the "
                  "run's minimum duration")
      ->capture_default_str()
      ->group(mg);
  sub->add_option("--max-duration-ms", m.max_duration_ms,
                  "stop measuring a level that is not stable after this long (verdict: unstable); 0 = stop at the "
                  "minimums")
      ->capture_default_str()
      ->group(mg);
  sub->add_option("--stability-windows", m.rule.windows, "windows the stability rule compares (perf_analyzer: 3)")
      ->capture_default_str()
      ->group(mg);
  sub->add_option("--stability-tolerance", m.rule.tolerance,
                  "stable when (max − min) / mean of the window medians is at most this fraction")
      ->capture_default_str()
      ->group(mg);
  sub->add_option("--level-order", a.level_order,
                  "interleaved (levels alternate in rounds, drift cancels) or sequential (one level after the other)")
      ->capture_default_str()
      ->group(mg);
  sub->add_option("--trace-batches", m.max_traced_batches,
                  "keep the spans of this many batches per traced run (the last blocks); profilers stay on throughout")
      ->capture_default_str()
      ->group(mg);
}

// Input flags: images, synthetic tensors, datasets, batch memory, stored predictions.
void add_input_flags(CLI::App* sub, RequestFlags& a) {
  EvaluationRequest& r = a.request;
  const std::string ig = "Inputs";
  sub->add_option("--inputs", r.inputs.images_dir, "folder of images (default: the repo's data/images)")->group(ig);
  sub->add_flag("--synthetic", r.inputs.synthetic, "feed seeded random tensors instead of images")->group(ig);
  sub->add_option("--seed", r.inputs.seed, "seed of synthetic inputs and of the load generator")
      ->capture_default_str()
      ->group(ig);
  sub->add_option("--dataset", r.inputs.dataset,
                  "labeled dataset named by the manifest (e.g. digits); implies --synthetic for the timed runs")
      ->group(ig);
  sub->add_flag("--accuracy", r.inputs.accuracy, "measure top-1/top-5 accuracy on --dataset's held-out samples")
      ->group(ig);
  sub->add_flag("--skip-bad-inputs", r.inputs.skip_bad_inputs,
                "leave out images that cannot be read or pre-processed (all are checked before the first batch), "
                "counted in the record, instead of stopping")
      ->group(ig);
  sub->add_option("--max-batch-bytes", r.max_batch_bytes,
                  "limit on one batch tensor's memory, checked before the model loads; a number of bytes or with a "
                  "unit: 512MiB, 16GiB (binary units)")
      ->check(unsigned_integer())
      ->transform(CLI::AsSizeValue(false))
      ->default_str("8GiB")
      ->group(ig);
  sub->add_flag("--store-predictions", r.store_predictions,
                "keep every measured input's class probabilities with the runs (for `xsp compare`)")
      ->group(ig);
}

// LoadGen scenario flags (SPEC §6).
void add_scenario_flags(CLI::App* sub, RequestFlags& a) {
  const std::string sg = "Scenarios (SPEC §6, MLPerf LoadGen semantics)";
  auto* scenario = sub->add_option("--scenario", a.scenario,
                                   "run a load-generator scenario instead of the batch sweep: "
                                   "single-stream|multi-stream|server|offline (measures predict only)")
                       ->group(sg);
  sub->add_option("--min-queries", a.s.min_queries, "minimum measured queries")
      ->capture_default_str()
      ->needs(scenario)
      ->group(sg);
  sub->add_option("--target-qps", a.s.target_qps,
                  "server arrival rate (queries/s; peak search starts here); offline: sizes the sample count with "
                  "--min-duration-ms")
      ->capture_default_str()
      ->needs(scenario)
      ->group(sg);
  a.latency_opt = sub->add_option("--latency-bound-ms", a.latency_bound_ms,
                                  "server: bound of the target percentile (ms); offline sweep: optimal batch = highest "
                                  "samples/s whose per-batch p99 meets it")
                      ->capture_default_str()
                      ->needs(scenario)
                      ->group(sg);
  sub->add_option("--samples-per-query", a.s.samples_per_query, "multi-stream: samples per query")
      ->capture_default_str()
      ->needs(scenario)
      ->group(sg);
  sub->add_option("--percentile", a.s.percentile,
                  "target percentile in (0, 100); default 90 single-stream, 99 otherwise")
      ->needs(scenario)
      ->group(sg);
  sub->add_flag("--find-peak-qps", a.s.find_peak_qps,
                "server: search the highest QPS whose target percentile meets the bound")
      ->needs(scenario)
      ->group(sg);
  a.max_batch_opt = sub->add_option("--max-batch", a.max_batch, "multi-stream, offline: largest batch per predict()")
                        ->capture_default_str()
                        ->needs(scenario)
                        ->group(sg);
  a.tail_opt = sub->add_option("--trace-tail", a.trace_tail,
                               "keep the full trace of the N slowest queries of each run (plus the median query); "
                               "default 0, or 5 with --trace-level framework")
                   ->needs(scenario)
                   ->group(sg);
}

// Token generation flags (docs/generation.md), and the precision every model takes.
void add_generation_flags(CLI::App* sub, RequestFlags& a) {
  EvaluationRequest& r = a.request;
  const std::string gg = "Token generation (models with a generation output, docs/generation.md)";
  sub->add_option("--precision", r.precision, "fp32|fp16|bf16: precision of the weights and activations")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))
      ->capture_default_str();
  sub->add_flag("--cuda-graphs", r.cuda_graphs,
                "capture each batch size's forward into a CUDA graph after warm-up and replay it (libtorch, cuda; "
                "docs/cuda-graphs.md)");
  sub->add_option("--prompt-tokens", a.prompt_tokens, "prompt length per request: N, or MIN:MAX drawn uniformly")
      ->capture_default_str()
      ->group(gg);
  sub->add_option(
         "--output-tokens", a.output_tokens,
         "tokens generated per request: N, or MIN:MAX drawn uniformly (default: the manifest's max_new_tokens)")
      ->group(gg);
  sub->add_option("--prompts", r.generation.prompts_file,
                  "prompts file, one per line, for generation and text models (default: the model's own)")
      ->group(gg);
  sub->add_option("--ttft-bound-ms", r.generation.ttft_bound_ms, "server: TTFT bound at the target percentile")
      ->capture_default_str()
      ->group(gg);
  sub->add_option("--tpot-bound-ms", r.generation.tpot_bound_ms, "server: TPOT bound at the target percentile")
      ->capture_default_str()
      ->group(gg);
  sub->add_option("--tail-steps", r.generation.tail_steps,
                  "framework level and deeper: keep the full traces of the N slowest first tokens and decode steps")
      ->capture_default_str()
      ->group(gg);
}
}  // namespace

void add_request_flags(CLI::App* sub, RequestFlags& a) {
  EvaluationRequest& r = a.request;
  sub->add_option("model", r.model, "model name from the zoo (see `xsp models`)")->required();
  sub->add_option("--framework", r.framework,
                  "predictor to use: libtorch, opencv-dnn, onnxruntime (those built in: see `xsp models`); "
                  "default: the manifest's first framework");
  sub->add_option("--device", a.device, "cpu, cuda or cuda:N")->capture_default_str();
  a.batch_sizes_opt = sub->add_option("--batch-sizes", a.batch_sizes,
                                      "comma-separated batch sizes; with --scenario offline: a sweep, one offline run "
                                      "per max batch, and the optimal batch (A1)")
                          ->capture_default_str();
  sub->add_option("--trace-level", a.trace_level, "model|framework|library|system|kernel|hardware")
      ->capture_default_str();
  sub->add_flag("--leveled", r.leveled,
                "leveled experimentation: M, M/F, ... each level's latencies from its own run, levels interleaved");
  sub->add_option("--counter-iterations", r.counter_iterations,
                  "measured batches of the hardware-counter run (at least one per metric pass: the counter profiler "
                  "rotates passes over identical batches)")
      ->capture_default_str();

  add_measurement_flags(sub, a);
  add_input_flags(sub, a);
  add_scenario_flags(sub, a);
  add_generation_flags(sub, a);
  add_profiler_flags(sub, a);
}

}  // namespace xsp::cli
