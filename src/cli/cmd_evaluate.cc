// xsp evaluate MODEL: maps flags onto an EvaluationRequest and calls xsp::evaluate(); prints the summary.
// Ranges and combinations are checked by the library (validate()); its RequestError names a request field,
// which is mapped back onto the flag here.
#include <cstring>
#include <iostream>
#include <map>

#include "common.h"
#include "request_flags.h"
#include "signals.h"
#include "xsp/analysis/summary.h"
#include "xsp/eval/evaluate.h"
#include "xsp/profilers/profiler_options.h"

namespace xsp::cli {
namespace {

struct EvaluateArgs : RequestFlags {
  std::string analyses;
  std::string format = "text";
  bool no_progress = false;
  int store_wait_s = 120;
};

// The headline of each run from the summary's runs table: which run, its latency percentiles and throughput.
nlohmann::ordered_json headline_runs(const std::vector<Table>& summary) {
  static const char* const kKeys[] = {"batch_size",
                                      "trace_level",
                                      "run",
                                      "median_ms",
                                      "ci95_low_ms",
                                      "ci95_high_ms",
                                      "stability",
                                      "p50_ms",
                                      "p90_ms",
                                      "p99_ms",
                                      "throughput_samples_per_s"};
  auto runs = nlohmann::ordered_json::array();
  for (const Table& t : merge_batch_tables(summary)) {
    if (t.id != "summary.runs") continue;
    const nlohmann::ordered_json table = to_json(t);
    for (const auto& row : table["rows"]) {
      nlohmann::ordered_json r = nlohmann::ordered_json::object();
      for (const char* k : kKeys)
        if (row.contains(k)) r[k] = row[k];
      runs.push_back(std::move(r));
    }
  }
  return runs;
}

// `evaluate --format json`: the evaluation's identity and headline as one object on stdout, for scripts.
nlohmann::ordered_json evaluation_json(const EvaluationRecord& record, const std::string& store) {
  nlohmann::ordered_json j;
  j["id"] = record.id;
  j["uuid"] = record.uuid;
  j["status"] = record.status;
  j["store"] = store;
  j["model"] = {{"name", record.model_name}, {"version", record.model_version}};
  j["framework"] = {{"name", record.framework_name}, {"version", record.framework_version}};
  j["device"] = record.device;
  j["scenario"] = record.scenario;
  j["trace_level"] = to_string(record.trace_level);
  j["batch_sizes"] = record.batch_sizes;
  const std::vector<Table> summary = evaluation_summary(record);
  j["runs"] = headline_runs(summary);
  auto tables = nlohmann::ordered_json::array();
  for (const Table& t : merge_batch_tables(summary)) tables.push_back(to_json(t));
  j["summary"] = std::move(tables);
  return j;
}

int run_evaluate(Globals& g, EvaluateArgs& a) {
  const TableFormat format = parse_table_format(a.format);  // text or json: checked by the option
  to_request(a);
  // Opened (and checked: writable, not damaged) before the model is loaded, so a bad store costs no measuring.
  auto store = open_store(g, StoreAccess::kReadWrite, a.store_wait_s);
  EvaluationContext context;
  context.zoo = g.zoo_path;
  context.default_images_dir = default_images();
  context.store = store.get();
  context.clock = g.env.clock;
  context.record_machine_state = g.env.record_machine_state;
  ProgressBar bar(!a.no_progress);
  context.progress = [&bar](const Progress& p) { bar.update(p); };
  // Batch sweeps and scenarios stop cleanly on a first signal and keep their complete runs; a second one ends xsp.
  std::optional<InterruptGuard> interrupt;
  interrupt.emplace();
  context.interrupt = interrupt->flag();
  EvaluationRecord record;
  try {
    record = evaluate(a.request, context);
  } catch (const RequestError& e) {
    throw flag_error(e);
  }
  bar.finish();  // the bar's line ends before the summary
  if (record.settings.contains("counters_unavailable"))
    std::cerr << "warning: hardware counters not collected: "
              << record.settings["counters_unavailable"].get<std::string>() << "\n";
  const std::string where = redact_location(g.store_path);
  if (format == TableFormat::kJson) {
    nlohmann::ordered_json j = evaluation_json(record, where);
    if (!a.analyses.empty() && record.kind() == RecordKind::kBatchSweep) {
      auto tables = nlohmann::ordered_json::array();
      for (const Table& t :
           merge_batch_tables(run_analyses(record, split_ids(a.analyses), analysis_options_for(record, *store))))
        tables.push_back(to_json(t));
      j["analyses"] = std::move(tables);
    }
    std::cout << j.dump(2) << "\n";
  } else {
    print_summary(record, TableFormat::kText);
    if (!a.analyses.empty() && record.kind() == RecordKind::kBatchSweep)
      print_tables(run_analyses(record, split_ids(a.analyses), analysis_options_for(record, *store)),
                   TableFormat::kText);
    std::cout << "stored as evaluation " << record.id << " in " << where << "; see: xsp show " << record.id
              << ", xsp analyze " << record.id << ", xsp report " << record.id << " -o report.html\n";
  }
  if (record.status == "incomplete" && interrupt && interrupt->signal() != 0) {
    const int sig = interrupt->signal();
    std::cerr << "xsp: interrupted by signal " << sig << " (" << strsignal(sig) << "): evaluation " << record.id
              << " holds the " << record.runs.size() << " complete runs and is marked incomplete\n";
    return exit_code_for_signal(sig);
  }
  return 0;
}

}  // namespace

void add_evaluate_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("evaluate", "run, store and summarize an evaluation");
  auto a = std::make_shared<EvaluateArgs>();
  add_request_flags(sub, *a);
  sub->add_option("--analysis", a->analyses, "analyses to print after the run, e.g. A1,A2,A6")
      ->check(non_empty_list("analysis ids, e.g. A1,A2,A6"));
  sub->add_option("--format", a->format,
                  "text: the summary tables; json: one JSON object on stdout (id, uuid, model, framework, device, "
                  "scenario, batch sizes, each run's p50/p90/p99 latency and throughput), progress and logs on stderr")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v == "text" || v == "table" || v == "json" ? "" : "expected text or json, got '" + v + "'";
          },
          "text|json"))
      ->capture_default_str();
  sub->add_flag("--no-progress", a->no_progress,
                "no progress output (a bar on a terminal, else a line per batch size started and finished)");
  sub->add_option("--store-wait-s", a->store_wait_s,
                  "when another process is writing to the store, wait this many seconds for it (a warning every 5 s) "
                  "before writing the evaluation to a recovery file for `xsp import`")
      ->check(integer_in_range(0, 86400))
      ->capture_default_str();
  out.push_back({sub, [&g, a] { return run_evaluate(g, *a); }});
}

}  // namespace xsp::cli
