// xsp trace export ID: one run's trace as Chrome Trace Event JSON (Perfetto) or OTLP/JSON (Jaeger, Tempo).
#include <cstdio>
#include <iostream>

#include "common.h"
#include "xsp/profilers/gpu_activity.h"
#include "xsp/trace/export.h"

namespace xsp::cli {

void add_trace_command(CLI::App& app, Globals& g, Commands& out) {
  auto* trace = app.add_subcommand("trace", "trace commands");
  trace->require_subcommand(1);
  auto* sub = trace->add_subcommand("export", "export a run's trace");
  struct Args {
    std::int64_t id = 0;
    std::string format = "chrome", output, level;
    std::optional<int> batch, run;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("id", a->id, "evaluation id")->required();
  sub->add_option("--run", a->run,
                  "the N-th run of the evaluation (1-based, as `xsp show` numbers scenario runs); "
                  "overrides --batch-size/--trace-level");
  sub->add_option("--format", a->format, "chrome|otlp")->capture_default_str();
  sub->add_option("-o,--output", a->output, "output file")->required();
  sub->add_option("--batch-size", a->batch, "run's batch size (default: the first)");
  sub->add_option("--trace-level", a->level, "run's trace level (default: the deepest)");
  out.push_back({sub, [&g, a] {
                   if (a->format != "chrome" && a->format != "otlp")
                     throw CLI::ValidationError("--format", "expected chrome or otlp, got '" + a->format + "'");
                   auto store = open_store(g);
                   const auto record = load_or_fail(*store, a->id, g);
                   const RunRecord* chosen = nullptr;
                   const int batch = a->batch.value_or(record.batch_sizes.front());
                   if (a->run) {
                     if (*a->run < 1 || static_cast<std::size_t>(*a->run) > record.runs.size())
                       throw CLI::ValidationError("--run", "expected a run number from 1 to " +
                                                               std::to_string(record.runs.size()) + " (evaluation " +
                                                               std::to_string(a->id) + "), got '" +
                                                               std::to_string(*a->run) + "'");
                     chosen = &record.runs[static_cast<std::size_t>(*a->run - 1)];
                   }
                   for (const auto& run : record.runs) {
                     if (a->run) break;
                     if (run.batch_size != batch) continue;
                     if (!a->level.empty() && to_string(run.trace_level) != a->level) continue;
                     if (!chosen || run.trace_level > chosen->trace_level) chosen = &run;
                   }
                   if (!chosen)
                     throw std::runtime_error("evaluation " + std::to_string(a->id) + " has no run with batch size " +
                                              std::to_string(batch) +
                                              (a->level.empty() ? "" : " and trace level " + a->level));
                   TraceResource resource;
                   resource.attributes = {{"xsp.evaluation_id", std::to_string(record.id)},
                                          {"xsp.run_id", std::to_string(chosen->id)},
                                          {"model", record.model_name + " " + record.model_version},
                                          {"framework", record.framework_name + " " + record.framework_version},
                                          {"device", record.device},
                                          {"batch_size", std::to_string(chosen->batch_size)},
                                          {"trace_level", std::string(to_string(chosen->trace_level))}};
                   resource.track_name = stream_track_name;
                   nlohmann::json doc;
                   if (a->format == "chrome") {
                     doc = to_chrome_trace(chosen->trace, resource);
                   } else {
                     char trace_id[33];
                     std::snprintf(trace_id, sizeof trace_id, "%016llx%016llx",
                                   static_cast<unsigned long long>(record.id),
                                   static_cast<unsigned long long>(chosen->id));
                     doc = to_otlp_json(chosen->trace, resource, trace_id);
                   }
                   write_file_atomically(a->output, doc.dump());
                   std::cout << "wrote " << a->format << " trace of run " << chosen->id << " ("
                             << chosen->trace.spans.size() << " spans) to " << a->output << "\n";
                   return 0;
                 }});
}

}  // namespace xsp::cli
