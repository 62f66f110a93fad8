// xsp show ID: the evaluation's summary (latencies with intervals and verdicts, overheads), how each run was
// measured, the machine state and warnings, settings and system description.
#include <algorithm>
#include <iostream>

#include "common.h"
#include "xsp/analysis/summary.h"
#include "xsp/service/service.h"
#include "xsp/system/gpu_info.h"
#include "xsp/system/machine_state.h"

namespace xsp::cli {
namespace {

constexpr std::size_t kShowWidth = 120;

// A scalar as JSON; an array of scalars as "[a, b, c]" (nlohmann's compact dump leaves out the spaces).
std::string inline_value(const nlohmann::json& v) {
  if (!v.is_array()) return v.dump();
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i].dump();
  return out + "]";
}

bool is_leaf(const nlohmann::json& v) {
  if (!v.is_structured() || v.empty()) return true;
  if (!v.is_array()) return false;
  return std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return !e.is_structured(); });
}

// "key: value" lines, nested objects indented by two spaces; an array of scalars inline, wrapped at kShowWidth;
// an array of objects as numbered items "[i]:". Values are JSON (strings quoted), so nothing reads ambiguously.
void readable_lines(const nlohmann::json& j, std::size_t indent, std::vector<std::string>& out) {
  const std::string pad(indent, ' ');
  auto item = [&](const std::string& key, const nlohmann::json& v) {
    if (!is_leaf(v)) {
      out.push_back(pad + key + ":");
      readable_lines(v, indent + 2, out);
      return;
    }
    std::string line = pad + key + ": ";
    if (!v.is_array() || v.empty() || line.size() + inline_value(v).size() <= kShowWidth) {
      out.push_back(line + inline_value(v));
      return;
    }
    // Wrap the elements; continuation lines under the first element.
    const std::string cont(line.size() + 1, ' ');
    line += "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string e = v[i].dump() + (i + 1 < v.size() ? "," : "]");
      if (line.size() + 1 + e.size() > kShowWidth && line.size() > cont.size()) {
        out.push_back(line);
        line = cont;
      } else if (i > 0) {
        line += " ";
      }
      line += e;
    }
    out.push_back(line);
  };
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) item(k, v);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) item("[" + std::to_string(i) + "]", j[i]);
  } else {
    out.push_back(pad + j.dump());
  }
}

// The settings as indented "key: value" lines (what `xsp show` prints under "settings:").
std::string format_settings(const nlohmann::json& settings) {
  std::vector<std::string> lines;
  readable_lines(settings, 2, lines);
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

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
                   auto store = open_store(g, StoreAccess::kRead);
                   const auto record = service::load_evaluation(*store, a->id);
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
                       const MachineState end =
                           machine_state_from_json(run.machine_state.value("end", nlohmann::json::object()));
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
                   std::cout << "settings:\n" << format_settings(record.settings);
                   std::cout << format_system(record.system);
                   std::cout << "runs:\n";
                   for (const auto& run : record.runs)
                     std::cout << "  run " << run.id << ": batch " << run.batch_size << ", "
                               << to_string(run.trace_level) << ", " << run.iterations << " batches, "
                               << run.trace.spans.size() << " spans (" << run.trace.assembly.roots << " roots, "
                               << run.trace.assembly.by_context << " by context, " << run.trace.assembly.by_correlation
                               << " by correlation, " << run.trace.assembly.by_containment << " by containment, "
                               << run.trace.assembly.unparented << " unparented)\n";
                   return 0;
                 }});
}

}  // namespace xsp::cli
