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
#include <string_view>
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

/// What part of a decoder transformer the module at path `module` (a TorchScript module path, e.g.
/// "transformer.h.0.attn.c_proj"; "" when the op has none) is, so that time can be summed per part across layers and
/// model families. Decided by the path's last component and its parent (the closest earlier component that is not a
/// number, so "experts.3.w1" has parent "experts"), then, when they name no part, by the op name `op` (e.g.
/// "aten::scaled_dot_product_attention"). Names are compared case-insensitively; the first match in this order wins:
///  - "lm head": lm_head, embed_out (GPT-NeoX);
///  - "embedding": wte, wpe (GPT-2), embed_tokens (Llama), embed_in (GPT-NeoX), word_embeddings (Falcon, BLOOM),
///    embed_positions;
///  - "rotary embedding": rotary_emb;
///  - "norm": ln_* (ln_1, ln_2, ln_f), names containing layernorm, layer_norm or rmsnorm, or ending in norm (norm,
///    input_layernorm, post_attention_layernorm, q_norm);
///  - "q projection", "k projection", "v projection": q_proj, k_proj, v_proj (Llama, Mistral, Qwen, Gemma), query,
///    key, value, wq, wk, wv;
///  - "qkv projection" (fused): c_attn (GPT-2), query_key_value (GPT-NeoX, Falcon, BLOOM), qkv_proj, qkv, Wqkv,
///    W_pack;
///  - "MLP": mlp, feed_forward, ffn and mixture-of-experts blocks (block_sparse_moe, moe, experts) and anything
///    directly under one (so GPT-2's mlp.c_proj), c_fc, gate_proj, up_proj, down_proj, gate_up_proj, dense_h_to_4h,
///    dense_4h_to_h, fc1, fc2, fc_in, fc_out, w1, w2, w3;
///  - "o projection": o_proj, out_proj, wo, and c_proj or dense under attn, self_attn, attention or self_attention
///    (GPT-2's attn.c_proj, GPT-NeoX's attention.dense, Falcon's and BLOOM's self_attention.dense);
///  - "attention": the attention core, i.e. the ops of an attention module itself (attn, self_attn, attention,
///    self_attention: its softmax and matmuls) and of its other children (dropout, an inner core module), or any
///    name containing attention or attn;
///  - by the op name: "attention" for one containing attention or attn (scaled_dot_product_attention, flash and
///    memory-efficient attention), "norm" for layer_norm / rms_norm, "embedding" for embedding;
///  - "other": anything else (a whole decoder block such as "h.3", a bare linear op).
std::string transformer_part(std::string_view module, std::string_view op);

/// G1 "Prefill vs decode": one row per batch size with an M run that has generation figures: batch_size,
/// requests (request spans the split comes from), ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, tpot_p99_ms, e2e_p50_ms
/// (RunRecord::generation LatencySummary p50/p99, ns -> ms), output_tokens_per_s, input_tokens_per_s, then the
/// mean over the request spans of: request_ms, tokenize_ms, prefill_ms, decode_ms (the sum of the request's
/// decode steps), detokenize_ms, and the shares of request_ms (100 × mean stage / mean request):
/// tokenize_share_pct, prefill_share_pct, decode_share_pct, detokenize_share_pct, other_share_pct (the rest:
/// time in the request span outside the four stages), which sum to 100.
Table g1_prefill_vs_decode(const EvaluationRecord& record);
Table g1_prefill_vs_decode(const EvaluationRecord& record, const std::vector<int>& batch_sizes);

/// G2 "Layer time in prefill vs decode" (one batch size, layers_run(): the M/F run, or the kernel-level run of a
/// --cuda-graphs evaluation, whose decode steps' ops are the replayed spans of docs/cuda-graphs.md): per module (tag
/// "module" of the top-level FRAMEWORK spans under "prefill"/"decode"; the op name when absent): layer
/// (transformer_layer() of the module; the op name without a module), module, part (transformer_part() of the module
/// and op), op (the first op name seen), prefill_ms (summed time in prefill steps / prefill steps), decode_step_ms
/// (summed time in decode steps / decode steps), decode_total_ms (summed time in decode steps / requests),
/// prefill_share_pct (100 × prefill_ms / the sum over modules), decode_share_pct (100 × decode_total_ms / the sum over
/// modules); sorted by decode_total_ms descending, then module. Notes give the share of decode time (and of prefill
/// time) per part, summed over the rows, largest first.
Table g2_layer_prefill_decode(const EvaluationRecord& record, int batch_size);

/// G3 "KV cache memory" (one row per batch size with generation figures, M run): batch_size, prompt_tokens and
/// output_tokens (of the request with the most positions), positions (prompt + output tokens), cache_positions (the
/// length a static KV cache was allocated for, when settings["generation"]["model"] gives "cache_positions"),
/// n_kv_head (the KV heads of the formula), kv_cache_bytes (RunRecord::generation "kv_cache_bytes": the largest KV
/// cache a request allocated), bytes_per_token (kv_cache_bytes / (batch × positions)), formula_bytes = 2 × n_layer ×
/// n_kv_head × head_dim × positions × batch × element_bytes (keys and values of every layer, KV head and position:
/// the KV cache size of a decoder, Kwon et al., "Efficient Memory Management for Large Language Model Serving with
/// PagedAttention", SOSP 2023, §2–3), recorded_over_formula (kv_cache_bytes / formula_bytes).
/// The dimensions come from settings["generation"]["model"]: n_layer, head_dim, element_bytes, and n_kv_head
/// (grouped-query or multi-query attention caches fewer heads than it has query heads); without n_kv_head, n_head
/// with a note that multi-head attention is assumed. With cache_positions the formula's positions are
/// cache_positions, since a static cache holds that many whatever the request's length. A dimension that is not a
/// positive integer is ignored with a note; formula_bytes is empty (with a note) unless every one needed is known.
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
