// Analyses of LLM token generation (docs/generation.md "Analyses"): G1 prefill vs decode, G2 layer time in prefill
// vs decode, G3 KV cache memory, G4 kernels per decode step, G5
// hardware counters per step.
//
// Trace conventions read here (docs/generation.md "Spans"):
//  - per measured request (B sequences generated together) a MODEL span "request" (tags "request" = index among
//    the measured requests, "batch_size", "prompt_tokens", "output_tokens") whose children are the MODEL spans
//    "tokenize", "prefill" (tag "step" = 0), one "decode" per later token (tag "step" = 1..output_tokens−1) and
//    "detokenize";
//  - top-level FRAMEWORK spans (LibTorch ops, tag "module" = TorchScript module path) have a "prefill" or
//    "decode" span as parent; nested ops hang under their enclosing op;
//  - KERNEL spans reach their step through the launching SYSTEM call and its op (docs/spans.md), placed by
//    extract_kernels(trace, is_window) with the steps as windows.
// A run may keep the traces of only some requests (trace tails): the analyses count and average over the
// "request" spans present and say in a note how many requests and steps the figures come from.
//
// Figures that are not spans (TTFT, TPOT, E2E, token rates, the KV cache size) come from RunRecord::generation
// of the M run (LatencySummary JSON in ns, record.h). A record without generation runs gives tables without rows
// and the note kNotGeneration.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xsp/analysis/table.h"
#include "xsp/record/record.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// Note of every generation analysis on an evaluation without generation runs.
inline constexpr const char* kNotGeneration =
    "not a generation evaluation (no run has generation figures; docs/generation.md)";

/// Whether any run of `record` has RunRecord::generation figures (a non-empty object).
bool is_generation_evaluation(const EvaluationRecord& record);

/// One step of a generation request: "prefill" (step 0) or "decode" (step 1, 2, ...).
struct GenerationStep {
  SpanId span_id = kNoSpan;
  int step = 0;  ///< tag "step"; without it, prefill 0 and decode spans numbered 1.. in start order
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

/// One "request" MODEL span with its stages.
struct GenerationRequest {
  SpanId span_id = kNoSpan;
  std::optional<std::int64_t> index;                                     ///< tag "request"
  std::optional<std::int64_t> batch_size, prompt_tokens, output_tokens;  ///< tags
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t tokenize_ns = 0, detokenize_ns = 0;  ///< summed durations of those child spans (0 when absent)
  std::optional<GenerationStep> prefill;
  std::vector<GenerationStep> decode;  ///< by step
  /// Some span below MODEL level (a framework op) has one of its steps as parent: the request's full trace was
  /// kept. A run at framework level or deeper keeps only some requests' (tail traces); the others keep their MODEL
  /// spans, and per-step figures of ops and kernels must not count their steps.
  bool traced = false;
  std::int64_t duration_ns() const { return end_ns - start_ns; }
  std::int64_t decode_ns() const;  ///< sum of the decode steps' durations
};

/// Every "request" span of `trace` (by start time, then id) with its child stage spans (direct MODEL children).
std::vector<GenerationRequest> extract_generation_requests(const Trace& trace);

/// "Layer" of a TorchScript module path: the path up to and including its first all-digit component
/// ("h.3.attn.c_attn" -> "h.3", "transformer.h.11.mlp" -> "transformer.h.11"); a path without one is its own
/// layer ("ln_f", "transformer.wte"). "" for "".
std::string transformer_layer(const std::string& module);

/// G1 "Prefill vs decode": one row per batch size with an M run that has generation figures: batch_size,
/// requests (request spans the split comes from), ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, tpot_p99_ms, e2e_p50_ms
/// (RunRecord::generation LatencySummary p50/p99, ns -> ms), output_tokens_per_s, input_tokens_per_s, then the
/// mean over the request spans of: request_ms, tokenize_ms, prefill_ms, decode_ms (the sum of the request's
/// decode steps), detokenize_ms, and the shares of request_ms (100 × mean stage / mean request):
/// tokenize_share_pct, prefill_share_pct, decode_share_pct, detokenize_share_pct, other_share_pct (the rest:
/// time in the request span outside the four stages), which sum to 100.
Table g1_prefill_vs_decode(const EvaluationRecord& record);
Table g1_prefill_vs_decode(const EvaluationRecord& record, const std::vector<int>& batch_sizes);

/// G2 "Layer time in prefill vs decode" (one batch size, M/F run): per module (tag "module" of the top-level
/// FRAMEWORK spans under "prefill"/"decode"; the op name when absent): layer (transformer_layer() of the module;
/// the op name without a module), module, op (the first op name seen), prefill_ms (summed time in prefill steps /
/// prefill steps), decode_step_ms (summed time in decode steps / decode steps), decode_total_ms (summed time in
/// decode steps / requests), prefill_share_pct (100 × prefill_ms / the sum over modules), decode_share_pct
/// (100 × decode_total_ms / the sum over modules); sorted by decode_total_ms descending, then module.
Table g2_layer_prefill_decode(const EvaluationRecord& record, int batch_size);

/// G3 "KV cache memory" (one row per batch size with generation figures, M run): batch_size, prompt_tokens and
/// output_tokens (of the request with the most positions), positions (prompt + output tokens), kv_cache_bytes
/// (RunRecord::generation "kv_cache_bytes": the largest KV cache a request allocated), bytes_per_token
/// (kv_cache_bytes / (batch × positions)), formula_bytes = 2 × n_layer × n_head × head_dim × positions × batch ×
/// element_bytes (keys and values of every layer, head and position: the KV cache size of a decoder, Kwon et al.,
/// "Efficient Memory Management for Large Language Model Serving with PagedAttention", SOSP 2023, §2–3; empty
/// unless settings["generation"]["model"] gives n_layer, n_head, head_dim and element_bytes), recorded_over_formula
/// (kv_cache_bytes / formula_bytes).
Table g3_kv_cache_memory(const EvaluationRecord& record);
Table g3_kv_cache_memory(const EvaluationRecord& record, const std::vector<int>& batch_sizes);

/// G4 "Kernels per decode step" (one batch size, M/F/K run): one row per step index (0 = prefill, then the
/// decode steps): step, samples (steps with that index, one per request), step_ms (mean step span duration),
/// kernel_count (mean kernels, memcpy and memset included, per step), kernel_time_ms (mean summed kernel
/// duration), launch_calls (mean distinct launching SYSTEM calls of the step's kernels), api_calls (mean SYSTEM
/// spans below the step: CUDA runtime/driver calls that CUPTI traced), gpu_busy_pct (100 × kernel_time / step
/// time). A note gives the kernels per decode step: mean, min and max over the decode steps. Without a
/// KERNEL-level run, or with no KERNEL spans (a CPU run), no rows and a note.
Table g4_kernels_per_step(const EvaluationRecord& record, int batch_size);

/// One generation step index's hardware counters, the mean over the requests of a counter run.
struct StepCounters {
  std::int64_t step = 0;             ///< 0 = prefill, then the decode steps
  std::string phase;                 ///< "prefill" | "decode"
  std::size_t requests = 0;          ///< step spans with this index that hold HARDWARE spans
  double kernels = 0;                ///< mean HARDWARE spans (profiled kernels) per step
  std::optional<double> flops;       ///< mean hw::total_flops per step; nullopt when no kernel had FLOP counters
  std::optional<double> dram_bytes;  ///< mean DRAM bytes (read + write) per step; nullopt without both counters
  /// flops / dram_bytes (FLOP/byte; Williams, Waterman, Patterson, "Roofline", CACM 2009); nullopt when either is.
  std::optional<double> arithmetic_intensity;
};

/// The counters of a generation counter run (trace level hardware) per step index: every HARDWARE span summed into
/// the prefill or decode step span above it (by parent links), then averaged per step index over the requests.
/// HARDWARE spans under no step are counted in `*outside_steps` (when given). Rows in step order.
std::vector<StepCounters> generation_step_counters(const Trace& trace, std::size_t* outside_steps = nullptr);

/// G5 "Counters per generation step" (one batch size, the counter run of `--trace-level hardware`): one row per
/// step index of generation_step_counters(): step, samples, kernels, gflops, dram_mb and arithmetic_intensity. A
/// note says how the counters were collected (kernel replay) and that the run's timings are not used. Without a
/// counter run, no rows and a note.
Table g5_counters_per_step(const EvaluationRecord& record, int batch_size);

/// The generation analysis ids: the analysis_registry() entries of family AnalysisFamily::kGeneration, in
/// analysis_ids() order: "G1" .. "G5". run_analyses() runs them through their registry functions: G1 and G3 give one
/// table over the batch sizes, G2, G4 and G5 one table per batch size.
const std::vector<std::string>& generation_analysis_ids();

}  // namespace xsp
