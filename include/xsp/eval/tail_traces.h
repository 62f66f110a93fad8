// Tail-query traces of a scenario run (SPEC §4 "Beyond the paper": the trace of the slowest queries): every
// query is traced on the predictor side during the run; afterwards only the full traces of the slowest queries
// (and of the median query, for reference) are kept, the others are counted and summarized.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "xsp/loadgen/loadgen.h"
#include "xsp/record/outcome.h"  // TailTraceSelection
#include "xsp/trace/trace.h"

namespace xsp {

/// Reduces the trace of a run in which PredictorSut traced every query (SutTracing: MODEL spans "predict"
/// tagged "query"/"sequence", FRAMEWORK spans under them) to the queries worth opening:
///  - ranks the measured queries by result.latency_ns (descending; ties: lower query id first) and keeps the
///    `tail` slowest, plus the median query (ascending position ⌊(n−1)/2⌋) when it is not one of them;
///  - spans of warm-up queries (sequence < result.settings.warmup_queries) are dropped;
///  - per kept query adds a MODEL span "query" from its issue to its completion (result.issue_ns/complete_ns)
///    on the worker's thread, tagged query, latency_ns, rank, percentile (see KeptQuery), kept ("tail" |
///    "median") and queue_ns (issue to the start of its first predict), and makes it the context parent of
///    its predict spans; everything a kept predict span encloses stays: spans whose parent chain reaches it,
///    and parentless spans below MODEL level whose interval lies inside it (ops of LibTorch's helper threads:
///    kept, but left unparented, since containment is a same-thread rule, SPEC §2);
///  - adds an APPLICATION root span "<app_name>" over the run, parent of every query span;
///  - drops every other span and writes the counters "scenario.traced_queries", "scenario.kept_query_traces",
///    "scenario.dropped_query_traces" and "scenario.dropped_spans".
/// The trace is left unassembled (call assemble()). Throws std::invalid_argument when `tail` is 0 or the
/// result's per-query vectors are shorter than its query_count.
TailTraceSelection keep_tail_query_traces(Trace& trace, const loadgen::Result& result, std::size_t tail,
                                          const std::string& app_name);

}  // namespace xsp
