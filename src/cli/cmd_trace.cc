// xsp trace export ID: one run's trace as Chrome Trace Event JSON (Perfetto, DevTools, HTA), the Perfetto protobuf
// (streamed from the store, optionally sharded), OTLP/JSON (Jaeger, Tempo) or a relational SQLite file
// (docs/exports.md).
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "common.h"
#include "xsp/service/service.h"
#include "xsp/store/trace_export.h"

namespace xsp::cli {

namespace {
// Where the "wrote ..." line goes: stderr when the output is a device or pipe (`-o /dev/stdout | gzip`), whose bytes
// the line would otherwise join.
std::ostream& status_stream(const std::string& output) {
  std::error_code ec;
  const auto st = std::filesystem::status(output, ec);
  return !ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st) ? std::cerr : std::cout;
}

// "--max-bytes" values: a positive integer, optionally with K, M or G (powers of 1024).
std::uint64_t parse_byte_size(const std::string& text) {
  auto bad = [&] {
    return CLI::ValidationError("--max-bytes",
                                "expected a positive number of bytes (suffixes K, M, G: x1024), got '" + text + "'");
  };
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p == text.data() || v == 0) throw bad();
  std::uint64_t unit = 1;
  const std::string_view suffix(p, static_cast<std::size_t>(end - p));
  if (suffix == "K" || suffix == "k") {
    unit = 1ULL << 10;
  } else if (suffix == "M" || suffix == "m") {
    unit = 1ULL << 20;
  } else if (suffix == "G" || suffix == "g") {
    unit = 1ULL << 30;
  } else if (!suffix.empty()) {
    throw bad();
  }
  if (v > UINT64_MAX / unit) throw bad();
  return v * unit;
}

}  // namespace

void add_trace_command(CLI::App& app, Globals& g, Commands& out) {
  auto* trace = app.add_subcommand("trace", "trace commands");
  trace->require_subcommand(1);
  auto* sub = trace->add_subcommand("export", "export a run's trace (docs/exports.md)");
  struct Args {
    std::int64_t id = 0;
    std::string format = "chrome", output, level, batches, max_bytes;
    std::optional<int> batch, run;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("id", a->id, "evaluation id")->required();
  sub->add_option("--run", a->run,
                  "the N-th run of the evaluation (1-based, as `xsp show` numbers scenario runs); "
                  "overrides --batch-size/--trace-level");
  sub->add_option("--format", a->format,
                  "chrome (Perfetto, DevTools, HTA), perfetto (the .pftrace protobuf: Perfetto UI, trace_processor), "
                  "otlp (Jaeger, Tempo) or sqlite (tables of spans, ops, launches, kernels)")
      ->capture_default_str();
  sub->add_option("-o,--output", a->output, "output file")->required();
  sub->add_option("--batch-size", a->batch, "run's batch size (default: the first)");
  sub->add_option("--trace-level", a->level, "run's trace level (default: the deepest)");
  sub->add_option("--batches", a->batches,
                  "A:B: keep the spans overlapping measured batches A to B (from the start of batch A's MODEL spans "
                  "to the end of batch B's; the N of ProfilerStep#N); any format");
  sub->add_option("--max-bytes", a->max_bytes,
                  "perfetto only: split the export into self-contained files of about N bytes (suffixes K, M, G: "
                  "x1024), named OUTPUT-001.pftrace, OUTPUT-002.pftrace, ...");
  out.push_back({sub, [&g, a] {
                   const auto format = parse_trace_format(a->format);
                   if (!format)
                     throw CLI::ValidationError("--format",
                                                "expected chrome, perfetto, otlp or sqlite, got '" + a->format + "'");
                   service::TraceRequest request{a->id, *format, RunChoice{a->run, a->batch, std::nullopt}};
                   if (!a->level.empty()) {
                     request.run.trace_level = parse_trace_level(a->level);
                     if (!request.run.trace_level)
                       throw CLI::ValidationError("--trace-level",
                                                  "expected model, framework, library, system, "
                                                  "kernel or hardware, got '" +
                                                      a->level + "'");
                   }
                   if (!a->batches.empty()) {
                     try {
                       request.batches = parse_batch_range(a->batches);
                     } catch (const BatchRangeError& e) {
                       throw CLI::ValidationError(e.what());
                     }
                   }
                   if (!a->max_bytes.empty()) {
                     request.max_bytes = parse_byte_size(a->max_bytes);
                     if (*format != TraceFormat::kPerfetto)
                       throw CLI::ValidationError("--max-bytes", "shards --format perfetto only, not " + a->format);
                   }
                   auto store = open_store(g, StoreAccess::kRead);
                   // No such run: service::RunNotFound, a usage error (exit 2, run_cli); so is a --batches value
                   // naming a batch the trace does not have.
                   service::RunTrace trace;
                   try {
                     trace = service::export_trace_to_file(*store, request, a->output);
                   } catch (const BatchRangeError& e) {
                     throw CLI::ValidationError(e.what());
                   }
                   std::ostream& status = status_stream(a->output);
                   status << "wrote " << a->format << " trace of run " << trace.run_id << " (" << trace.span_count
                          << " spans) to ";
                   for (std::size_t i = 0; i < trace.files.size(); ++i)
                     status << (i == 0 ? "" : ", ") << trace.files[i].string();
                   status << "\n";
                   return 0;
                 }});

  auto* conv =
      trace->add_subcommand("convert", "export a trace file (.xspt, as xsp_cupti_selftest writes) without a store");
  struct ConvertArgs {
    std::string input, format = "chrome", output;
  };
  auto c = std::make_shared<ConvertArgs>();
  conv->add_option("file", c->input, "xsp-trace file (.xspt)")->required()->check(CLI::ExistingFile);
  conv->add_option("--format", c->format, "chrome, perfetto, otlp or sqlite")->capture_default_str();
  conv->add_option("-o,--output", c->output, "output file")->required();
  out.push_back(
      {conv, [c] {
         const auto format = parse_trace_format(c->format);
         if (!format)
           throw CLI::ValidationError("--format", "expected chrome, perfetto, otlp or sqlite, got '" + c->format + "'");
         export_trace_file(c->input, *format, c->output);
         status_stream(c->output) << "wrote " << c->format << " trace of " << c->input << " to " << c->output << "\n";
         return 0;
       }});
}

}  // namespace xsp::cli
