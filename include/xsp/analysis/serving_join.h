// The join of a serving benchmark's slow tokens to the server's trace (issue 27, docs/serving-join.md): for the
// slowest first tokens and inter-token gaps that `xsp bench-serve` measured on the client, the server's steps (NVTX
// ranges, framework ops) that overlap each gap, the kernels under them and the GPU's idle time inside the gap. Client
// and server run on one host and both read CLOCK_MONOTONIC, so a client timestamp and a span's start_ns compare
// directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/analysis/table.h"
#include "xsp/record/record.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// One request as the client saw it. Times are CLOCK_MONOTONIC ns on the benchmark's host. Stored per request in an
/// evaluation of kind "serving" at settings["serving"]["requests"][i] with the same field names
/// ("request_id", "arrival_ns", "sent_ns", "token_ns", "output_tokens", "ok", "error", and "point" for a sweep).
struct ClientRequestTimes {
  std::string request_id;              ///< the client's id of the request (also the traceparent's trace id source)
  std::int64_t arrival_ns = 0;         ///< when the schedule released it (LoadGen's "issue" time)
  std::int64_t sent_ns = 0;            ///< when its HTTP request was written to the socket
  std::vector<std::int64_t> token_ns;  ///< when each streamed chunk carrying output arrived; [0] is the first token
  std::int64_t output_tokens = 0;      ///< output tokens as the server's usage reported them (else chunks counted)
  bool ok = true;                      ///< false: failed or cancelled; `error` says why
  std::string error;
  int point = 0;  ///< the sweep point (run) it belongs to, 0-based; 0 without a sweep
  /// The 32 hex digits of the W3C `traceparent` the request carried: the key to the engine's own OpenTelemetry spans
  /// in the collector they went to (Jaeger, Tempo); "" when unknown.
  std::string trace_id;
  bool operator==(const ClientRequestTimes&) const = default;
};

/// The requests as stored at settings["serving"]["requests"]: an array of objects with the field names above. A
/// missing field keeps its default; a request id stored as a number is read as its decimal text. Throws
/// std::invalid_argument naming the request's position when `requests` is not an array or an entry is not an object
/// or has a field of the wrong type.
std::vector<ClientRequestTimes> client_requests_from_json(const nlohmann::json& requests);
/// The inverse of client_requests_from_json(): an array of objects with every field ("error" only when not empty,
/// "point" only when not 0).
nlohmann::json client_requests_to_json(const std::vector<ClientRequestTimes>& requests);

/// A client-side interval to explain: a first token (arrival → token_ns[0]) or one inter-token gap
/// (token_ns[k−1] → token_ns[k]).
struct SlowInterval {
  std::string request_id;
  std::string kind;     ///< "ttft" or "itl"
  int token_index = 0;  ///< 0 for "ttft"; k for the gap ending at token k
  std::int64_t start_ns = 0, end_ns = 0;
  /// 0-based position among all intervals of its kind in slowest-first order (0 = the slowest), ties broken as in
  /// slowest_intervals(); `population` is how many intervals of its kind there were (so percentile_label() applies).
  std::size_t rank = 0;
  std::size_t population = 0;
  int point = 0;         ///< the request's sweep point (ClientRequestTimes::point)
  std::string trace_id;  ///< the request's traceparent trace id (ClientRequestTimes::trace_id)
  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

/// The slowest `n` first tokens (by TTFT) and the slowest `n` inter-token gaps (by ITL) over the successful
/// requests, slowest first within each kind (TTFT first, then ITL); ties broken by request id then token index
/// (deterministic). A TTFT runs from arrival_ns (sent_ns when arrival_ns is 0) to token_ns[0]; a request without
/// tokens has none. Requests with ok = false are left out, and so are intervals whose end precedes their start (a
/// malformed record). Each interval's rank and population are set. O(M log n) for M intervals.
std::vector<SlowInterval> slowest_intervals(const std::vector<ClientRequestTimes>& requests, std::size_t n);

/// The tail label of the interval at 0-based `rank` among `population` intervals of its kind, slowest first: "max"
/// for rank 0, else "p" + q with q = 100 × (population − rank) / population (the share of intervals no slower than
/// it, in percent), rounded down to an integer below 99, to 0.1 from 99 to 99.9 and to 0.01 above, trailing zeros
/// dropped: rank 120 of 12,000 is "p99", rank 12 "p99.9", rank 1 "p99.99", rank 6,000 "p50". Rounding down never
/// claims a higher percentile than the interval reached. "" when rank >= population.
std::string percentile_label(std::size_t rank, std::size_t population);

/// What the server's "steps" are in a trace, the first kind the trace has (docs/serving-join.md).
enum class StepSource {
  kNvtxRanges,    ///< the outermost NVTX ranges of each thread (spans tagged "nvtx"; ops under emit_nvtx included)
  kFrameworkOps,  ///< no NVTX range: the outermost FRAMEWORK spans (PyTorch ops seen by XSP's op observer)
  kCudaLaunches,  ///< neither: the CUDA API calls that launch work (SYSTEM spans named *Launch*, or with kernels)
  kNone,          ///< no host span to call a step: GPU busy and idle only
};
/// "NVTX ranges", "framework ops", "CUDA launches", "none".
std::string_view to_string(StepSource source);

/// One server step that overlaps a slow interval.
struct StepOverlap {
  std::string name;
  /// 1-based position among the steps of this name in the server traces, by start time (then end, then span id):
  /// the n-th "execute_model" of the recorded window (not since the server started).
  std::size_t ordinal = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t overlap_ns = 0;  ///< length of [start, end) ∩ the interval
  /// KERNEL-level spans (kernels, memcpy, memset) below the step: through their parent chain, which reaches the
  /// step through the launching call (correlation id) and, for CUDA-graph replays, the replayed ranges.
  std::size_t kernels = 0;
  std::int64_t kernel_ns = 0;  ///< their durations summed (ns; wherever they ran in time)
  std::string top_kernel;      ///< the kernel name with the largest summed duration under the step ("" = none)
  std::int64_t top_kernel_ns = 0;
  Track track;  ///< the host thread the step ran on
  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

/// One slow interval joined to the server trace.
struct IntervalJoin {
  SlowInterval interval;
  std::string tail;                ///< percentile_label(interval.rank, interval.population)
  std::vector<StepOverlap> steps;  ///< the steps overlapping the interval, by start time
  /// Union of the KERNEL-level spans of every stream and GPU clipped to the interval (ns), and interval − the part
  /// outside the windows − busy (a stall, a gap with no kernel on any stream, is idle).
  std::int64_t gpu_busy_ns = 0, gpu_idle_ns = 0;
  std::size_t kernels = 0;     ///< KERNEL-level spans overlapping the interval
  std::size_t host_spans = 0;  ///< host-track spans below APPLICATION overlapping the interval
  /// Length of the interval outside every server trace window ([first span start, last span end] of each trace):
  /// there the server was not recorded, so no step and no kernel can be seen and that time counts as neither busy
  /// nor idle (gpu_idle_ns = interval − outside − busy).
  std::int64_t outside_window_ns = 0;
  std::string sentence;  ///< join_sentence()
};

/// The server traces indexed once for many interval queries. Sorting is done here, O((S + K) log(S + K)) for S spans
/// and K kernels; each join() is O(log S + k log S) for k overlapping steps, so I intervals cost O((S + I) log S),
/// never O(S·I). The traces must outlive the index (it keeps pointers to span names).
class ServerTraceIndex {
 public:
  /// Indexes `traces` (one per server run; their span ids may repeat across traces). Device tracks never hold steps.
  explicit ServerTraceIndex(const std::vector<const Trace*>& traces);
  ~ServerTraceIndex();
  ServerTraceIndex(const ServerTraceIndex&) = delete;
  ServerTraceIndex& operator=(const ServerTraceIndex&) = delete;

  StepSource source() const;
  std::size_t steps() const;    ///< steps found (of source())
  std::size_t kernels() const;  ///< KERNEL-level spans
  /// The union of the trace windows, first start and last end (0, 0 without spans).
  std::int64_t window_start_ns() const;
  std::int64_t window_end_ns() const;
  /// `interval` joined to the traces: its steps, GPU busy/idle, counts, the part outside the windows and the
  /// sentence (join_sentence()).
  IntervalJoin join(const SlowInterval& interval) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The sentence of one joined interval, e.g. "the p99 ITL of request 731 (48 ms) overlaps steps 2,113–2,115:
/// execute_model ×3 (31 ms, 412 kernels, top flash_fwd 19 ms); GPU idle 9 ms". Steps are grouped by name in order
/// of first start; per group its ordinals (consecutive ones as a range with an en dash, runs separated by ", "), "×N"
/// when N > 1, the summed step durations, kernels and the top kernel (by summed time over the group, its name
/// shortened by short_symbol()). Ops and launches are named so under those fallbacks ("overlaps op 1: aten::linear").
/// Without steps: "overlaps no steps" ("no server step" when the trace has none at all), and when kernels ran in it
/// anyway (launched before it) "GPU busy N ms, idle M ms". An interval partly outside
/// the server's trace window ends with "; N ms of it outside the server's trace window"; one wholly outside "lies
/// outside the server's trace window". Durations: "N ns", "N µs", "N.N ms" below 10 ms, "N ms", "N.NN s".
std::string join_sentence(const IntervalJoin& joined, StepSource source);

/// Whether `record` is a serving evaluation: scenario "serving" (RecordKind serving) or a settings["serving"] object
/// holding "requests".
bool is_serving_evaluation(const EvaluationRecord& record);
/// The runs of `record` that hold the server's trace: those whose trace spans several processes (xsp profile) or
/// has an NVTX range (tag "nvtx"), a SYSTEM or a KERNEL span. The client's own run, if stored, has none of these.
std::vector<const RunRecord*> server_runs(const EvaluationRecord& record);

/// How many of the slowest intervals of each kind the serving-tail analysis joins.
inline constexpr std::size_t kServingTailIntervals = 10;
/// Rows of one interval in serving-tail: the steps with the largest overlap, the others summed into one
/// "(other N steps)" row (a long TTFT under load overlaps hundreds of decode steps).
inline constexpr std::size_t kServingTailStepsPerInterval = 16;
/// How many of the slowest intervals of each kind (and sweep point) serving-tail also reads out in its notes.
inline constexpr std::size_t kServingTailSentencesInNotes = 3;

/// Note of serving-tail on an evaluation that is not a serving one.
inline constexpr const char* kNotServing =
    "not a serving evaluation (no settings[\"serving\"][\"requests\"]; run `xsp bench-serve`, docs/serving-join.md)";
/// Note of serving-tail on a serving evaluation without a server trace.
inline constexpr const char* kNoServerTrace =
    "no server trace in this evaluation: the join needs the server run under `xsp profile --signal -- SERVER` and "
    "`xsp bench-serve --server-pid PID` (docs/serving-join.md)";

/// Analysis "serving-tail" (registry.h): the kServingTailIntervals slowest TTFTs and ITLs of `record`'s successful
/// requests (slowest_intervals(), per sweep point: each point is its own load, so its tail is ranked on its own), each
/// joined to the server runs (server_runs(), ServerTraceIndex). One row per (interval, overlapping step) with the
/// interval's columns repeated and its sentence on its first row, at most kServingTailStepsPerInterval steps (the
/// largest overlaps) and one "(other N steps)" row summing the rest, or one row with empty step columns when no step
/// overlaps. Notes say how many intervals of how many, which steps were used (StepSource) and the window, give the
/// sentences of the kServingTailSentencesInNotes slowest of each kind, and count the intervals outside the window. Not
/// a serving evaluation: no rows and kNotServing; no server trace: no rows and kNoServerTrace;
/// settings["serving"]["requests"] malformed: no rows and a note with client_requests_from_json()'s message (never a
/// throw: a report runs every analysis).
Table serving_tail(const EvaluationRecord& record, std::size_t n = kServingTailIntervals);

}  // namespace xsp
