// Roofline arithmetic, machine look-up and the roofline chart (roofline.h).
#include "xsp/analysis/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <numbers>
#include <set>
#include <stdexcept>
#include <string>

#include "xsp/profilers/hardware_counters.h"
#include "xsp/util/time.h"

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
    case MemoryLevel::kL1:
      return "l1";
    case MemoryLevel::kL2:
      return "l2";
    case MemoryLevel::kDram:
      return "dram";
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
    case MemoryLevel::kL2:
      return find(counters, hw::kL2Bytes);
    case MemoryLevel::kL1:
      return find(counters, hw::kL1Bytes);
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
      if (latency_ns && std::isfinite(*latency_ns))
        weighted_[name].emplace_back(value, *latency_ns);
      else
        left_out = true;
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

  std::optional<double> bytes_at[3], bandwidth_at[3];
  for (const MemoryLevel l : kMemoryLevels) {
    LevelPoint& lp = p.levels[static_cast<int>(l)];
    const auto bytes = level_bytes(counters, l);
    bytes_at[static_cast<int>(l)] = bytes;
    if (p.flops && bytes) lp.ai = arithmetic_intensity(*p.flops, *bytes);
    const Ceiling* bw = ceiling(ceilings, std::string(to_string(l)));
    if (bw != nullptr) lp.bandwidth_bytes_per_s = bw->value;
    bandwidth_at[static_cast<int>(l)] = lp.bandwidth_bytes_per_s;
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
  }
  if (ceilings != nullptr) p.binding = hierarchical_bound(p.flops, p.peak_flops_per_s, bytes_at, bandwidth_at);
  if (p.achieved_flops_per_s && p.binding && p.binding->attainable_flops_per_s > 0)
    p.percent_of_roofline = 100.0 * *p.achieved_flops_per_s / p.binding->attainable_flops_per_s;
  return p;
}

std::string_view to_string(BindingLevel level) {
  switch (level) {
    case BindingLevel::kL1:
      return "l1";
    case BindingLevel::kL2:
      return "l2";
    case BindingLevel::kDram:
      return "dram";
    case BindingLevel::kCompute:
      return "compute";
  }
  return "?";
}

BindingLevel binding_level_of(MemoryLevel level) {
  switch (level) {
    case MemoryLevel::kL1:
      return BindingLevel::kL1;
    case MemoryLevel::kL2:
      return BindingLevel::kL2;
    case MemoryLevel::kDram:
      return BindingLevel::kDram;
  }
  return BindingLevel::kDram;
}

std::optional<HierarchicalBound> hierarchical_bound(std::optional<double> flops, std::optional<double> peak_flops_per_s,
                                                    const std::optional<double> (&level_bytes)[3],
                                                    const std::optional<double> (&bandwidth_bytes_per_s)[3]) {
  if (!flops || !std::isfinite(*flops) || *flops < 0) return std::nullopt;
  // The levels with a roof: traffic measured and > 0, bandwidth measured and > 0.
  struct Level {
    MemoryLevel level;
    double bytes, bandwidth;
  };
  std::vector<Level> levels;
  for (const MemoryLevel l : kMemoryLevels) {
    const auto& b = level_bytes[static_cast<int>(l)];
    const auto& bw = bandwidth_bytes_per_s[static_cast<int>(l)];
    if (b && std::isfinite(*b) && *b > 0 && bw && std::isfinite(*bw) && *bw > 0) levels.push_back({l, *b, *bw});
  }
  if (levels.empty()) return std::nullopt;
  HierarchicalBound out;
  if (*flops == 0) {
    // AI 0 everywhere: every roof is 0; the level whose traffic takes longest binds (first on ties).
    const Level* slowest = &levels.front();
    for (const Level& l : levels)
      if (l.bytes / l.bandwidth > slowest->bytes / slowest->bandwidth) slowest = &l;
    out.level = binding_level_of(slowest->level);
    out.bound = Bound::kMemory;
    out.attainable_flops_per_s = 0;
    return out;
  }
  if (!peak_flops_per_s || !std::isfinite(*peak_flops_per_s) || *peak_flops_per_s <= 0) return std::nullopt;
  out.attainable_flops_per_s = *peak_flops_per_s;
  for (const Level& l : levels) {
    // attainable_level = min(peak, AI_level × bandwidth_level); strictly lower wins, so the peak wins ties
    // (a point at a ridge is compute-bound) and an inner level wins ties with an outer one.
    const double roof = *arithmetic_intensity(*flops, l.bytes) * l.bandwidth;
    if (roof < out.attainable_flops_per_s) {
      out.attainable_flops_per_s = roof;
      out.level = binding_level_of(l.level);
      out.bound = Bound::kMemory;
    }
  }
  return out;
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

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

}  // namespace

std::optional<std::int64_t> parse_utc_time(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SSZ, exactly 20 characters.
  static constexpr std::string_view kShape = "0000-00-00T00:00:00Z";
  if (text.size() != kShape.size()) return std::nullopt;
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (kShape[i] == '0' ? !digit : text[i] != kShape[i]) return std::nullopt;
  }
  const auto number = [&](std::size_t at, std::size_t n) {
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) v = v * 10 + (text[i] - '0');
    return v;
  };
  const int year = number(0, 4), month = number(5, 2), day = number(8, 2);
  const int hour = number(11, 2), minute = number(14, 2), second = number(17, 2);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return std::nullopt;
  static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return std::nullopt;
  return days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 + hour * 3600 +
         minute * 60 + second;
}

MachineCeilings machine_ceilings_from_json(const nlohmann::json& j, std::chrono::system_clock::time_point now) {
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
  // The store picks the latest measurement by comparing measured_at as text: a value that is not this exact form
  // ("9999") or lies in the future would win over every later measurement for ever.
  const auto shown = [&] {
    return "'" + (m.measured_at.size() > 60
                      ? m.measured_at.substr(0, 60) + "...' (" + std::to_string(m.measured_at.size()) + " characters)"
                      : m.measured_at + "'");
  };
  const std::optional<std::int64_t> at = parse_utc_time(m.measured_at);
  if (!at)
    fail("measured_at", "expected an ISO-8601 UTC time YYYY-MM-DDTHH:MM:SSZ (a real date and time), got " + shown());
  const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  if (*at > now_s + 86400) {
    fail("measured_at",
         "expected a time at most a day after now (" + util::format_utc_iso8601(now_s) + "), got " + shown());
  }
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
    if (!std::isfinite(c.value) || c.value <= 0) fail(where + "value", "expected a positive number, got " + v->dump());
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
  t.columns = {{"ceiling", "ceiling"},
               {"kind", "kind"},
               {"value", "value"},
               {"value_unit", "unit"},
               {"ridge_dram", "ridge DRAM (FLOP/B)"},
               {"ridge_l2", "ridge L2"},
               {"ridge_l1", "ridge L1"},
               {"method", "method"}};
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
      if (!memory && bw != nullptr && bw->value > 0)
        row.emplace_back(c.value / bw->value);
      else
        row.emplace_back();
    }
    row.emplace_back(c.method);
    t.rows.push_back(std::move(row));
  }
  if (!m.clocks_note.empty()) t.notes.push_back("clocks: " + m.clocks_note);
  t.notes.push_back(
      "ridge point = compute peak / bandwidth: kernels with a lower arithmetic intensity at that level "
      "are memory-bound (Williams, Waterman, Patterson, CACM 2009)");
  return t;
}

// ---------------------------------------------------------------------------------------------------------

namespace {

// "25.2 T" style: 3 significant digits and an SI prefix (k, M, G, T, P, E).
std::string si(double v) {
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 6) v /= 1000, ++i;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", v, prefixes[i]);
  return buf;
}

std::string level_name(MemoryLevel l) {
  switch (l) {
    case MemoryLevel::kL1:
      return "L1";
    case MemoryLevel::kL2:
      return "L2";
    case MemoryLevel::kDram:
      return "DRAM";
  }
  return "?";
}

// Ceiling labels, one per drawn line: "L2 7.33 TB/s", "tensor_tf32 peak 452 TFLOP/s".
std::string bandwidth_label(MemoryLevel l, const Ceiling& c) { return level_name(l) + " " + si(c.value) + "B/s"; }
std::string peak_label(const Ceiling& c) {
  return c.name + " peak " + si(c.value) + (c.unit == "op/s" ? "OP/s" : "FLOP/s");
}

double decade_floor(double v) { return std::pow(10.0, std::floor(std::log10(v))); }
double decade_ceil(double v) { return std::pow(10.0, std::ceil(std::log10(v))); }
nlohmann::json decades(double lo, double hi) {
  nlohmann::json out = nlohmann::json::array();
  for (double d = decade_floor(lo); d <= hi * 1.0001; d *= 10)
    if (d >= lo * 0.9999) out.push_back(d);
  return out;
}

}  // namespace

std::string RooflineChart::left_out_note() const {
  if (left_out.empty()) return "";
  std::size_t n = 0;
  std::string why;
  for (const auto& [reason, count] : left_out) {
    n += count;
    why += (why.empty() ? "" : "; ") + std::to_string(count) + " " + reason;
  }
  return std::to_string(n) + " of " + std::to_string(rows) + " " + what +
         "s left out (log axes have no place for "
         "them): " +
         why;
}

namespace {

// The points of the A9 or A14 tables drawn, what was left out, and the extent of what was drawn.
struct RooflinePoints {
  nlohmann::json points = nlohmann::json::array();
  std::set<std::string> precisions;
  std::map<std::string, std::size_t> left_out;  ///< reason -> rows
  std::size_t rows = 0;
  std::string kind;                  ///< "A9" or "A14"
  std::vector<std::string> batches;  ///< one label per table
  double ai_min = std::numeric_limits<double>::infinity(), ai_max = 0;
  double f_min = std::numeric_limits<double>::infinity(), f_max = 0;
};

// Adds the rows of one roofline table: a point per row with a positive AI at DRAM and achieved FLOP/s (and FLOPs
// when the table has them); the others are counted by reason.
void add_table_points(const Table& t, RooflinePoints& rp) {
  if (t.id != "A9" && t.id != "A14")
    throw std::invalid_argument("roofline_chart: table " + t.id + " is not a roofline table (A9 or A14)");
  if (!rp.kind.empty() && rp.kind != t.id)
    throw std::invalid_argument("roofline_chart: tables " + rp.kind + " and " + t.id + " mixed: draw A9 or A14");
  rp.kind = t.id;
  auto col = [&](const std::string& name) -> int {
    for (std::size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i].name == name) return static_cast<int>(i);
    return -1;
  };
  const int ai_c = col("ai_dram"), f_c = col("achieved_flops_per_s"), p_c = col("precision");
  const int name_c = col(t.id == "A9" ? "kernel_name" : "layer_name");
  const int layer_c = col("layer_index"), layer_name_c = col("layer_name"), gflops_c = col("gflops");
  const int binding_c = col("binding_level"), bound_c = col("bound"), pct_c = col("percent_of_roofline");
  const int attainable_c = col("attainable_flops_per_s");
  if (ai_c < 0 || f_c < 0)
    throw std::invalid_argument("roofline_chart: table " + t.id + " lacks column " +
                                (ai_c < 0 ? "ai_dram" : "achieved_flops_per_s"));
  const auto open = t.title.rfind(" (batch size ");
  const std::string batch = open == std::string::npos ? t.title : t.title.substr(open + 13, t.title.size() - open - 14);
  rp.batches.push_back(batch);
  auto real = [&](const std::vector<Cell>& row, int c) -> const double* {
    return c < 0 ? nullptr : std::get_if<double>(&row[static_cast<std::size_t>(c)]);
  };
  auto text = [&](const std::vector<Cell>& row, int c) -> const std::string* {
    return c < 0 ? nullptr : std::get_if<std::string>(&row[static_cast<std::size_t>(c)]);
  };
  for (const auto& row : t.rows) {
    ++rp.rows;
    const double* ai = real(row, ai_c);
    const double* f = real(row, f_c);
    const double* g = real(row, gflops_c);
    if (gflops_c >= 0 && (g == nullptr || !(*g > 0))) {
      ++rp.left_out[g == nullptr ? "without FLOP counters" : "with no FLOPs (AI 0, 0 FLOP/s)"];
      continue;
    }
    if (ai == nullptr || !(*ai > 0)) {
      ++rp.left_out["without DRAM traffic (AI at DRAM undefined)"];
      continue;
    }
    if (f == nullptr || !(*f > 0)) {
      ++rp.left_out["without a latency (achieved FLOP/s unknown)"];
      continue;
    }
    nlohmann::json p = {{"ai", *ai}, {"flops_per_s", *f}, {"batch", batch}};
    if (const auto* s = text(row, p_c)) {
      p["precision"] = *s;
      rp.precisions.insert(*s);
    }
    if (const auto* s = text(row, name_c)) p["name"] = *s;
    std::string layer;
    if (layer_c >= 0)
      if (auto* i = std::get_if<std::int64_t>(&row[static_cast<std::size_t>(layer_c)])) layer = std::to_string(*i);
    if (t.id == "A9")
      if (const auto* s = text(row, layer_name_c)) layer += (layer.empty() ? "" : " ") + *s;
    if (!layer.empty()) p["layer"] = layer;
    if (const auto* s = text(row, binding_c)) p["binding_level"] = *s;
    if (const auto* s = text(row, bound_c)) p["bound"] = *s;
    if (const double* v = real(row, pct_c)) p["percent_of_roof"] = *v;
    if (const double* v = real(row, attainable_c)) p["attainable_flops_per_s"] = *v;
    rp.points.push_back(std::move(p));
    rp.ai_min = std::min(rp.ai_min, *ai);
    rp.ai_max = std::max(rp.ai_max, *ai);
    rp.f_min = std::min(rp.f_min, *f);
    rp.f_max = std::max(rp.f_max, *f);
  }
}

// The ceilings drawn: the peaks of the precisions drawn (lowest first) and each measured memory level's bandwidth,
// with the axis domains: whole decades covering the points, the ridges and the peaks.
struct RooflineFrame {
  std::vector<const Ceiling*> peaks;
  std::vector<std::pair<MemoryLevel, const Ceiling*>> bandwidths;
  double top_peak = 0;
  double max_bw = 0;  ///< the innermost measured level has the highest bandwidth: the peaks start at its ridge
  double x0 = 1, x1 = 1, y0 = 1, y1 = 1;
};

RooflineFrame roofline_frame(const RooflinePoints& rp, const MachineCeilings* ceilings) {
  RooflineFrame fr;
  for (const auto& p : rp.precisions)
    if (const Ceiling* c = ceiling(ceilings, p)) fr.peaks.push_back(c);
  std::sort(fr.peaks.begin(), fr.peaks.end(), [](const Ceiling* a, const Ceiling* b) { return a->value < b->value; });
  for (const MemoryLevel l : kMemoryLevels)
    if (const Ceiling* c = ceiling(ceilings, std::string(to_string(l)))) fr.bandwidths.emplace_back(l, c);
  fr.top_peak = fr.peaks.empty() ? 0 : fr.peaks.back()->value;
  for (const auto& [l, c] : fr.bandwidths) fr.max_bw = std::max(fr.max_bw, c->value);

  double ai_min = rp.ai_min, ai_max = rp.ai_max, f_min = rp.f_min, f_max = rp.f_max;
  if (!std::isfinite(ai_min)) ai_min = 1, ai_max = 1;
  if (!std::isfinite(f_min)) f_min = fr.top_peak > 0 ? fr.top_peak / 1e4 : 1e9, f_max = f_min;
  for (const Ceiling* pk : fr.peaks)
    for (const auto& [l, bw] : fr.bandwidths) {
      ai_min = std::min(ai_min, pk->value / bw->value);
      ai_max = std::max(ai_max, pk->value / bw->value);
    }
  fr.x0 = decade_floor(ai_min / 2), fr.x1 = decade_ceil(ai_max * 2);
  fr.y0 = decade_floor(f_min / 2), fr.y1 = decade_ceil(std::max(f_max, fr.top_peak) * 2);
  return fr;
}

constexpr double kChartWidth = 720, kChartHeight = 460;

// The ceiling lines with their labels and colours: one colour per ceiling (Tableau 10), in drawing order L1, L2,
// DRAM, then the peaks from low to high.
struct CeilingLines {
  nlohmann::json domain = nlohmann::json::array(), range = nlohmann::json::array();
  nlohmann::json lines = nlohmann::json::array(), labels = nlohmann::json::array();
  std::map<std::string, std::string> level_label;  ///< binding_level value ("l2", "compute/fp32") -> ceiling label
};

CeilingLines ceiling_lines(const RooflineFrame& fr) {
  static const char* palette[] = {"#4c78a8", "#54a24b", "#e45756", "#f58518", "#b279a2",
                                  "#9d755d", "#72b7b2", "#eeca3b", "#ff9da6", "#bab0ac"};
  CeilingLines cl;
  auto add_colour = [&](const std::string& label) {
    cl.range.push_back(palette[cl.domain.size() % (sizeof palette / sizeof *palette)]);
    cl.domain.push_back(label);
  };
  const double x0 = fr.x0, x1 = fr.x1, y0 = fr.y0;
  const double x_decades = std::log10(x1 / x0), y_decades = std::log10(fr.y1 / y0);
  // On log-log axes a bandwidth diagonal (y = bw × x) has slope 1 decade per decade: its angle on screen.
  const double diagonal_deg =
      -std::atan((kChartHeight / y_decades) / (kChartWidth / x_decades)) * 180.0 / std::numbers::pi;
  for (std::size_t i = 0; i < fr.bandwidths.size(); ++i) {
    const auto& [l, bw] = fr.bandwidths[i];
    const std::string label = bandwidth_label(l, *bw);
    add_colour(label);
    cl.level_label[std::string(to_string(l))] = label;
    const double end = fr.top_peak > 0 ? std::min(x1, fr.top_peak / bw->value) : x1;
    cl.lines.push_back({{"ai", x0}, {"flops_per_s", bw->value * x0}, {"ceiling", label}});
    cl.lines.push_back({{"ai", end}, {"flops_per_s", bw->value * end}, {"ceiling", label}});
    // The label sits on its diagonal, a little right of where the line enters the plot; the levels are
    // staggered along x so that neighbouring diagonals' labels do not overlap.
    const double enter = std::max(x0, y0 / bw->value);
    const double at = enter * std::pow(10.0, x_decades * (0.04 + 0.1 * static_cast<double>(i)));
    if (at < end)
      cl.labels.push_back({{"ai", at},
                           {"flops_per_s", bw->value * at},
                           {"ceiling", label},
                           {"text", label},
                           {"angle", diagonal_deg},
                           {"align", "left"}});
  }
  for (const Ceiling* pk : fr.peaks) {
    const std::string label = peak_label(*pk);
    add_colour(label);
    cl.level_label["compute/" + pk->name] = label;
    const double start = fr.max_bw > 0 ? std::max(x0, pk->value / fr.max_bw) : x0;
    cl.lines.push_back({{"ai", start}, {"flops_per_s", pk->value}, {"ceiling", label}});
    cl.lines.push_back({{"ai", x1}, {"flops_per_s", pk->value}, {"ceiling", label}});
    cl.labels.push_back({{"ai", x1},
                         {"flops_per_s", pk->value},
                         {"ceiling", label},
                         {"text", label},
                         {"angle", 0},
                         {"align", "right"}});
  }
  return cl;
}

// Each point takes the colour of the ceiling that binds it (hierarchical rule, the table's binding_level); points
// whose ceiling was not drawn get a grey "binding ceiling unknown".
void colour_points(nlohmann::json& points, CeilingLines& cl) {
  const std::string unknown = "binding ceiling unknown";
  bool any_unknown = false;
  for (auto& p : points) {
    std::string key = p.value("binding_level", "");
    if (key == "compute") key += "/" + p.value("precision", "");
    auto it = cl.level_label.find(key);
    if (it != cl.level_label.end()) {
      p["ceiling"] = it->second;
    } else {
      p["ceiling"] = unknown;
      any_unknown = true;
    }
  }
  if (any_unknown) {
    cl.domain.push_back(unknown);
    cl.range.push_back("#888888");
  }
}

nlohmann::json roofline_subtitle(const RooflineChart& chart, const MachineCeilings* ceilings,
                                 const std::vector<std::string>& batches) {
  nlohmann::json subtitle = nlohmann::json::array();
  // Short lines: vega without a canvas (vega-cli's SVG) sizes the chart by an estimate of 0.8 × font size per
  // character, so a long line widens the picture.
  subtitle.push_back(std::to_string(chart.drawn) + " of " + std::to_string(chart.rows) + " " + chart.what +
                     "s drawn at their arithmetic intensity at DRAM.");
  subtitle.push_back("Point colour: the ceiling that binds the " + chart.what + ", the tightest of");
  subtitle.push_back("L1, L2, DRAM and compute (hierarchical roofline, Yang et al. 2020).");
  if (!chart.left_out.empty()) {
    std::size_t n = 0;
    for (const auto& [reason, count] : chart.left_out) n += count;
    subtitle.push_back(std::to_string(n) + " of " + std::to_string(chart.rows) + " " + chart.what +
                       "s left out (log axes have no place for them):");
    for (const auto& [reason, count] : chart.left_out) subtitle.push_back("– " + std::to_string(count) + " " + reason);
  }
  if (ceilings == nullptr) subtitle.push_back("no measured ceilings for this machine: points only");
  if (batches.size() > 1) {
    std::string b;
    for (const auto& s : batches) b += (b.empty() ? "" : ", ") + s;
    subtitle.push_back("batch sizes " + b + " (in the tooltip)");
  }
  return subtitle;
}

nlohmann::json point_tooltip(const std::string& who, bool several_batches) {
  nlohmann::json tooltip = nlohmann::json::array();
  tooltip.push_back({{"field", "name"}, {"title", who}});
  tooltip.push_back({{"field", "layer"}, {"title", "layer"}});
  tooltip.push_back({{"field", "binding_level"}, {"title", "binding level"}});
  tooltip.push_back({{"field", "bound"}, {"title", "bound"}});
  tooltip.push_back(
      {{"field", "percent_of_roof"}, {"type", "quantitative"}, {"title", "% of roof"}, {"format", ".3~g"}});
  tooltip.push_back(
      {{"field", "ai"}, {"type", "quantitative"}, {"title", "AI at DRAM (FLOP/byte)"}, {"format", ".3~g"}});
  tooltip.push_back(
      {{"field", "flops_per_s"}, {"type", "quantitative"}, {"title", "achieved (FLOP/s)"}, {"format", ".3~s"}});
  tooltip.push_back(
      {{"field", "attainable_flops_per_s"}, {"type", "quantitative"}, {"title", "roof (FLOP/s)"}, {"format", ".3~s"}});
  tooltip.push_back({{"field", "precision"}, {"title", "precision"}});
  if (several_batches) tooltip.push_back({{"field", "batch"}, {"title", "batch size"}});
  return tooltip;
}

// The shared x and y encodings: log scales over the frame's decades, one tick per decade.
nlohmann::json roofline_axes(const RooflineFrame& fr) {
  const nlohmann::json x_scale = {{"type", "log"}, {"domain", {fr.x0, fr.x1}}};
  const nlohmann::json y_scale = {{"type", "log"}, {"domain", {fr.y0, fr.y1}}};
  const nlohmann::json x_axis = {{"title", "arithmetic intensity at DRAM (FLOP/byte)"},
                                 {"format", "~g"},
                                 {"values", decades(fr.x0, fr.x1)},
                                 {"grid", true}};
  const nlohmann::json y_axis = {
      {"title", "performance (FLOP/s)"}, {"format", "~s"}, {"values", decades(fr.y0, fr.y1)}, {"grid", true}};
  // x and y are shared by every layer (one scale and one axis each): every layer's data has "ai" and "flops_per_s".
  const nlohmann::json x = {{"field", "ai"}, {"type", "quantitative"}, {"scale", x_scale}, {"axis", x_axis}};
  const nlohmann::json y = {{"field", "flops_per_s"}, {"type", "quantitative"}, {"scale", y_scale}, {"axis", y_axis}};
  return {{"x", x}, {"y", y}};
}

// The layers: ceiling lines, diagonal labels, peak labels, points.
nlohmann::json roofline_layers(const CeilingLines& cl, const RooflinePoints& rp, const nlohmann::json& tooltip) {
  const nlohmann::json color = {{"field", "ceiling"},
                                {"type", "nominal"},
                                {"scale", {{"domain", cl.domain}, {"range", cl.range}}},
                                {"legend",
                                 {{"title", "ceiling (point colour: the ceiling that binds it)"},
                                  {"orient", "bottom"},
                                  {"columns", 3},
                                  {"labelLimit", 320},
                                  {"titleLimit", 600}}}};
  nlohmann::json layers = nlohmann::json::array();
  layers.push_back({{"data", {{"values", cl.lines}}},
                    {"mark", {{"type", "line"}, {"clip", true}, {"strokeWidth", 2}}},
                    {"encoding", {{"detail", {{"field", "ceiling"}}}, {"color", color}}}});
  // The labels: along the diagonals (left-aligned, rotated) and at the right end of the peaks (right-aligned).
  for (const char* align : {"left", "right"}) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& l : cl.labels)
      if (l["align"] == align) values.push_back(l);
    layers.push_back({{"data", {{"values", values}}},
                      {"mark",
                       {{"type", "text"},
                        {"align", align},
                        {"baseline", "bottom"},
                        {"dy", -3},
                        {"fontSize", 12},
                        {"fontWeight", "bold"}}},
                      {"encoding",
                       {{"text", {{"field", "text"}}},
                        {"angle", {{"field", "angle"}, {"type", "quantitative"}, {"scale", nullptr}}},
                        {"color", color}}}});
  }
  nlohmann::json point_encoding = {{"color", color}, {"tooltip", tooltip}};
  if (!rp.precisions.empty())
    point_encoding["shape"] = {
        {"field", "precision"}, {"type", "nominal"}, {"legend", {{"title", "precision"}, {"orient", "bottom"}}}};
  layers.push_back({{"data", {{"values", rp.points}}},
                    {"mark",
                     {{"type", "point"},
                      {"filled", true},
                      {"size", 60},
                      {"opacity", 0.85},
                      {"stroke", "black"},
                      {"strokeWidth", 0.5}}},
                    {"encoding", point_encoding}});
  return layers;
}

}  // namespace

RooflineChart make_roofline_chart(const std::vector<Table>& tables, const MachineCeilings* ceilings) {
  RooflinePoints rp;
  for (const Table& t : tables) add_table_points(t, rp);
  RooflineChart chart;
  chart.rows = rp.rows;
  chart.what = rp.kind == "A14" ? "layer" : "kernel";
  chart.drawn = rp.points.size();
  chart.left_out.assign(rp.left_out.begin(), rp.left_out.end());

  const RooflineFrame frame = roofline_frame(rp, ceilings);
  CeilingLines lines = ceiling_lines(frame);
  colour_points(rp.points, lines);
  const nlohmann::json subtitle = roofline_subtitle(chart, ceilings, rp.batches);
  const nlohmann::json title = {
      {"text", (rp.kind == "A14" ? "Layer roofline (A14)" : "Kernel roofline (A9)") +
                   std::string(ceilings != nullptr ? " — " + ceilings->gpu_name + " on " + ceilings->hostname : "")},
      {"subtitle", subtitle},
      {"anchor", "start"}};
  chart.spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
      {"title", title},
      {"width", kChartWidth},
      {"height", kChartHeight},
      {"background", "white"},
      {"encoding", roofline_axes(frame)},
      {"layer", roofline_layers(lines, rp, point_tooltip(chart.what, rp.batches.size() > 1))},
  };
  chart.spec["description"] = chart.left_out.empty() ? subtitle[0].get<std::string>()
                                                     : subtitle[0].get<std::string>() + " " + chart.left_out_note();
  return chart;
}

nlohmann::json roofline_chart(const std::vector<Table>& tables, const MachineCeilings* ceilings) {
  return make_roofline_chart(tables, ceilings).spec;
}

}  // namespace xsp
