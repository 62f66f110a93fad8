// Roofline arithmetic, machine look-up and the roofline chart (roofline.h).
#include "xsp/analysis/roofline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "xsp/profilers/hardware_counters.h"

namespace xsp {
namespace {

std::optional<double> find(const CounterValues& c, std::string_view name) {
  auto it = c.find(std::string(name));
  if (it == c.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

const Ceiling* ceiling(const MachineCeilings* m, const std::string& name) {
  if (m == nullptr) return nullptr;
  const Ceiling* c = m->find(name);
  return c != nullptr && std::isfinite(c->value) && c->value > 0 ? c : nullptr;
}

}  // namespace

std::string_view to_string(MemoryLevel level) {
  switch (level) {
    case MemoryLevel::kL1: return "l1";
    case MemoryLevel::kL2: return "l2";
    case MemoryLevel::kDram: return "dram";
  }
  return "?";
}

std::optional<double> level_bytes(const CounterValues& counters, MemoryLevel level) {
  switch (level) {
    case MemoryLevel::kDram: {
      const auto r = find(counters, hw::kDramReadBytes), w = find(counters, hw::kDramWriteBytes);
      if (!r || !w) return std::nullopt;
      return *r + *w;
    }
    case MemoryLevel::kL2: return find(counters, hw::kL2Bytes);
    case MemoryLevel::kL1: return find(counters, hw::kL1Bytes);
  }
  return std::nullopt;
}

std::optional<double> arithmetic_intensity(double flops, double bytes) {
  if (!std::isfinite(flops) || !std::isfinite(bytes) || bytes <= 0) return std::nullopt;
  return flops / bytes;
}

double attainable_flops_per_s(double peak_flops_per_s, double bandwidth_bytes_per_s, double ai) {
  return std::min(peak_flops_per_s, bandwidth_bytes_per_s * ai);
}

double ridge_point(double peak_flops_per_s, double bandwidth_bytes_per_s) {
  if (!(bandwidth_bytes_per_s > 0))
    throw std::invalid_argument("ridge_point: bandwidth must be positive, got " +
                                std::to_string(bandwidth_bytes_per_s) + " bytes/s");
  return peak_flops_per_s / bandwidth_bytes_per_s;
}

std::string_view to_string(Bound bound) { return bound == Bound::kMemory ? "memory" : "compute"; }

Bound classify(double ai, double ridge) { return ai < ridge ? Bound::kMemory : Bound::kCompute; }

std::string compute_ceiling_for(std::string_view flop_counter) {
  const auto& fc = hw::flop_counters();
  if (std::find(fc.begin(), fc.end(), flop_counter) == fc.end()) return "";
  constexpr std::string_view suffix = "_flops";
  return std::string(flop_counter.substr(0, flop_counter.size() - suffix.size()));
}

std::optional<std::string> dominant_precision(const CounterValues& counters) {
  std::optional<std::string> best;
  double best_flops = 0;
  for (const std::string_view name : hw::flop_counters()) {
    const auto v = find(counters, name);
    // Strictly greater: on a tie the earlier counter (flop_counters() order) keeps the place.
    if (v && *v > best_flops) {
      best_flops = *v;
      best = compute_ceiling_for(name);
    }
  }
  return best;
}

std::optional<double> weighted_mean(const std::vector<std::pair<double, double>>& values_and_weights) {
  double sum = 0, weights = 0;
  for (const auto& [v, w] : values_and_weights) {
    if (!std::isfinite(v) || !std::isfinite(w) || w < 0) continue;
    sum += v * w;
    weights += w;
  }
  if (weights <= 0) return std::nullopt;
  return sum / weights;
}

void CounterAggregate::add(const CounterValues& counters, std::optional<double> latency_ns) {
  ++kernels_;
  bool left_out = false;
  for (const auto& [name, value] : counters) {
    const hw::CounterDef* def = hw::find_counter(name);
    if (def != nullptr && def->aggregation == "latency_weighted_mean") {
      if (latency_ns && std::isfinite(*latency_ns)) weighted_[name].emplace_back(value, *latency_ns);
      else left_out = true;
    } else {
      sums_[name] += value;
    }
  }
  unweighted_ += left_out;
}

CounterValues CounterAggregate::values() const {
  CounterValues out = sums_;
  for (const auto& [name, pairs] : weighted_)
    if (auto m = weighted_mean(pairs)) out[name] = *m;
  return out;
}

RooflinePoint roofline_point(const CounterValues& counters, const MachineCeilings* ceilings,
                             std::optional<double> latency_ns) {
  RooflinePoint p;
  p.flops = hw::total_flops(counters);
  p.precision = dominant_precision(counters);
  const Ceiling* peak = p.precision ? ceiling(ceilings, *p.precision) : nullptr;
  if (peak != nullptr) p.peak_flops_per_s = peak->value;
  if (p.flops && latency_ns && std::isfinite(*latency_ns) && *latency_ns > 0)
    p.achieved_flops_per_s = *p.flops / (*latency_ns * 1e-9);

  double lowest_roof = std::numeric_limits<double>::infinity();
  for (const MemoryLevel l : kMemoryLevels) {
    LevelPoint& lp = p.levels[static_cast<int>(l)];
    const auto bytes = level_bytes(counters, l);
    if (p.flops && bytes) lp.ai = arithmetic_intensity(*p.flops, *bytes);
    const Ceiling* bw = ceiling(ceilings, std::string(to_string(l)));
    if (bw != nullptr) lp.bandwidth_bytes_per_s = bw->value;
    if (!lp.ai || !lp.bandwidth_bytes_per_s) continue;
    if (*p.flops == 0) {
      // No FLOPs: on the roofline's x axis at 0, below any ridge; there is no compute peak to compare with.
      lp.attainable_flops_per_s = 0;
      lp.bound = Bound::kMemory;
      continue;
    }
    if (!p.peak_flops_per_s) continue;
    lp.ridge = ridge_point(*p.peak_flops_per_s, *lp.bandwidth_bytes_per_s);
    lp.attainable_flops_per_s = attainable_flops_per_s(*p.peak_flops_per_s, *lp.bandwidth_bytes_per_s, *lp.ai);
    lp.bound = classify(*lp.ai, *lp.ridge);
    const double roof = *lp.bandwidth_bytes_per_s * *lp.ai;
    if (roof < lowest_roof && roof < *p.peak_flops_per_s) {
      lowest_roof = roof;
      p.limiting_level = l;
    }
  }
  const LevelPoint& dram = p.at(MemoryLevel::kDram);
  if (p.achieved_flops_per_s && dram.attainable_flops_per_s && *dram.attainable_flops_per_s > 0)
    p.percent_of_roofline = 100.0 * *p.achieved_flops_per_s / *dram.attainable_flops_per_s;
  return p;
}

// ---------------------------------------------------------------------------------------------------------

MachineIdentity evaluation_machine(const EvaluationRecord& record) {
  MachineIdentity m;
  const auto& sys = record.system;
  if (sys.is_object()) {
    if (auto h = sys.find("host"); h != sys.end() && h->is_object())
      if (auto n = h->find("hostname"); n != h->end() && n->is_string()) m.hostname = n->get<std::string>();
    std::size_t ordinal = 0;
    if (const auto colon = record.device.find(':'); colon != std::string::npos) {
      try {
        ordinal = static_cast<std::size_t>(std::stoul(record.device.substr(colon + 1)));
      } catch (const std::exception&) {
        ordinal = 0;
      }
    }
    if (auto g = sys.find("gpu"); g != sys.end() && g->is_array()) {
      // Entries carry their nvidia-smi index; fall back to the position when they do not.
      const nlohmann::json* gpu = nullptr;
      for (const auto& e : *g)
        if (e.is_object() && e.contains("index") && e["index"].is_number_unsigned() &&
            e["index"].get<std::size_t>() == ordinal)
          gpu = &e;
      if (gpu == nullptr && ordinal < g->size()) gpu = &(*g)[ordinal];
      if (gpu != nullptr && gpu->is_object()) {
        if (auto n = gpu->find("name"); n != gpu->end() && n->is_string()) m.gpu_name = n->get<std::string>();
        if (auto u = gpu->find("uuid"); u != gpu->end() && u->is_string()) m.gpu_uuid = u->get<std::string>();
      }
    }
  }
  return m;
}

std::string no_ceilings_note(const MachineIdentity& machine) {
  return "no measured ceilings for GPU " + (machine.gpu_name.empty() ? "(unknown GPU)" : machine.gpu_name) +
         " on host " + (machine.hostname.empty() ? "(unknown host)" : machine.hostname) +
         ": run `xsp machine ceilings` on that machine (bound and roofline columns are empty)";
}

const MachineCeilings* select_ceilings(const std::vector<MachineCeilings>& stored, const MachineIdentity& machine,
                                       std::string* note) {
  // ISO 8601 UTC strings of one format order as text.
  auto latest = [&](auto&& pred) -> const MachineCeilings* {
    const MachineCeilings* best = nullptr;
    for (const auto& c : stored)
      if (pred(c) && (best == nullptr || c.measured_at > best->measured_at)) best = &c;
    return best;
  };
  auto say = [&](const std::string& s) {
    if (note != nullptr) *note = s;
  };
  if (!machine.gpu_uuid.empty()) {
    if (const auto* c = latest([&](const MachineCeilings& m) { return m.gpu_uuid == machine.gpu_uuid; })) {
      say("ceilings of " + c->gpu_name + " (" + c->gpu_uuid + ") on host " + c->hostname + ", measured " +
          c->measured_at + "; matched by GPU UUID");
      return c;
    }
  }
  if (machine.hostname.empty()) {
    say(no_ceilings_note(machine));
    return nullptr;
  }
  if (!machine.gpu_name.empty()) {
    if (const auto* c = latest([&](const MachineCeilings& m) {
          return m.hostname == machine.hostname && m.gpu_name == machine.gpu_name;
        })) {
      say("ceilings of " + c->gpu_name + " on host " + c->hostname + ", measured " + c->measured_at +
          "; matched by host name and GPU name");
      return c;
    }
    say(no_ceilings_note(machine));
    return nullptr;
  }
  std::set<std::string> names;
  for (const auto& c : stored)
    if (c.hostname == machine.hostname) names.insert(c.gpu_name);
  if (names.size() == 1) {
    const auto* c = latest([&](const MachineCeilings& m) { return m.hostname == machine.hostname; });
    say("ceilings of " + c->gpu_name + " on host " + c->hostname + ", measured " + c->measured_at +
        "; matched by host name only (the evaluation's system description names no GPU, and this host has "
        "ceilings of one GPU model)");
    return c;
  }
  say(no_ceilings_note(machine) +
      (names.size() > 1 ? " (the evaluation names no GPU and the host has ceilings of several GPU models)" : ""));
  return nullptr;
}

nlohmann::json to_json(const MachineCeilings& m) {
  nlohmann::json cs = nlohmann::json::array();
  for (const auto& c : m.ceilings)
    cs.push_back({{"name", c.name}, {"value", c.value}, {"unit", c.unit}, {"method", c.method}});
  return {{"hostname", m.hostname},       {"gpu_name", m.gpu_name},       {"gpu_uuid", m.gpu_uuid},
          {"measured_at", m.measured_at}, {"clocks_note", m.clocks_note}, {"ceilings", cs}};
}

MachineCeilings machine_ceilings_from_json(const nlohmann::json& j) {
  auto fail = [](const std::string& field, const std::string& what) {
    throw std::invalid_argument("machine ceilings JSON: " + field + ": " + what);
  };
  if (!j.is_object()) fail("(top level)", std::string("expected an object, got ") + j.type_name());
  auto str = [&](const nlohmann::json& o, const char* key, bool required, const std::string& where) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) {
      if (required) fail(where + key, "missing (expected a non-empty string)");
      return std::string();
    }
    if (!it->is_string()) fail(where + key, std::string("expected a string, got ") + it->type_name());
    std::string s = it->get<std::string>();
    if (required && s.empty()) fail(where + key, "expected a non-empty string");
    return s;
  };
  MachineCeilings m;
  m.hostname = str(j, "hostname", true, "");
  m.gpu_name = str(j, "gpu_name", true, "");
  m.gpu_uuid = str(j, "gpu_uuid", false, "");
  m.measured_at = str(j, "measured_at", true, "");
  m.clocks_note = str(j, "clocks_note", false, "");
  auto cs = j.find("ceilings");
  if (cs == j.end() || !cs->is_array()) fail("ceilings", "missing (expected an array of {name, value, unit, method})");
  for (std::size_t i = 0; i < cs->size(); ++i) {
    const auto& e = (*cs)[i];
    const std::string where = "ceilings[" + std::to_string(i) + "].";
    if (!e.is_object()) fail(where.substr(0, where.size() - 1), "expected an object");
    Ceiling c;
    c.name = str(e, "name", true, where);
    auto v = e.find("value");
    if (v == e.end() || !v->is_number()) fail(where + "value", "expected a number (flop/s, op/s or bytes/s)");
    c.value = v->get<double>();
    if (!std::isfinite(c.value) || c.value <= 0)
      fail(where + "value", "expected a positive number, got " + v->dump());
    c.unit = str(e, "unit", true, where);
    if (c.unit != "flop/s" && c.unit != "op/s" && c.unit != "bytes/s")
      fail(where + "unit", "expected flop/s, op/s or bytes/s, got '" + c.unit + "'");
    c.method = str(e, "method", false, where);
    m.ceilings.push_back(std::move(c));
  }
  return m;
}

Table machine_ceilings_table(const MachineCeilings& m) {
  Table t;
  t.id = "ceilings";
  t.title = "Measured ceilings of " + m.gpu_name + (m.gpu_uuid.empty() ? "" : " (" + m.gpu_uuid + ")") + " on " +
            m.hostname + ", " + m.measured_at;
  t.columns = {{"ceiling", "ceiling"},          {"kind", "kind"},
               {"value", "value"},              {"value_unit", "unit"},
               {"ridge_dram", "ridge DRAM (FLOP/B)"}, {"ridge_l2", "ridge L2"},
               {"ridge_l1", "ridge L1"},        {"method", "method"}};
  for (const Ceiling& c : m.ceilings) {
    const bool memory = c.unit == "bytes/s";
    // Cells appended one by one: GCC 12 warns (falsely) on braced lists of std::string-holding variants here.
    const std::string kind = memory ? "memory" : "compute";
    const std::string unit = memory ? "GB/s" : c.unit == "op/s" ? "TOP/s" : "TFLOP/s";
    std::vector<Cell> row;
    row.reserve(t.columns.size());
    row.emplace_back(c.name);
    row.emplace_back(kind);
    row.emplace_back(memory ? c.value / 1e9 : c.value / 1e12);
    row.emplace_back(unit);
    for (const char* level : {"dram", "l2", "l1"}) {
      const Ceiling* bw = m.find(level);
      if (!memory && bw != nullptr && bw->value > 0) row.emplace_back(c.value / bw->value);
      else row.emplace_back();
    }
    row.emplace_back(c.method);
    t.rows.push_back(std::move(row));
  }
  if (!m.clocks_note.empty()) t.notes.push_back("clocks: " + m.clocks_note);
  t.notes.push_back("ridge point = compute peak / bandwidth: kernels with a lower arithmetic intensity at that level "
                    "are memory-bound (Williams, Waterman, Patterson, CACM 2009)");
  return t;
}

// ---------------------------------------------------------------------------------------------------------

nlohmann::json roofline_chart(const std::vector<Table>& tables, const MachineCeilings* ceilings) {
  nlohmann::json points = nlohmann::json::array();
  std::set<std::string> precisions;
  double ai_min = std::numeric_limits<double>::infinity(), ai_max = 0;
  std::string kind;
  for (const Table& t : tables) {
    if (t.id != "A9" && t.id != "A14")
      throw std::invalid_argument("roofline_chart: table " + t.id + " is not a roofline table (A9 or A14)");
    kind = t.id;
    auto col = [&](const std::string& name) -> int {
      for (std::size_t i = 0; i < t.columns.size(); ++i)
        if (t.columns[i].name == name) return static_cast<int>(i);
      return -1;
    };
    const int ai_c = col("ai_dram"), f_c = col("achieved_flops_per_s"), p_c = col("precision");
    const int name_c = col(t.id == "A9" ? "kernel_name" : "layer_name");
    const int layer_c = col("layer_index");
    if (ai_c < 0 || f_c < 0) throw std::invalid_argument("roofline_chart: table " + t.id + " lacks ai_dram or "
                                                         "achieved_flops_per_s");
    for (const auto& row : t.rows) {
      const double* ai = std::get_if<double>(&row[static_cast<std::size_t>(ai_c)]);
      const double* f = std::get_if<double>(&row[static_cast<std::size_t>(f_c)]);
      if (ai == nullptr || f == nullptr || !(*ai > 0) || !(*f > 0)) continue;
      nlohmann::json p = {{"ai", *ai}, {"flops_per_s", *f}, {"table", t.title}};
      if (p_c >= 0)
        if (auto* s = std::get_if<std::string>(&row[static_cast<std::size_t>(p_c)])) {
          p["precision"] = *s;
          precisions.insert(*s);
        }
      if (name_c >= 0)
        if (auto* s = std::get_if<std::string>(&row[static_cast<std::size_t>(name_c)])) p["name"] = *s;
      if (layer_c >= 0)
        if (auto* i = std::get_if<std::int64_t>(&row[static_cast<std::size_t>(layer_c)])) p["layer_index"] = *i;
      points.push_back(std::move(p));
      ai_min = std::min(ai_min, *ai);
      ai_max = std::max(ai_max, *ai);
    }
  }
  // The x range covers the points and every ridge, a decade beyond on each side.
  const Ceiling* dram = ceilings != nullptr ? ceilings->find("dram") : nullptr;
  std::vector<const Ceiling*> peaks;
  for (const auto& p : precisions)
    if (const Ceiling* c = ceilings != nullptr ? ceilings->find(p) : nullptr) peaks.push_back(c);
  if (dram != nullptr)
    for (const Ceiling* c : peaks) {
      const double r = c->value / dram->value;
      ai_min = std::min(ai_min, r);
      ai_max = std::max(ai_max, r);
    }
  if (!std::isfinite(ai_min)) ai_min = 1, ai_max = 1;
  const double x0 = ai_min / 10, x1 = ai_max * 10;

  nlohmann::json roofs = nlohmann::json::array();
  if (dram != nullptr) {
    for (const Ceiling* c : peaks) {
      const double r = c->value / dram->value;
      const std::string label = c->name + " peak / DRAM";
      for (double x : {x0, r, x1}) roofs.push_back({{"ai", x}, {"flops_per_s", std::min(c->value, dram->value * x)},
                                                    {"roof", label}});
    }
  }
  // L2 and L1 bandwidth diagonals up to the highest peak used (hierarchical roofline).
  if (!peaks.empty()) {
    double top = 0;
    for (const Ceiling* c : peaks) top = std::max(top, c->value);
    for (const char* lvl : {"l2", "l1"}) {
      const Ceiling* bw = ceilings->find(lvl);
      if (bw == nullptr) continue;
      const std::string label = std::string(lvl == std::string("l2") ? "L2" : "L1") + " bandwidth";
      const double xr = std::max(x0, std::min(x1, top / bw->value));
      roofs.push_back({{"ai", x0}, {"flops_per_s", bw->value * x0}, {"roof", label}});
      roofs.push_back({{"ai", xr}, {"flops_per_s", bw->value * xr}, {"roof", label}});
    }
  }

  const std::string what = kind == "A14" ? "layer" : "kernel";
  nlohmann::json log_x = {{"type", "log"}, {"domain", {x0, x1}}};
  nlohmann::json spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
      {"title", (kind == "A14" ? "Layer roofline (A14)" : "Kernel roofline (A9)") +
                    std::string(ceilings != nullptr ? " — " + ceilings->gpu_name + " on " + ceilings->hostname : "")},
      {"width", 640},
      {"height", 420},
      {"layer",
       {{{"data", {{"values", roofs}}},
         {"mark", {{"type", "line"}, {"clip", true}}},
         {"encoding",
          {{"x", {{"field", "ai"}, {"type", "quantitative"}, {"scale", log_x},
                  {"title", "arithmetic intensity at DRAM (FLOP/byte)"}}},
           {"y", {{"field", "flops_per_s"}, {"type", "quantitative"}, {"scale", {{"type", "log"}}},
                  {"title", "FLOP/s"}}},
           {"detail", {{"field", "roof"}}},
           {"strokeDash", {{"field", "roof"}, {"type", "nominal"}, {"title", "roof"}}}}}},
        {{"data", {{"values", points}}},
         {"mark", {{"type", "point"}, {"filled", true}, {"tooltip", true}}},
         {"encoding",
          {{"x", {{"field", "ai"}, {"type", "quantitative"}, {"scale", log_x}}},
           {"y", {{"field", "flops_per_s"}, {"type", "quantitative"}, {"scale", {{"type", "log"}}}}},
           {"color", {{"field", "precision"}, {"type", "nominal"}, {"title", "precision"}}},
           {"shape", {{"field", "table"}, {"type", "nominal"}, {"title", "table"}}},
           {"tooltip", {{{"field", "name"}, {"title", what}},
                        {{"field", "ai"}, {"format", ".3g"}},
                        {{"field", "flops_per_s"}, {"format", ".3s"}},
                        {{"field", "precision"}}}}}}}}},
  };
  if (ceilings == nullptr) spec["description"] = "no measured ceilings: points only";
  return spec;
}

}  // namespace xsp
