// xsp show ID: the evaluation's summary (latencies with intervals and verdicts, overheads), how each run was
// measured, the machine state and warnings, settings and system description.
#include <iostream>

#include "common.h"
#include "xsp/analysis/summary.h"
#include "xsp/system/gpu_info.h"
#include "xsp/system/machine_state.h"

namespace xsp::cli {

void add_show_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("show", "show a stored evaluation");
  struct Args {
    std::int64_t id = 0;
    std::string format = "table";
  };
  auto a = std::make_shared<Args>();
  sub->add_option("id", a->id, "evaluation id")->required();
  sub->add_option("--format", a->format, "table|csv|json (the summary tables)")->capture_default_str();
  out.push_back({sub, [&g, a] {
                   const auto format = parse_table_format(a->format);
                   auto store = open_store(g);
                   const auto record = load_or_fail(*store, a->id, g);
                   print_summary(record, format);
                   if (format != TableFormat::kText) return 0;
                   std::cout << "created: " << record.created_at << "  status: " << record.status << "\n";
                   std::cout << "measurement:\n";
                   for (const auto& line : describe_measurements(record)) std::cout << "  " << line << "\n";
                   std::cout << "machine state per run (start → end):\n";
                   for (const auto& run : record.runs) {
                     if (!run.machine_state.is_object() || !run.machine_state.contains("start")) continue;
                     try {
                       const MachineState start = machine_state_from_json(run.machine_state["start"]);
                       const MachineState end = machine_state_from_json(run.machine_state.value("end", nlohmann::json::object()));
                       auto indent = [](std::string text) {
                         std::string out;
                         for (std::size_t p = 0; p < text.size();) {
                           const auto nl = text.find('\n', p);
                           out += "    " + text.substr(p, nl == std::string::npos ? std::string::npos : nl - p) + "\n";
                           p = nl == std::string::npos ? text.size() : nl + 1;
                         }
                         return out;
                       };
                       std::cout << "  run " << run.id << " start:\n" << indent(format_machine_state(start));
                       std::cout << "  run " << run.id << " end:\n" << indent(format_machine_state(end));
                       for (const auto& w : run.warnings) std::cout << "  run " << run.id << " WARNING: " << w << "\n";
                     } catch (const std::invalid_argument& e) {
                       std::cout << "  run " << run.id << ": unreadable machine state: " << e.what() << "\n";
                     }
                   }
                   std::cout << "settings: " << record.settings.dump() << "\n";
                   std::cout << format_system(record.system);
                   std::cout << "runs:\n";
                   for (const auto& run : record.runs)
                     std::cout << "  run " << run.id << ": batch " << run.batch_size << ", " << to_string(run.trace_level)
                               << ", " << run.iterations << " batches, " << run.trace.spans.size() << " spans ("
                               << run.trace.assembly.by_context << " by context, " << run.trace.assembly.by_containment
                               << " by containment, " << run.trace.assembly.unparented << " unparented)\n";
                   return 0;
                 }});
}

}  // namespace xsp::cli
