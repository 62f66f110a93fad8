// How both store backends turn record fields into column values and back (src/store/sqlite_store.cc,
// src/store/postgres): the byte layout of the latency and probability blobs and the JSON of summaries must be the
// same in SQLite and PostgreSQL, so that a record reads back identically from either. Not a public header.
#pragma once

#include <bit>
#include <cstdint>
#include <ctime>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "xsp/record/record.h"
#include "xsp/trace/serialize.h"
#include "xsp/util/time.h"

namespace xsp::store_columns {

/// What a NULL REAL / DOUBLE PRECISION column reads back as: a figure that does not exist.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Raw latencies as little-endian IEEE-754 doubles, written byte by byte so the file reads the same on any host.
inline std::vector<std::uint8_t> doubles_to_blob(const std::vector<double>& values) {
  std::vector<std::uint8_t> out(values.size() * 8);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto bits = std::bit_cast<std::uint64_t>(values[i]);
    for (int b = 0; b < 8; ++b) out[i * 8 + b] = static_cast<std::uint8_t>(bits >> (8 * b));
  }
  return out;
}

inline std::vector<double> doubles_from_blob(const std::uint8_t* data, std::size_t size) {
  std::vector<double> out(size / 8);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint64_t bits = 0;
    for (int b = 0; b < 8; ++b) bits |= static_cast<std::uint64_t>(data[i * 8 + b]) << (8 * b);
    out[i] = std::bit_cast<double>(bits);
  }
  return out;
}

inline std::vector<std::uint8_t> floats_to_blob(const std::vector<float>& values) {
  std::vector<std::uint8_t> out(values.size() * 4);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto bits = std::bit_cast<std::uint32_t>(values[i]);
    for (int b = 0; b < 4; ++b) out[i * 4 + b] = static_cast<std::uint8_t>(bits >> (8 * b));
  }
  return out;
}

inline std::vector<float> floats_from_blob(const std::uint8_t* data, std::size_t size) {
  std::vector<float> out(size / 4);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) bits |= static_cast<std::uint32_t>(data[i * 4 + b]) << (8 * b);
    out[i] = std::bit_cast<float>(bits);
  }
  return out;
}

/// `j` as column text. Invalid UTF-8 is replaced rather than refused: a stray byte in an environment variable must
/// not lose a run (and PostgreSQL would refuse it).
inline std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// The columns of a run that are encoded, as both backends store them: JSON text and little-endian blobs.
struct EncodedRun {
  std::string stage_latency_ns, counters, measurement, machine_state, warnings, generation;  ///< JSON text
  std::vector<std::uint8_t> predict_latency_ns;                                              ///< doubles_to_blob()
  std::vector<std::uint8_t> trace;                                                           ///< encode_trace()
  /// The outcome columns of schema 9 (xsp/store/schema.h): the scenario result's JSON (nullopt: NULL), the figures
  /// users query as typed columns (NaN: NULL) and whether the run met its bound (nullopt: no bound).
  std::optional<std::string> scenario_result;
  double qps = kNaN, latency_p99_ns = kNaN;
  double ttft_p50_ns = kNaN, ttft_p99_ns = kNaN, tpot_p50_ns = kNaN, tpot_p99_ns = kNaN, output_tokens_per_s = kNaN;
  std::optional<std::int64_t> meets_bound;
};
/// Encodes `run`'s columns. Throws what encode_trace() throws (the only step that can fail).
inline EncodedRun encode_run(const RunRecord& run) {
  EncodedRun e;
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [stage, summary] : run.stage_latency_ns) stages[stage] = to_json(summary);
  nlohmann::json counters = nlohmann::json::object();
  for (const auto& [name, value] : run.trace.counters) counters[name] = value;
  e.stage_latency_ns = json_text(stages);
  e.counters = json_text(counters);
  e.measurement = json_text(to_json(run.measurement));
  e.machine_state = json_text(run.machine_state);
  e.warnings = json_text(nlohmann::json(run.warnings));
  e.generation = json_text(run.generation ? to_json(*run.generation) : nlohmann::json::object());
  if (const auto& o = run.scenario_result) {
    e.scenario_result = json_text(to_json(*o));
    e.qps = o->qps_with_overhead;
    e.latency_p99_ns = o->p99_ns;
    if (o->scenario == "server" && o->latency_bound_ns > 0) e.meets_bound = o->meets_bound ? 1 : 0;
  }
  if (const auto& g = run.generation) {
    e.ttft_p50_ns = g->ttft_ns.p50;
    e.ttft_p99_ns = g->ttft_ns.p99;
    e.tpot_p50_ns = g->tpot_ns.p50;
    e.tpot_p99_ns = g->tpot_ns.p99;
    e.output_tokens_per_s = g->output_tokens_per_s;
    if (g->valid) e.meets_bound = *g->valid ? 1 : 0;
  }
  e.predict_latency_ns = doubles_to_blob(run.predict_latency_ns);
  e.trace = encode_trace(run.trace);
  return e;
}

/// Reads a run's outcome columns back: `generation` is the runs.generation text ("{}": not a generation run),
/// `scenario_result` the runs.scenario_result text (nullopt: NULL, not a scenario run). Throws
/// std::invalid_argument naming the column and the key that is not what encode_run() writes.
inline void decode_outcomes(RunRecord& run, const std::string& generation,
                            const std::optional<std::string>& scenario_result) {
  // The column's name is put in front once, by the catch below that covers both parsing and reading.
  auto parse = [](const std::string& text) {
    try {
      return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(std::string("not JSON: ") + e.what());
    }
  };
  try {
    const nlohmann::json g = parse(generation);
    if (!(g.is_object() && g.empty())) run.generation = generation_outcome_from_json(g);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("generation: ") + e.what());
  }
  if (scenario_result) {
    try {
      run.scenario_result = scenario_outcome_from_json(parse(*scenario_result));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("scenario_result: ") + e.what());
    }
  }
}

/// The task outputs of a prediction as the predictions.outputs column's JSON text (schema 7): "{}" for a
/// classification, {"detections": [[x1, y1, x2, y2, score, label], ...]} or {"mask": {"height", "width", "runs"}}.
inline std::string prediction_outputs(const InputPrediction& p) {
  nlohmann::json j = nlohmann::json::object();
  if (!p.detections.empty()) {
    auto d = nlohmann::json::array();
    for (const Detection& x : p.detections) d.push_back({x.x1, x.y1, x.x2, x.y2, x.score, x.label});
    j["detections"] = std::move(d);
  }
  if (p.mask.height > 0) j["mask"] = {{"height", p.mask.height}, {"width", p.mask.width}, {"runs", p.mask.runs}};
  return json_text(j);
}

/// Reads prediction_outputs() text back into `p`. Throws std::invalid_argument naming the field that is not what
/// prediction_outputs() writes.
inline void read_prediction_outputs(const nlohmann::json& j, InputPrediction& p) {
  if (!j.is_object()) throw std::invalid_argument("outputs: expected a JSON object");
  try {
    if (j.contains("detections")) {
      for (const auto& d : j.at("detections")) {
        if (!d.is_array() || d.size() != 6)
          throw std::invalid_argument("outputs.detections: expected [x1, y1, x2, y2, score, label]");
        p.detections.push_back({d[0].get<float>(), d[1].get<float>(), d[2].get<float>(), d[3].get<float>(),
                                d[4].get<float>(), d[5].get<int>()});
      }
    }
    if (j.contains("mask")) {
      const auto& m = j.at("mask");
      p.mask.height = m.at("height").get<int>();
      p.mask.width = m.at("width").get<int>();
      p.mask.runs = m.at("runs").get<std::vector<std::int32_t>>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("outputs: ") + e.what());
  }
}

}  // namespace xsp::store_columns
