#include "xsp/eval/runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include "format.h"
#include "scoped_span.h"
#include "xsp/eval/session.h"
#include "xsp/pipeline/tasks.h"
#include "xsp/stats/stats.h"
#include "xsp/system/machine_state.h"
#include "xsp/trace/assembler.h"
#include "xsp/trace/graph_replay.h"
#include "xsp/trace/run_statistics.h"

namespace xsp {
namespace {

std::vector<std::string> ids_of(const std::vector<EncodedInput>& inputs) {
  std::vector<std::string> ids;
  ids.reserve(inputs.size());
  for (const auto& in : inputs) ids.push_back(in.id);
  return ids;
}

nlohmann::json to_json(const std::vector<Classification>& results, std::size_t limit) {
  auto out = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size() && i < limit; ++i) {
    const auto& r = results[i];
    out.push_back({{"input", r.input_id},
                   {"classes", r.top_classes},
                   {"probabilities", r.top_probabilities},
                   {"labels", r.top_labels}});
  }
  return out;
}

// Masks with more (class, count) runs than this keep only their size and run count in the sample outputs.
constexpr std::size_t kMaxSampleMaskRuns = 20000;

// Sample outputs of the task pipeline (xsp/pipeline/tasks.h) for settings["sample_outputs"]: per input its
// classes with labels, and its detections or mask; "task" tells them from classification samples.
nlohmann::json to_json(const std::vector<InputPrediction>& results, const std::string& task,
                       const std::vector<std::string>& labels, const InputSpec& input, std::size_t limit) {
  auto label = [&](int c) { return c >= 0 && static_cast<std::size_t>(c) < labels.size() ? labels[c] : std::string(); };
  auto out = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size() && i < limit; ++i) {
    const InputPrediction& r = results[i];
    nlohmann::json j = {{"input", r.input_id}, {"task", task}};
    auto classes = nlohmann::json::array();
    for (std::size_t k = 0; k < r.top_classes.size() && k < 5; ++k) {
      const int c = r.top_classes[k];
      const float v = static_cast<std::size_t>(c) < r.probabilities.size() ? r.probabilities[c] : 0.f;
      classes.push_back({{"class", c}, {"label", label(c)}, {"value", v}});
    }
    j["classes"] = std::move(classes);
    if (task == "detection") {
      auto d = nlohmann::json::array();
      for (std::size_t k = 0; k < r.detections.size() && k < 10; ++k) {
        const Detection& x = r.detections[k];
        d.push_back(
            {{"class", x.label}, {"label", label(x.label)}, {"score", x.score}, {"box", {x.x1, x.y1, x.x2, x.y2}}});
      }
      j["detections"] = std::move(d);
      j["detection_count"] = r.detections.size();
      // The frame of the boxes: the model input's [H, W] (an image input is [C, H, W]).
      if (input.dimensions.size() == 3) j["input_size"] = {input.dimensions[1], input.dimensions[2]};
    }
    if (task == "segmentation") {
      // The runs themselves while they stay small (the report and the web UI draw the mask from them).
      j["mask"] = {{"height", r.mask.height}, {"width", r.mask.width}, {"run_count", r.mask.runs.size() / 2}};
      if (r.mask.runs.size() <= kMaxSampleMaskRuns * 2) j["mask"]["runs"] = r.mask.runs;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

namespace {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

// One trace level's state during a phase: the run being built (when `stored`) or a baseline's blocks.
struct LevelSlot {
  TraceLevel level = TraceLevel::kModel;
  bool finished = false;  // finish_run() made its RunRecord: the run is complete
  bool stored = true;     // false: a phase-2 baseline (M or M/F blocks beside kernel tracing), not a run
  RunRecord run;
  // Ids of a run's trace: the APPLICATION span is 1, every block's recorder starts where the last one stopped.
  SpanId app_id = 1;
  SpanId next_id = 2;
  std::unique_ptr<TraceRecorder> recorder;         // of the block in progress
  std::deque<std::pair<std::size_t, Trace>> kept;  // (batches, spans) of the last measured blocks
  std::size_t kept_batches = 0;
  std::map<std::string, std::uint64_t> counters;
  std::vector<std::map<std::string, std::vector<double>>> block_stages;  // per measured block: stage -> ns
  std::set<std::string> predicted;
  std::vector<Classification> last_outputs;
  std::vector<InputPrediction> last_task_outputs;  // the task pipeline's
  std::string clock_mapping;
  std::size_t measured_batches = 0;  // tags MODEL spans with the batch's index among the measured ones
};

// What every phase shares: the model, inputs, profilers and clock of the evaluation.
struct Context {
  const Manifest& manifest;
  Predictor& predictor;
  const RunPlan& plan;
  RunSession& session;
  const Clock& clock;
  std::vector<std::filesystem::path> files;
  std::optional<Preprocessor> preprocessor;
  std::optional<Postprocessor> postprocessor;
  // The task pipeline (detection, segmentation, text models; xsp/pipeline/tasks.h), when uses_task_pipeline().
  std::optional<TaskPostprocessor> task_postprocessor;
  std::optional<TextBatcher> text_batcher;
  std::vector<std::string> labels;
  bool softmax = false;
  std::size_t top_k = 5;
  std::size_t next_file = 0;
  std::uint64_t batch_counter = 0;
  // Synthetic inputs, made once per batch size before any timing (generating them per batch cost more than a
  // GPU predict of large batches); cycled through in order.
  std::map<int, std::vector<Tensor>> synthetic_pool;
};

// At most this many bytes of synthetic batches per batch size (at least one batch).
constexpr std::size_t kSyntheticPoolBytes = 512u << 20;  // over all batch sizes of the evaluation

const std::vector<Tensor>& synthetic_pool(Context& ctx, int batch_size) {
  auto& pool = ctx.synthetic_pool[batch_size];
  if (!pool.empty()) return pool;
  std::size_t numel = static_cast<std::size_t>(batch_size);
  for (long d : ctx.manifest.inputs.front().dimensions) numel *= static_cast<std::size_t>(d);
  const std::size_t budget = kSyntheticPoolBytes / std::max<std::size_t>(1, ctx.plan.batch_sizes.size());
  const std::size_t fit = std::max<std::size_t>(1, budget / std::max<std::size_t>(1, numel * sizeof(float)));
  const auto n = static_cast<std::uint64_t>(std::min<std::size_t>(kSyntheticBatches, fit));
  for (std::uint64_t j = 0; j < n; ++j)
    pool.push_back(synthetic_batch(ctx.manifest.inputs.front().dimensions, batch_size, ctx.plan.inputs.seed + j,
                                   ctx.plan.inputs.max_batch_bytes));
  return pool;
}

// Runs one batch through the pipeline; every stage is a MODEL span of `rec` when given. Returns the predict
// latency (ns). `stages`, when given, receives each stage's latency.
double run_pipeline_batch(Context& ctx, LevelSlot& slot, int batch_size, TraceRecorder* rec, bool measured,
                          std::map<std::string, std::vector<double>>* stages, DeviceProfiler* batch_hooks) {
  const RunPlan& plan = ctx.plan;
  const SpanId parent = rec ? slot.app_id : kNoSpan;
  const std::vector<Tensor>* pool = plan.inputs.synthetic ? &synthetic_pool(ctx, batch_size) : nullptr;
  const std::uint64_t j = pool ? ctx.batch_counter++ % pool->size() : ctx.batch_counter++;
  std::vector<Tag> batch_tag;
  if (rec && measured) batch_tag.emplace_back("batch", slot.measured_batches++);
  std::vector<EncodedInput> inputs;
  std::vector<std::string> texts;  // a text model's batch
  Tensor decoded;
  const Tensor* tensor = &decoded;
  const bool task = ctx.task_postprocessor.has_value();
  std::vector<Tensor> task_inputs;  // the task pipeline's model inputs, one per manifest input
  {
    ScopedSpan s(ctx.clock, rec, Level::kModel, kStageInput, parent, batch_tag);
    if (ctx.text_batcher) {
      for (int k = 0; k < batch_size; ++k) {
        const std::size_t i = ctx.next_file++ % plan.inputs.texts.size();
        texts.push_back(plan.inputs.texts[i]);
        inputs.push_back(EncodedInput{"text:" + std::to_string(i), {}});
      }
    } else if (!plan.inputs.synthetic) {
      for (int k = 0; k < batch_size; ++k) inputs.push_back(read_input(ctx.files[ctx.next_file++ % ctx.files.size()]));
    }
    const auto d = s.close();
    if (stages) (*stages)[kStageInput].push_back(static_cast<double>(d));
  }
  {
    ScopedSpan s(ctx.clock, rec, Level::kModel, kStagePreprocess, parent, batch_tag);
    if (ctx.text_batcher)
      task_inputs = ctx.text_batcher->run(texts);
    else if (pool)
      tensor = &(*pool)[j];
    else
      decoded = ctx.preprocessor->run(inputs);
    if (task && !ctx.text_batcher) task_inputs.push_back(pool ? *tensor : std::move(decoded));
    const auto d = s.close();
    if (stages) (*stages)[kStagePreprocess].push_back(static_cast<double>(d));
  }
  Tensor output;
  std::vector<Tensor> task_outputs;
  double predict_ns = 0;
  {
    ScopedSpan s(ctx.clock, rec, Level::kModel, kStagePredict, parent, batch_tag);
    if (rec) ctx.session.set_parent(s.id());
    if (batch_hooks) batch_hooks->begin_batch();
    if (task)
      task_outputs = ctx.predictor.predict_all(task_inputs);
    else
      output = ctx.predictor.predict(*tensor);
    if (batch_hooks) batch_hooks->end_batch();
    predict_ns = static_cast<double>(s.close());
    if (stages) (*stages)[kStagePredict].push_back(predict_ns);
  }
  std::vector<std::string> ids = ids_of(inputs);
  if (task && plan.inputs.synthetic)  // named as stored predictions name them (SweepPlan::store_predictions)
    for (int k = 0; k < batch_size; ++k)
      ids.push_back("synthetic:seed=" + std::to_string(plan.inputs.seed) + ":batch=" + std::to_string(j) + ":" +
                    std::to_string(k));
  {
    ScopedSpan s(ctx.clock, rec, Level::kModel, kStagePostprocess, parent, batch_tag);
    if (task)
      slot.last_task_outputs = ctx.task_postprocessor->run(task_outputs, ids);
    else
      slot.last_outputs = ctx.postprocessor->run(output, ids);
    const auto d = s.close();
    if (stages) (*stages)[kStagePostprocess].push_back(static_cast<double>(d));
  }
  // Outside every stage span: keeping predictions must not inflate what is measured.
  if (task) {
    if (!(measured && slot.stored && plan.sweep.store_predictions)) return predict_ns;
    for (std::size_t k = 0; k < slot.last_task_outputs.size(); ++k) {
      InputPrediction p = slot.last_task_outputs[k];
      if (p.input_id.empty() || !slot.predicted.insert(p.input_id).second) continue;
      slot.run.predictions.push_back(std::move(p));
    }
    return predict_ns;
  }
  if (measured && slot.stored && plan.sweep.store_predictions && output.shape.size() >= 1 && output.shape[0] > 0) {
    const auto rows = static_cast<std::size_t>(output.shape[0]);
    const std::size_t classes = output.data.size() / rows;
    for (std::size_t k = 0; k < rows; ++k) {
      std::string id = plan.inputs.synthetic ? "synthetic:seed=" + std::to_string(plan.inputs.seed) +
                                                   ":batch=" + std::to_string(j) + ":" + std::to_string(k)
                                             : (k < inputs.size() ? inputs[k].id : std::string());
      if (id.empty() || !slot.predicted.insert(id).second) continue;
      slot.run.predictions.push_back(
          classify_row(std::move(id), output.data.data() + k * classes, classes, ctx.softmax, ctx.top_k));
    }
  }
  return predict_ns;
}

// Drives the blocks of one phase (BlockExecutor for run_phase): switches each level's profilers on for its
// blocks, records measured blocks into their own recorders and keeps the last ones up to the trace budget.
class PhaseExecutor final : public BlockExecutor {
 public:
  PhaseExecutor(Context& ctx, int batch_size, std::vector<LevelSlot*> slots, MachineMonitor* monitor, std::string what)
      : ctx_(ctx), batch_size_(batch_size), slots_(std::move(slots)), monitor_(monitor), what_(std::move(what)) {}

  void begin_block(std::size_t l, bool /*warmup: profilers run in warm-up blocks too*/) override {
    LevelSlot& slot = *slots_[l];
    slot.recorder = std::make_unique<TraceRecorder>(slot.next_id);
    stages_.clear();
    ctx_.session.start(*slot.recorder, slot.level);
  }

  double run_batch(std::size_t l, bool warmup) override {
    ctx_.session.check_interrupt();  // profilers off, RunInterrupted: the phase is abandoned
    LevelSlot& slot = *slots_[l];
    // Warm-up batches are recorded into a recorder that is thrown away: the profilers run as in a measured
    // block, so the warm-up warms them too, but nothing of it enters a trace.
    return run_pipeline_batch(ctx_, slot, batch_size_, slot.recorder.get(), !warmup, warmup ? nullptr : &stages_,
                              nullptr);
  }

  void end_block(std::size_t l, bool warmup) override {
    LevelSlot& slot = *slots_[l];
    ctx_.session.stop();
    if (!ctx_.session.clock_mapping().empty()) slot.clock_mapping = ctx_.session.clock_mapping();
    Trace trace = slot.recorder->take();
    slot.next_id = slot.recorder->peek_next_id();
    slot.recorder.reset();
    if (monitor_) monitor_->observe();
    if (warmup) {
      learn_graph_captures(std::move(trace));  // graphs captured in the warm-up replay in the measured blocks
      return;
    }
    for (const auto& [name, value] : trace.counters) slot.counters[name] += value;
    std::size_t batches = stages_[kStagePredict].size();
    slot.block_stages.push_back(std::move(stages_));
    stages_.clear();
    if (!slot.stored) return;
    slot.kept.emplace_back(batches, std::move(trace));
    slot.kept_batches += batches;
    const auto budget = static_cast<std::size_t>(ctx_.plan.measurement.max_traced_batches);
    while (slot.kept.size() > 1 && slot.kept_batches > budget) {
      slot.counters[stat::kTraceUntracedBatches] += slot.kept.front().first;
      slot.counters[stat::kTraceDiscardedSpans] += slot.kept.front().second.spans.size();
      slot.kept_batches -= slot.kept.front().first;
      slot.kept.pop_front();
    }
  }

  void progress(std::size_t done, std::size_t total, std::string_view what) override {
    ctx_.session.progress(Progress{static_cast<int>(done), static_cast<int>(total), what_ + ": " + std::string(what)});
  }

 private:
  Context& ctx_;
  int batch_size_;
  std::vector<LevelSlot*> slots_;
  MachineMonitor* monitor_;
  std::string what_;
  std::map<std::string, std::vector<double>> stages_;
};

// Turns a slot's measured blocks into its RunRecord: latencies of the result blocks, the trace of the kept
// blocks under one APPLICATION span, the measurement and the machine state.
void finish_run(Context& ctx, LevelSlot& slot, int batch_size, const LevelMeasurement* lm, const PhaseResult* phase,
                const std::string& design) {
  slot.finished = true;
  RunRecord& run = slot.run;
  run.batch_size = batch_size;
  run.trace_level = slot.level;
  RunMeasurement& m = run.measurement;
  m.design = design;
  m.rule = ctx.plan.measurement.rule;
  if (lm && phase) {
    run.predict_latency_ns = lm->result_latencies_ns();
    m.stability = lm->stability;
    m.warmup_batches = lm->warmup_batches;
    m.warmup_ns = phase->warmup_ns;
    m.warmup_converged = phase->warmup_converged;
    m.warmup_block_medians_ns = lm->warmup_block_medians_ns;
    m.batches_per_block = phase->batches_per_block;
    for (const MeasuredBlock& b : lm->blocks)
      m.blocks.push_back({b.round, b.start_ns, b.duration_ns, b.latencies_ns.size(), b.median_ns});
    m.result_first_block = lm->result_first_block;
    m.measure_ns = phase->measure_ns;
    m.reached_max_duration = phase->reached_max_duration;
    run.warmup_iterations = lm->warmup_batches;
  }
  run.iterations = static_cast<int>(run.predict_latency_ns.size());
  std::map<std::string, std::vector<double>> stages;
  for (std::size_t i = m.result_first_block; i < slot.block_stages.size(); ++i)
    for (auto& [stage, ns] : slot.block_stages[i]) stages[stage].insert(stages[stage].end(), ns.begin(), ns.end());
  for (auto& [stage, samples] : stages) run.stage_latency_ns[stage] = summarize(samples);
  const auto predict = run.stage_latency_ns.find(kStagePredict);
  const double predict_ns = predict == run.stage_latency_ns.end() ? 0 : predict->second.trimmed_mean;
  run.throughput_samples_per_s = predict_ns > 0 ? batch_size * 1e9 / predict_ns : 0;

  Span app;
  app.id = slot.app_id;
  app.name = ctx.manifest.name + " bs=" + std::to_string(batch_size) + " " + std::string(to_string(slot.level));
  app.tags = {{"model", ctx.manifest.name},
              {"framework", ctx.predictor.framework_name()},
              {"batch_size", batch_size},
              {"trace_level", std::string(to_string(slot.level))},
              {"kept_batches", slot.kept_batches}};
  app.start_ns = 1;  // start > end: the span covers the kept blocks alone
  app.end_ns = 0;
  std::vector<Span> spans;
  for (auto& [batches, t] : slot.kept)
    spans.insert(spans.end(), std::make_move_iterator(t.spans.begin()), std::make_move_iterator(t.spans.end()));
  slot.kept.clear();
  run.trace = close_run_trace(std::move(spans), std::move(app), slot.counters, slot.clock_mapping, ctx.clock);
}

void attach_machine_state(LevelSlot& slot, MachineMonitor* monitor) {
  if (!monitor) return;
  slot.run.machine_state = monitor->to_json();
  for (auto& w : monitor->warnings()) slot.run.warnings.push_back(w);
}

// Warnings about how the measurement went, in the run's own words.
void add_measurement_warnings(LevelSlot& slot, const MeasurementOptions& o) {
  const RunMeasurement& m = slot.run.measurement;
  const std::string level = std::string(run_name(slot.level));
  if (!m.warmup_converged && o.warmup_max_ms > 0)
    slot.run.warnings.push_back(level + " warm-up did not converge within " + std::to_string(m.warmup_ns / 1000000) +
                                " ms: its last " + std::to_string(o.rule.windows) +
                                " warm-up blocks never agreed within " + percent(o.rule.tolerance));
  if (m.stability.verdict == Verdict::kUnstable)
    slot.run.warnings.push_back(level + " latency unstable: its last " +
                                std::to_string(m.stability.window_medians_ns.size()) + " windows differ by " +
                                percent(m.stability.spread_fraction) + " (tolerance " + percent(o.rule.tolerance) +
                                ") after " + std::to_string(m.measure_ns / 1000000) + " ms of measurement");
}

LevelOverhead make_overhead(int batch_size, TraceLevel level, TraceLevel baseline, std::string design,
                            const std::vector<double>& deeper, const std::vector<double>& shallower, std::string note) {
  LevelOverhead o;
  o.batch_size = batch_size;
  o.level = level;
  o.baseline = baseline;
  o.design = std::move(design);
  o.latency_ns = deeper.empty() ? 0 : median(deeper);
  o.baseline_latency_ns = shallower.empty() ? 0 : median(shallower);
  o.note = std::move(note);
  if (deeper.empty() || shallower.empty()) {
    o.overhead = PairedOverhead{0, std::nan(""), {std::nan(""), std::nan("")}};
  } else if (o.design == "interleaved") {
    o.overhead = paired_overhead(deeper, shallower);
  } else {
    // Blocks of different phases have no pairing: compare the two groups of block medians (Welch).
    o.overhead = unpaired_change(deeper, shallower);
  }
  return o;
}

std::optional<MachineMonitor> new_monitor(const RunSession& session, const DeviceSpec& device) {
  if (!session.record_machine_state()) return std::nullopt;
  std::optional<MachineMonitor> m;
  m.emplace(system_nvml(), device.kind == "cuda" ? device.index : -1);
  m->start();
  return m;
}

// Runs `slots` (one batch size) as one interleaved phase and finishes the stored runs.
PhaseResult run_interleaved(Context& ctx, int batch_size, const std::vector<LevelSlot*>& slots,
                            const std::string& design) {
  auto monitor = new_monitor(ctx.session, ctx.plan.device);
  std::string what = ctx.manifest.name + " bs " + std::to_string(batch_size) + " ";
  for (std::size_t i = 0; i < slots.size(); ++i) what += (i ? ", " : "") + std::string(run_name(slots[i]->level));
  PhaseExecutor executor(ctx, batch_size, slots, monitor ? &*monitor : nullptr, what);
  PhaseResult phase = run_phase(slots.size(), ctx.plan.measurement, ctx.clock, executor);
  if (monitor) monitor->finish();
  for (std::size_t l = 0; l < slots.size(); ++l) {
    LevelSlot& slot = *slots[l];
    if (!slot.stored) continue;
    finish_run(ctx, slot, batch_size, &phase.levels[l], &phase, design);
    attach_machine_state(slot, monitor ? &*monitor : nullptr);
    add_measurement_warnings(slot, ctx.plan.measurement);
  }
  return phase;
}

// The pipeline of the evaluation: the task pipeline or classification's, the images (screened once) or texts, the
// labels and the top-k. Returns the inputs screen_inputs() left out.
ScreenedInputs prepare_pipeline(Context& ctx) {
  const Manifest& manifest = ctx.manifest;
  const RunPlan& plan = ctx.plan;
  const InputSpec& input_spec = manifest.inputs.front();
  const OutputSpec& output_spec = manifest.outputs.front();
  ScreenedInputs screened;
  if (uses_task_pipeline(manifest)) {
    ctx.task_postprocessor.emplace(output_spec);
    const bool text = std::any_of(manifest.inputs.begin(), manifest.inputs.end(),
                                  [](const InputSpec& in) { return in.type == "text"; });
    if (text) ctx.text_batcher.emplace(manifest, *plan.inputs.tokenizer);  // validate() loaded texts and tokenizer
  }
  if (!plan.inputs.synthetic && !ctx.text_batcher) {
    ctx.preprocessor.emplace(input_spec, plan.inputs.max_batch_bytes);
    screened = screen_inputs(list_images(plan.inputs.images_dir), *ctx.preprocessor, plan.inputs.skip_bad_inputs);
    ctx.files = screened.usable;
    for (const SkippedInput& s : screened.skipped) spdlog::warn("input left out: {}", s.reason);
  }
  const auto labels_path = manifest.resolved_labels_path(0);
  if (!labels_path.empty()) ctx.labels = load_labels(labels_path);
  ctx.postprocessor.emplace(output_spec, ctx.labels);
  for (const auto& step : output_spec.steps) {
    if (step.op == "softmax") ctx.softmax = true;
    if (step.op == "top_k") ctx.top_k = static_cast<std::size_t>(std::stoul(step.params.at("k")));
  }
  return screened;
}

// The record before any run: what ran, the measurement, the inputs, the run levels and what predictions hold.
EvaluationRecord new_sweep_record(Context& ctx, const ScreenedInputs& screened) {
  const RunPlan& plan = ctx.plan;
  const OutputSpec& output_spec = ctx.manifest.outputs.front();
  EvaluationRecord record = detail::record_of(ctx.manifest, ctx.predictor, plan.device);
  record.batch_sizes = plan.batch_sizes;
  record.trace_level = plan.trace_level;
  record.leveled = plan.leveled;
  record.settings = {{"measurement", to_json(plan.measurement)},
                     {"inputs", ctx.text_batcher        ? "texts"
                                : plan.inputs.synthetic ? "synthetic"
                                                        : plan.inputs.images_dir.string()},
                     {"input_count", ctx.text_batcher ? plan.inputs.texts.size() : ctx.files.size()},
                     {"synthetic_seed", plan.inputs.seed},
                     {"synthetic_batches", kSyntheticBatches},
                     {"run_levels", nlohmann::json::array()}};
  for (auto l : plan.levels) record.settings["run_levels"].push_back(std::string(to_string(l)));
  if (plan.inputs.skip_bad_inputs && !plan.inputs.synthetic)
    record.settings.update(detail::skipped_inputs_json(screened.skipped));
  record.settings["sample_outputs"] = nlohmann::json::object();
  if (plan.sweep.store_predictions) {
    std::string values = ctx.softmax ? "softmax" : "raw";
    if (output_spec.type == "detection") values = "best detection score per class";
    if (output_spec.type == "segmentation") values = "fraction of pixels per class";
    record.settings["predictions"] = {{"values", values}, {"top_k", ctx.top_k}};
  }
  if (ctx.task_postprocessor) record.settings["task"] = output_spec.type;
  return record;
}

// The runs of a sweep being made: slots of stored runs per (batch size, level), and the result block medians
// the overheads compare.
struct SweepState {
  std::map<std::pair<int, TraceLevel>, std::unique_ptr<LevelSlot>> slots;
  std::map<int, std::map<TraceLevel, std::vector<double>>> result_blocks;
  LevelSlot& slot(int b, TraceLevel l) {
    auto& s = slots[{b, l}];
    if (!s) {
      s = std::make_unique<LevelSlot>();
      s->level = l;
    }
    return *s;
  }
};

// Phase 1: M and M/F of one batch size, before any CUPTI level touched the process.
void run_in_process_phase(Context& ctx, int b, const std::vector<TraceLevel>& in_process, SweepState& st,
                          EvaluationRecord& record) {
  const bool sequential = ctx.plan.measurement.order == LevelOrder::kSequential;
  const std::string design = sequential ? "sequential" : "interleaved";
  if (sequential || in_process.size() == 1) {
    for (TraceLevel l : in_process) {
      const auto phase = run_interleaved(ctx, b, {&st.slot(b, l)}, in_process.size() == 1 ? "single" : design);
      st.result_blocks[b][l] = phase.levels[0].result_block_medians_ns();
    }
  } else {
    std::vector<LevelSlot*> ps;
    for (TraceLevel l : in_process) ps.push_back(&st.slot(b, l));
    const auto phase = run_interleaved(ctx, b, ps, design);
    for (std::size_t i = 0; i < ps.size(); ++i)
      st.result_blocks[b][in_process[i]] = phase.levels[i].result_block_medians_ns();
  }
  for (std::size_t i = 1; i < in_process.size(); ++i)
    record.level_overheads.push_back(make_overhead(b, in_process[i], in_process[i - 1], design,
                                                   st.result_blocks[b][in_process[i]],
                                                   st.result_blocks[b][in_process[i - 1]], ""));
}

// Phase 2: a CUPTI level of one batch size, beside M and M/F blocks that share CUPTI's leftover state (leveled).
void run_cupti_phase(Context& ctx, int b, TraceLevel l, const std::vector<TraceLevel>& in_process, SweepState& st,
                     EvaluationRecord& record) {
  const bool sequential = ctx.plan.measurement.order == LevelOrder::kSequential;
  LevelSlot& s = st.slot(b, l);
  if (!ctx.plan.leveled || sequential) {
    const auto phase = run_interleaved(ctx, b, {&s}, ctx.plan.leveled ? "sequential" : "single");
    st.result_blocks[b][l] = phase.levels[0].result_block_medians_ns();
    if (ctx.plan.leveled && !in_process.empty())
      record.level_overheads.push_back(make_overhead(b, l, in_process.back(), "sequential", st.result_blocks[b][l],
                                                     st.result_blocks[b][in_process.back()], ""));
    return;
  }
  std::vector<std::unique_ptr<LevelSlot>> baselines;
  std::vector<LevelSlot*> ps;
  for (TraceLevel base : in_process) {
    baselines.push_back(std::make_unique<LevelSlot>());
    baselines.back()->level = base;
    baselines.back()->stored = false;
    ps.push_back(baselines.back().get());
  }
  ps.push_back(&s);
  const auto phase = run_interleaved(ctx, b, ps, "interleaved");
  const auto kernel_blocks = phase.levels.back().result_block_medians_ns();
  st.result_blocks[b][l] = kernel_blocks;
  for (std::size_t i = 0; i < in_process.size(); ++i)
    s.run.measurement.baseline_block_medians_ns[std::string(to_string(in_process[i]))] =
        phase.levels[i].result_block_medians_ns();
  const std::string shallower = std::string(run_name(in_process.back()));
  record.level_overheads.push_back(
      make_overhead(b, l, in_process.back(), "interleaved", kernel_blocks,
                    phase.levels[in_process.size() - 1].result_block_medians_ns(),
                    "baseline: the " + shallower +
                        " blocks of the same rounds, which ran after CUPTI first attached to the "
                        "process (its tracing never fully leaves)"));
  record.level_overheads.push_back(
      make_overhead(b, l, in_process.back(), "sequential", kernel_blocks, st.result_blocks[b][in_process.back()],
                    "against the " + shallower +
                        " run before CUPTI first attached (a clean process): CUPTI's leftover state "
                        "and the machine's drift between the phases count too"));
  record.level_overheads.push_back(make_overhead(
      b, TraceLevel::kModel, TraceLevel::kModel, "residual", phase.levels[0].result_block_medians_ns(),
      st.result_blocks[b][TraceLevel::kModel],
      "M blocks beside kernel tracing against the M run before it: machine drift and CUPTI's leftover state "
      "together, not an overhead"));
}

// A counter run of one batch size: a fixed number of batches whose timings are never used (SPEC §3).
void run_counter_run(Context& ctx, int b, SweepState& st, EvaluationRecord& record) {
  RunSession& session = ctx.session;
  session.check_interrupt();
  LevelSlot& slot = st.slot(b, TraceLevel::kHardware);
  auto monitor = new_monitor(session, ctx.plan.device);
  const std::int64_t w0 = ctx.clock.now_ns();
  int warmup = 0;
  for (; warmup < ctx.plan.measurement.warmup_min_batches; ++warmup)
    run_pipeline_batch(ctx, slot, b, nullptr, false, nullptr, nullptr);
  slot.run.measurement.warmup_ns = ctx.clock.now_ns() - w0;
  slot.run.measurement.warmup_batches = warmup;
  slot.recorder = std::make_unique<TraceRecorder>(slot.next_id);
  session.start(*slot.recorder, TraceLevel::kHardware);
  if (!session.counters_unavailable().empty()) record.settings["counters_unavailable"] = session.counters_unavailable();
  DeviceProfiler* device = session.batch_profiler();
  // A counter profiler that rotates metric passes over batches needs one batch per pass.
  const int batches = std::max(ctx.plan.sweep.counter_iterations, device ? device->batches_needed() : 0);
  std::map<std::string, std::vector<double>> stages;
  std::vector<double> latencies;
  const std::int64_t m0 = ctx.clock.now_ns();
  for (int i = 0; i < batches; ++i) {
    latencies.push_back(run_pipeline_batch(ctx, slot, b, slot.recorder.get(), true, &stages, device));
    session.progress(Progress{i + 1, batches, ctx.manifest.name + " bs " + std::to_string(b) + " M/F/H: counters"});
  }
  session.stop();
  Trace t = slot.recorder->take();
  for (const auto& [name, value] : t.counters) slot.counters[name] += value;
  slot.kept.emplace_back(latencies.size(), std::move(t));
  slot.kept_batches = latencies.size();
  slot.block_stages.push_back(std::move(stages));
  slot.run.predict_latency_ns = latencies;
  RunMeasurement& m = slot.run.measurement;
  m.measure_ns = ctx.clock.now_ns() - m0;
  m.blocks.push_back({0, m0, m.measure_ns, latencies.size(), median(latencies)});
  m.stability = assess_series(latencies, ctx.plan.measurement.rule);
  m.stability.verdict = Verdict::kNotAssessed;  // timings of a counter run are never used
  slot.run.warmup_iterations = warmup;
  slot.clock_mapping = session.clock_mapping();
  finish_run(ctx, slot, b, nullptr, nullptr, "fixed");
  if (monitor) {
    monitor->finish();
    attach_machine_state(slot, &*monitor);
  }
}

// The finished runs into the record, sorted by (batch size, level), with each batch size's sample outputs; an
// interrupted sweep keeps only finished runs and the overheads whose two runs were finished.
void collect_runs(Context& ctx, SweepState& st, int interrupted, EvaluationRecord& record) {
  const InputSpec& input_spec = ctx.manifest.inputs.front();
  const OutputSpec& output_spec = ctx.manifest.outputs.front();
  for (auto& [key, slot] : st.slots) {
    if (interrupted && !slot->finished) continue;  // cut short: not a run
    const std::string b = std::to_string(key.first);
    if (!record.settings["sample_outputs"].contains(b))
      record.settings["sample_outputs"][b] =
          ctx.task_postprocessor ? to_json(slot->last_task_outputs, output_spec.type, ctx.labels, input_spec, 5)
                                 : to_json(slot->last_outputs, 5);
    record.runs.push_back(std::move(slot->run));
  }
  std::stable_sort(record.runs.begin(), record.runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.batch_size != b.batch_size ? a.batch_size < b.batch_size : a.trace_level < b.trace_level;
  });
  if (!interrupted) return;
  record.status = "incomplete";
  record.settings["interrupted"] = {{"signal", interrupted}, {"complete_runs", record.runs.size()}};
  std::erase_if(record.level_overheads, [&](const LevelOverhead& o) {
    auto has = [&](TraceLevel l) {
      return std::any_of(record.runs.begin(), record.runs.end(),
                         [&](const RunRecord& r) { return r.batch_size == o.batch_size && r.trace_level == l; });
    };
    return !has(o.level) || !has(o.baseline);
  });
}

}  // namespace

EvaluationRecord run_batch_sweep(const Manifest& manifest, Predictor& predictor, const RunPlan& plan,
                                 RunSession& session) {
  Context ctx{manifest, predictor, plan, session, session.clock()};
  const ScreenedInputs screened = prepare_pipeline(ctx);
  EvaluationRecord record = new_sweep_record(ctx, screened);
  if (plan.inputs.synthetic)
    for (int b : plan.batch_sizes) synthetic_pool(ctx, b);  // before anything is timed

  std::vector<TraceLevel> in_process, cupti;
  bool hardware = false;
  for (TraceLevel l : plan.levels) {
    if (l == TraceLevel::kHardware)
      hardware = true;
    else if (l <= TraceLevel::kFramework)
      in_process.push_back(l);
    else
      cupti.push_back(l);
  }
  SweepState st;
  int interrupted = 0;
  try {
    if (!in_process.empty())
      for (int b : plan.batch_sizes) run_in_process_phase(ctx, b, in_process, st, record);
    for (int b : plan.batch_sizes)
      for (TraceLevel l : cupti) run_cupti_phase(ctx, b, l, in_process, st, record);
    if (hardware)
      for (int b : plan.batch_sizes) run_counter_run(ctx, b, st, record);
  } catch (const RunInterrupted& i) {
    interrupted = i.signal;
  }
  collect_runs(ctx, st, interrupted, record);
  return record;
}

}  // namespace xsp
