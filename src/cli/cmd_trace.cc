// xsp trace export ID: one run's trace as Chrome Trace Event JSON (Perfetto, DevTools, HTA), OTLP/JSON (Jaeger,
// Tempo) or a relational SQLite file (docs/exports.md).
#include <iostream>

#include "common.h"
#include "xsp/service/service.h"
#include "xsp/store/trace_export.h"

namespace xsp::cli {

void add_trace_command(CLI::App& app, Globals& g, Commands& out) {
  auto* trace = app.add_subcommand("trace", "trace commands");
  trace->require_subcommand(1);
  auto* sub = trace->add_subcommand("export", "export a run's trace (docs/exports.md)");
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
  sub->add_option("--format", a->format,
                  "chrome (Perfetto, DevTools, HTA), otlp (Jaeger, Tempo) or sqlite (tables of spans, ops, "
                  "launches, kernels)")
      ->capture_default_str();
  sub->add_option("-o,--output", a->output, "output file")->required();
  sub->add_option("--batch-size", a->batch, "run's batch size (default: the first)");
  sub->add_option("--trace-level", a->level, "run's trace level (default: the deepest)");
  out.push_back({sub, [&g, a] {
                   const auto format = parse_trace_format(a->format);
                   if (!format)
                     throw CLI::ValidationError("--format", "expected chrome, otlp or sqlite, got '" + a->format + "'");
                   service::TraceRequest request{a->id, *format, RunChoice{a->run, a->batch, std::nullopt}};
                   if (!a->level.empty()) {
                     request.run.trace_level = parse_trace_level(a->level);
                     if (!request.run.trace_level)
                       throw CLI::ValidationError("--trace-level",
                                                  "expected model, framework, library, system, "
                                                  "kernel or hardware, got '" +
                                                      a->level + "'");
                   }
                   auto store = open_store(g, StoreAccess::kRead);
                   // No such run: service::RunNotFound, a usage error (exit 2, run_cli).
                   const service::RunTrace trace = service::export_trace_to_file(*store, request, a->output);
                   std::cout << "wrote " << a->format << " trace of run " << trace.run_id << " (" << trace.span_count
                             << " spans) to " << a->output << "\n";
                   return 0;
                 }});

  auto* conv =
      trace->add_subcommand("convert", "export a trace file (.xspt, as xsp_cupti_selftest writes) without a store");
  struct ConvertArgs {
    std::string input, format = "chrome", output;
  };
  auto c = std::make_shared<ConvertArgs>();
  conv->add_option("file", c->input, "xsp-trace file (.xspt)")->required()->check(CLI::ExistingFile);
  conv->add_option("--format", c->format, "chrome, otlp or sqlite")->capture_default_str();
  conv->add_option("-o,--output", c->output, "output file")->required();
  out.push_back({conv, [c] {
                   const auto format = parse_trace_format(c->format);
                   if (!format)
                     throw CLI::ValidationError("--format", "expected chrome, otlp or sqlite, got '" + c->format + "'");
                   export_trace_file(c->input, *format, c->output);
                   std::cout << "wrote " << c->format << " trace of " << c->input << " to " << c->output << "\n";
                   return 0;
                 }});
}

}  // namespace xsp::cli
