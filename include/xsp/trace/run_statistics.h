// The registry of run statistics ("nothing is silent"): every count a run writes into Trace::counters (dropped
// records, unmatched markers, fused layers, collection times...), with its severity and what it means. Writers use
// the constants below, never a string literal; `xsp show` and the evaluation summary render the statistics with
// their severity from here, so that data losses stand out. Adding a statistic = a constant + a registry entry
// (docs/architecture.md); the tests check that every statistic a recorded run writes is registered.
// It sits in trace/ beside Trace::counters, which it describes, so that the assembler and the profilers use it
// without depending on record/ (xsp/trace/run_statistics.h only forwards here).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace xsp {

enum class Severity {
  kInfo,      ///< context: how much was recorded, what was left out on purpose, the profiler's own cost
  kDataLoss,  ///< records or spans the profiler lost or could not place: the trace is incomplete
  kError,     ///< something went wrong: the measurement itself may be wrong (inconsistent times, failed setup)
};

/// "info", "data loss", "error".
std::string_view to_string(Severity severity);

struct RunStatisticSpec {
  std::string key;  ///< Trace::counters name: "<source>.<what>", e.g. "cupti.dropped_records"
  Severity severity = Severity::kInfo;
  std::string meaning;         ///< one line: what is counted, and what to do about it when it matters
  std::string unit = "count";  ///< "count", or "ns" for the *_ns durations
};

/// Keys of the run statistics, grouped by the component that writes them.
namespace stat {
// FRAMEWORK profilers (LibTorch record-function observer, OpenCV DNN)
inline constexpr const char* kFrameworkDroppedSpans = "framework.dropped_spans";
inline constexpr const char* kFrameworkUnmatchedOpEnds = "framework.unmatched_op_ends";
inline constexpr const char* kFrameworkDetailMismatches = "framework.detail_mismatches";
inline constexpr const char* kFrameworkFusedLayers = "framework.fused_layers";
inline constexpr const char* kFrameworkLayerTimesExceedForward = "framework.layer_times_exceed_forward";
// CUPTI activity collection
inline constexpr const char* kCuptiRecords = "cupti.records";
inline constexpr const char* kCuptiUnknownRecords = "cupti.unknown_records";
inline constexpr const char* kCuptiDroppedRecords = "cupti.dropped_records";
inline constexpr const char* kCuptiBuffersCompleted = "cupti.buffers_completed";
inline constexpr const char* kCuptiBufferRequestsRefused = "cupti.buffer_requests_refused";
inline constexpr const char* kCuptiFilteredApiRecords = "cupti.filtered_api_records";
inline constexpr const char* kCuptiExternalCorrelationErrors = "cupti.external_correlation_errors";
inline constexpr const char* kCuptiForeignExternalCorrelations = "cupti.foreign_external_correlations";
inline constexpr const char* kCuptiUnmatchedMarkerEnds = "cupti.unmatched_marker_ends";
inline constexpr const char* kCuptiUnclosedMarkers = "cupti.unclosed_markers";
inline constexpr const char* kCuptiIgnoredMarkers = "cupti.ignored_markers";
inline constexpr const char* kCuptiInvalidBufferTails = "cupti.invalid_buffer_tails";
inline constexpr const char* kCuptiOrphanActivities = "cupti.orphan_activities";
inline constexpr const char* kCuptiOverheadNs = "cupti.overhead_ns";
// Hardware-counter runs
inline constexpr const char* kCountersRanges = "counters.ranges";
inline constexpr const char* kCountersPasses = "counters.passes";
inline constexpr const char* kCountersSetupNs = "counters.setup_ns";
inline constexpr const char* kCountersCollectionNs = "counters.collection_ns";
inline constexpr const char* kCountersDroppedRanges = "counters.dropped_ranges";
inline constexpr const char* kCountersUnmatchedRanges = "counters.unmatched_ranges";
inline constexpr const char* kCountersUnmatchedLaunches = "counters.unmatched_launches";
inline constexpr const char* kCountersMismatchedPasses = "counters.mismatched_passes";
inline constexpr const char* kCountersMissingPasses = "counters.missing_passes";
inline constexpr const char* kCountersGraphLaunchesNotProfiled = "counters.graph_launches_not_profiled";
inline constexpr const char* kCountersUnavailable = "counters.unavailable";
inline constexpr const char* kCountersOtherContextLaunches = "counters.other_context_launches";
// Trace assembly and the trace budget
inline constexpr const char* kAssemblerNegativeDuration = "assembler.negative_duration";
// CUDA graph replay attribution (graph_replay.h)
inline constexpr const char* kCudaGraphReplayedActivities = "cuda_graph.replayed_activities";
inline constexpr const char* kCudaGraphAttributedActivities = "cuda_graph.attributed_activities";
inline constexpr const char* kCudaGraphCapturedBeforeProfiling = "cuda_graph.captured_before_profiling";
inline constexpr const char* kCudaGraphUnknownCaptureContext = "cuda_graph.unknown_capture_context";
inline constexpr const char* kTraceUntracedBatches = "trace.untraced_batches";
inline constexpr const char* kTraceDiscardedSpans = "trace.discarded_spans";
inline constexpr const char* kTraceStrippedForFixture = "trace.stripped_for_fixture";
// Scenario runs (tail-query traces)
inline constexpr const char* kScenarioTracedQueries = "scenario.traced_queries";
inline constexpr const char* kScenarioKeptQueryTraces = "scenario.kept_query_traces";
inline constexpr const char* kScenarioDroppedQueryTraces = "scenario.dropped_query_traces";
inline constexpr const char* kScenarioDroppedSpans = "scenario.dropped_spans";
// Generation runs (tail traces of the slowest first tokens and decode steps)
inline constexpr const char* kGenerationTracedRequests = "generation.traced_requests";
inline constexpr const char* kGenerationKeptRequestTraces = "generation.kept_request_traces";
inline constexpr const char* kGenerationDroppedSpans = "generation.dropped_spans";
// NVTX ranges of a profiled program (xsp/profilers/nvtx_ranges.h)
inline constexpr const char* kNvtxRanges = "nvtx.ranges";
inline constexpr const char* kNvtxUnmatchedPops = "nvtx.unmatched_pops";
inline constexpr const char* kNvtxUnmatchedEnds = "nvtx.unmatched_ends";
inline constexpr const char* kNvtxOpenAtEnd = "nvtx.open_at_end";
inline constexpr const char* kNvtxDroppedRanges = "nvtx.dropped_ranges";
// xsp profile -- CMD (xsp/profile/external.h)
inline constexpr const char* kProfileSpansBelowTraceLevel = "profile.spans_below_trace_level";
inline constexpr const char* kProfileSpansOutsideCapture = "profile.spans_outside_capture";
inline constexpr const char* kProfileCuptiUnavailable = "profile.cupti_unavailable";
inline constexpr const char* kProfileCuptiNotFlushed = "profile.cupti_not_flushed";
// Processes whose PyTorch ops came from libxsp_torch_ops.so's RecordFunction callback, and the emit_nvtx op ranges
// refused because those ops came from it already.
inline constexpr const char* kProfileTorchOpsObserved = "profile.torch_ops_observed";
inline constexpr const char* kProfileNvtxOpsReplaced = "profile.nvtx_op_ranges_replaced";
}  // namespace stat

/// Every run statistic, grouped by writer as in namespace stat. Keys are unique.
const std::vector<RunStatisticSpec>& run_statistics_registry();

/// The registry entry of `key`. Throws std::invalid_argument naming the key when it is not registered.
const RunStatisticSpec& run_statistic(std::string_view key);
/// The registry entry of `key`, or nullptr (for statistics read from older records or foreign activity logs).
const RunStatisticSpec* find_run_statistic(std::string_view key);

/// One line per non-zero statistic of `counters`, most severe first (errors, data losses, then info; by key within
/// a severity): "DATA LOSS cupti.dropped_records = 12: <meaning>" ("ERROR", "DATA LOSS", "info"). Statistics outside
/// the registry are shown as "unregistered <key> = <value>" so that nothing is hidden.
std::vector<std::string> describe_run_statistics(const std::map<std::string, std::uint64_t>& counters);

}  // namespace xsp
