// How long to warm up and how long to measure, so that a latency is a result (SPEC §3 "Stability").
//
// A *phase* measures one or more trace levels of one batch size in the same process and time span. It is
// made of *rounds*; a round runs one *block* (a run of consecutive batches with that level's profilers on) of
// every level of the phase, in the order L0, L1, ... in even rounds and reversed in odd ones (AB, BA, AB, ...),
// so that machine drift hits every level alike and a linear drift cancels over each pair of rounds. Two rounds
// make a *window*, the unit of the stability rule.
//
//  1. Warm-up (never measured, never traced). Rounds of blocks of about `warmup_block_ms` each (default
//     warmup_min_ms / (K × levels), so that the last K blocks of a level span about warmup_min_ms and a slow
//     transient shows as disagreement between them), until, for every
//     level, at least `warmup_min_batches` batches ran, `warmup_min_ms` passed, and the medians of its last
//     `rule.windows` warm-up blocks agree within `rule.tolerance` ((max − min) / mean, the stability rule):
//     the steady state. At `warmup_max_ms` the warm-up ends anyway and the run records that it did not
//     converge. With warmup_max_ms == 0 the warm-up is exactly `warmup_min_batches` batches per level.
//  2. Block size. b = max(1, ceil(min_batches / (2K)), round(min_duration_ms / (2K · warm-up median))), K =
//     rule.windows, so that the last K windows (2K rounds) hold at least min_batches batches and last about
//     min_duration_ms per level. Without a warm-up the duration term is left out.
//  3. Measurement. Rounds until, for every level, `min_batches` batches and `min_duration_ms` of measured time
//     (the sum of its batches' predict latencies: the harness's own time, such as decoding inputs, does not
//     count) are reached, then window by window until the last K windows of every level are stable or a level has
//     been measured for `max_duration_ms` (then the verdict is "unstable"; with fewer than K windows, "not
//     assessed"). As in Triton perf_analyzer, the *result* is the last K windows: earlier windows were still
//     settling and are kept only as window medians in the record.
//
// Levels that can be switched on and off in one process (M, M/F) share a phase. CUPTI's tracing never fully
// leaves a process, so its levels (M/F/L, M/F/S, M/F/K) go into a second phase after every first phase, where
// they alternate with M/F and M blocks that share CUPTI's leftover state: the kernel level's overhead is taken
// against those M/F blocks, and the M blocks measure how far the model latency moved since the first phase
// (drift and CUPTI's residue together). docs/measurement.md gives the reasons and the figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/stats/stability.h"

namespace xsp {

/// A request (or options) field with a value outside what it accepts. what() is "FIELD: expected ..., got ...";
/// field() is the field's JSON key path, e.g. "measurement.min_batches", "batch_sizes", "scenario.target_qps",
/// which front ends map onto their own names (the CLI onto its flags).
class RequestError : public std::invalid_argument {
 public:
  RequestError(std::string field, const std::string& message)
      : std::invalid_argument(field + ": " + message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

/// Source of time for everything the runner times (spans, block and phase durations). Tests inject a fake one
/// that a fake predictor advances, which makes every decision of the measurement reproducible.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Nanoseconds on a monotonic clock.
  virtual std::int64_t now_ns() const = 0;
};
/// CLOCK_MONOTONIC (xsp::now_ns()).
const Clock& system_clock();

/// Order of the levels of a phase.
enum class LevelOrder {
  kInterleaved,  ///< rounds of blocks, AB BA AB ... (default)
  kSequential,   ///< each level measured on its own, one after the other (the order before stability; drift
                 ///< between levels then reads as overhead: kept to show that, and for comparison)
};
std::string_view to_string(LevelOrder order);
/// "interleaved" | "sequential"; throws std::invalid_argument naming the expected values.
LevelOrder parse_level_order(std::string_view text);

/// Warm-up, measurement and stability settings (the defaults are XSP's; docs/measurement.md).
struct MeasurementOptions {
  int warmup_min_batches = 3;    ///< per level; `--warmup`
  double warmup_min_ms = 1000;   ///< `--warmup-min-ms`
  double warmup_max_ms = 10000;  ///< `--warmup-max-ms`; 0 = exactly warmup_min_batches
  /// Target length of a warm-up block (convergence is judged per block); 0 = warmup_min_ms / (K × levels),
  /// at least 10 ms.
  double warmup_block_ms = 0;
  int min_batches = 10;  ///< per level; `--min-batches` (LoadGen's min_query_count)
  /// Per level, of measured (predict) time; `--min-duration-ms` (LoadGen's min_duration, trtexec --duration).
  double min_duration_ms = 1000;
  /// Per level, of measured (predict) time; `--max-duration-ms`; below the minimums: the minimums win.
  double max_duration_ms = 10000;
  StabilityRule rule;                           ///< `--stability-windows`, `--stability-tolerance`
  LevelOrder order = LevelOrder::kInterleaved;  ///< `--level-order`
  /// Traced runs keep the spans of their last blocks up to this many batches (at least one block); the
  /// profilers stay on for every block so that timings are unchanged; `--trace-batches`.
  int max_traced_batches = 100;
  bool operator==(const MeasurementOptions&) const = default;
};
/// The longest any duration of MeasurementOptions may be (a day, in ms), and the most batches any of its counts
/// may ask for: beyond them a value is a typo or an attempt to keep a shared server busy, not a measurement.
inline constexpr std::int64_t kMaxMeasurementMs = 24ll * 3600 * 1000;
inline constexpr int kMaxMeasurementBatches = 10'000'000;
/// Throws RequestError with field "measurement.<key of to_json()>" and the expected range (durations within
/// kMaxMeasurementMs, counts within kMaxMeasurementBatches).
void validate(const MeasurementOptions& options);
nlohmann::json to_json(const MeasurementOptions& options);
/// Missing keys keep their defaults; an unknown key, a wrong type or a number outside the field's type (a float for
/// a count) throws RequestError naming the key.
MeasurementOptions measurement_options_from_json(const nlohmann::json& j);

/// What a phase drives. Levels are indexes 0..n−1 of the phase (0 = shallowest). Called on one thread.
class BlockExecutor {
 public:
  virtual ~BlockExecutor() = default;
  /// Switch on level `level`'s profilers (measured blocks only get recorded).
  virtual void begin_block(std::size_t level, bool warmup) = 0;
  /// Runs one batch of `level` and returns its predict latency (ns).
  virtual double run_batch(std::size_t level, bool warmup) = 0;
  /// Switch them off again.
  virtual void end_block(std::size_t level, bool warmup) = 0;
  /// Progress: called after every block with the phase's batches done and the current estimate of the total.
  virtual void progress(std::size_t done, std::size_t total, std::string_view what) {
    (void)done, (void)total, (void)what;
  }
};

/// One measured block.
struct MeasuredBlock {
  std::size_t round = 0;
  std::int64_t start_ns = 0, duration_ns = 0;  ///< wall time of the whole block (pipeline and profiler switches)
  std::vector<double> latencies_ns;            ///< predict latency of each batch
  double median_ns = 0;
  bool operator==(const MeasuredBlock&) const = default;
};

/// One level's share of a phase.
struct LevelMeasurement {
  int warmup_batches = 0;
  std::vector<double> warmup_block_medians_ns;
  std::vector<MeasuredBlock> blocks;   ///< every measured block, in time order
  std::size_t result_first_block = 0;  ///< blocks from here on are the result (the last K windows)
  StabilityAssessment stability;       ///< of the result windows
  /// Result batches in time order.
  std::vector<double> result_latencies_ns() const;
  /// Medians of the result blocks, in round order.
  std::vector<double> result_block_medians_ns() const;
};

struct PhaseResult {
  std::vector<LevelMeasurement> levels;
  std::int64_t warmup_ns = 0;
  bool warmup_converged = false;
  int batches_per_block = 0;
  std::size_t rounds = 0;       ///< measured rounds
  std::int64_t measure_ns = 0;  ///< wall time of the measured rounds
  bool reached_max_duration = false;
};

/// Runs one phase of `levels` levels (>= 1) with `options` (validated) on `clock`. The order is interleaved
/// whatever options.order says: sequential order is run as one phase per level by the caller.
PhaseResult run_phase(std::size_t levels, const MeasurementOptions& options, const Clock& clock,
                      BlockExecutor& executor);

}  // namespace xsp
