// xsp: the command-line front end. Thin: it parses options and calls the library.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <spdlog/spdlog.h>
#include <sstream>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/compare.h"
#include "xsp/analysis/roofline.h"
#include "xsp/analysis/table.h"
#include "xsp/eval/runner.h"
#include "xsp/manifest/manifest.h"
#include "xsp/eval/accuracy.h"
#include "xsp/manifest/semver.h"
#include "xsp/profilers/ceilings_benchmark.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/profilers/gpu_activity.h"
#include "xsp/store/store.h"
#include "xsp/system/gpu_info.h"
#include "xsp/system/system_info.h"
#include "xsp/trace/export.h"
#include "scenario_cli.h"
#ifdef XSP_WITH_LIBTORCH
#include "xsp/predictors/libtorch.h"
#endif
#ifdef XSP_WITH_OPENCV_DNN
#include "xsp/predictors/opencv_dnn.h"
#endif
#ifdef XSP_WITH_ONNXRUNTIME
#include "xsp/predictors/onnxruntime.h"
#endif

namespace fs = std::filesystem;
using namespace xsp;

namespace {

fs::path default_store() {
  if (const char* s = std::getenv("XSP_STORE")) return s;
  if (const char* d = std::getenv("XDG_DATA_HOME")) return fs::path(d) / "xsp" / "xsp.db";
  if (const char* h = std::getenv("HOME")) return fs::path(h) / ".local" / "share" / "xsp" / "xsp.db";
  return "xsp.db";
}

fs::path default_zoo() {
  if (const char* z = std::getenv("XSP_ZOO")) return z;
  return fs::path(XSP_SOURCE_DIR) / "models";
}

std::vector<int> parse_batch_sizes(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      std::size_t used = 0;
      const int b = std::stoi(item, &used);
      if (used != item.size() || b < 1) throw std::invalid_argument(item);
      out.push_back(b);
    } catch (const std::exception&) {
      throw CLI::ValidationError("--batch-sizes", "expected positive integers separated by commas, got '" + item + "'");
    }
  }
  if (out.empty()) throw CLI::ValidationError("--batch-sizes", "expected at least one batch size");
  return out;
}

std::vector<std::string> split_ids(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}


void print_tables(const std::vector<Table>& tables, TableFormat format) {
  if (format == TableFormat::kJson) {
    auto all = nlohmann::json::array();
    for (const auto& t : tables) all.push_back(to_json(t));
    std::cout << all.dump(2) << "\n";
    return;
  }
  for (const auto& t : tables) std::cout << render(t, format) << (format == TableFormat::kText ? "\n" : "");
}

// Write-then-rename so that an interrupted export never leaves a half-written file under the final name.
void write_file_atomically(const fs::path& file, const std::string& content) {
  const fs::path tmp = file.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << content;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp);
    throw std::runtime_error("cannot write " + file.string() + ": " + ec.message());
  }
}

// The analyses never read the store: the CLI looks up the measured ceilings of the evaluation's machine and hands
// them in (SPEC §4: rooflines from measured ceilings).
AnalysisOptions analysis_options_for(const EvaluationRecord& record, Store& store) {
  AnalysisOptions options;
  const std::vector<MachineCeilings> stored = store.list_ceilings();
  std::string note;
  if (const MachineCeilings* c = select_ceilings(stored, evaluation_machine(record), &note)) options.ceilings = *c;
  options.ceilings_note = note;
  return options;
}

std::string join_ids(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ",") + id;
  return out;
}

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO)) {}
  void update(const Progress& p) {
    if (!enabled_ || p.total == 0) return;
    const int width = 30;
    const int filled = p.done * width / p.total;
    std::fprintf(stderr, "\r[%s%s] %3d%% %-50.50s", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), '.').c_str(), p.done * 100 / p.total,
                 p.what.c_str());
    if (p.done == p.total) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_;
};

void print_summary(const EvaluationRecord& record) {
  std::cout << "evaluation " << record.id << ": " << record.model_name << " " << record.model_version << " on "
            << record.framework_name << " " << record.framework_version << " (" << record.device << "), trace level "
            << to_string(record.trace_level) << (record.leveled ? " (leveled)" : "") << "\n";
  Table t;
  t.id = "summary";
  t.title = "Latency per batch size and trace level (predict stage; each level's latency from its own run)";
  t.columns = {{"batch_size", "batch"}, {"trace_level", "level"}, {"trimmed_mean_ms", "trimmed mean ms"},
               {"p50_ms", "p50 ms"},    {"p90_ms", "p90 ms"},      {"p99_ms", "p99 ms"},
               {"throughput_samples_per_s", "samples/s"}, {"overhead_ms", "overhead ms"},
               {"overhead_percent", "overhead %"}, {"spans", "spans"}, {"unparented", "unparented"}};
  const auto overheads = level_overheads(record);
  for (const auto& run : record.runs) {
    const auto& p = run.stage_latency_ns.at(kStagePredict);
    Cell overhead_ms, overhead_pct;
    for (const auto& o : overheads)
      if (o.batch_size == run.batch_size && o.level == run.trace_level && o.level != TraceLevel::kModel) {
        overhead_ms = o.overhead_ns / 1e6;
        overhead_pct = o.overhead_percent;
      }
    t.rows.push_back({Cell(std::int64_t{run.batch_size}), Cell(std::string(to_string(run.trace_level))),
                      Cell(p.trimmed_mean / 1e6), Cell(p.p50 / 1e6), Cell(p.p90 / 1e6), Cell(p.p99 / 1e6),
                      Cell(run.throughput_samples_per_s), overhead_ms, overhead_pct,
                      Cell(static_cast<std::int64_t>(run.trace.spans.size())),
                      Cell(static_cast<std::int64_t>(run.trace.assembly.unparented))});
  }
  t.notes.push_back("overhead = this run's model latency minus the next shallower run's (SPEC §3)");
  std::cout << render_text(t) << "\n";
  for (const auto& run : record.runs)
    for (const auto& [name, value] : run.trace.counters)
      if (value > 0)
        std::cout << "  note: batch " << run.batch_size << " " << to_string(run.trace_level) << ": " << name << " = "
                  << value << "\n";
}

int run_cli(int argc, char** argv) {
  CLI::App app{"XSP: across-stack profiling and benchmarking of ML models"};
  app.require_subcommand(1);
  std::string store_path = default_store().string();
  std::string zoo_path = default_zoo().string();
  bool verbose = false;
  app.add_option("--store", store_path, "results store (SQLite file); env XSP_STORE")->capture_default_str();
  app.add_option("--zoo", zoo_path, "model-zoo folder of manifests; env XSP_ZOO")->capture_default_str();
  app.add_flag("-v,--verbose", verbose, "log more");

  // xsp models
  auto* models = app.add_subcommand("models", "list the model zoo");

  // xsp evaluate
  auto* evaluate = app.add_subcommand("evaluate", "run, store and summarize an evaluation");
  std::string model_name, framework, device = "cpu", batch_sizes_text = "1", trace_level_text = "model";
  std::string inputs_dir = (fs::path(XSP_SOURCE_DIR) / "data" / "images").string();
  std::string eval_analyses;
  bool leveled = false, synthetic = false, no_progress = false, store_predictions = false;
  int iterations = 10, warmup = 3;
  std::uint64_t seed = 0;
  evaluate->add_option("model", model_name, "model name from the zoo (see `xsp models`)")->required();
  evaluate->add_option("--framework", framework,
                       "predictor to use: libtorch, opencv-dnn, onnxruntime (those built in: see `xsp models`); "
                       "default: the manifest's first framework");
  evaluate->add_option("--device", device, "cpu|cuda")->capture_default_str();
  auto* batch_sizes_option = evaluate->add_option("--batch-sizes", batch_sizes_text,
                                                  "comma-separated batch sizes; with --scenario offline: a sweep, "
                                                  "one offline run per max batch, and the optimal batch (A1)")
                                 ->capture_default_str();
  evaluate->add_option("--trace-level", trace_level_text, "model|framework|library|system|kernel|hardware")
      ->capture_default_str();
  int counter_iterations = 1;
  evaluate
      ->add_option("--counter-iterations", counter_iterations,
                   "measured batches of the hardware-counter run (at least one per metric pass: the counter "
                   "profiler rotates passes over identical batches)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  evaluate->add_flag("--leveled", leveled, "leveled experimentation: run M, M/F, ... and take each level's "
                                           "latencies from its own run");
  evaluate->add_option("--iterations", iterations, "measured batches per run")->capture_default_str()->check(CLI::PositiveNumber);
  evaluate->add_option("--warmup", warmup, "warm-up batches per run (not measured)")->capture_default_str()->check(CLI::NonNegativeNumber);
  evaluate->add_option("--inputs", inputs_dir, "folder of images")->capture_default_str();
  evaluate->add_flag("--synthetic", synthetic, "feed seeded random tensors instead of images");
  evaluate->add_option("--seed", seed, "seed of synthetic inputs")->capture_default_str();
  evaluate->add_option("--analysis", eval_analyses, "analyses to print after the run, e.g. A1,A2,A6");
  evaluate->add_flag("--no-progress", no_progress, "no progress bar");
  evaluate->add_flag("--store-predictions", store_predictions,
                     "keep every measured input's class probabilities with the runs (for `xsp compare`)");
  cli::ScenarioCommand scenario_command;  // --scenario and its options (src/cli/scenario_cli.cc)
  scenario_command.add_options(evaluate);
  std::string dataset;
  bool accuracy = false;
  evaluate->add_option("--dataset", dataset, "labeled dataset named by the manifest (e.g. digits); implies --synthetic for the timed runs");
  evaluate->add_flag("--accuracy", accuracy, "measure top-1/top-5 accuracy on --dataset's held-out samples")->needs("--dataset");

  // xsp compare
  auto* compare = app.add_subcommand("compare", "compare stored evaluations side by side (A1, A6, outputs)");
  std::vector<std::int64_t> compare_ids;
  std::string compare_format = "table";
  std::optional<int> compare_batch;
  compare->add_option("ids", compare_ids, "two or more evaluation ids")->required()->expected(2, 1 << 20);
  compare->add_option("--format", compare_format, "table|csv|json")->capture_default_str();
  compare->add_option("--batch-size", compare_batch, "only this batch size in the layer tables");

  // xsp list / show
  auto* list = app.add_subcommand("list", "list stored evaluations");
  auto* show = app.add_subcommand("show", "show a stored evaluation");
  std::int64_t show_id = 0;
  show->add_option("id", show_id, "evaluation id")->required();

  // xsp analyze
  auto* analyze = app.add_subcommand("analyze", "print analyses of a stored evaluation");
  std::int64_t analyze_id = 0;
  std::string analyses_text = "A1,A2,A3,A4,A5,A6,A7", format_text = "table";
  std::optional<int> analyze_batch;
  std::optional<double> latency_bound_ms;
  analyze->add_option("id", analyze_id, "evaluation id")->required();
  analyze->add_option("--analysis", analyses_text, "comma-separated analysis ids: " + join_ids(analysis_ids()))
      ->capture_default_str();
  analyze->add_option("--format", format_text, "table|csv|json")->capture_default_str();
  analyze->add_option("--batch-size", analyze_batch, "only this batch size (layer analyses)");
  analyze->add_option("--latency-bound-ms", latency_bound_ms, "A1: optimal batch under this p99 bound");
  std::string chart_out;
  analyze->add_option("--chart", chart_out,
                      "A9 or A14: also write the roofline scatter as a Vega-Lite v5 spec to this file (.vl.json)");

  // xsp machine ceilings
  auto* machine = app.add_subcommand("machine", "facts about this machine");
  machine->require_subcommand(1);
  auto* machine_ceilings = machine->add_subcommand(
      "ceilings", "measure this GPU's ceilings (peak FLOP/s per precision, DRAM/L2/L1 bandwidth) and store them");
  CeilingOptions ceiling_options;
  bool ceilings_show = false, ceilings_no_store = false;
  std::string ceilings_import, ceilings_export;
  machine_ceilings->add_option("--device", ceiling_options.device, "CUDA device ordinal")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  machine_ceilings->add_option("--repetitions", ceiling_options.repetitions, "timed repetitions per ceiling (best kept)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  machine_ceilings->add_flag("--show", ceilings_show, "print the stored ceilings instead of measuring");
  machine_ceilings->add_option("--import", ceilings_import,
                               "store ceilings from a JSON file (an object or an array, as --export writes)")
      ->check(CLI::ExistingFile);
  machine_ceilings->add_option("--export", ceilings_export, "also write the ceilings printed to this JSON file");
  machine_ceilings->add_flag("--no-store", ceilings_no_store, "measure and print without storing");
  machine_ceilings->get_option("--show")->excludes("--import")->excludes("--repetitions")->excludes("--device")
      ->excludes("--no-store");

  // xsp trace export
  auto* trace = app.add_subcommand("trace", "trace commands");
  trace->require_subcommand(1);
  auto* trace_export = trace->add_subcommand("export", "export a run's trace");
  std::int64_t export_id = 0;
  std::string export_format = "chrome", export_out, export_level;
  std::optional<int> export_batch;
  std::optional<int> export_run;
  trace_export->add_option("id", export_id, "evaluation id")->required();
  trace_export->add_option("--run", export_run,
                           "the N-th run of the evaluation (1-based, as `xsp show` numbers scenario runs); "
                           "overrides --batch-size/--trace-level");
  trace_export->add_option("--format", export_format, "chrome|otlp")->capture_default_str();
  trace_export->add_option("-o,--output", export_out, "output file")->required();
  trace_export->add_option("--batch-size", export_batch, "run's batch size (default: the first)");
  trace_export->add_option("--trace-level", export_level, "run's trace level (default: the deepest)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
#ifdef XSP_WITH_LIBTORCH
  register_libtorch_predictor();
#endif
#ifdef XSP_WITH_OPENCV_DNN
  register_opencv_dnn_predictor();
#endif
#ifdef XSP_WITH_ONNXRUNTIME
  register_onnxruntime_predictor();
#endif

  auto open_store = [&] { return Store::open(store_path); };
  auto load_or_fail = [&](Store& store, std::int64_t id) {
    auto record = store.load(id);
    if (!record) throw std::runtime_error("no evaluation " + std::to_string(id) + " in store " + store_path);
    return std::move(*record);
  };

  if (*models) {
    const auto zoo = load_zoo(zoo_path);
    Table t;
    t.id = "models";
    t.title = "Model zoo (" + zoo_path + ")";
    t.columns = {{"name", ""},      {"version", ""}, {"framework", ""}, {"graph", ""},
                 {"exported", ""},  {"built_in", "in this build"}, {"input_shape", ""}, {"source", ""}};
    const auto built = registered_predictors();
    for (const auto& m : zoo) {
      std::string shape;
      for (long d : m.inputs.front().dimensions) shape += (shape.empty() ? "" : "x") + std::to_string(d);
      auto attr = [&](const std::string& k) { return m.attributes.count(k) ? m.attributes.at(k) : std::string(); };
      // One row per framework graph: what `xsp evaluate NAME --framework F` would load.
      for (const auto& g : m.graphs) {
        const bool first = &g == &m.graphs.front();
        const bool in_build = std::find(built.begin(), built.end(), g.framework) != built.end();
        t.rows.push_back({Cell(first ? m.name : std::string()), Cell(first ? m.version : std::string()),
                          Cell(g.framework + " " + g.constraint), Cell(g.graph_path),
                          Cell(std::string(fs::exists(m.resolved_graph_path(g.framework)) ? "yes" : "no")),
                          Cell(std::string(in_build ? "yes" : "no")), Cell(first ? shape : std::string()),
                          Cell(first ? attr("source") : std::string())});
      }
    }
    std::string names;
    for (const auto& n : built) names += (names.empty() ? "" : ", ") + n;
    t.notes.push_back("predictors in this build: " + (names.empty() ? std::string("none") : names));
    t.notes.push_back("export missing models with: /usr/bin/python3 scripts/export_zoo.py --models NAME");
    std::cout << render_text(t);
    return 0;
  }

  if (*evaluate) {
    const auto batch_sizes = parse_batch_sizes(batch_sizes_text);
    const auto level = parse_trace_level(trace_level_text);
    if (!level)
      throw CLI::ValidationError("--trace-level",
                                 "expected model|framework|library|system|kernel|hardware, got '" +
                                     trace_level_text + "'");
    if (device != "cpu" && device != "cuda")
      throw CLI::ValidationError("--device", "expected cpu or cuda, got '" + device + "'");
    if (*level > TraceLevel::kFramework && device != "cuda")
      throw CLI::ValidationError("--trace-level", "level '" + trace_level_text + "' traces GPU work: add --device cuda");
    // Open the store first: an unwritable store must fail before minutes of measurement, not after.
    auto store = open_store();
    const auto zoo = load_zoo(zoo_path);
    const Manifest& manifest = find_model(zoo, model_name);
    if (framework.empty()) framework = manifest.default_framework();
    // The manifest must have a graph for the framework (the error names the manifest and its frameworks).
    const GraphSpec& graph = manifest.graph_for(framework);
    auto predictor = create_predictor(framework);
    if (!satisfies(predictor->framework_version(), graph.constraint))
      throw std::runtime_error("model " + manifest.name + " needs " + framework + " " + graph.constraint +
                               ", this build has " + predictor->framework_version());
    verify_checksum(manifest, framework);
    predictor->load(manifest, DeviceSpec{device, 0});
    if (scenario_command.active())
      return scenario_command.run(manifest, *predictor, *store, store_path, seed, synthetic, inputs_dir, device,
                                  trace_level_text,
                                  batch_sizes_option->count() > 0 ? batch_sizes : std::vector<int>{});

    EvaluationOptions options;
    options.batch_sizes = batch_sizes;
    options.trace_level = *level;
    options.leveled = leveled;
    options.iterations = iterations;
    options.warmup_iterations = warmup;
    options.inputs_dir = inputs_dir;
    options.synthetic = synthetic;
    options.seed = seed;
    options.device = DeviceSpec{device, 0};
    std::unique_ptr<DeviceProfiler> device_profiler, counter_profiler;
    if (*level > TraceLevel::kFramework) {
      device_profiler = create_device_profiler();
      options.device_profiler = device_profiler.get();
    }
    if (*level == TraceLevel::kHardware) {
      counter_profiler = create_counter_profiler();
      options.counter_profiler = counter_profiler.get();
      options.counter_iterations = counter_iterations;
    }
    options.store_predictions = store_predictions;
    if (!dataset.empty()) options.synthetic = true;  // timed runs stay synthetic; the dataset feeds the accuracy pass
    ProgressBar bar(!no_progress);
    auto record = run_evaluation(manifest, *predictor, options, [&](const Progress& p) { bar.update(p); });
    if (record.settings.contains("counters_unavailable"))
      std::cerr << "warning: hardware counters not collected: "
                << record.settings["counters_unavailable"].get<std::string>() << "\n";
    if (accuracy) record.settings["accuracy"] = run_accuracy(manifest, *predictor, dataset, batch_sizes);
    predictor->close();
    record.created_at = utc_now_iso8601();
    record.system = describe_system();
    record.system["framework"] = {{"name", record.framework_name}, {"version", record.framework_version}};
    store->save(record);
    print_summary(record);
    if (accuracy) std::cout << describe_accuracy(record.settings) << "\n";
    if (!eval_analyses.empty())
      print_tables(run_analyses(record, split_ids(eval_analyses), analysis_options_for(record, *store)),
                   TableFormat::kText);
    std::cout << "stored as evaluation " << record.id << " in " << store_path << "\n";
    return 0;
  }

  if (*list) {
    auto store = open_store();
    Table t;
    t.id = "evaluations";
    t.title = "Evaluations in " + store_path;
    t.columns = {{"id"}, {"created_at"}, {"status"}, {"model"}, {"framework"}, {"device"},
                 {"trace_level"}, {"batch_sizes"}, {"runs"}};
    for (const auto& e : store->list()) {
      std::string batches;
      for (int b : e.batch_sizes) batches += (batches.empty() ? "" : ",") + std::to_string(b);
      t.rows.push_back({Cell(e.id), Cell(e.created_at), Cell(e.status), Cell(e.model_name + " " + e.model_version),
                        Cell(e.framework_name), Cell(e.device), Cell(e.trace_level), Cell(batches),
                        Cell(static_cast<std::int64_t>(e.run_count))});
    }
    std::cout << render_text(t);
    return 0;
  }

  if (*show) {
    auto store = open_store();
    const auto record = load_or_fail(*store, show_id);
    if (is_scenario_record(record)) std::cout << format_scenario_record(record);
    else print_summary(record);
    std::cout << "created: " << record.created_at << "  status: " << record.status << "\n";
    if (const auto a = describe_accuracy(record.settings); !a.empty()) std::cout << a << "\n";
    std::cout << "settings: " << record.settings.dump() << "\n";
    std::cout << format_system(record.system);
    std::cout << "runs:\n";
    for (const auto& run : record.runs)
      std::cout << "  run " << run.id << ": batch " << run.batch_size << ", " << to_string(run.trace_level) << ", "
                << run.iterations << " batches, " << run.trace.spans.size() << " spans ("
                << run.trace.assembly.by_context << " by context, " << run.trace.assembly.by_containment
                << " by containment, " << run.trace.assembly.unparented << " unparented)\n";
    return 0;
  }

  if (*analyze) {
    const auto format = parse_table_format(format_text);
    auto store = open_store();
    const auto record = load_or_fail(*store, analyze_id);
    AnalysisOptions options = analysis_options_for(record, *store);
    options.batch_size = analyze_batch;
    options.latency_bound_ms = latency_bound_ms;
    const auto tables = run_analyses(record, split_ids(analyses_text), options);
    if (!chart_out.empty()) {
      std::vector<Table> roofline;
      for (const auto& t : tables)
        if (t.id == "A9" || t.id == "A14") roofline.push_back(t);
      if (roofline.empty())
        throw CLI::ValidationError("--chart", "draws the roofline of A9 or A14: add one of them to --analysis");
      if (std::any_of(roofline.begin(), roofline.end(), [&](const Table& t) { return t.id != roofline[0].id; }))
        throw CLI::ValidationError("--chart", "draws one roofline: ask for A9 or A14, not both");
      write_file_atomically(chart_out, roofline_chart(roofline, options.ceilings ? &*options.ceilings : nullptr).dump(2));
      std::cerr << "wrote " << roofline[0].id << " roofline chart (Vega-Lite v5) to " << chart_out << "\n";
    }
    print_tables(tables, format);
    return 0;
  }

  if (*machine_ceilings) {
    std::vector<MachineCeilings> shown;
    if (ceilings_show) {
      auto store = open_store();
      shown = store->list_ceilings();
      if (shown.empty()) std::cout << "no ceilings stored in " << store_path << ": run `xsp machine ceilings`\n";
    } else if (!ceilings_import.empty()) {
      std::ifstream in(ceilings_import);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(in);
      } catch (const std::exception& e) {
        throw std::runtime_error(ceilings_import + ": not JSON: " + e.what());
      }
      try {
        if (j.is_array())
          for (const auto& e : j) shown.push_back(machine_ceilings_from_json(e));
        else
          shown.push_back(machine_ceilings_from_json(j));
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(ceilings_import + ": " + e.what());
      }
      auto store = open_store();
      for (const auto& m : shown) store->save_ceilings(m);
      std::cout << "imported " << shown.size() << " measurement(s) from " << ceilings_import << " into " << store_path
                << "\n";
    } else {
      // Open the store first: an unwritable store must fail before the measurement, not after.
      std::unique_ptr<Store> store = ceilings_no_store ? nullptr : open_store();
      MachineCeilings m = measure_machine_ceilings(ceiling_options);
      if (m.hostname.empty() || m.measured_at.empty()) {
        const auto sys = describe_system();
        if (m.hostname.empty() && sys.contains("host")) m.hostname = sys["host"].value("hostname", "");
        if (m.measured_at.empty()) m.measured_at = utc_now_iso8601();
      }
      if (store) {
        store->save_ceilings(m);
        std::cout << "stored in " << store_path << "\n";
      }
      shown.push_back(std::move(m));
    }
    for (const auto& m : shown) std::cout << render_text(machine_ceilings_table(m)) << "\n";
    if (!ceilings_export.empty()) {
      auto all = nlohmann::json::array();
      for (const auto& m : shown) all.push_back(to_json(m));
      write_file_atomically(ceilings_export, all.dump(2));
      std::cout << "wrote " << shown.size() << " measurement(s) to " << ceilings_export << "\n";
    }
    return 0;
  }

  if (*compare) {
    const auto format = parse_table_format(compare_format);
    auto store = open_store();
    std::vector<EvaluationRecord> records;
    for (std::int64_t id : compare_ids) records.push_back(load_or_fail(*store, id));
    CompareOptions options;
    options.batch_size = compare_batch;
    print_tables(compare_evaluations(records, options), format);
    return 0;
  }

  if (*trace_export) {
    if (export_format != "chrome" && export_format != "otlp")
      throw CLI::ValidationError("--format", "expected chrome or otlp, got '" + export_format + "'");
    auto store = open_store();
    const auto record = load_or_fail(*store, export_id);
    const RunRecord* chosen = nullptr;
    const int batch = export_batch.value_or(record.batch_sizes.front());
    if (export_run) {
      if (*export_run < 1 || static_cast<std::size_t>(*export_run) > record.runs.size())
        throw CLI::ValidationError("--run", "expected a run number from 1 to " + std::to_string(record.runs.size()) +
                                                " (evaluation " + std::to_string(export_id) + "), got '" +
                                                std::to_string(*export_run) + "'");
      chosen = &record.runs[static_cast<std::size_t>(*export_run - 1)];
    }
    for (const auto& run : record.runs) {
      if (export_run) break;
      if (run.batch_size != batch) continue;
      if (!export_level.empty() && to_string(run.trace_level) != export_level) continue;
      if (!chosen || run.trace_level > chosen->trace_level) chosen = &run;
    }
    if (!chosen)
      throw std::runtime_error("evaluation " + std::to_string(export_id) + " has no run with batch size " +
                               std::to_string(batch) + (export_level.empty() ? "" : " and trace level " + export_level));
    TraceResource resource;
    resource.attributes = {{"xsp.evaluation_id", std::to_string(record.id)},
                           {"xsp.run_id", std::to_string(chosen->id)},
                           {"model", record.model_name + " " + record.model_version},
                           {"framework", record.framework_name + " " + record.framework_version},
                           {"device", record.device},
                           {"batch_size", std::to_string(chosen->batch_size)},
                           {"trace_level", std::string(to_string(chosen->trace_level))}};
    resource.track_name = stream_track_name;
    nlohmann::json out;
    if (export_format == "chrome") {
      out = to_chrome_trace(chosen->trace, resource);
    } else {
      char trace_id[33];
      std::snprintf(trace_id, sizeof trace_id, "%016llx%016llx", static_cast<unsigned long long>(record.id),
                    static_cast<unsigned long long>(chosen->id));
      out = to_otlp_json(chosen->trace, resource, trace_id);
    }
    write_file_atomically(export_out, out.dump());
    std::cout << "wrote " << export_format << " trace of run " << chosen->id << " (" << chosen->trace.spans.size()
              << " spans) to " << export_out << "\n";
    return 0;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_cli(argc, argv);
  } catch (const CLI::Error& e) {
    std::cerr << "xsp: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "xsp: error: " << e.what() << "\n";
    return 1;
  }
}
