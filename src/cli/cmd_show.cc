// xsp show ID: the evaluation's summary (latencies with intervals and verdicts, overheads), how each run was
// measured, the machine state and warnings, settings and system description.
#include <algorithm>
#include <iostream>
#include <sstream>

#include "common.h"
#include "xsp/analysis/summary.h"
#include "xsp/manifest/manifest.h"
#include "xsp/serve/serving.h"
#include "xsp/service/service.h"
#include "xsp/system/gpu_info.h"
#include "xsp/system/machine_state.h"
#include "xsp/util/strings.h"

namespace xsp::cli {
namespace {

// The width arrays wrap at: the terminal's, or 120 columns when piped.
std::size_t show_width() {
  const std::size_t width = terminal_width();
  return width > 0 ? width : 120;
}

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

// "key: value" lines, nested objects indented by two spaces; an array of scalars inline, wrapped at show_width();
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
    const std::size_t width = show_width();
    if (!v.is_array() || v.empty() || line.size() + inline_value(v).size() <= width) {
      out.push_back(line + inline_value(v));
      return;
    }
    // Wrap the elements; continuation lines under the first element.
    const std::string cont(line.size() + 1, ' ');
    line += "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string e = v[i].dump() + (i + 1 < v.size() ? "," : "]");
      if (line.size() + 1 + e.size() > width && line.size() > cont.size()) {
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

// Lines of `text`, without their '\n'.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Each line of `text` wrapped to the terminal, continuation lines 4 columns deeper than the line's own indent.
void print_indented_lines(const std::string& text) {
  for (const std::string& line : lines_of(text)) {
    const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
    print_wrapped(line, std::string(lead + 4, ' '));
  }
}

// The machine state at each run's start and end; a line the same in every snapshot ("gpu: none (nvml absent)")
// once, then per snapshot only what differs.
void print_machine_states(const EvaluationRecord& record) {
  std::vector<std::pair<std::string, std::vector<std::string>>> snapshots;  // "run 1 start", its lines
  std::vector<std::string> unreadable;
  for (const auto& run : record.runs) {
    if (!run.machine_state.is_object() || !run.machine_state.contains("start")) continue;
    try {
      const MachineState start = machine_state_from_json(run.machine_state["start"]);
      const MachineState end = machine_state_from_json(run.machine_state.value("end", nlohmann::json::object()));
      snapshots.emplace_back("run " + std::to_string(run.id) + " start", lines_of(format_machine_state(start)));
      snapshots.emplace_back("run " + std::to_string(run.id) + " end", lines_of(format_machine_state(end)));
    } catch (const std::invalid_argument& e) {
      unreadable.push_back("run " + std::to_string(run.id) + ": unreadable machine state: " + e.what());
    }
  }
  if (snapshots.empty() && unreadable.empty()) return;
  std::vector<std::string> common;
  if (!snapshots.empty())
    for (const std::string& line : snapshots.front().second)
      if (std::all_of(snapshots.begin(), snapshots.end(), [&](const auto& s) {
            return std::find(s.second.begin(), s.second.end(), line) != s.second.end();
          }))
        common.push_back(line);
  std::cout << "machine state per run (start → end):\n";
  if (!common.empty())
    std::cout << "  " << (snapshots.size() > 1 ? "at every start and end" : snapshots.front().first) << ":\n";
  for (const std::string& line : common) print_wrapped("    " + line, "        ");
  // Consecutive snapshots that read the same are one entry: "run 3 start, run 3 end, run 4 start:".
  std::string labels;
  std::vector<std::string> previous;
  auto flush = [&] {
    if (previous.empty()) return;
    print_wrapped("  " + labels + ":", "    ");
    for (const std::string& line : previous) print_wrapped("    " + line, "        ");
  };
  for (const auto& [label, lines] : snapshots) {
    std::vector<std::string> own;
    for (const std::string& line : lines)
      if (std::find(common.begin(), common.end(), line) == common.end()) own.push_back(line);
    if (own.empty()) continue;
    if (own == previous) {
      labels += ", " + label;
      continue;
    }
    flush();
    labels = label;
    previous = std::move(own);
  }
  flush();
  for (const std::string& line : unreadable) print_wrapped("  " + line, "    ");
}

// The model's weights are random (zoo manifests say so in attribute "weights" or the description): its
// predictions are the right shape but mean nothing.
bool random_weights(const EvaluationRecord& record) {
  if (record.manifest_yaml.empty()) return false;
  try {
    const Manifest m = parse_manifest(record.manifest_yaml, "stored.yaml");
    const auto w = m.attributes.find("weights");
    if (w != m.attributes.end()) return util::to_lower(w->second).rfind("random", 0) == 0;
    return util::to_lower(m.description).find("random weights") != std::string::npos;
  } catch (const std::exception&) {
    return false;  // an old or hand-made manifest: say nothing rather than guess
  }
}

// Measurement: each run's design and windows, then the rule it was measured by (settings.measurement, the same as
// settings.request.measurement: printed here once, not under settings).
void print_measurement(const EvaluationRecord& record) {
  std::cout << "measurement:\n";
  for (const auto& line : describe_measurements(record)) print_wrapped("  " + line, "    ");
  const nlohmann::json& rule = record.settings.contains("measurement")
                                   ? record.settings["measurement"]
                                   : record.settings.value("/request/measurement"_json_pointer, nlohmann::json());
  if (rule.is_object() && !rule.empty()) {
    std::cout << "  rule:\n";
    std::vector<std::string> lines;
    readable_lines(rule, 4, lines);
    for (const auto& l : lines) std::cout << l << "\n";
  }
}

// The settings without the measurement rule (printed under measurement:); the sample predictions flagged when the
// model's weights are random.
void print_settings(const EvaluationRecord& record) {
  nlohmann::json settings = record.settings;
  if (settings.is_object()) {
    settings.erase("measurement");
    if (settings.contains("request") && settings["request"].is_object()) settings["request"].erase("measurement");
  }
  std::string text = format_settings(settings);
  if (const std::string key = "\n  sample_outputs:\n"; random_weights(record))
    if (const auto at = text.find(key); at != std::string::npos)
      text.insert(at + key.size() - 1, "  (random weights: labels are not meaningful)");
  std::cout << "settings:\n";
  print_indented_lines(text);
}

// A serving evaluation (`xsp bench-serve`, docs/serving.md): its figures per sweep point and failures by reason
// instead of batch latencies; the settings without the per-request rows, which only their count stands for.
int show_serving(const EvaluationRecord& record, TableFormat format) {
  if (format == TableFormat::kText) {
    const nlohmann::json& serving = record.settings["serving"];
    print_wrapped("evaluation " + std::to_string(record.id) + ": serving benchmark of " + record.model_name + " at " +
                      serving.value("/options/url"_json_pointer, std::string("?")) + " (xsp bench-serve)",
                  "  ");
  }
  print_tables(serve::serving_tables(record), format);
  if (format != TableFormat::kText) return 0;
  std::cout << "created: " << record.created_at << "  status: " << record.status << "\n";
  nlohmann::json settings = record.settings;
  nlohmann::json& serving = settings["serving"];
  const std::size_t rows = serving.contains("requests") ? serving["requests"].size() : 0;
  serving["requests"] = std::to_string(rows) + " rows (per-request times, in the store at settings.serving.requests)";
  serving.erase("summary");  // the tables above
  std::cout << "settings:\n";
  print_indented_lines(format_settings(settings));
  std::cout << "runs:" << (record.runs.empty() ? " none (no --server-pid: the client's figures only)" : "") << "\n";
  for (const auto& run : record.runs)
    print_wrapped("  run " + std::to_string(run.id) + ": the server's trace window, " +
                      std::string(to_string(run.trace_level)) + ", " + std::to_string(run.trace.spans.size()) +
                      " spans",
                  "    ");
  return 0;
}

int run_show(const Globals& g, std::int64_t id, const std::string& format_name) {
  const auto format = parse_table_format(format_name);
  auto store = open_store(g, StoreAccess::kRead);
  const auto record = service::load_evaluation(*store, id);
  if (record.kind() == RecordKind::kServing) return show_serving(record, format);
  print_summary(record, format);
  if (format != TableFormat::kText) return 0;
  std::cout << "created: " << record.created_at << "  status: " << record.status << "\n";
  print_measurement(record);
  print_machine_states(record);
  // Each run's warnings are the summary's notes already (evaluation_summary()); not repeated here.
  print_settings(record);
  print_indented_lines(format_system(record.system));
  std::cout << "runs:\n";
  for (const auto& run : record.runs) {
    std::ostringstream line;
    line << "  run " << run.id << ": batch " << run.batch_size << ", " << to_string(run.trace_level) << ", "
         << run.iterations << " batches, " << run.trace.spans.size() << " spans (" << run.trace.assembly.roots
         << " roots, " << run.trace.assembly.by_context << " by context, " << run.trace.assembly.by_correlation
         << " by correlation, " << run.trace.assembly.by_containment << " by containment, "
         << run.trace.assembly.unparented << " unparented)";
    print_wrapped(line.str(), "    ");
  }
  return 0;
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
  sub->add_option("--format", a->format, "how to print the summary tables: an aligned table, CSV or JSON")
      ->check(table_format_check())
      ->capture_default_str();
  out.push_back({sub, [&g, a] { return run_show(g, a->id, a->format); }});
}

}  // namespace xsp::cli
