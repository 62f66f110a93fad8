// The run-statistics registry (run_statistics.h).
#include "xsp/trace/run_statistics.h"

#include <algorithm>
#include <stdexcept>

namespace xsp {
namespace {

using S = Severity;

std::vector<RunStatisticSpec> make_registry() {
  namespace k = stat;
  auto ns = [](const char* key, S s, const char* meaning) { return RunStatisticSpec{key, s, meaning, "ns"}; };
  return {
      {k::kFrameworkDroppedSpans, S::kDataLoss,
       "framework ops not recorded because the per-thread span limit was reached (always written, also when 0)"},
      {k::kFrameworkUnmatchedOpEnds, S::kDataLoss,
       "framework op ends without a recorded start: those ops have no span"},
      {k::kFrameworkDetailMismatches, S::kDataLoss,
       "ops of later batches whose name differed from the first batch's op at the same position: left without shapes "
       "and module tags"},
      {k::kFrameworkFusedLayers, S::kInfo, "OpenCV layers fused into others: they have no time and no span"},
      {k::kFrameworkLayerTimesExceedForward, S::kError,
       "forwards whose OpenCV layer times add up to more than the forward itself: those layer times are unreliable"},
      {k::kCuptiRecords, S::kInfo, "CUPTI activity records read"},
      {k::kCuptiUnknownRecords, S::kDataLoss, "CUPTI activity records of a kind XSP does not read: not in the trace"},
      {k::kCuptiDroppedRecords, S::kDataLoss,
       "CUPTI activity records CUPTI dropped (buffers full): kernels or API calls missing from the trace"},
      {k::kCuptiBuffersCompleted, S::kInfo, "CUPTI activity buffers delivered"},
      {k::kCuptiBufferRequestsRefused, S::kDataLoss,
       "buffer requests refused at the pool's cap: CUPTI dropped the records meant for them"},
      {k::kCuptiFilteredApiRecords, S::kInfo, "noise-only CUDA API calls (cudaGetDevice...) deliberately not recorded"},
      {k::kCuptiExternalCorrelationErrors, S::kError,
       "push/pop of a framework op's correlation id failed: its kernels may be placed under the wrong op"},
      {k::kCuptiForeignExternalCorrelations, S::kInfo, "external correlation ids of another tool, ignored"},
      {k::kCuptiUnmatchedMarkerEnds, S::kDataLoss, "NVTX range ends without a start: no span for them"},
      {k::kCuptiUnclosedMarkers, S::kDataLoss, "NVTX ranges still open at stop: kept with zero length"},
      {k::kCuptiIgnoredMarkers, S::kInfo, "NVTX synchronization markers (acquire/release): no range to record"},
      {k::kCuptiInvalidBufferTails, S::kDataLoss, "activity buffers whose walk stopped early: the rest is lost"},
      {k::kCuptiOrphanActivities, S::kDataLoss,
       "device records whose correlation id matched no API call: kept but not placed under a launch"},
      ns(k::kCuptiOverheadNs, S::kInfo, "time CUPTI reports as its own overhead (OVERHEAD records)"),
      {k::kCountersRanges, S::kInfo, "hardware-counter ranges (profiled kernel launches) collected"},
      {k::kCountersPasses, S::kInfo, "replay passes the requested metrics needed"},
      ns(k::kCountersSetupNs, S::kInfo, "time the counter profiler took to start"),
      ns(k::kCountersCollectionNs, S::kInfo,
         "time from the counter profiler's start to the end of its stop (passes and metric evaluation included)"),
      {k::kCountersDroppedRanges, S::kDataLoss,
       "counter ranges that did not fit the counter data image: raise XSP_COUNTER_MAX_RANGES"},
      {k::kCountersUnmatchedRanges, S::kDataLoss, "counter ranges without a kernel launch to attach them to"},
      {k::kCountersUnmatchedLaunches, S::kDataLoss,
       "kernel launches without a counter range (e.g. a kernel the profiler did not replay)"},
      {k::kCountersMismatchedPasses, S::kDataLoss,
       "user-replay passes whose launches differ from the first pass's: their metrics are left out"},
      {k::kCountersMissingPasses, S::kDataLoss, "replay passes that did not run: some metrics are missing"},
      {k::kCountersGraphLaunchesNotProfiled, S::kDataLoss, "CUDA graph launches the counter profiler cannot replay"},
      {k::kCountersOtherContextLaunches, S::kDataLoss,
       "kernel launches on a second CUDA context of a profiled program, not profiled (counters follow the first)"},
      {k::kCountersUnavailable, S::kError,
       "the counter profiler could not start (the reason is in the settings' counters_unavailable)"},
      {k::kAssemblerNegativeDuration, S::kError, "spans that ended before they started: clamped to zero length"},
      {k::kCudaGraphReplayedActivities, S::kInfo, "kernels, copies and sets replayed from CUDA graphs"},
      {k::kCudaGraphAttributedActivities, S::kInfo,
       "replayed kernels, copies and sets placed under the op and ranges open when their graph node was captured"},
      {k::kCudaGraphCapturedBeforeProfiling, S::kInfo,
       "replayed kernels, copies and sets of graphs built before profiling started: attributed to their graph launch "
       "and node only; profile from process start (xsp profile) to see the capture"},
      {k::kCudaGraphUnknownCaptureContext, S::kInfo,
       "replayed kernels, copies and sets whose capture was seen but with no op or range open, or in a trace that was "
       "not kept: attributed to their graph launch and node only"},
      {k::kTraceUntracedBatches, S::kInfo, "measured batches the trace budget (--trace-batches) left untraced"},
      {k::kTraceDiscardedSpans, S::kInfo, "spans of untraced batches discarded on purpose (--trace-batches)"},
      {k::kTraceStrippedForFixture, S::kInfo,
       "the run's trace was stripped to keep a committed test fixture small (scripts/gpu/stability.sh)"},
      {k::kScenarioTracedQueries, S::kInfo, "measured scenario queries the run traced"},
      {k::kScenarioKeptQueryTraces, S::kInfo, "queries whose traces were kept: the slowest, and the median one"},
      {k::kScenarioDroppedQueryTraces, S::kInfo,
       "measured queries whose spans were dropped on purpose: only the tail's traces are kept"},
      {k::kScenarioDroppedSpans, S::kInfo, "spans removed with the dropped queries (warm-up queries' included)"},
      {k::kGenerationTracedRequests, S::kInfo, "measured generation requests the run traced below MODEL level"},
      {k::kGenerationKeptRequestTraces, S::kInfo,
       "requests whose full traces were kept: those with the slowest first tokens or decode steps, and the last"},
      {k::kGenerationDroppedSpans, S::kInfo,
       "spans below MODEL level removed on purpose with the other requests (their MODEL spans stay)"},
      {k::kNvtxRanges, S::kInfo, "NVTX ranges of the program recorded as spans"},
      {k::kNvtxUnmatchedPops, S::kDataLoss,
       "nvtxRangePop calls with no range open on their thread: the program's pushes and pops do not pair up"},
      {k::kNvtxUnmatchedEnds, S::kDataLoss, "nvtxRangeEnd calls for a range id that was never started or ended twice"},
      {k::kNvtxOpenAtEnd, S::kDataLoss,
       "NVTX ranges still open when collection stopped (the program ended or crashed inside them): kept, ending at "
       "the stop, tagged open_at_end"},
      {k::kNvtxDroppedRanges, S::kDataLoss,
       "NVTX ranges not recorded: the process held as many ranges as it may keep until its part is written "
       "(XSP_PROFILE_MAX_RANGES, default 2,000,000); the ranges around them are intact"},
      {k::kProfileSpansBelowTraceLevel, S::kInfo,
       "ranges of levels --trace-level does not keep (e.g. framework ops at --trace-level model), left out on "
       "purpose: refused by the injection library as the program made them, or dropped when the parts were merged"},
      {k::kProfileSpansOutsideCapture, S::kInfo,
       "CUDA calls and kernels outside the capture (--capture, --delay-s/--duration-s, --signal): the CUPTI part "
       "collects the whole run and leaves these out when a process writes its part"},
      {k::kProfileCuptiUnavailable, S::kDataLoss,
       "processes whose CUDA calls and kernels were not recorded: CUPTI could not start in them (the reason is on the "
       "program's stderr, e.g. another profiler holds the CUPTI subscription)"},
      {k::kProfileCuptiNotFlushed, S::kDataLoss,
       "processes that died of a crash signal (SIGSEGV, SIGABRT, ...): their CUDA calls and kernels were not flushed "
       "(flushing CUPTI inside a crashed process could hang it); their NVTX ranges are kept"},
      {k::kProfileTorchOpsObserved, S::kInfo,
       "processes whose PyTorch ops came from a RecordFunction callback (libxsp_torch_ops.so, --torch-ops observer) "
       "rather than from emit_nvtx's NVTX ranges"},
      {k::kProfileNvtxOpsReplaced, S::kInfo,
       "emit_nvtx op ranges left out because the same ops came from the RecordFunction callback (each op once)"},
  };
}

int rank(Severity s) { return s == S::kError ? 0 : s == S::kDataLoss ? 1 : 2; }

}  // namespace

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kDataLoss:
      return "data loss";
    case Severity::kError:
      return "error";
  }
  return "?";
}

const std::vector<RunStatisticSpec>& run_statistics_registry() {
  static const std::vector<RunStatisticSpec> registry = make_registry();
  return registry;
}

const RunStatisticSpec* find_run_statistic(std::string_view key) {
  for (const RunStatisticSpec& s : run_statistics_registry())
    if (s.key == key) return &s;
  return nullptr;
}

const RunStatisticSpec& run_statistic(std::string_view key) {
  if (const RunStatisticSpec* s = find_run_statistic(key)) return *s;
  throw std::invalid_argument("unknown run statistic '" + std::string(key) +
                              "': add it to run_statistics_registry() (include/xsp/trace/run_statistics.h)");
}

std::vector<std::string> describe_run_statistics(const std::map<std::string, std::uint64_t>& counters) {
  std::vector<std::pair<int, std::string>> lines;
  for (const auto& [key, value] : counters) {
    if (value == 0) continue;
    const RunStatisticSpec* s = find_run_statistic(key);
    const std::string v = key + " = " + std::to_string(value) + (s && s->unit == "ns" ? " ns" : "");
    if (s == nullptr) {
      lines.emplace_back(1, "unregistered " + v);
      continue;
    }
    const char* label = s->severity == S::kError ? "ERROR " : s->severity == S::kDataLoss ? "DATA LOSS " : "info ";
    lines.emplace_back(rank(s->severity), label + v + ": " + s->meaning);
  }
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  out.reserve(lines.size());
  for (auto& l : lines) out.push_back(std::move(l.second));
  return out;
}

}  // namespace xsp
