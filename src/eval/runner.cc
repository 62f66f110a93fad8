#include "xsp/eval/runner.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "xsp/stats/stats.h"
#include "xsp/trace/assembler.h"

namespace xsp {
namespace {

// Opens a span now and closes it (adding it to the recorder) when the scope ends.
class ScopedSpan {
 public:
  ScopedSpan(TraceRecorder* recorder, Level level, std::string name, SpanId parent, std::vector<Tag> tags = {})
      : recorder_(recorder) {
    span_.id = recorder ? recorder->next_id() : kNoSpan;
    span_.parent_id = parent;
    span_.parent_rule = parent == kNoSpan ? ParentRule::kNone : ParentRule::kContext;
    span_.level = level;
    span_.name = std::move(name);
    span_.thread_id = current_thread_id();
    span_.tags = std::move(tags);
    span_.start_ns = now_ns();
  }
  ~ScopedSpan() { close(); }
  /// Ends the span now; returns its duration.
  std::int64_t close() {
    if (!closed_) {
      span_.end_ns = now_ns();
      closed_ = true;
      if (recorder_) recorder_->add(span_);
    }
    return span_.duration_ns();
  }
  SpanId id() const { return span_.id; }

 private:
  TraceRecorder* recorder_;
  Span span_;
  bool closed_ = false;
};

struct BatchInputs {
  std::vector<std::filesystem::path> files;
};

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

// Top `k` indices of `values`, best first, ties by lower index (deterministic across frameworks).
std::vector<int> top_indices(const float* values, std::size_t n, std::size_t k) {
  std::vector<int> idx(n);
  for (std::size_t i = 0; i < n; ++i) idx[i] = static_cast<int>(i);
  k = std::min(k, n);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](int a, int b) { return values[a] > values[b] || (values[a] == values[b] && a < b); });
  idx.resize(k);
  return idx;
}

// One row of the first output as an InputPrediction. Softmax is computed in double after subtracting the row's
// maximum (no overflow for large logits), then stored as float.
InputPrediction make_prediction(std::string id, const float* row, std::size_t classes, bool softmax, std::size_t k) {
  InputPrediction p;
  p.input_id = std::move(id);
  p.probabilities.assign(row, row + classes);
  if (softmax && classes > 0) {
    const float max = *std::max_element(row, row + classes);
    double sum = 0;
    std::vector<double> e(classes);
    for (std::size_t c = 0; c < classes; ++c) sum += e[c] = std::exp(static_cast<double>(row[c]) - max);
    for (std::size_t c = 0; c < classes; ++c) p.probabilities[c] = static_cast<float>(e[c] / sum);
  }
  p.top_classes = top_indices(p.probabilities.data(), classes, k);
  return p;
}

}  // namespace

std::vector<TraceLevel> run_levels(TraceLevel trace_level, bool leveled, bool have_framework_profiler,
                                   bool have_device_profiler, bool have_counter_profiler) {
  if (trace_level == TraceLevel::kHardware && !have_counter_profiler)
    throw std::invalid_argument(
        "trace level 'hardware' needs the counter profiler (CUPTI Range Profiler): use --device cuda on a CUDA "
        "build");
  if (trace_level != TraceLevel::kModel && !have_framework_profiler)
    throw std::invalid_argument("trace level '" + std::string(to_string(trace_level)) +
                                "' needs a framework profiler; this predictor has none");
  if (trace_level > TraceLevel::kFramework && !have_device_profiler)
    throw std::invalid_argument("trace level '" + std::string(to_string(trace_level)) +
                                "' needs the GPU profiler (CUPTI): use --device cuda on a CUDA build");
  if (trace_level == TraceLevel::kHardware) {
    std::vector<TraceLevel> levels;
    if (leveled) levels = {TraceLevel::kModel, TraceLevel::kFramework};
    levels.push_back(TraceLevel::kKernel);
    levels.push_back(TraceLevel::kHardware);
    return levels;
  }
  if (!leveled) return {trace_level};
  std::vector<TraceLevel> levels{TraceLevel::kModel};
  if (trace_level >= TraceLevel::kFramework) levels.push_back(TraceLevel::kFramework);
  if (trace_level > TraceLevel::kFramework) levels.push_back(trace_level);
  return levels;
}

EvaluationRecord run_evaluation(const Manifest& manifest, Predictor& predictor, const EvaluationOptions& options,
                                const ProgressCallback& progress) {
  if (options.batch_sizes.empty()) throw std::invalid_argument("no batch size given");
  for (int b : options.batch_sizes)
    if (b < 1) throw std::invalid_argument("batch size must be >= 1, got " + std::to_string(b));
  if (options.iterations < 1) throw std::invalid_argument("iterations must be >= 1");
  if (options.counter_iterations < 1) throw std::invalid_argument("counter iterations must be >= 1");
  if (options.warmup_iterations < 0) throw std::invalid_argument("warm-up iterations must be >= 0");
  if (manifest.inputs.empty() || manifest.outputs.empty())
    throw std::invalid_argument("manifest " + manifest.path.string() + " has no input or output");

  FrameworkProfiler* framework_profiler = predictor.framework_profiler();
  const auto levels = run_levels(options.trace_level, options.leveled, framework_profiler != nullptr,
                                 options.device_profiler != nullptr, options.counter_profiler != nullptr);
  const auto iterations_of = [&](TraceLevel level) {
    return level == TraceLevel::kHardware ? options.counter_iterations : options.iterations;
  };

  const InputSpec& input_spec = manifest.inputs.front();
  const OutputSpec& output_spec = manifest.outputs.front();
  std::vector<std::filesystem::path> files;
  std::optional<Preprocessor> preprocessor;
  if (!options.synthetic) {
    if (input_spec.type != "image")
      throw std::invalid_argument("inputs of type '" + input_spec.type + "' need --synthetic");
    files = list_images(options.inputs_dir);
    preprocessor.emplace(input_spec);
  }
  std::vector<std::string> labels;
  const auto labels_path = manifest.resolved_labels_path(0);
  if (!labels_path.empty()) labels = load_labels(labels_path);
  const Postprocessor postprocessor(output_spec, labels);

  EvaluationRecord record;
  record.model_name = manifest.name;
  record.model_version = manifest.version;
  record.manifest_yaml = manifest.source_yaml;
  record.framework_name = predictor.framework_name();
  record.framework_version = predictor.framework_version();
  record.device = options.device.kind + (options.device.kind == "cpu" ? "" : ":" + std::to_string(options.device.index));
  record.batch_sizes = options.batch_sizes;
  record.trace_level = options.trace_level;
  record.leveled = options.leveled;
  record.settings = {{"warmup_iterations", options.warmup_iterations},
                     {"iterations", options.iterations},
                     {"inputs", options.synthetic ? "synthetic" : options.inputs_dir.string()},
                     {"input_count", files.size()},
                     {"synthetic_seed", options.seed},
                     {"run_levels", nlohmann::json::array()}};
  for (auto l : levels) record.settings["run_levels"].push_back(std::string(to_string(l)));
  record.settings["sample_outputs"] = nlohmann::json::object();
  bool softmax = false;
  std::size_t top_k = 5;
  for (const auto& step : output_spec.steps) {
    if (step.op == "softmax") softmax = true;
    if (step.op == "top_k") top_k = static_cast<std::size_t>(std::stoul(step.params.at("k")));
  }
  if (options.store_predictions)
    record.settings["predictions"] = {{"values", softmax ? "softmax" : "raw"}, {"top_k", top_k}};

  Progress state;
  for (TraceLevel level : levels)
    state.total += static_cast<int>(options.batch_sizes.size()) * (options.warmup_iterations + iterations_of(level));
  std::size_t next_file = 0;

  for (TraceLevel level : levels) {
    for (int batch_size : options.batch_sizes) {
      RunRecord run;
      run.batch_size = batch_size;
      run.trace_level = level;
      run.warmup_iterations = options.warmup_iterations;
      run.iterations = iterations_of(level);

      TraceRecorder recorder;
      const bool framework = enables(level, Level::kFramework);
      // The counter run records framework ops and counters only: kernel replay serializes and repeats every
      // kernel, so activity records of that run would describe the replays, not the model.
      DeviceProfiler* device = level == TraceLevel::kHardware           ? options.counter_profiler
                               : enables(level, Level::kLibrary) ? options.device_profiler
                                                                 : nullptr;
      if (framework) framework_profiler->set_correlation_listener(device ? device->correlation_listener() : nullptr);
      std::map<std::string, std::vector<double>> stage_ns;
      ScopedSpan app(&recorder, Level::kApplication,
                     manifest.name + " bs=" + std::to_string(batch_size) + " " + std::string(to_string(level)),
                     kNoSpan,
                     {{"model", manifest.name},
                      {"framework", record.framework_name},
                      {"batch_size", std::to_string(batch_size)},
                      {"trace_level", std::string(to_string(level))}});
      std::vector<Classification> last_outputs;
      std::set<std::string> predicted;  // input ids whose prediction this run already keeps

      int total = options.warmup_iterations + run.iterations;
      for (int i = 0; i < total; ++i) {
        const bool measured = i >= options.warmup_iterations;
        // Warm-up batches get no recorder: nothing of them enters the trace.
        TraceRecorder* rec = measured ? &recorder : nullptr;
        const SpanId parent = measured ? app.id() : kNoSpan;
        if (measured && i == options.warmup_iterations) {
          if (device) {
            DeviceProfilerOptions device_options;
            device_options.library = enables(level, Level::kLibrary);
            device_options.system = enables(level, Level::kSystem);
            device_options.kernel = enables(level, Level::kKernel);
            try {
              device->start(recorder, device_options);
            } catch (const std::runtime_error& e) {
              // Counters can be unavailable where tracing works (profiling restricted to admins, another
              // profiler attached, a virtualized GPU): the evaluation goes on without them and says why.
              if (level != TraceLevel::kHardware) throw;
              record.settings["counters_unavailable"] = e.what();
              recorder.count("counters.unavailable", 1);
              device = nullptr;
              if (framework) framework_profiler->set_correlation_listener(nullptr);
            }
          }
          if (framework) framework_profiler->start(recorder, kNoSpan);
          // A counter profiler that rotates metric passes over batches needs one batch per pass.
          if (device && device->batches_needed() > run.iterations) {
            const int extra = device->batches_needed() - run.iterations;
            run.iterations += extra;
            total += extra;
            state.total += extra;
          }
        }
        std::vector<Tag> batch_tag{{"batch", std::to_string(i - options.warmup_iterations)}};

        std::vector<EncodedInput> inputs;
        Tensor tensor;
        {
          ScopedSpan s(rec, Level::kModel, kStageInput, parent, batch_tag);
          if (!options.synthetic) {
            for (int k = 0; k < batch_size; ++k) inputs.push_back(read_input(files[next_file++ % files.size()]));
          }
          const auto d = s.close();
          if (measured) stage_ns[kStageInput].push_back(static_cast<double>(d));
        }
        {
          ScopedSpan s(rec, Level::kModel, kStagePreprocess, parent, batch_tag);
          tensor = options.synthetic
                       ? synthetic_batch(input_spec.dimensions, batch_size, options.seed + static_cast<std::uint64_t>(i))
                       : preprocessor->run(inputs);
          const auto d = s.close();
          if (measured) stage_ns[kStagePreprocess].push_back(static_cast<double>(d));
        }
        Tensor output;
        {
          ScopedSpan s(rec, Level::kModel, kStagePredict, parent, batch_tag);
          if (measured && framework) framework_profiler->set_parent(s.id());
          if (measured && device) device->begin_batch();
          output = predictor.predict(tensor);
          if (measured && device) device->end_batch();
          const auto d = s.close();
          if (measured) {
            stage_ns[kStagePredict].push_back(static_cast<double>(d));
            run.predict_latency_ns.push_back(static_cast<double>(d));
          }
        }
        {
          ScopedSpan s(rec, Level::kModel, kStagePostprocess, parent, batch_tag);
          last_outputs = postprocessor.run(output, ids_of(inputs));
          const auto d = s.close();
          if (measured) stage_ns[kStagePostprocess].push_back(static_cast<double>(d));
        }
        // Outside every stage span: keeping predictions must not inflate what is measured.
        if (measured && options.store_predictions && output.shape.size() >= 1 && output.shape[0] > 0) {
          const auto rows = static_cast<std::size_t>(output.shape[0]);
          const std::size_t classes = output.data.size() / rows;
          for (std::size_t k = 0; k < rows; ++k) {
            std::string id = options.synthetic ? "synthetic:seed=" + std::to_string(options.seed) + ":batch=" +
                                                     std::to_string(i) + ":" + std::to_string(k)
                                               : (k < inputs.size() ? inputs[k].id : std::string());
            if (id.empty() || !predicted.insert(id).second) continue;
            run.predictions.push_back(
                make_prediction(std::move(id), output.data.data() + k * classes, classes, softmax, top_k));
          }
        }
        ++state.done;
        if (progress) {
          state.what = manifest.name + " batch " + std::to_string(batch_size) + ", " +
                       std::string(to_string(level)) + (measured ? "" : " (warm-up)");
          progress(state);
        }
      }
      // The device profiler synchronizes and flushes first, while the ops its records point to are still open
      // in the framework profiler's books.
      if (device) device->stop();
      if (framework) {
        framework_profiler->stop();
        framework_profiler->set_correlation_listener(nullptr);
      }
      app.close();

      run.trace = recorder.take();
      run.trace.clock.unix_offset_ns = unix_offset_now_ns();
      if (device) run.trace.clock.device_clock_mapping = device->clock_mapping();
      assemble(run.trace);
      for (auto& [stage, samples] : stage_ns) run.stage_latency_ns[stage] = summarize(samples);
      const double predict_ns = run.stage_latency_ns[kStagePredict].trimmed_mean;
      run.throughput_samples_per_s = predict_ns > 0 ? batch_size * 1e9 / predict_ns : 0;
      const std::string key = std::to_string(batch_size);
      if (!record.settings["sample_outputs"].contains(key))
        record.settings["sample_outputs"][key] = to_json(last_outputs, 5);
      record.runs.push_back(std::move(run));
    }
  }
  std::stable_sort(record.runs.begin(), record.runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.batch_size != b.batch_size ? a.batch_size < b.batch_size : a.trace_level < b.trace_level;
  });
  return record;
}

std::vector<LevelOverhead> level_overheads(const EvaluationRecord& record) {
  std::vector<LevelOverhead> out;
  for (int batch_size : record.batch_sizes) {
    std::vector<const RunRecord*> runs;
    for (const auto& run : record.runs)
      if (run.batch_size == batch_size) runs.push_back(&run);
    std::sort(runs.begin(), runs.end(), [](auto* a, auto* b) { return a->trace_level < b->trace_level; });
    const RunRecord* shallower = nullptr;
    for (const auto* run : runs) {
      LevelOverhead o;
      o.batch_size = batch_size;
      o.level = run->trace_level;
      auto it = run->stage_latency_ns.find(kStagePredict);
      o.model_latency_ns = it == run->stage_latency_ns.end() ? 0 : it->second.trimmed_mean;
      if (shallower) {
        const double base = shallower->stage_latency_ns.at(kStagePredict).trimmed_mean;
        o.overhead_ns = o.model_latency_ns - base;
        o.overhead_percent = base > 0 ? 100.0 * o.overhead_ns / base : 0;
      }
      out.push_back(o);
      shallower = run;
    }
  }
  return out;
}

}  // namespace xsp
