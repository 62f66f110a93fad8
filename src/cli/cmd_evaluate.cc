// xsp evaluate MODEL: maps flags onto an EvaluationRequest and calls xsp::evaluate(); prints the summary.
// Ranges and combinations are checked by the library (validate()); its RequestError names a request field,
// which is mapped back onto the flag here.
#include <cstring>
#include <iostream>
#include <map>

#include "common.h"
#include "request_flags.h"
#include "signals.h"
#include "xsp/eval/evaluate.h"
#include "xsp/profilers/profiler_options.h"

namespace xsp::cli {
namespace {

struct Args : RequestFlags {
  std::string analyses;
  bool no_progress = false;
  int store_wait_s = 120;
};

int run_evaluate(Globals& g, Args& a) {
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
  if (record.settings.contains("counters_unavailable"))
    std::cerr << "warning: hardware counters not collected: "
              << record.settings["counters_unavailable"].get<std::string>() << "\n";
  print_summary(record, TableFormat::kText);
  if (!a.analyses.empty() && record.kind() == RecordKind::kBatchSweep)
    print_tables(run_analyses(record, split_ids(a.analyses), analysis_options_for(record, *store)), TableFormat::kText);
  std::cout << "stored as evaluation " << record.id << " in " << redact_location(g.store_path) << "\n";
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
  auto a = std::make_shared<Args>();
  add_request_flags(sub, *a);
  sub->add_option("--analysis", a->analyses, "analyses to print after the run, e.g. A1,A2,A6")
      ->check(non_empty_list("analysis ids, e.g. A1,A2,A6"));
  sub->add_flag("--no-progress", a->no_progress, "no progress bar");
  sub->add_option("--store-wait-s", a->store_wait_s,
                  "when another process is writing to the store, wait this many seconds for it (a warning every 5 s) "
                  "before writing the evaluation to a recovery file for `xsp import`")
      ->check(integer_in_range(0, 86400))
      ->capture_default_str();
  out.push_back({sub, [&g, a] { return run_evaluate(g, *a); }});
}

}  // namespace xsp::cli
