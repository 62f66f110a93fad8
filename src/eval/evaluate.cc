// The library entry point: see include/xsp/eval/evaluate.h.
#include "xsp/eval/evaluate.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <system_error>

#include "format.h"
#include "json_fields.h"
#include "xsp/eval/accuracy.h"
#include "xsp/eval/scenario_runner.h"
#include "xsp/loadgen/loadgen.h"
#include "xsp/manifest/semver.h"
#include "xsp/pipeline/dataset.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/pipeline/tasks.h"
#include "xsp/pipeline/tokenizer.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/store/store.h"
#include "xsp/system/machine_state.h"
#include "xsp/system/system_info.h"
#include "xsp/util/strings.h"

namespace xsp {
namespace {

using detail::number_text;

[[noreturn]] void reject(const std::string& field, const std::string& message) { throw RequestError(field, message); }

// A list for a message: "a, b" or "none".
std::string listed(const std::vector<std::string>& items) { return items.empty() ? "none" : util::join(items, ", "); }

// ---- JSON of the request --------------------------------------------------------------------------------------

template <typename T>
void read(const nlohmann::json& j, const char* key, T& field, const std::string& path, const char* expected) {
  detail::read_field(j, key, field, path, expected);
}

// An optional scenario field: absent or null leaves it unset.
template <typename T>
void read_optional(const nlohmann::json& j, const char* key, std::optional<T>& field, const char* expected) {
  if (!j.contains(key) || j[key].is_null()) return;
  T value{};
  read(j, key, value, "scenario.", expected);
  field = value;
}

nlohmann::json scenario_json(const ScenarioRequest& s) {
  nlohmann::json j = {{"scenario", s.scenario},
                      {"min_queries", s.min_queries},
                      {"target_qps", s.target_qps},
                      {"samples_per_query", s.samples_per_query},
                      {"percentile", s.percentile},
                      {"find_peak_qps", s.find_peak_qps},
                      {"sweep_batch_sizes", s.sweep_batch_sizes}};
  j["latency_bound_ms"] = s.latency_bound_ms ? nlohmann::json(*s.latency_bound_ms) : nlohmann::json(nullptr);
  j["max_batch"] = s.max_batch ? nlohmann::json(*s.max_batch) : nlohmann::json(nullptr);
  j["trace_tail"] = s.trace_tail ? nlohmann::json(*s.trace_tail) : nlohmann::json(nullptr);
  return j;
}

ScenarioRequest scenario_from_json(const nlohmann::json& j) {
  if (!j.is_object()) reject("scenario", "expected an object, got " + j.dump());
  detail::reject_unknown_keys(j,
                              {"scenario", "min_queries", "target_qps", "samples_per_query", "percentile",
                               "find_peak_qps", "sweep_batch_sizes", "latency_bound_ms", "max_batch", "trace_tail"},
                              "scenario.");
  ScenarioRequest s;
  read(j, "scenario", s.scenario, "scenario.", "a scenario name");
  read(j, "min_queries", s.min_queries, "scenario.", "an integer >= 1");
  read(j, "target_qps", s.target_qps, "scenario.", "a number");
  read(j, "samples_per_query", s.samples_per_query, "scenario.", "an integer >= 1");
  read(j, "percentile", s.percentile, "scenario.", "a number");
  read(j, "find_peak_qps", s.find_peak_qps, "scenario.", "true or false");
  read(j, "sweep_batch_sizes", s.sweep_batch_sizes, "scenario.", "a list of batch sizes");
  read_optional(j, "latency_bound_ms", s.latency_bound_ms, "a number");
  read_optional(j, "max_batch", s.max_batch, "an integer");
  read_optional(j, "trace_tail", s.trace_tail, "an integer");
  return s;
}

nlohmann::json generation_json(const GenerationRequest& g) {
  return {{"prompt_tokens", to_string(g.prompt_tokens)},
          {"output_tokens", g.output_tokens ? nlohmann::json(to_string(*g.output_tokens)) : nlohmann::json(nullptr)},
          {"prompts_file", g.prompts_file.string()},
          {"ttft_bound_ms", g.ttft_bound_ms},
          {"tpot_bound_ms", g.tpot_bound_ms},
          {"tail_steps", g.tail_steps}};
}

TokenRange token_range(const nlohmann::json& j, const char* key) {
  const std::string field = std::string("generation.") + key;
  if (!j[key].is_string() && !j[key].is_number_integer())
    reject(field, "\"N\" or \"MIN:MAX\" token counts, got " + j[key].dump());
  try {
    return parse_token_range(j[key].is_string() ? j[key].get<std::string>() : std::to_string(j[key].get<long long>()));
  } catch (const std::invalid_argument& e) {
    reject(field, e.what());
  }
}

GenerationRequest generation_from_json(const nlohmann::json& j) {
  if (!j.is_object()) reject("generation", "expected an object, got " + j.dump());
  detail::reject_unknown_keys(
      j, {"prompt_tokens", "output_tokens", "prompts_file", "ttft_bound_ms", "tpot_bound_ms", "tail_steps"},
      "generation.");
  GenerationRequest g;
  if (j.contains("prompt_tokens") && !j["prompt_tokens"].is_null()) g.prompt_tokens = token_range(j, "prompt_tokens");
  if (j.contains("output_tokens") && !j["output_tokens"].is_null()) g.output_tokens = token_range(j, "output_tokens");
  std::string file;
  read(j, "prompts_file", file, "generation.", "a file");
  g.prompts_file = file;
  read(j, "ttft_bound_ms", g.ttft_bound_ms, "generation.", "a number");
  read(j, "tpot_bound_ms", g.tpot_bound_ms, "generation.", "a number");
  read(j, "tail_steps", g.tail_steps, "generation.", "an integer >= 0");
  return g;
}

// ---- validation -------------------------------------------------------------------------------------------------

namespace fs = std::filesystem;

// `p` lies within `root` (both absolute and normalized), compared component by component.
bool within(const fs::path& p, fs::path root) {
  if (!root.empty() && root.filename().empty()) root = root.parent_path();  // "/data/" -> "/data"
  auto r = root.begin();
  auto x = p.begin();
  for (; r != root.end(); ++r, ++x)
    if (x == p.end() || *x != *r) return false;
  return true;
}

std::string roots_text(const std::vector<fs::path>& roots) {
  std::string out;
  for (const auto& r : roots) out += (out.empty() ? "" : ", ") + r.string();
  return out.empty() ? "none" : out;
}

// EvaluationContext::confine_to: `file` (as the request or the manifest names it) must lie in one of the folders,
// without ".." and after following symbolic links. The lexical test comes first and answers the same whether the
// file exists or not, so a refusal tells nothing about files outside.
void confine(const EvaluationContext& context, const fs::path& file, const std::string& field,
             const std::string& what) {
  if (!context.confine_to) return;
  const std::vector<fs::path>& roots = *context.confine_to;
  for (const auto& part : file)
    if (part == "..")
      reject(field, what + " without '..' (a submitted request may only name files inside " + roots_text(roots) +
                        "), got '" + file.string() + "'");
  std::error_code ec;
  const fs::path abs = fs::absolute(file, ec).lexically_normal();
  bool inside = false, real_inside = false;
  const fs::path real = fs::weakly_canonical(abs, ec);  // follows the links of the part that exists
  for (const auto& root : roots) {
    const fs::path root_abs = fs::absolute(root, ec).lexically_normal();
    std::error_code ec2;
    const fs::path root_real = fs::weakly_canonical(root_abs, ec2);
    inside = inside || within(abs, root_abs) || (!ec2 && within(abs, root_real));
    real_inside = real_inside || (!ec2 && within(real, root_real));
  }
  if (!inside)
    reject(field, what + " inside the folders this server or agent reads (" + roots_text(roots) +
                      "; add one with "
                      "--data-dir), got '" +
                      file.string() + "'");
  if (!real_inside)
    reject(field, what + " inside " + roots_text(roots) + ", got '" + file.string() +
                      "', which a symbolic link leads out of them");
}

// The memory one batch tensor may take on this machine: half its physical memory (the batch is built on the host for
// either device, and the model, its activations and the runtime need the rest). 0 when unknown.
std::uint64_t host_batch_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2;
}

void validate_scenario(const EvaluationRequest& r, const Manifest& manifest, Predictor& predictor) {
  const ScenarioRequest& s = *r.scenario;
  const loadgen::Scenario scenario = loadgen::parse_scenario(s.scenario);  // validate_fields() checked the name
  // Counter runs replay batches and never give timings (SPEC §3): a scenario, which times queries, has none.
  if (r.trace_level == TraceLevel::kHardware)
    reject("trace_level", "model, framework, library, system or kernel with a scenario (tail-query traces), got " +
                              std::string(to_string(r.trace_level)));
  if (r.leveled) reject("leveled", "false with a scenario (a scenario measures predict only, at one level)");
  if (r.batch_sizes != std::vector<int>{1})
    reject("batch_sizes", "[1] with a scenario: it takes scenario.max_batch or scenario.sweep_batch_sizes");
  const int tail = s.trace_tail.value_or(r.trace_level >= TraceLevel::kFramework ? 5 : 0);
  if (r.trace_level >= TraceLevel::kFramework && tail == 0)
    reject("scenario.trace_tail", ">= 1 with trace level " + std::string(to_string(r.trace_level)) +
                                      " (the level traces the tail queries), got 0");
  if (r.trace_level >= TraceLevel::kFramework && predictor.framework_profiler() == nullptr)
    reject("trace_level", "model: " + predictor.framework_name() + " has no framework profiler");
  if (tail > 0 && scenario == loadgen::Scenario::kOffline)
    reject("scenario.trace_tail", "0 with offline (it has a single query), got " + std::to_string(tail));
  if (r.measurement.min_duration_ms < 1)
    reject("measurement.min_duration_ms",
           "a positive number with a scenario, got " + number_text(r.measurement.min_duration_ms));
  const bool texts = std::any_of(manifest.inputs.begin(), manifest.inputs.end(),
                                 [](const InputSpec& in) { return in.type == "text"; });
  if (!manifest.inputs.empty() && manifest.inputs.front().type != "image" && !texts && !r.inputs.synthetic)
    reject("inputs.synthetic", "true: inputs of type '" + manifest.inputs.front().type + "' need synthetic inputs");
}

// The first step `op` of a manifest input or output, or nullptr.
template <typename Spec>
const ProcessingStep* step_of(const Spec& spec, std::string_view op) {
  for (const auto& s : spec.steps)
    if (s.op == op) return &s;
  return nullptr;
}

// The tokenizer of text input `in` (its tokenize step names a SentencePiece model and its checksum) into v.tokenizer,
// and the texts of the prompts file: request.generation.prompts_file (--prompts), else the manifest's
// attributes.prompts, verified against attributes.prompts_checksum (the file's path is then recorded in the request).
std::vector<std::string> load_texts(ValidatedRequest& v, const InputSpec& in, const EvaluationContext& context) {
  EvaluationRequest& r = v.request;
  const Manifest& m = v.manifest;
  const ProcessingStep* tok = step_of(in, "tokenize");
  if (!tok) reject("inputs.synthetic", "true: model " + m.name + " has no tokenize step to read prompts with");
  if (!have_tokenizer())
    reject("inputs.synthetic",
           "true: this XSP was built without SentencePiece (Debian: libsentencepiece-dev), so "
           "prompts cannot be tokenized; install it and rebuild, or use synthetic prompts");
  namespace fs = std::filesystem;
  auto verified = [&](const std::string& relative, const std::string& checksum, const std::string& what) {
    const fs::path file = m.resolve(relative);
    confine(context, file, "model", what + " of model " + m.name);
    std::string digest;
    try {
      digest = "sha256:" + sha256_file(file, context.interrupt);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      reject("model", what + " " + file.string() + " of model " + m.name + " cannot be read (" + e.what() +
                          "); export it with scripts/export_zoo.py");
    }
    if (!checksum.empty() && digest != checksum)
      reject("model",
             what + " " + file.string() + " has " + digest + ", manifest " + m.path.string() + " expects " + checksum);
    return file;
  };
  try {
    v.tokenizer = std::make_shared<const Tokenizer>(
        Tokenizer::load(verified(tok->param("model"), tok->param("checksum"), "tokenizer model")));
  } catch (const RequestError&) {
    throw;
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    reject("model", e.what());
  }
  fs::path prompts_file = r.generation.prompts_file;
  if (prompts_file.empty()) {
    const auto it = m.attributes.find("prompts");
    if (it == m.attributes.end())
      reject("generation.prompts_file", "a prompts file: model " + m.name + " names none (attributes.prompts)");
    const auto sum = m.attributes.find("prompts_checksum");
    prompts_file = verified(it->second, sum == m.attributes.end() ? "" : sum->second, "prompts file");
    r.generation.prompts_file = prompts_file;
  }
  try {
    return load_prompts(prompts_file);
  } catch (const std::exception& e) {
    reject("generation.prompts_file", e.what());
  }
}

// Everything a generation evaluation needs before the model is loaded: scenario and levels, lengths against the
// model's positions, the tokenizer and the prompts (read, checked and tokenized here, not after the warm-up).
void validate_generation(ValidatedRequest& v, const EvaluationContext& context) {
  EvaluationRequest& r = v.request;
  const Manifest& m = v.manifest;
  const GenerationRequest& g = r.generation;
  if (!r.inputs.dataset.empty()) reject("inputs.dataset", "empty for a generation model (its inputs are prompts)");
  if (r.store_predictions) reject("store_predictions", "false for a generation model (sample outputs are kept)");
  if (r.scenario) {
    const std::string& name = r.scenario->scenario;
    if (name != "single-stream" && name != "server" && name != "offline")
      reject("scenario.scenario", "single-stream, server or offline for a generation model, got '" + name + "'");
    if (name != "offline" && r.scenario->max_batch && *r.scenario->max_batch != 1)
      reject("scenario.max_batch", "1 for " + name + " generation (requests are served one at a time)");
  }
  const InputSpec& in = m.inputs.front();
  const OutputSpec& out = m.outputs.front();
  if (!r.generation.output_tokens) {
    // The manifest parser requires a generate step and writes its defaults into it.
    const ProcessingStep* gen = step_of(out, "generate");
    const int n = std::stoi(gen ? gen->param("max_new_tokens", "32") : "32");
    r.generation.output_tokens = TokenRange{n, n};
  }
  const long positions = static_cast<long>(g.prompt_tokens.max) + r.generation.output_tokens->max;
  if (!in.dimensions.empty() && positions > in.dimensions.front())
    reject("generation.prompt_tokens", "prompt plus output tokens within model " + m.name + "'s " +
                                           std::to_string(in.dimensions.front()) +
                                           " positions (inputs[0].dimensions), got " + to_string(g.prompt_tokens) +
                                           " + " + to_string(*r.generation.output_tokens));
  // A generation's steps differ in shape (prefill, then decodes over a growing cache): there are no identical
  // batches to rotate metric passes over, so each kernel is replayed inside its launch instead (recorded as run).
  if (r.trace_level == TraceLevel::kHardware) r.counters.replay = CounterOptions::Replay::kKernel;
  try {
    v.run_levels = run_levels(r.trace_level, r.leveled, v.predictor->framework_profiler() != nullptr,
                              r.trace_level > TraceLevel::kFramework, r.trace_level == TraceLevel::kHardware);
  } catch (const std::invalid_argument& e) {
    reject("trace_level", e.what());
  }
  if (r.inputs.synthetic) return;
  const std::vector<std::string> texts = load_texts(v, in, context);
  const ProcessingStep* tok = step_of(in, "tokenize");
  const bool add_bos = tok->param("add_bos") == "true";
  try {
    const auto kept = tokenize_prompts(*v.tokenizer, texts, g.prompt_tokens.max, add_bos, &v.prompts_too_short);
    for (const auto& p : kept) v.prompts.push_back(texts[p.source_index]);
  } catch (const std::exception& e) {
    reject("generation.prompts_file", e.what());
  }
}

// What a model of the task pipeline (detection, segmentation, text classification; xsp/pipeline/tasks.h) needs
// before it is loaded: no dataset (accuracy is classification's), and a text model's tokenizer and texts, which the
// batch sweep batches in turn and a LoadGen scenario tokenizes once into its sample library.
void validate_task(ValidatedRequest& v, const EvaluationContext& context) {
  EvaluationRequest& r = v.request;
  const Manifest& m = v.manifest;
  const std::string& type = m.outputs.front().type;
  if (type != "detection" && type != "segmentation" && type != "text_classification" && type != "classification")
    reject("model", "a model whose output type is run: " + m.name + "'s output type '" + type + "' is not");
  if (!r.inputs.dataset.empty())
    reject("inputs.dataset", "empty for a " + type + " model: accuracy datasets are classification only");
  try {
    (void)TaskPostprocessor(m.outputs.front());
  } catch (const std::invalid_argument& e) {
    reject("model", m.path.string() + ": " + e.what());
  }
  const auto text =
      std::find_if(m.inputs.begin(), m.inputs.end(), [](const InputSpec& in) { return in.type == "text"; });
  if (text == m.inputs.end() && m.inputs.size() != 1)
    reject("model", "a model with one input or a text input: " + m.name + " has " + std::to_string(m.inputs.size()) +
                        " inputs (several inputs are run for text models only, docs/tasks.md)");
  if (text == m.inputs.end()) return;
  if (r.inputs.synthetic)
    reject("inputs.synthetic", "false: model " + m.name +
                                   " reads texts (its prompts file, or --prompts), not synthetic "
                                   "inputs");
  v.prompts = load_texts(v, *text, context);
  try {
    (void)TextBatcher(m, *v.tokenizer);
  } catch (const std::invalid_argument& e) {
    reject("model", e.what());
  }
}

// ---- running ----------------------------------------------------------------------------------------------------

// A finished evaluation that the store refused: saved to a recovery file instead, and the error says where.
UnsavedEvaluationError unsaved(EvaluationRecord record, Store& store, const StoreError& error) {
  namespace fs = std::filesystem;
  const fs::path store_file = store.file();  // for PostgreSQL the location without its password
  std::vector<fs::path> folders;
  // A PostgreSQL store has no folder of its own: the current one, else the temporary folder.
  folders.push_back(!store.is_postgres() && store_file.has_parent_path() ? store_file.parent_path() : fs::path("."));
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (!ec && fs::weakly_canonical(tmp, ec) != fs::weakly_canonical(folders.front(), ec)) folders.push_back(tmp);
  const std::string what = "the evaluation of " + record.model_name + " finished but could not be saved in store " +
                           store_file.string() + " (" + error.what() + ")";
  try {
    const fs::path recovery = write_recovery_file(std::move(record), folders);
    spdlog::debug("recovery file {} written", recovery.string());
    return UnsavedEvaluationError(what + "; it was written to " + recovery.string() +
                                      " instead: load it into the store with `xsp import " + recovery.string() +
                                      " --store " + store_file.string() + "`",
                                  recovery);
  } catch (const std::exception& e) {
    return UnsavedEvaluationError(what + ", and " + e.what() + ": the measurement is lost", {});
  }
}

// Runs `run` between a machine monitor's start and finish (when the context records the machine state) and gives every
// run of its record the monitor's state and warnings: for the runners that do not sample between blocks themselves.
template <typename Run>
EvaluationRecord monitored(const ValidatedRequest& v, const EvaluationContext& context, Run&& run) {
  std::optional<MachineMonitor> monitor;
  if (context.record_machine_state) {
    monitor.emplace(system_nvml(), v.request.device == "cuda" ? v.request.device_index : -1);
    monitor->start();
  }
  EvaluationRecord record = run();
  if (monitor) {
    monitor->finish();
    for (RunRecord& r : record.runs) {
      r.machine_state = monitor->to_json();
      r.warnings = monitor->warnings();
    }
  }
  return record;
}

// The scenario part of the plan: LoadGen's settings from the request.
ScenarioPlan scenario_plan(const EvaluationRequest& r) {
  const ScenarioRequest& s = *r.scenario;
  ScenarioPlan o;
  o.settings.scenario = loadgen::parse_scenario(s.scenario);
  o.settings.min_duration_ms = static_cast<std::int64_t>(std::llround(r.measurement.min_duration_ms));
  o.settings.min_query_count = s.min_queries;
  o.settings.seed = r.inputs.seed;
  o.settings.target_qps = s.target_qps;
  o.settings.latency_bound_ns = static_cast<std::int64_t>(std::llround(s.latency_bound_ms.value_or(10.0) * 1e6));
  o.settings.samples_per_query = s.samples_per_query;
  o.settings.target_percentile = s.percentile;
  // Warm-up queries, one at a time and never measured, so that the first inferences' one-time costs (cuDNN set-up,
  // lazy module loading, the allocator's first growth) do not queue the measured arrivals. Offline's one warm-up
  // query would be the whole sample set again: none there.
  if (o.settings.scenario != loadgen::Scenario::kOffline)
    o.settings.warmup_queries = static_cast<std::uint64_t>(std::max(0, r.measurement.warmup_min_batches));
  o.max_batch = static_cast<std::size_t>(s.max_batch.value_or(1));
  o.find_peak_qps = s.find_peak_qps;
  o.trace_tail = static_cast<std::size_t>(s.trace_tail.value_or(r.trace_level >= TraceLevel::kFramework ? 5 : 0));
  for (int b : s.sweep_batch_sizes) o.sweep_batch_sizes.push_back(static_cast<std::size_t>(b));
  if (!s.sweep_batch_sizes.empty() && s.latency_bound_ms) o.sweep_latency_bound_ms = *s.latency_bound_ms;
  return o;
}

// The generation part of the plan: lengths, scenario, and the tokenizer as its codec.
GenerationPlan generation_plan(const ValidatedRequest& v) {
  const EvaluationRequest& r = v.request;
  const GenerationRequest& g = r.generation;
  GenerationPlan o;
  o.prompt_tokens = g.prompt_tokens;
  o.output_tokens = *g.output_tokens;  // validate_generation() fills it from the manifest
  o.tail_steps = static_cast<std::size_t>(g.tail_steps);
  if (r.scenario) {
    const ScenarioRequest& s = *r.scenario;
    o.scenario = s.scenario == "server"    ? GenerationScenario::kServer
                 : s.scenario == "offline" ? GenerationScenario::kOffline
                                           : GenerationScenario::kSingleStream;
    o.min_queries = s.min_queries;
    o.target_qps = s.target_qps;
    if (s.scenario == "server")
      o.bounds = loadgen::TokenLatencyBounds{g.ttft_bound_ms * 1e6, g.tpot_bound_ms * 1e6,
                                             s.percentile == 0 ? 99 : s.percentile};
  }
  if (std::shared_ptr<const Tokenizer> tokenizer = v.tokenizer) {
    const ProcessingStep* tok = step_of(v.manifest.inputs.front(), "tokenize");
    const bool add_bos = tok && tok->param("add_bos") == "true";
    o.prompts = v.prompts;
    o.codec.encode = [tokenizer, add_bos](std::string_view text) { return tokenizer->encode(text, add_bos, false); };
    o.codec.decode = [tokenizer](const std::vector<std::int64_t>& ids) { return tokenizer->decode(ids); };
  }
  return o;
}

// The plan of a validated request (RunPlan): the workload and everything it reads.
RunPlan plan_of(const ValidatedRequest& v) {
  const EvaluationRequest& r = v.request;
  RunPlan p;
  p.workload = is_generation(v.manifest) ? Workload::kGeneration
               : r.scenario              ? Workload::kScenario
                                         : Workload::kBatchSweep;
  p.batch_sizes = r.batch_sizes;
  p.trace_level = r.trace_level;
  p.leveled = r.leveled;
  p.levels = v.run_levels.empty() ? std::vector<TraceLevel>{r.trace_level} : v.run_levels;
  p.measurement = r.measurement;
  p.device = DeviceSpec{r.device, r.device_index, r.precision, r.cuda_graphs};
  p.inputs.synthetic = r.inputs.synthetic;
  p.inputs.seed = r.inputs.seed;
  p.inputs.images_dir = r.inputs.images_dir;
  p.inputs.skip_bad_inputs = r.inputs.skip_bad_inputs;
  p.inputs.max_batch_bytes = v.batch_bytes_limit;
  if (p.workload != Workload::kGeneration) {
    p.inputs.texts = v.prompts;
    p.inputs.tokenizer = v.tokenizer.get();
  }
  p.sweep.counter_iterations = r.counter_iterations;
  p.sweep.store_predictions = r.store_predictions;
  if (p.workload == Workload::kScenario) p.scenario = scenario_plan(r);
  if (p.workload == Workload::kGeneration) {
    p.generation = generation_plan(v);
    if (r.scenario && r.scenario->scenario == "offline") p.batch_sizes = {r.scenario->max_batch.value_or(1)};
  }
  return p;
}

}  // namespace

nlohmann::json to_json(const EvaluationRequest& r) {
  return {{"model", r.model},
          {"framework", r.framework},
          {"device", r.device},
          {"device_index", r.device_index},
          {"batch_sizes", r.batch_sizes},
          {"trace_level", std::string(to_string(r.trace_level))},
          {"leveled", r.leveled},
          {"measurement", to_json(r.measurement)},
          {"inputs",
           {{"images_dir", r.inputs.images_dir.string()},
            {"synthetic", r.inputs.synthetic},
            {"seed", r.inputs.seed},
            {"dataset", r.inputs.dataset},
            {"accuracy", r.inputs.accuracy},
            {"skip_bad_inputs", r.inputs.skip_bad_inputs}}},
          {"max_batch_bytes", r.max_batch_bytes},
          {"store_predictions", r.store_predictions},
          {"counter_iterations", r.counter_iterations},
          {"cupti", to_json(r.cupti)},
          {"counters", to_json(r.counters)},
          {"scenario", r.scenario ? scenario_json(*r.scenario) : nlohmann::json(nullptr)},
          {"precision", r.precision},
          {"cuda_graphs", r.cuda_graphs},
          {"generation", generation_json(r.generation)}};
}

EvaluationRequest evaluation_request_from_json(const nlohmann::json& j) {
  if (!j.is_object()) reject("request", "expected a JSON object, got " + j.dump());
  detail::reject_unknown_keys(j,
                              {"model", "framework", "device", "device_index", "batch_sizes", "trace_level", "leveled",
                               "measurement", "inputs", "max_batch_bytes", "store_predictions", "counter_iterations",
                               "cupti", "counters", "scenario", "precision", "cuda_graphs", "generation"},
                              "");
  EvaluationRequest r;
  read(j, "model", r.model, "", "a model name");
  read(j, "framework", r.framework, "", "a framework name");
  read(j, "device", r.device, "", "cpu or cuda");
  read(j, "device_index", r.device_index, "", "an integer >= 0");
  read(j, "batch_sizes", r.batch_sizes, "", "a list of batch sizes");
  if (j.contains("trace_level")) {
    const auto level =
        j["trace_level"].is_string() ? parse_trace_level(j["trace_level"].get<std::string>()) : std::nullopt;
    if (!level)
      reject("trace_level", "model, framework, library, system, kernel or hardware, got " + j["trace_level"].dump());
    r.trace_level = *level;
  }
  read(j, "leveled", r.leveled, "", "true or false");
  if (j.contains("measurement")) r.measurement = measurement_options_from_json(j["measurement"]);
  if (j.contains("inputs")) {
    const auto& in = j["inputs"];
    if (!in.is_object()) reject("inputs", "expected an object, got " + in.dump());
    detail::reject_unknown_keys(in, {"images_dir", "synthetic", "seed", "dataset", "accuracy", "skip_bad_inputs"},
                                "inputs.");
    std::string dir;
    read(in, "images_dir", dir, "inputs.", "a folder");
    r.inputs.images_dir = dir;
    read(in, "synthetic", r.inputs.synthetic, "inputs.", "true or false");
    read(in, "seed", r.inputs.seed, "inputs.", "an integer >= 0");
    read(in, "dataset", r.inputs.dataset, "inputs.", "a dataset name");
    read(in, "accuracy", r.inputs.accuracy, "inputs.", "true or false");
    read(in, "skip_bad_inputs", r.inputs.skip_bad_inputs, "inputs.", "true or false");
  }
  read(j, "max_batch_bytes", r.max_batch_bytes, "", "a number of bytes");
  read(j, "store_predictions", r.store_predictions, "", "true or false");
  read(j, "counter_iterations", r.counter_iterations, "", "an integer >= 1");
  try {
    if (j.contains("cupti")) r.cupti = cupti_options_from_json(j["cupti"]);
    if (j.contains("counters")) r.counters = counter_options_from_json(j["counters"]);
  } catch (const RequestError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    reject(j.contains("cupti") && !j.contains("counters") ? "cupti" : "cupti/counters", e.what());
  }
  if (j.contains("scenario") && !j["scenario"].is_null()) r.scenario = scenario_from_json(j["scenario"]);
  read(j, "precision", r.precision, "", "fp32, fp16 or bf16");
  read(j, "cuda_graphs", r.cuda_graphs, "", "true or false");
  if (j.contains("generation") && !j["generation"].is_null()) r.generation = generation_from_json(j["generation"]);
  return r;
}

std::vector<std::filesystem::path> confinement_roots(const std::filesystem::path& zoo,
                                                     const std::filesystem::path& default_images_dir,
                                                     const std::vector<std::filesystem::path>& data_dirs) {
  std::vector<std::filesystem::path> roots{zoo};
  if (!default_images_dir.empty()) roots.push_back(default_images_dir);
  roots.insert(roots.end(), data_dirs.begin(), data_dirs.end());
  return roots;
}

void validate_fields(const EvaluationRequest& r) {
  if (r.model.empty()) reject("model", "a model name from the zoo (xsp models), got an empty name");
  if (r.model.size() > 256)
    reject("model", "a model name of at most 256 characters, got " + std::to_string(r.model.size()));
  if (r.device != "cpu" && r.device != "cuda") reject("device", "cpu or cuda, got '" + r.device + "'");
  if (r.device_index < 0 || r.device_index > 1023)
    reject("device_index", "a number from 0 to 1023, got " + std::to_string(r.device_index));
  if (r.batch_sizes.empty()) reject("batch_sizes", "at least one batch size");
  if (r.batch_sizes.size() > kMaxBatchSizes)
    reject("batch_sizes",
           "at most " + std::to_string(kMaxBatchSizes) + " batch sizes, got " + std::to_string(r.batch_sizes.size()));
  for (int b : r.batch_sizes)
    if (b < 1 || b > (1 << 20)) reject("batch_sizes", "batch sizes from 1 to 1048576, got " + std::to_string(b));
  if (r.trace_level > TraceLevel::kFramework && r.device != "cuda")
    reject("trace_level", "model or framework on device cpu: level '" + std::string(to_string(r.trace_level)) +
                              "' traces GPU work, use device cuda");
  validate(r.measurement);
  if (r.counter_iterations < 1 || r.counter_iterations > 1000)
    reject("counter_iterations", "a number from 1 to 1000, got " + std::to_string(r.counter_iterations));
  if (r.counters.max_ranges > kMaxCounterRanges)
    reject("counters.max_ranges", "at most " + std::to_string(kMaxCounterRanges) + " ranges per pass, got " +
                                      std::to_string(r.counters.max_ranges));
  if (r.inputs.accuracy && r.inputs.dataset.empty())
    reject("inputs.accuracy", "a dataset (inputs.dataset) to score on");
  if (r.max_batch_bytes < 1 || r.max_batch_bytes > kMaxBatchBytesLimit)
    reject("max_batch_bytes", "a number of bytes from 1 to " + std::to_string(kMaxBatchBytesLimit) + ", got " +
                                  std::to_string(r.max_batch_bytes));
  if (r.inputs.skip_bad_inputs && (r.inputs.synthetic || !r.inputs.dataset.empty()))
    reject("inputs.skip_bad_inputs", "false with synthetic inputs or a dataset (only image files are screened)");
  if (r.precision != "fp32" && r.precision != "fp16" && r.precision != "bf16")
    reject("precision", "fp32, fp16 or bf16, got '" + r.precision + "'");
  if (r.cuda_graphs && r.device != "cuda")
    reject("cuda_graphs", "device cuda (CUDA graphs run on a GPU), got device '" + r.device + "'");
  // A graph is captured in the first query of its batch size; that query must be a warm-up, never measured.
  if (r.cuda_graphs && r.scenario && r.measurement.warmup_min_batches < 1)
    reject("measurement.warmup_min_batches",
           "at least 1 with cuda_graphs and a scenario (each batch size's CUDA graph is captured in the first query "
           "that runs it, which must not be measured), got " +
               std::to_string(r.measurement.warmup_min_batches));
  const GenerationRequest& g = r.generation;
  if (g.tail_steps < 0 || g.tail_steps > 1000)
    reject("generation.tail_steps", "a number from 0 to 1000, got " + std::to_string(g.tail_steps));
  const double hour_ms = 3.6e6;
  if (!(g.ttft_bound_ms > 0) || !std::isfinite(g.ttft_bound_ms) || g.ttft_bound_ms > hour_ms)
    reject("generation.ttft_bound_ms", "a positive number of ms up to an hour, got " + number_text(g.ttft_bound_ms));
  if (!(g.tpot_bound_ms > 0) || !std::isfinite(g.tpot_bound_ms) || g.tpot_bound_ms > hour_ms)
    reject("generation.tpot_bound_ms", "a positive number of ms up to an hour, got " + number_text(g.tpot_bound_ms));
  if (!r.scenario) return;
  const ScenarioRequest& s = *r.scenario;
  loadgen::Scenario scenario;
  try {
    scenario = loadgen::parse_scenario(s.scenario);
  } catch (const std::invalid_argument&) {
    reject("scenario.scenario", "expected single-stream, multi-stream, server or offline, got '" + s.scenario + "'");
  }
  if (s.min_queries < 1) reject("scenario.min_queries", "a positive number, got 0");
  if (s.min_queries > kMaxPlannedQueries)
    reject("scenario.min_queries",
           "at most " + std::to_string(kMaxPlannedQueries) + " queries, got " + std::to_string(s.min_queries));
  if (!(s.target_qps > 0) || !std::isfinite(s.target_qps))
    reject("scenario.target_qps", "a positive number, got " + number_text(s.target_qps));
  if (s.target_qps > kMaxTargetQps)
    reject("scenario.target_qps",
           "at most " + number_text(kMaxTargetQps) + " queries per second, got " + number_text(s.target_qps));
  // LoadGen plans target_qps x min_duration queries (server) or samples (offline) up front: 24 bytes each.
  const double planned = s.target_qps * r.measurement.min_duration_ms / 1000.0;
  if ((scenario == loadgen::Scenario::kServer || scenario == loadgen::Scenario::kOffline) &&
      planned > static_cast<double>(kMaxPlannedQueries))
    reject("scenario.target_qps", "target_qps x measurement.min_duration_ms of at most " +
                                      std::to_string(kMaxPlannedQueries) + " queries, got " +
                                      number_text(s.target_qps) + " x " + number_text(r.measurement.min_duration_ms) +
                                      " ms = " + number_text(planned));
  if (s.latency_bound_ms &&
      (!(*s.latency_bound_ms > 0) || !std::isfinite(*s.latency_bound_ms) || *s.latency_bound_ms > hour_ms))
    reject("scenario.latency_bound_ms",
           "a positive number of ms up to an hour, got " + number_text(*s.latency_bound_ms));
  if (s.samples_per_query < 1) reject("scenario.samples_per_query", "a positive number, got 0");
  if (s.samples_per_query > 10'000)
    reject("scenario.samples_per_query", "at most 10000, got " + std::to_string(s.samples_per_query));
  if (s.percentile != 0 && !(s.percentile > 0 && s.percentile < 100))
    reject("scenario.percentile", "a number in (0, 100), got " + number_text(s.percentile));
  if (s.max_batch && (*s.max_batch < 1 || *s.max_batch > (1 << 20)))
    reject("scenario.max_batch", "a number from 1 to 1048576, got " + std::to_string(*s.max_batch));
  if (s.trace_tail && (*s.trace_tail < 0 || *s.trace_tail > 1000))
    reject("scenario.trace_tail", "a number from 0 to 1000, got " + std::to_string(*s.trace_tail));
  if (s.find_peak_qps && scenario != loadgen::Scenario::kServer)
    reject("scenario.find_peak_qps", "false except for server, got true with " + s.scenario);
  if (!s.sweep_batch_sizes.empty() && scenario != loadgen::Scenario::kOffline)
    reject("scenario.sweep_batch_sizes", "empty except for offline (other scenarios take scenario.max_batch)");
  if (!s.sweep_batch_sizes.empty() && s.max_batch)
    reject("scenario.max_batch", "unset with a batch-size sweep (either one max batch or a sweep, not both)");
  if (s.sweep_batch_sizes.size() > kMaxBatchSizes)
    reject("scenario.sweep_batch_sizes", "at most " + std::to_string(kMaxBatchSizes) + " batch sizes, got " +
                                             std::to_string(s.sweep_batch_sizes.size()));
  for (int b : s.sweep_batch_sizes)
    if (b < 1 || b > (1 << 20))
      reject("scenario.sweep_batch_sizes", "batch sizes from 1 to 1048576, got " + std::to_string(b));
}

namespace {

// The files a request names itself, for the front ends that run other people's requests (context.confine_to).
void confine_request_files(const EvaluationRequest& r, const EvaluationContext& context) {
  if (!context.confine_to) return;
  // Requests from other people may not make the server or an agent write files where they choose.
  if (!r.cupti.dump_dir.empty())
    reject("cupti.dump_dir", "empty in a submitted request (it would write files on the machine that runs it), got '" +
                                 r.cupti.dump_dir.string() + "'");
  if (!r.counters.dump_dir.empty())
    reject("counters.dump_dir",
           "empty in a submitted request (it would write files on the machine that runs it), "
           "got '" +
               r.counters.dump_dir.string() + "'");
  if (!r.inputs.images_dir.empty()) confine(context, r.inputs.images_dir, "inputs.images_dir", "an images folder");
  if (!r.generation.prompts_file.empty())
    confine(context, r.generation.prompts_file, "generation.prompts_file", "a prompts file");
}

// The model (zoo, manifest), its framework (built in, version constraint) and the predictor that will load it; the
// model's own files confined where the front end asks for it.
void resolve_model(ValidatedRequest& v, const EvaluationRequest& request, const EvaluationContext& context) {
  EvaluationRequest& r = v.request;
  // One bad manifest must not stop the evaluation of another model: it is a warning, unless it may be the model
  // asked for (find_model() then names the file and what is wrong with it).
  Zoo zoo;
  try {
    zoo = scan_zoo(context.zoo);
  } catch (const std::exception& e) {
    reject("zoo", e.what());
  }
  try {
    v.manifest = find_model(zoo, r.model);
  } catch (const std::exception& e) {
    reject("model", e.what());
  }
  for (const ZooProblem& p : zoo.problems) {
    std::string line = p.message;
    std::replace(line.begin(), line.end(), '\n', ' ');
    spdlog::warn("model zoo: skipped {}", line);
  }
  if (r.framework.empty()) r.framework = v.manifest.default_framework();
  const GraphSpec* graph = nullptr;
  try {
    graph = &v.manifest.graph_for(r.framework);
  } catch (const std::exception& e) {
    reject("framework", e.what());
  }
  const auto built = registered_predictors();
  if (std::find(built.begin(), built.end(), r.framework) == built.end()) {
    const std::string why = unavailable_predictor_reason(r.framework);
    reject("framework", "one built into this XSP (" + listed(built) + "), got '" + r.framework + "'" +
                            (why.empty() ? std::string() : ", which is not in this build: " + why));
  }
  // The predictor says its framework's version; the model is loaded only by evaluate(), with this predictor.
  v.predictor = create_predictor(r.framework);
  Predictor* predictor = v.predictor.get();
  if (!satisfies(predictor->framework_version(), graph->constraint)) {
    const std::string need = "a version of " + r.framework + " satisfying " + graph->constraint + " (model " +
                             v.manifest.name + ", manifest " + v.manifest.path.string() + "), this build has " +
                             predictor->framework_version();
    // The user named no framework: the manifest's first was taken, so the model, not a flag, asks for it.
    if (request.framework.empty())
      reject("model", "a model whose first framework this build runs: " + need +
                          (v.manifest.graphs.size() > 1 ? "; choose another of its frameworks (" +
                                                              listed(v.manifest.framework_names()) + ") with framework"
                                                        : ""));
    reject("framework", need);
  }
  if (context.confine_to) {
    confine(context, v.manifest.resolved_graph_path(r.framework), "model",
            "the graph file of model " + v.manifest.name);
    for (std::size_t i = 0; i < v.manifest.outputs.size(); ++i)
      if (const fs::path labels = v.manifest.resolved_labels_path(i); !labels.empty())
        confine(context, labels, "model", "the labels file of model " + v.manifest.name);
  }
}

// Reads the accuracy dataset whole now, not after the timed runs: a file whose checksum matches can still be
// unreadable here (a different format version) or shaped for another input.
void validate_dataset(ValidatedRequest& v, const EvaluationContext& context) {
  EvaluationRequest& r = v.request;
  if (r.inputs.dataset.empty()) return;
  try {
    const fs::path dataset_file = manifest_dataset_path(v.manifest, r.inputs.dataset);
    confine(context, dataset_file, "inputs.dataset", "the dataset file of model " + v.manifest.name);
    const LabeledDataset data = read_labeled_dataset(dataset_file);
    const auto& dims = v.manifest.inputs.front().dimensions;
    if (!std::equal(data.sample_shape.begin(), data.sample_shape.end(), dims.begin(), dims.end(),
                    [](auto a, auto b) { return static_cast<long>(a) == static_cast<long>(b); })) {
      auto shape = [](const auto& d) {
        std::string out;
        for (auto x : d) out += (out.empty() ? "" : "x") + std::to_string(x);
        return out;
      };
      throw std::runtime_error("the dataset's samples are " + shape(data.sample_shape) + ", the model's input (" +
                               v.manifest.path.string() + ": inputs[0].dimensions) is " + shape(dims));
    }
  } catch (const std::exception& e) {
    reject("inputs.dataset", e.what());
  }
  r.inputs.synthetic = true;  // the timed runs stay synthetic; the dataset feeds the accuracy pass
}

// The images (each confined), and every batch size's batch against the byte limit, before the model is loaded.
void validate_inputs(ValidatedRequest& v, const EvaluationContext& context, std::uint64_t host_limit) {
  EvaluationRequest& r = v.request;
  if (r.inputs.images_dir.empty()) r.inputs.images_dir = context.default_images_dir;
  const bool text_model = v.tokenizer != nullptr;
  if (!r.inputs.synthetic && !text_model) {
    if (!v.manifest.inputs.empty() && v.manifest.inputs.front().type != "image")
      reject("inputs.synthetic", "true: inputs of type '" + v.manifest.inputs.front().type + "' need synthetic inputs");
    std::vector<fs::path> images;
    try {
      images = list_images(r.inputs.images_dir);
    } catch (const std::exception& e) {
      reject("inputs.images_dir", e.what());
    }
    // A link in an allowed folder may lead anywhere: each image must stay inside the folders too.
    for (const fs::path& image : images) confine(context, image, "inputs.images_dir", "an image");
  }
  if (!r.scenario && !v.manifest.inputs.empty()) {
    // Before the model is loaded: a batch that cannot be allocated must not be found after minutes of warm-up.
    for (int b : r.batch_sizes) {
      std::vector<std::int64_t> shape{b};
      for (long d : v.manifest.inputs.front().dimensions) shape.push_back(d);
      try {
        check_tensor_bytes(shape, v.batch_bytes_limit, "batch size " + std::to_string(b) + " of " + v.manifest.name);
      } catch (const std::invalid_argument& e) {
        reject("batch_sizes", v.batch_bytes_limit < r.max_batch_bytes
                                  ? "batch sizes whose batch fits in half of this machine's memory (" +
                                        std::to_string(host_limit) + " bytes); " + e.what()
                                  : std::string("batch sizes whose batch fits in max_batch_bytes (raise it with "
                                                "`xsp evaluate --max-batch-bytes`); ") +
                                        e.what());
      }
    }
  }
}

}  // namespace

ValidatedRequest validate(const EvaluationRequest& request, const EvaluationContext& context) {
  validate_fields(request);
  ValidatedRequest v;
  v.request = request;
  EvaluationRequest& r = v.request;
  if (r.trace_level > TraceLevel::kFramework && !have_device_profiler())
    reject("trace_level",
           "model or framework: this build has no CUPTI profiler (CUDA toolkit not found at configure time)");
  // A batch larger than half of this machine's memory cannot be measured here, whatever max_batch_bytes allows.
  const std::uint64_t host_limit = host_batch_memory_limit();
  v.batch_bytes_limit = host_limit > 0 ? std::min(r.max_batch_bytes, host_limit) : r.max_batch_bytes;
  confine_request_files(r, context);
  resolve_model(v, request, context);
  Predictor* predictor = v.predictor.get();
  if (r.trace_level > TraceLevel::kModel && predictor->framework_profiler() == nullptr && !r.scenario)
    reject("trace_level", "model: " + r.framework + " has no framework profiler");
  try {
    verify_checksum(v.manifest, r.framework, context.interrupt);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    reject("model", e.what());
  }
  if (std::find(v.manifest.precisions.begin(), v.manifest.precisions.end(), r.precision) == v.manifest.precisions.end())
    reject("precision", "one of model " + v.manifest.name + "'s precisions (" + listed(v.manifest.precisions) +
                            ", manifest field 'precisions'), got '" + r.precision + "'");
  if (r.cuda_graphs && predictor->framework_name() != "libtorch")
    reject("cuda_graphs", "framework libtorch (the one predictor that captures CUDA graphs), got '" +
                              predictor->framework_name() + "'");

  if (is_generation(v.manifest)) {
    validate_generation(v, context);
    v.plan = plan_of(v);
    return v;
  }
  if (uses_task_pipeline(v.manifest)) validate_task(v, context);
  validate_dataset(v, context);
  validate_inputs(v, context, host_limit);
  if (r.scenario) {
    validate_scenario(r, v.manifest, *predictor);
  } else {
    try {
      v.run_levels = run_levels(r.trace_level, r.leveled, predictor->framework_profiler() != nullptr,
                                r.trace_level > TraceLevel::kFramework, r.trace_level == TraceLevel::kHardware);
    } catch (const std::invalid_argument& e) {
      reject("trace_level", e.what());
    }
  }
  v.plan = plan_of(v);
  return v;
}

namespace {

EvaluationRecord evaluate_unguarded(const EvaluationRequest& request, const EvaluationContext& context) {
  ValidatedRequest v = validate(request, context);
  const EvaluationRequest& r = v.request;
  const RunPlan& plan = v.plan;
  spdlog::debug("evaluate {} on {} ({}), request {}", r.model, r.framework, r.device, to_json(r).dump());
  Predictor* predictor = v.predictor.get();
  predictor->load(v.manifest, plan.device);
  if (plan.workload == Workload::kGeneration && !predictor->generator())
    reject("framework", "a framework that generates tokens (libtorch): " + r.framework + " loaded model " +
                            v.manifest.name + " without a generator");
  std::unique_ptr<DeviceProfiler> device_profiler, counter_profiler;
  if (plan.trace_level > TraceLevel::kFramework) device_profiler = create_device_profiler(r.cupti);
  if (plan.trace_level == TraceLevel::kHardware) counter_profiler = create_counter_profiler(r.counters);
  RunSession session({{predictor->framework_profiler(), device_profiler.get(), counter_profiler.get()},
                      context.clock,
                      context.interrupt,
                      context.record_machine_state,
                      context.progress});
  EvaluationRecord record;
  switch (plan.workload) {
    case Workload::kGeneration:
      record = monitored(v, context, [&] { return run_generation(v.manifest, *predictor, plan, session); });
      record.settings["generation"]["prompts_file"] = v.tokenizer ? r.generation.prompts_file.string() : "";
      record.settings["generation"]["prompts_too_short"] = v.prompts_too_short;
      record.settings["generation"]["precision"] = r.precision;
      break;
    case Workload::kScenario:
      record = monitored(v, context, [&] { return run_scenario(v.manifest, *predictor, plan, session); });
      // A scenario's queries were not planned in windows: the stability rule splits them afterwards.
      for (RunRecord& run : record.runs) {
        run.measurement.design = "scenario";
        run.measurement.rule = r.measurement.rule;
        run.measurement.stability = assess_series(run.predict_latency_ns, r.measurement.rule);
      }
      break;
    case Workload::kBatchSweep:
      record = run_batch_sweep(v.manifest, *predictor, plan, session);
      if (record.settings.contains("counters_unavailable"))
        spdlog::warn("hardware counters not collected: {}", record.settings["counters_unavailable"].get<std::string>());
      if (r.inputs.accuracy && record.status == "complete")
        record.settings["accuracy"] = run_accuracy(v.manifest, *predictor, r.inputs.dataset, r.batch_sizes);
      break;
  }
  const nlohmann::json framework_facts = predictor->framework_facts();  // threads and backends, as it ran
  predictor->close();
  record.settings["request"] = to_json(r);
  record.created_at = utc_now_iso8601();
  record.system = describe_system();
  record.system["framework"] = {{"name", record.framework_name}, {"version", record.framework_version}};
  for (const auto& [key, value] : framework_facts.items()) record.system["framework"][key] = value;
  if (context.store) {
    try {
      context.store->save(record);
    } catch (const StoreError& e) {
      throw unsaved(std::move(record), *context.store, e);
    }
  }
  return record;
}

}  // namespace

EvaluationRecord evaluate(const EvaluationRequest& request, const EvaluationContext& context) {
  try {
    return evaluate_unguarded(request, context);
  } catch (const std::bad_alloc&) {
    // Whatever asked for the memory, the request is what sized it: name the request's sizes, not "std::bad_alloc".
    std::string sizes;
    for (int b : request.batch_sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(b);
    throw std::runtime_error("out of memory while evaluating model " + request.model + " at batch sizes " + sizes +
                             (request.scenario ? " (scenario " + request.scenario->scenario + ")" : std::string()) +
                             " on " + request.device +
                             ": this machine could not allocate what the request needs; "
                             "lower the batch sizes, max_batch_bytes or the scenario's sizes");
  }
}

std::filesystem::path write_recovery_file(EvaluationRecord record, const std::vector<std::filesystem::path>& folders) {
  namespace fs = std::filesystem;
  // The uuid names the file; the failed save normally gave it already, and keeping it lets `xsp import` recognise
  // an evaluation it has imported before.
  if (record.uuid.empty()) record.uuid = random_uuid();
  const std::string name = "xsp-recovered-" + record.uuid + ".db";
  std::string failures;
  for (const fs::path& folder : folders) {
    const fs::path target = folder / name;
    // A private temporary name: a crash part-way leaves no file that looks like a complete recovery file.
    const fs::path tmp = folder / ("." + name + ".tmp-" + std::to_string(::getpid()));
    auto remove_tmp = [&tmp] {
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(tmp.string() + suffix, ec);
    };
    try {
      if (fs::exists(target)) throw StoreError(target.string() + " exists already");
      remove_tmp();
      {
        auto recovery = Store::open(tmp);
        EvaluationRecord copy = record;
        recovery->save(copy);
      }  // closed: SQLite folds the WAL into the file and removes it
      std::error_code ec;
      fs::rename(tmp, target, ec);
      if (ec) throw StoreError("rename " + tmp.string() + " to " + target.string() + ": " + ec.message());
      return target;
    } catch (const std::exception& e) {
      remove_tmp();
      failures += (failures.empty() ? "" : "; ") + std::string("in ") + folder.string() + ": " + e.what();
    }
  }
  throw StoreError("could not write a recovery file (" +
                   (failures.empty() ? std::string("no folder given") : failures) + ")");
}

}  // namespace xsp
