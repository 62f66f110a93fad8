// Roofline arithmetic for the HARDWARE-level analyses (SPEC §1 "arithmetic intensity", "roofline"; §4 A8, A9, A12,
// A14, A15 and the hierarchical roofline).
//
// Sources:
//  - S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual performance model for multicore
//    architectures", Communications of the ACM 52(4), 2009: attainable FLOP/s = min(peak FLOP/s, bandwidth × AI),
//    ridge point = peak / bandwidth; a kernel left of the ridge (AI < ridge) is memory-bound.
//  - C. Yang, T. Kurth, S. Williams, "Hierarchical Roofline analysis for GPUs: accelerating performance
//    optimization for the NERSC-9 Perlmutter system", Concurrency and Computation: Practice and Experience 32(20),
//    2020: one arithmetic intensity per memory level (L1, L2, DRAM), each against that level's bandwidth.
//
// Units: FLOPs (floating-point operations, an FMA counts 2), bytes, seconds; FLOP/s and bytes/s; arithmetic
// intensity in FLOP/byte. Counter values are those of xsp/profilers/hardware_counters.h (names like fp32_flops,
// dram_read_bytes).
//
// Which compute peak applies to a kernel (the "precision rule"): the compute ceiling of the kernel's dominant
// precision, i.e. of the FLOP counter with the most FLOPs (ties: the first in hw::flop_counters() order, which
// puts CUDA-core before tensor counters). A tensor-core GEMM with an FP32 epilogue is therefore judged against the
// tensor_fp16 peak, an elementwise FP32 kernel against the fp32 peak. Counter → ceiling name: fp64_flops → "fp64",
// fp32_flops → "fp32", fp16_flops → "fp16", tensor_<p>_flops → "tensor_<p>" (the names of xsp::Ceiling). A
// kernel's FLOPs of other precisions still count in its FLOPs and AI: the rule only picks the roof.
//
// Every ceiling comes from MachineCeilings measured on the machine (`xsp machine ceilings`), never a datasheet.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xsp/analysis/table.h"
#include "xsp/record/ceilings.h"
#include "xsp/record/record.h"

namespace xsp {

/// Counter values of one kernel or of an aggregate: hardware counter name (hw::CounterDef::name) → value.
using CounterValues = std::map<std::string, double>;

/// A memory level of the hierarchical roofline, outermost last.
enum class MemoryLevel { kL1, kL2, kDram };
inline constexpr MemoryLevel kMemoryLevels[] = {MemoryLevel::kL1, MemoryLevel::kL2, MemoryLevel::kDram};
/// The level's memory ceiling name in MachineCeilings: "l1", "l2", "dram".
std::string_view to_string(MemoryLevel level);

/// Bytes moved at `level`: DRAM = dram_read_bytes + dram_write_bytes (both needed), L2 = l2_bytes,
/// L1 = l1_bytes. std::nullopt when a needed counter is absent.
std::optional<double> level_bytes(const CounterValues& counters, MemoryLevel level);

/// Arithmetic intensity (FLOP/byte) = flops / bytes. std::nullopt when bytes <= 0 or either value is not finite
/// (no traffic: the intensity is undefined, not infinite).
std::optional<double> arithmetic_intensity(double flops, double bytes);

/// Attainable FLOP/s = min(peak_flops_per_s, bandwidth_bytes_per_s × ai) (Williams et al. 2009).
double attainable_flops_per_s(double peak_flops_per_s, double bandwidth_bytes_per_s, double ai);

/// Ridge point (FLOP/byte) = peak_flops_per_s / bandwidth_bytes_per_s: the AI above which the peak, not the
/// bandwidth, limits. Throws std::invalid_argument when the bandwidth is not positive.
double ridge_point(double peak_flops_per_s, double bandwidth_bytes_per_s);

enum class Bound { kMemory, kCompute };
/// "memory" | "compute".
std::string_view to_string(Bound bound);
/// Memory-bound when ai < ridge, else compute-bound (SPEC §4; a kernel exactly at the ridge is compute-bound).
Bound classify(double ai, double ridge);

/// The compute-ceiling name for a FLOP counter ("tensor_fp16_flops" → "tensor_fp16"); "" for a non-FLOP counter.
std::string compute_ceiling_for(std::string_view flop_counter);

/// The compute ceiling the precision rule (top of this file) picks for `counters`; std::nullopt when no FLOP
/// counter is present or all of them are zero.
std::optional<std::string> dominant_precision(const CounterValues& counters);

/// Mean of values weighted by weights (SPEC §4: occupancy aggregates as the latency-weighted mean). Pairs are
/// (value, weight); pairs with a non-finite value or a non-finite or negative weight are skipped. std::nullopt
/// when the weights left sum to 0.
std::optional<double> weighted_mean(const std::vector<std::pair<double, double>>& values_and_weights);

/// Counters of several kernels aggregated by SPEC §4's rules: counters whose hw::CounterDef::aggregation is "sum"
/// (FLOPs, bytes) are summed; "latency_weighted_mean" ones (percentages) are averaged weighted by each kernel's
/// latency. A counter absent from a kernel contributes nothing; a latency_weighted_mean counter of a kernel
/// without a known latency is left out of the mean (counted in unweighted()). Unknown counter names are summed.
class CounterAggregate {
 public:
  /// Adds one kernel: its counter values and its latency (ns) from the M/F/K run (std::nullopt when unknown).
  void add(const CounterValues& counters, std::optional<double> latency_ns);
  /// The aggregate: sums and weighted means (a mean counter whose weights sum to 0 is absent).
  CounterValues values() const;
  std::size_t kernels() const { return kernels_; }
  /// Kernels whose mean counters were left out because their latency was unknown.
  std::size_t unweighted() const { return unweighted_; }

 private:
  std::map<std::string, double> sums_;
  std::map<std::string, std::vector<std::pair<double, double>>> weighted_;
  std::size_t kernels_ = 0, unweighted_ = 0;
};

/// What limits a kernel in the hierarchical roofline: one of the memory levels, or the compute peak.
enum class BindingLevel { kL1, kL2, kDram, kCompute };
/// "l1" | "l2" | "dram" | "compute" (the values of the binding_level / limiting columns).
std::string_view to_string(BindingLevel level);
/// The memory level as a BindingLevel.
BindingLevel binding_level_of(MemoryLevel level);

/// The verdict of the hierarchical roofline rule for one point.
struct HierarchicalBound {
  BindingLevel level = BindingLevel::kCompute;  ///< the binding ceiling
  Bound bound = Bound::kCompute;                ///< kMemory when `level` is a memory level
  double attainable_flops_per_s = 0;            ///< the tightest roof, FLOP/s (0 for a point without FLOPs)
};

/// THE bound rule of every XSP analysis (A8, A9, A12, A14, A15, roofline-hier): the hierarchical roofline of
/// C. Yang, T. Kurth, S. Williams, "Hierarchical Roofline analysis for GPUs: accelerating performance optimization
/// for the NERSC-9 Perlmutter system", Concurrency and Computation: Practice and Experience 32(20), 2020, e5547:
///
///     attainable_level = min(peak FLOP/s, AI_level × bandwidth_level)     for level in {L1, L2, DRAM}
///     attainable       = min over the levels            (the tightest of L1, L2, DRAM and compute)
///     binding level    = the memory level whose AI_level × bandwidth_level is strictly below the peak and below
///                        every other level's (ties: the innermost, L1 before L2 before DRAM); compute when no
///                        memory roof is below the peak (a point exactly at a ridge is compute-bound, SPEC §4).
///
/// Units: `flops` FLOPs; `peak_flops_per_s` FLOP/s; `level_bytes[l]` bytes moved at level l (indexed by
/// MemoryLevel; std::nullopt = not measured, the level is left out); `bandwidth_bytes_per_s[l]` bytes/s
/// (std::nullopt or <= 0 = no measured ceiling, left out). AI_level = flops / bytes (FLOP/byte); a level with
/// no traffic (bytes = 0) has no roof.
/// A point without FLOPs (flops = 0, e.g. a transpose or copy) has AI 0 at every level: it is memory-bound and
/// the binding level is the one whose traffic takes longest (largest bytes / bandwidth: for flops > 0 that is
/// the same argmin, since AI × bandwidth = flops / (bytes / bandwidth)); its attainable FLOP/s is 0 and the peak
/// may be unknown.
/// std::nullopt when nothing can be decided: flops unknown, negative or not finite; flops > 0 with no peak
/// (a precision the machine has no ceiling for); or no level with both traffic and bandwidth.
std::optional<HierarchicalBound> hierarchical_bound(std::optional<double> flops, std::optional<double> peak_flops_per_s,
                                                    const std::optional<double> (&level_bytes)[3],
                                                    const std::optional<double> (&bandwidth_bytes_per_s)[3]);

/// Per memory level of one roofline point.
struct LevelPoint {
  std::optional<double> ai;                      ///< FLOP/byte at this level
  std::optional<double> bandwidth_bytes_per_s;   ///< measured ceiling of this level
  std::optional<double> ridge;                   ///< peak / bandwidth
  std::optional<double> attainable_flops_per_s;  ///< min(peak, bandwidth × ai)
  std::optional<Bound> bound;                    ///< ai vs ridge of this level alone (roofline-hier's bound_<level>)
};

/// A kernel (or aggregate) placed on the (hierarchical) roofline of a machine.
struct RooflinePoint {
  std::optional<double> flops;                 ///< hw::total_flops of the counters
  std::optional<std::string> precision;        ///< compute ceiling name by the precision rule
  std::optional<double> peak_flops_per_s;      ///< that ceiling's measured value, when the machine has it
  std::optional<double> achieved_flops_per_s;  ///< flops / latency (latency from the M/F/K run)
  LevelPoint levels[3];                        ///< indexed by MemoryLevel (L1, L2, DRAM)
  const LevelPoint& at(MemoryLevel l) const { return levels[static_cast<int>(l)]; }
  /// hierarchical_bound() of this point: the binding level (l1/l2/dram/compute), memory|compute, and the
  /// attainable FLOP/s of the tightest roof. std::nullopt when it cannot be decided (see hierarchical_bound()).
  std::optional<HierarchicalBound> binding;
  /// 100 × achieved / binding->attainable_flops_per_s (% of the tightest roof); std::nullopt when either is
  /// unknown or the attainable is 0.
  std::optional<double> percent_of_roofline;
};

/// Places `counters` on the roofline of `ceilings` (nullptr: intensities only; peaks, ridges, bounds stay empty).
/// `latency_ns` (from the M/F/K run, never the counter run) gives the achieved FLOP/s. A kernel with FLOPs = 0 and
/// traffic has AI 0 and is memory-bound at every level whose bandwidth is known, whatever the peak. `binding` is
/// hierarchical_bound() of the point's FLOPs, peak, level bytes and the machine's l1/l2/dram ceilings.
RooflinePoint roofline_point(const CounterValues& counters, const MachineCeilings* ceilings,
                             std::optional<double> latency_ns);

// ---------------------------------------------------------------------------------------------------------
// The machine an evaluation ran on, and its ceilings
// ---------------------------------------------------------------------------------------------------------

/// Host and GPU of an evaluation, from its system description (system.host.hostname; system.gpu[i].name and
/// .uuid, where i is the device ordinal of EvaluationRecord::device "cuda:i", 0 for "cuda"). Empty fields are
/// unknown.
struct MachineIdentity {
  std::string hostname, gpu_name, gpu_uuid;
};
MachineIdentity evaluation_machine(const EvaluationRecord& record);

/// The note of every roofline table without ceilings: "no measured ceilings for GPU <name> on host <host>: run
/// `xsp machine ceilings` on that machine" ("unknown GPU" / "unknown host" for empty fields).
std::string no_ceilings_note(const MachineIdentity& machine);

/// Picks the ceilings of `machine` among `stored` (any order): the latest measured_at among those with the same
/// gpu_uuid when both sides know it; else with the same hostname and gpu_name; when the evaluation does not know
/// its GPU's name, the latest of its hostname provided all of that host's ceilings are of one GPU name. Returns
/// nullptr when none fits. `note` (optional) receives what was matched on, or why nothing was.
const MachineCeilings* select_ceilings(const std::vector<MachineCeilings>& stored, const MachineIdentity& machine,
                                       std::string* note = nullptr);

/// MachineCeilings as JSON: {"hostname", "gpu_name", "gpu_uuid", "measured_at", "clocks_note",
/// "ceilings": [{"name", "value", "unit", "method"}]} (the form of `xsp machine ceilings --export/--import`).
nlohmann::json to_json(const MachineCeilings& ceilings);
/// Parses to_json()'s form. Throws std::invalid_argument naming the field, the value and what was expected (missing
/// hostname or gpu_name; a measured_at that is not an ISO-8601 UTC time YYYY-MM-DDTHH:MM:SSZ of a real date, or is
/// more than a day after `now`: the store picks the latest measurement by comparing measured_at as text, so "9999"
/// would win for ever; a ceiling without name, a non-positive or non-numeric value, an unknown unit).
MachineCeilings machine_ceilings_from_json(
    const nlohmann::json& j, std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

/// Seconds since 1970-01-01T00:00:00Z of `text` when it is exactly an ISO-8601 UTC time YYYY-MM-DDTHH:MM:SSZ of a
/// real date and time (month 1-12, a day the month has, leap years included; hour 0-23, minute and second 0-59),
/// std::nullopt otherwise. Never throws.
std::optional<std::int64_t> parse_utc_time(std::string_view text);

/// `xsp machine ceilings`' table (id "ceilings"): ceiling, kind (compute|memory), value (TFLOP/s, TOP/s or
/// GB/s: value_unit says which), value_unit, ridge_dram / ridge_l2 / ridge_l1 (FLOP/byte, compute ceilings, when
/// that bandwidth was measured), method. Title names the GPU, host and time; notes the clocks.
Table machine_ceilings_table(const MachineCeilings& ceilings);

// ---------------------------------------------------------------------------------------------------------
// Chart
// ---------------------------------------------------------------------------------------------------------

/// The roofline chart of A9 or A14 tables, and what it could not draw.
struct RooflineChart {
  /// A Vega-Lite v5 spec (https://vega.github.io/schema/vega-lite/v5.json), docs/roofline.md:
  ///  - log-log axes, whole decades, one tick per decade: x = arithmetic intensity at DRAM (FLOP/byte, d3 format
  ///    "~g"), y = performance (FLOP/s, SI format "~s": 10G, 1T, 100T);
  ///  - one line, colour and text label per ceiling: the L1, L2 and DRAM bandwidth diagonals (bandwidth × AI, up
  ///    to the highest peak drawn; label "L2 7.33 TB/s") and the peak of every precision of the points
  ///    (horizontal from its ridge with the fastest memory level; label "fp32 peak 64.7 TFLOP/s");
  ///  - one point per drawable row at (ai_dram, achieved_flops_per_s), coloured like the ceiling that binds it
  ///    (the row's binding_level; "compute" → its precision's peak), shaped by precision; tooltip: name, layer,
  ///    binding level, bound, % of roof, AI, achieved and attainable FLOP/s, precision (and batch size when the
  ///    tables are of several batch sizes);
  ///  - title naming the GPU and host, subtitle saying how many rows were drawn and, by reason, how many were
  ///    left out (left_out_note()).
  nlohmann::json spec;
  std::string what = "kernel";  ///< "kernel" (A9) or "layer" (A14)
  std::size_t rows = 0;         ///< rows of the tables
  std::size_t drawn = 0;        ///< points drawn
  /// Rows left out, by reason ("with no FLOPs (AI 0, 0 FLOP/s)", "without DRAM traffic (AI at DRAM undefined)",
  /// "without a latency (achieved FLOP/s unknown)", "without FLOP counters"): a log axis has no place for 0 or
  /// an unknown value.
  std::vector<std::pair<std::string, std::size_t>> left_out;
  /// "18 of 102 kernels left out (log axes have no place for them): 18 with no FLOPs (AI 0, 0 FLOP/s)"; "" when
  /// none was.
  std::string left_out_note() const;
};

/// Draws the A9 or A14 tables `tables` (columns ai_dram, achieved_flops_per_s, gflops, precision, binding_level,
/// bound, percent_of_roofline, attainable_flops_per_s, layer_index, and kernel_name or layer_name) against
/// `ceilings` (nullptr: points only, grey). Throws std::invalid_argument when a table is not A9 or A14, when A9
/// and A14 are mixed, or when a table lacks ai_dram or achieved_flops_per_s. A chart with no point is returned
/// as is (drawn == 0): the caller decides whether that is an error (`xsp analyze --chart` says it is).
RooflineChart make_roofline_chart(const std::vector<Table>& tables, const MachineCeilings* ceilings);

/// make_roofline_chart(tables, ceilings).spec.
nlohmann::json roofline_chart(const std::vector<Table>& tables, const MachineCeilings* ceilings);

}  // namespace xsp
