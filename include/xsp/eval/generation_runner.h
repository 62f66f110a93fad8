// Token generation as a workload (issue 15, docs/generation.md): requests of prompts through a Generator
// (Predictor::generator()), one MODEL span per step, token latencies (TTFT, TPOT, ITL, E2E) per run, LoadGen's
// token-latency checks, and the traces of the slowest first tokens and decode steps.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/eval/measurement.h"
#include "xsp/eval/plan.h"
#include "xsp/eval/runner.h"
#include "xsp/eval/session.h"
#include "xsp/loadgen/token_latency.h"
#include "xsp/manifest/manifest.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/record/record.h"

namespace xsp {

/// Runs the generation workload with `predictor` (loaded with `manifest`, whose generator() is not null) and
/// returns its record: per (batch size, level) a RunRecord whose trace holds, per measured request, a MODEL span
/// "request" (tags request, batch_size, prompt_tokens, output_tokens, arrival_delay_ns for server/offline) over
/// "tokenize", "prefill" (step 0), "decode" (step 1..n−1) and "detokenize", and framework ops / kernels under the
/// steps at deeper levels (see tail_steps). Token i of a sequence is out at the end of its step i, so a request's
/// GeneratedRequest (one per sequence of the batch) has those ends as token_ns and its LoadGen query's origin as
/// issued_ns: its issue (closed loop, offline) or its scheduled arrival (server). loadgen::run() schedules every run
/// (the batch sweep as MultiStream; single-stream, server, offline as theirs) with the generator as an inline SUT
/// that reports each query's first token (QueryCompleter::first_token). RunRecord::generation holds the
/// metrics (loadgen::generation_metrics over the measured requests, rates over the run's wall time), LoadGen's own
/// result ("loadgen": scenario, queries, ttft_p50_ns, latency_p50_ns, mean_issue_delay_ns, harness_ns_per_query)
/// and, where a scenario checks bounds, the verdict; predict_latency_ns holds each request's service time (its
/// "request" span) and stage_latency_ns the summaries of every step name (decode: per step). Settings record the
/// options, the drawn length distributions and sample outputs. The plan is validate()'s (plan.generation, plan.levels,
/// plan.batch_sizes, plan.measurement: warm-up requests, min_batches and min_duration_ms of closed-loop runs, the
/// stability rule); profilers, clock and interruption are the session's. Throws std::invalid_argument when the
/// loaded model has no generator or fewer positions than prompt plus output tokens; propagates the predictor's
/// errors.
EvaluationRecord run_generation(const Manifest& manifest, Predictor& predictor, const RunPlan& plan,
                                RunSession& session);

}  // namespace xsp
