// Generation analyses (G1–G5) on hand-made traces with known answers (generation_analyses.h,
// docs/generation.md "Analyses"). Parent ids are set by hand, as the assembler would.
#include "xsp/analysis/generation_analyses.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/registry.h"

namespace xsp {
namespace {

constexpr std::int64_t kUs = 1000;  // ns per µs
constexpr std::uint64_t kStream7 = 7;

// Spans of generation requests (docs/generation.md "Spans"), times in µs.
struct GenerationTraceBuilder {
  Trace trace;
  SpanId next = 1;
  SpanId app = kNoSpan;

  GenerationTraceBuilder() { app = add(Level::kApplication, "gpt2 bs=2", 0, 1'000'000, kNoSpan); }

  SpanId add(Level level, const std::string& name, std::int64_t start_us, std::int64_t end_us, SpanId parent,
             std::vector<Tag> tags = {}, std::uint64_t track = 0) {
    Span s;
    s.id = next++;
    s.parent_id = parent;
    s.level = level;
    s.parent_rule = parent == kNoSpan         ? ParentRule::kNone
                    : level == Level::kKernel ? ParentRule::kCorrelation
                                              : ParentRule::kContext;
    s.name = name;
    s.start_ns = start_us * kUs;
    s.end_ns = end_us * kUs;
    s.track = level == Level::kKernel ? Track::stream(0, track) : Track::host_thread(1);
    s.tags = std::move(tags);
    trace.spans.push_back(std::move(s));
    return next - 1;
  }

  // What to put under each step span.
  struct StepContent {
    // top-level ops: (op, module ("" = no tag), duration µs), laid end to end from the step's start
    std::vector<std::tuple<std::string, std::string, std::int64_t>> ops;
    int kernels = 0;    // kernels launched from the first op (10, 20, 30... µs long), one launch call each
    bool sync = false;  // a cudaStreamSynchronize call (SYSTEM span, no kernel) in the first op
  };

  // One request at `t0` µs: request [t0, t0+1000], tokenize 50, prefill 300, decode steps of 200 each,
  // detokenize 100; the rest of the request span (150 µs with 2 decode steps) is in no stage.
  SpanId request(int index, std::int64_t t0, int decode_steps, const std::vector<StepContent>& content = {}) {
    const SpanId r = add(Level::kModel, kStageRequest, t0, t0 + 1000, app,
                         {{"request", std::int64_t{index}},
                          {"batch_size", std::int64_t{2}},
                          {"prompt_tokens", std::int64_t{10}},
                          {"output_tokens", std::int64_t{decode_steps + 1}}});
    add(Level::kModel, kStageTokenize, t0, t0 + 50, r);
    std::int64_t t = t0 + 50;
    for (int step = 0; step <= decode_steps; ++step) {
      const std::int64_t len = step == 0 ? 300 : 200;
      const SpanId s =
          add(Level::kModel, step == 0 ? kStagePrefill : kStageDecode, t, t + len, r, {{"step", std::int64_t{step}}});
      if (static_cast<std::size_t>(step) < content.size()) fill(s, t, content[static_cast<std::size_t>(step)]);
      t += len;
    }
    add(Level::kModel, kStageDetokenize, t, t + 100, r);
    return r;
  }

  void fill(SpanId step, std::int64_t t, const StepContent& c) {
    bool first = true;
    for (const auto& [op, module, dur] : c.ops) {
      std::vector<Tag> tags;
      if (!module.empty()) tags.emplace_back("module", module);
      const SpanId o = add(Level::kFramework, op, t, t + dur, step, tags);
      // A nested op (counts nowhere in G2: only top-level ops do).
      add(Level::kFramework, "aten::matmul", t, t + dur / 2, o);
      if (first) {
        for (int k = 0; k < c.kernels; ++k) {
          const SpanId call = add(Level::kSystem, "cudaLaunchKernel", t + k, t + k + 1, o, {{"domain", "runtime"}});
          add(Level::kKernel, "gemm" + std::to_string(k), t + 2 + 10 * k, t + 2 + 10 * k + 10 * (k + 1), call,
              {{"kind", "kernel"}}, kStream7);
        }
        if (c.sync) add(Level::kSystem, "cudaStreamSynchronize", t + 1, t + 2, o, {{"domain", "runtime"}});
      }
      first = false;
      t += dur;
    }
  }
};

nlohmann::json summary_json(double p50_ms, double p99_ms) {
  LatencySummary s;
  s.n = 2;
  s.p50 = p50_ms * 1e6;
  s.p99 = p99_ms * 1e6;
  s.trimmed_mean = s.mean = s.min = s.max = s.p90 = s.p95 = s.p999 = s.p50;
  return to_json(s);
}

nlohmann::json generation_json(int requests) {
  nlohmann::json g = nlohmann::json::object();
  g["requests"] = requests;
  g["prompt_tokens"] = std::vector<int>(static_cast<std::size_t>(requests), 10);
  std::vector<int> out(static_cast<std::size_t>(requests), 3);
  g["output_tokens"] = out;
  g["ttft_ns"] = summary_json(2, 3);
  g["tpot_ns"] = summary_json(1, 1.5);
  g["itl_ns"] = summary_json(1, 1.5);
  g["e2e_ns"] = summary_json(5, 6);
  g["input_tokens_per_s"] = 1000.0;
  g["output_tokens_per_s"] = 300.0;
  g["kv_cache_bytes"] = 13312;  // = 2 × 2 layers × 4 heads × 8 × 4 bytes × 13 positions × 2 sequences
  g["ttft_values_ns"] = std::vector<double>(static_cast<std::size_t>(requests), 2e6);
  g["tpot_values_ns"] = std::vector<double>(static_cast<std::size_t>(requests), 1e6);
  return g;
}

RunRecord run(TraceLevel level, Trace trace, int requests = 2) {
  RunRecord r;
  r.batch_size = 2;
  r.trace_level = level;
  r.iterations = requests;
  r.trace = std::move(trace);
  r.generation = generation_outcome_from_json(generation_json(requests));
  return r;
}

// Prefill: c_attn 100 µs, c_fc 50 µs, an op without module 20 µs; each decode step: c_attn 30, c_fc 60.
std::vector<GenerationTraceBuilder::StepContent> ops_content(int decode_steps) {
  std::vector<GenerationTraceBuilder::StepContent> c;
  c.push_back(
      {{{"aten::linear", "h.0.attn.c_attn", 100}, {"aten::linear", "h.1.mlp.c_fc", 50}, {"aten::embedding", "", 20}},
       0,
       false});
  for (int i = 0; i < decode_steps; ++i)
    c.push_back({{{"aten::linear", "h.0.attn.c_attn", 30}, {"aten::linear", "h.1.mlp.c_fc", 60}}, 0, false});
  return c;
}

// Kernels: prefill 3 kernels (10+20+30 µs) and a sync call; decode step 1: 2 kernels, step 2: 4 kernels.
std::vector<GenerationTraceBuilder::StepContent> kernel_content() {
  return {{{{"aten::linear", "h.0.attn.c_attn", 100}}, 3, true},
          {{{"aten::linear", "h.0.attn.c_attn", 100}}, 2, false},
          {{{"aten::linear", "h.0.attn.c_attn", 150}}, 4, false}};
}

EvaluationRecord generation_record(bool with_model_settings = true) {
  EvaluationRecord e;
  e.model_name = "gpt2";
  e.device = "cuda";
  e.scenario = "generation";
  e.batch_sizes = {2};
  e.trace_level = TraceLevel::kKernel;
  e.leveled = true;
  if (with_model_settings)
    e.settings["generation"]["model"] = {{"n_layer", 2}, {"n_head", 4}, {"head_dim", 8}, {"element_bytes", 4}};
  GenerationTraceBuilder m;
  m.request(0, 10'000, 2);
  m.request(1, 20'000, 2);
  e.runs.push_back(run(TraceLevel::kModel, m.trace));
  GenerationTraceBuilder f;
  f.request(0, 10'000, 2, ops_content(2));
  f.request(1, 20'000, 2, ops_content(2));
  e.runs.push_back(run(TraceLevel::kFramework, f.trace));
  GenerationTraceBuilder k;
  k.request(0, 10'000, 2, kernel_content());
  k.request(1, 20'000, 2, kernel_content());
  e.runs.push_back(run(TraceLevel::kKernel, k.trace));
  return e;
}

double num(const Table& t, std::size_t row, const std::string& col) {
  const Cell& c = cell(t, t.rows.at(row), col);
  if (auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&c)) return *d;
  ADD_FAILURE() << col << " is not numeric";
  return std::nan("");
}
std::string str(const Table& t, std::size_t row, const std::string& col) {
  const Cell& c = cell(t, t.rows.at(row), col);
  if (auto* s = std::get_if<std::string>(&c)) return *s;
  ADD_FAILURE() << col << " is not text";
  return "";
}
bool empty_cell(const Table& t, std::size_t row, const std::string& col) {
  return std::holds_alternative<std::monostate>(cell(t, t.rows.at(row), col));
}
bool has_note(const Table& t, const std::string& part) {
  for (const auto& n : t.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

TEST(GenerationAnalyses, ExtractsRequestsAndSteps) {
  GenerationTraceBuilder b;
  b.request(0, 10'000, 3);
  const auto reqs = extract_generation_requests(b.trace);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].index, 0);
  EXPECT_EQ(reqs[0].output_tokens, 4);
  ASSERT_TRUE(reqs[0].prefill.has_value());
  EXPECT_EQ(reqs[0].prefill->duration_ns(), 300 * kUs);
  ASSERT_EQ(reqs[0].decode.size(), 3u);
  EXPECT_EQ(reqs[0].decode[2].step, 3);
  EXPECT_EQ(reqs[0].decode_ns(), 600 * kUs);
  EXPECT_EQ(reqs[0].tokenize_ns, 50 * kUs);
  EXPECT_EQ(reqs[0].detokenize_ns, 100 * kUs);
}

TEST(GenerationAnalyses, TransformerLayerOfAModulePath) {
  EXPECT_EQ(transformer_layer("h.3.attn.c_attn"), "h.3");
  EXPECT_EQ(transformer_layer("transformer.h.11.mlp.c_fc"), "transformer.h.11");
  EXPECT_EQ(transformer_layer("ln_f"), "ln_f");
  EXPECT_EQ(transformer_layer("transformer.wte"), "transformer.wte");
  EXPECT_EQ(transformer_layer(""), "");
}

TEST(GenerationAnalyses, G1SplitsTheRequestAndReadsTheTokenFigures) {
  const Table t = g1_prefill_vs_decode(generation_record());
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(num(t, 0, "batch_size"), 2);
  EXPECT_EQ(num(t, 0, "requests"), 2);
  EXPECT_DOUBLE_EQ(num(t, 0, "ttft_p50_ms"), 2.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "ttft_p99_ms"), 3.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "tpot_p50_ms"), 1.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "tpot_p99_ms"), 1.5);
  EXPECT_DOUBLE_EQ(num(t, 0, "e2e_p50_ms"), 5.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "output_tokens_per_s"), 300.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "input_tokens_per_s"), 1000.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "request_ms"), 1.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "tokenize_ms"), 0.05);
  EXPECT_DOUBLE_EQ(num(t, 0, "prefill_ms"), 0.3);
  EXPECT_DOUBLE_EQ(num(t, 0, "decode_ms"), 0.4);
  EXPECT_DOUBLE_EQ(num(t, 0, "detokenize_ms"), 0.1);
  EXPECT_DOUBLE_EQ(num(t, 0, "prefill_share_pct"), 30.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "decode_share_pct"), 40.0);
  EXPECT_NEAR(num(t, 0, "other_share_pct"), 15.0, 1e-9);
  const double sum = num(t, 0, "tokenize_share_pct") + num(t, 0, "prefill_share_pct") + num(t, 0, "decode_share_pct") +
                     num(t, 0, "detokenize_share_pct") + num(t, 0, "other_share_pct");
  EXPECT_NEAR(sum, 100.0, 1e-9);
  EXPECT_TRUE(has_note(t, "2 request spans, 4 decode steps"));
  // The default chart stacks the four stages per batch size.
  const nlohmann::json chart = vega_lite_chart(t);
  ASSERT_TRUE(chart.is_object());
}

TEST(GenerationAnalyses, G2GroupsModulesByLayerAndSplitsPrefillFromDecode) {
  const Table t = g2_layer_prefill_decode(generation_record(), 2);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.batch_size, 2);
  // Sorted by decode time per request, descending.
  EXPECT_EQ(str(t, 0, "module"), "h.1.mlp.c_fc");
  EXPECT_EQ(str(t, 0, "layer"), "h.1");
  EXPECT_EQ(str(t, 0, "op"), "aten::linear");
  EXPECT_DOUBLE_EQ(num(t, 0, "prefill_ms"), 0.05);
  EXPECT_DOUBLE_EQ(num(t, 0, "decode_step_ms"), 0.06);
  EXPECT_DOUBLE_EQ(num(t, 0, "decode_total_ms"), 0.12);
  EXPECT_EQ(str(t, 1, "module"), "h.0.attn.c_attn");
  EXPECT_EQ(str(t, 1, "layer"), "h.0");
  EXPECT_DOUBLE_EQ(num(t, 1, "prefill_ms"), 0.1);
  EXPECT_DOUBLE_EQ(num(t, 1, "decode_step_ms"), 0.03);
  EXPECT_DOUBLE_EQ(num(t, 1, "decode_total_ms"), 0.06);
  // An op without a module tag is its own module and layer.
  EXPECT_EQ(str(t, 2, "module"), "aten::embedding");
  EXPECT_EQ(str(t, 2, "layer"), "aten::embedding");
  EXPECT_DOUBLE_EQ(num(t, 2, "prefill_ms"), 0.02);
  EXPECT_DOUBLE_EQ(num(t, 2, "decode_total_ms"), 0.0);
  EXPECT_NEAR(num(t, 1, "prefill_share_pct"), 100.0 * 100 / 170, 1e-9);
  EXPECT_NEAR(num(t, 0, "decode_share_pct"), 100.0 * 2 / 3, 1e-9);
  double prefill = 0, decode = 0;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    prefill += num(t, i, "prefill_share_pct");
    decode += num(t, i, "decode_share_pct");
  }
  EXPECT_NEAR(prefill, 100.0, 1e-9);
  EXPECT_NEAR(decode, 100.0, 1e-9);
  EXPECT_TRUE(has_note(t, "2 requests with their ops kept, 4 decode steps"));
  EXPECT_TRUE(has_note(t, "14 top-level ops"));
}

// A --cuda-graphs evaluation: the host runs no decode op (one graph launch per step), so the M/F run's decode steps
// are empty; the kernel-level run holds the replayed ops (docs/cuda-graphs.md), which G2 must take instead.
TEST(GenerationAnalyses, G2TakesTheReplayedOpsOfACudaGraphRun) {
  EvaluationRecord e = generation_record();
  e.settings["request"]["cuda_graphs"] = true;
  GenerationTraceBuilder f;  // prefill ops only
  const std::vector<GenerationTraceBuilder::StepContent> prefill_only{ops_content(0)};
  f.request(0, 10'000, 2, prefill_only);
  f.request(1, 20'000, 2, prefill_only);
  e.runs[1] = run(TraceLevel::kFramework, f.trace);
  // Kernel run: prefill as in eager; each decode step holds replayed c_attn 40 µs and c_fc 80 µs.
  std::vector<GenerationTraceBuilder::StepContent> replay = ops_content(0);
  for (int i = 0; i < 2; ++i)
    replay.push_back({{{"aten::linear", "h.0.attn.c_attn", 40}, {"aten::linear", "h.1.mlp.c_fc", 80}}, 0, false});
  GenerationTraceBuilder k;
  k.request(0, 10'000, 2, replay);
  k.request(1, 20'000, 2, replay);
  std::set<SpanId> decode_steps;
  for (const Span& s : k.trace.spans)
    if (s.name == kStageDecode) decode_steps.insert(s.id);
  for (Span& s : k.trace.spans)
    if (s.level == Level::kFramework && decode_steps.contains(s.parent_id))
      s.tags.emplace_back("replayed_from", "cuda-graph");
  e.runs[2] = run(TraceLevel::kKernel, k.trace);

  const Table t = g2_layer_prefill_decode(e, 2);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(str(t, 0, "module"), "h.1.mlp.c_fc");
  EXPECT_DOUBLE_EQ(num(t, 0, "decode_step_ms"), 0.08);
  EXPECT_DOUBLE_EQ(num(t, 0, "decode_total_ms"), 0.16);
  EXPECT_EQ(str(t, 1, "module"), "h.0.attn.c_attn");
  EXPECT_DOUBLE_EQ(num(t, 1, "decode_step_ms"), 0.04);
  EXPECT_DOUBLE_EQ(num(t, 1, "prefill_ms"), 0.1);
  EXPECT_TRUE(has_note(t, "the decode step ran as a CUDA graph"));
  // Without the setting, the M/F run is read: no decode time at all.
  e.settings.erase("request");
  const Table eager = g2_layer_prefill_decode(e, 2);
  for (std::size_t i = 0; i < eager.rows.size(); ++i) EXPECT_DOUBLE_EQ(num(eager, i, "decode_total_ms"), 0.0);
}

TEST(GenerationAnalyses, G2NamesEachModulesPartAndSharesDecodeTimeByPart) {
  const Table t = g2_layer_prefill_decode(generation_record(), 2);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(str(t, 0, "part"), "MLP");             // h.1.mlp.c_fc
  EXPECT_EQ(str(t, 1, "part"), "qkv projection");  // h.0.attn.c_attn
  EXPECT_EQ(str(t, 2, "part"), "embedding");       // aten::embedding, no module
  // Decode: c_fc 120 µs and c_attn 60 µs per request; prefill: c_attn 100, c_fc 50, embedding 20.
  EXPECT_TRUE(has_note(t, "decode time by part: MLP 66.7%, qkv projection 33.3%"));
  EXPECT_TRUE(has_note(t, "prefill time by part: qkv projection 58.8%, MLP 29.4%, embedding 11.8%"));
}

TEST(GenerationAnalyses, TransformerPartOfGpt2ModulePaths) {
  EXPECT_EQ(transformer_part("transformer.wte", "aten::embedding"), "embedding");
  EXPECT_EQ(transformer_part("transformer.wpe", "aten::embedding"), "embedding");
  EXPECT_EQ(transformer_part("transformer.h.0.ln_1", "aten::layer_norm"), "norm");
  EXPECT_EQ(transformer_part("transformer.h.0.attn.c_attn", "aten::addmm"), "qkv projection");
  EXPECT_EQ(transformer_part("transformer.h.0.attn", "aten::softmax"), "attention");
  EXPECT_EQ(transformer_part("transformer.h.0.attn.attn_dropout", "aten::dropout"), "attention");
  // The same component name is a different part under attn and under mlp.
  EXPECT_EQ(transformer_part("transformer.h.0.attn.c_proj", "aten::addmm"), "o projection");
  EXPECT_EQ(transformer_part("transformer.h.0.mlp.c_proj", "aten::addmm"), "MLP");
  EXPECT_EQ(transformer_part("transformer.h.0.mlp.c_fc", "aten::addmm"), "MLP");
  EXPECT_EQ(transformer_part("transformer.h.0.mlp.act", "aten::gelu"), "MLP");
  EXPECT_EQ(transformer_part("transformer.h.0.mlp", "aten::gelu"), "MLP");
  EXPECT_EQ(transformer_part("transformer.h.11.ln_2", "aten::layer_norm"), "norm");
  EXPECT_EQ(transformer_part("transformer.ln_f", "aten::layer_norm"), "norm");
  EXPECT_EQ(transformer_part("lm_head", "aten::linear"), "lm head");
  EXPECT_EQ(transformer_part("h.3.attn.c_attn", "aten::linear"), "qkv projection");  // without the "transformer."
  EXPECT_EQ(transformer_part("transformer.h.0", "aten::add"), "other");              // the block's residual add
}

TEST(GenerationAnalyses, TransformerPartOfLlamaStyleModulePaths) {
  EXPECT_EQ(transformer_part("model.embed_tokens", "aten::embedding"), "embedding");
  EXPECT_EQ(transformer_part("model.layers.0.input_layernorm", "aten::mul"), "norm");
  EXPECT_EQ(transformer_part("model.layers.0.self_attn.q_proj", "aten::linear"), "q projection");
  EXPECT_EQ(transformer_part("model.layers.0.self_attn.k_proj", "aten::linear"), "k projection");
  EXPECT_EQ(transformer_part("model.layers.0.self_attn.v_proj", "aten::linear"), "v projection");
  EXPECT_EQ(transformer_part("model.layers.0.self_attn.o_proj", "aten::linear"), "o projection");
  EXPECT_EQ(transformer_part("model.layers.0.self_attn.rotary_emb", "aten::cos"), "rotary embedding");
  EXPECT_EQ(transformer_part("model.rotary_emb", "aten::cos"), "rotary embedding");
  EXPECT_EQ(transformer_part("model.layers.0.self_attn", "aten::scaled_dot_product_attention"), "attention");
  EXPECT_EQ(transformer_part("model.layers.0.post_attention_layernorm", "aten::pow"), "norm");
  EXPECT_EQ(transformer_part("model.layers.0.mlp.gate_proj", "aten::linear"), "MLP");
  EXPECT_EQ(transformer_part("model.layers.0.mlp.up_proj", "aten::linear"), "MLP");
  EXPECT_EQ(transformer_part("model.layers.0.mlp.down_proj", "aten::linear"), "MLP");
  EXPECT_EQ(transformer_part("model.layers.0.mlp.act_fn", "aten::silu"), "MLP");
  EXPECT_EQ(transformer_part("model.norm", "aten::rms_norm"), "norm");
  EXPECT_EQ(transformer_part("lm_head", "aten::linear"), "lm head");
  EXPECT_EQ(transformer_part("model.layers.7", "aten::add"), "other");
}

TEST(GenerationAnalyses, TransformerPartOfOtherFamiliesAndOfBareOps) {
  // GPT-NeoX
  EXPECT_EQ(transformer_part("gpt_neox.embed_in", "aten::embedding"), "embedding");
  EXPECT_EQ(transformer_part("gpt_neox.layers.0.attention.query_key_value", "aten::linear"), "qkv projection");
  EXPECT_EQ(transformer_part("gpt_neox.layers.0.attention.dense", "aten::linear"), "o projection");
  EXPECT_EQ(transformer_part("gpt_neox.layers.0.mlp.dense_h_to_4h", "aten::linear"), "MLP");
  EXPECT_EQ(transformer_part("gpt_neox.layers.0.mlp.dense_4h_to_h", "aten::linear"), "MLP");
  EXPECT_EQ(transformer_part("gpt_neox.final_layer_norm", "aten::layer_norm"), "norm");
  EXPECT_EQ(transformer_part("embed_out", "aten::linear"), "lm head");
  // Falcon, BLOOM, OPT, Mixtral
  EXPECT_EQ(transformer_part("transformer.word_embeddings", "aten::embedding"), "embedding");
  EXPECT_EQ(transformer_part("transformer.word_embeddings_layernorm", "aten::layer_norm"), "norm");
  EXPECT_EQ(transformer_part("transformer.h.0.self_attention.dense", "aten::linear"), "o projection");
  EXPECT_EQ(transformer_part("model.decoder.layers.0.fc1", "aten::linear"), "MLP");
  EXPECT_EQ(transformer_part("model.decoder.layers.0.self_attn.out_proj", "aten::linear"), "o projection");
  EXPECT_EQ(transformer_part("model.layers.0.block_sparse_moe.experts.3.w1", "aten::linear"), "MLP");
  EXPECT_EQ(transformer_part("Model.Layers.0.Self_Attn.Q_Proj", "aten::linear"), "q projection");  // any case
  // No module: the op name decides.
  EXPECT_EQ(transformer_part("", "aten::scaled_dot_product_attention"), "attention");
  EXPECT_EQ(transformer_part("", "aten::_scaled_dot_product_flash_attention"), "attention");
  EXPECT_EQ(transformer_part("", "aten::layer_norm"), "norm");
  EXPECT_EQ(transformer_part("", "aten::embedding"), "embedding");
  EXPECT_EQ(transformer_part("", "aten::linear"), "other");
  EXPECT_EQ(transformer_part("", ""), "other");
}

TEST(GenerationAnalyses, G2AveragesOverTheKeptRequestsOnly) {
  EvaluationRecord e = generation_record();
  // The M/F run measured 5 requests and kept the ops of one (trace tail), with 3 decode steps; another request
  // kept its MODEL spans only, as the runner leaves every request, and must not dilute the per-step means.
  GenerationTraceBuilder f;
  f.request(3, 40'000, 3);
  f.request(4, 50'000, 3, ops_content(3));
  e.runs[1] = run(TraceLevel::kFramework, f.trace, 5);
  const Table t = g2_layer_prefill_decode(e, 2);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(str(t, 0, "module"), "h.1.mlp.c_fc");
  EXPECT_DOUBLE_EQ(num(t, 0, "prefill_ms"), 0.05);
  EXPECT_DOUBLE_EQ(num(t, 0, "decode_step_ms"), 0.06);
  EXPECT_NEAR(num(t, 0, "decode_total_ms"), 0.18, 1e-12);  // 3 steps of one request
  EXPECT_TRUE(has_note(t, "1 request with its ops kept, 3 decode steps (of 2 request spans"));
}

TEST(GenerationAnalyses, G1CountsThePartiallyKeptRequests) {
  EvaluationRecord e = generation_record();
  GenerationTraceBuilder m;
  m.request(2, 30'000, 2);
  e.runs[0] = run(TraceLevel::kModel, m.trace, 3);
  const Table t = g1_prefill_vs_decode(e);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(num(t, 0, "requests"), 1);
  EXPECT_DOUBLE_EQ(num(t, 0, "decode_ms"), 0.4);
  EXPECT_TRUE(has_note(t, "measured 3 requests"));
}

TEST(GenerationAnalyses, G3ChecksTheKvCacheAgainstTheFormula) {
  const Table t = g3_kv_cache_memory(generation_record());
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(num(t, 0, "prompt_tokens"), 10);
  EXPECT_EQ(num(t, 0, "output_tokens"), 3);
  EXPECT_EQ(num(t, 0, "positions"), 13);
  EXPECT_EQ(num(t, 0, "kv_cache_bytes"), 13312);
  EXPECT_DOUBLE_EQ(num(t, 0, "bytes_per_token"), 512.0);  // 13312 / (2 × 13)
  EXPECT_EQ(num(t, 0, "formula_bytes"), 2 * 2 * 4 * 8 * 13 * 2 * 4);
  EXPECT_DOUBLE_EQ(num(t, 0, "recorded_over_formula"), 1.0);
  EXPECT_TRUE(has_note(t, "512 bytes per position and sequence"));

  const Table without = g3_kv_cache_memory(generation_record(false));
  ASSERT_EQ(without.rows.size(), 1u);
  EXPECT_TRUE(empty_cell(without, 0, "formula_bytes"));
  EXPECT_TRUE(empty_cell(without, 0, "recorded_over_formula"));
  EXPECT_DOUBLE_EQ(num(without, 0, "bytes_per_token"), 512.0);
  EXPECT_TRUE(has_note(without, "formula_bytes is empty"));
}

// A generation record whose M run generated 5 + 3 tokens per sequence (batch 2) into a KV cache of `kv_bytes`, with
// `model` as settings["generation"]["model"].
EvaluationRecord kv_record(nlohmann::json model, std::int64_t kv_bytes) {
  EvaluationRecord e = generation_record();
  e.settings["generation"]["model"] = std::move(model);
  GenerationOutcome& g = *e.runs[0].generation;
  g.prompt_tokens.assign(g.prompt_tokens.size(), 5);
  g.output_tokens.assign(g.output_tokens.size(), 3);
  g.kv_cache_bytes = kv_bytes;
  return e;
}

TEST(GenerationAnalyses, G3CountsTheKvHeadsOfGroupedQueryAttention) {
  // 16 query heads share 4 KV heads: 2 (K, V) × 2 layers × 4 KV heads × 8 × 8 positions × 2 sequences × 2 bytes.
  const std::int64_t gqa = 2 * 2 * 4 * 8 * 8 * 2 * 2;
  nlohmann::json model = {{"n_layer", 2}, {"n_head", 16}, {"n_kv_head", 4}, {"head_dim", 8}, {"element_bytes", 2}};
  const Table t = g3_kv_cache_memory(kv_record(model, gqa));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(num(t, 0, "positions"), 8);
  EXPECT_EQ(num(t, 0, "n_kv_head"), 4);
  EXPECT_EQ(num(t, 0, "formula_bytes"), gqa);
  EXPECT_DOUBLE_EQ(num(t, 0, "recorded_over_formula"), 1.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "bytes_per_token"), static_cast<double>(gqa) / 16);
  EXPECT_TRUE(empty_cell(t, 0, "cache_positions"));
  EXPECT_TRUE(has_note(t, "n_kv_head"));
  EXPECT_TRUE(has_note(t, "grouped-query (GQA)"));
  EXPECT_FALSE(has_note(t, "multi-head attention) is assumed"));

  // Without n_kv_head the formula counts every query head: 4× as large, and a note says what was assumed.
  model.erase("n_kv_head");
  const Table mha = g3_kv_cache_memory(kv_record(model, gqa));
  ASSERT_EQ(mha.rows.size(), 1u);
  EXPECT_EQ(num(mha, 0, "n_kv_head"), 16);
  EXPECT_EQ(num(mha, 0, "formula_bytes"), 4 * gqa);
  EXPECT_DOUBLE_EQ(num(mha, 0, "recorded_over_formula"), 0.25);
  EXPECT_TRUE(has_note(mha, "does not give n_kv_head: one KV head per query head (multi-head attention) is assumed"));
}

TEST(GenerationAnalyses, G3SizesAStaticCacheByItsAllocatedLength) {
  // A static cache allocated for 32 positions holds 32 whatever the request's 5 + 3 tokens.
  const std::int64_t allocated = 2 * 2 * 4 * 8 * 32 * 2 * 2;
  const nlohmann::json model = {{"n_layer", 2},  {"n_head", 16},       {"n_kv_head", 4},
                                {"head_dim", 8}, {"element_bytes", 2}, {"cache_positions", 32}};
  const Table t = g3_kv_cache_memory(kv_record(model, allocated));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(num(t, 0, "positions"), 8);
  EXPECT_EQ(num(t, 0, "cache_positions"), 32);
  EXPECT_EQ(num(t, 0, "formula_bytes"), allocated);
  EXPECT_DOUBLE_EQ(num(t, 0, "recorded_over_formula"), 1.0);
  EXPECT_DOUBLE_EQ(num(t, 0, "bytes_per_token"), static_cast<double>(allocated) / 16);  // per used position
  EXPECT_TRUE(has_note(t, "the formula's positions are cache_positions = 32"));

  // A cache shorter than the request cannot be: said in a note.
  nlohmann::json short_cache = model;
  short_cache["cache_positions"] = 6;
  EXPECT_TRUE(has_note(g3_kv_cache_memory(kv_record(short_cache, allocated)),
                       "batch size 2: the request's 8 positions exceed cache_positions 6"));
}

TEST(GenerationAnalyses, G3IgnoresDimensionsThatAreNotPositiveIntegers) {
  const nlohmann::json model = {{"n_layer", 2},    {"n_head", 16},       {"n_kv_head", 0},
                                {"head_dim", 8.0}, {"element_bytes", 2}, {"cache_positions", -4}};
  const Table t = g3_kv_cache_memory(kv_record(model, 8192));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_TRUE(has_note(t, "[\"n_kv_head\"] = 0 is ignored: not a positive integer"));
  EXPECT_TRUE(has_note(t, "[\"cache_positions\"] = -4 is ignored"));
  EXPECT_TRUE(has_note(t, "multi-head attention) is assumed"));  // n_kv_head ignored: n_head stands in
  EXPECT_EQ(num(t, 0, "n_kv_head"), 16);
  EXPECT_TRUE(empty_cell(t, 0, "cache_positions"));
  EXPECT_EQ(num(t, 0, "formula_bytes"), 2 * 2 * 16 * 8 * 8 * 2 * 2);  // 8.0 is a whole number: kept

  const nlohmann::json bad = {{"n_layer", "2"}, {"n_head", -16}, {"head_dim", 2.5}, {"element_bytes", true}};
  const Table none = g3_kv_cache_memory(kv_record(bad, 8192));
  ASSERT_EQ(none.rows.size(), 1u);
  EXPECT_TRUE(empty_cell(none, 0, "formula_bytes"));
  EXPECT_TRUE(empty_cell(none, 0, "recorded_over_formula"));
  EXPECT_TRUE(empty_cell(none, 0, "n_kv_head"));
  EXPECT_TRUE(has_note(none, "[\"n_layer\"] = \"2\" is ignored"));
  EXPECT_TRUE(has_note(none, "[\"n_head\"] = -16 is ignored"));
  EXPECT_TRUE(has_note(none, "[\"head_dim\"] = 2.5 is ignored"));
  EXPECT_TRUE(has_note(none, "[\"element_bytes\"] = true is ignored"));
  EXPECT_TRUE(has_note(none,
                       "formula_bytes is empty: settings[\"generation\"][\"model\"] does not give n_layer, "
                       "n_kv_head or n_head, head_dim, element_bytes"));
}

TEST(GenerationAnalyses, G4CountsKernelsPerStep) {
  const Table t = g4_kernels_per_step(generation_record(), 2);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(num(t, 0, "step"), 0);
  EXPECT_EQ(num(t, 0, "samples"), 2);
  EXPECT_DOUBLE_EQ(num(t, 0, "kernel_count"), 3);
  EXPECT_DOUBLE_EQ(num(t, 0, "kernel_time_ms"), 0.06);  // 10 + 20 + 30 µs
  EXPECT_DOUBLE_EQ(num(t, 0, "step_ms"), 0.3);
  EXPECT_DOUBLE_EQ(num(t, 0, "launch_calls"), 3);
  EXPECT_DOUBLE_EQ(num(t, 0, "api_calls"), 4);  // 3 launches and a synchronize
  EXPECT_NEAR(num(t, 0, "gpu_busy_pct"), 20.0, 1e-9);
  EXPECT_EQ(num(t, 1, "step"), 1);
  EXPECT_DOUBLE_EQ(num(t, 1, "kernel_count"), 2);
  EXPECT_DOUBLE_EQ(num(t, 1, "kernel_time_ms"), 0.03);
  EXPECT_NEAR(num(t, 1, "gpu_busy_pct"), 15.0, 1e-9);
  EXPECT_EQ(num(t, 2, "step"), 2);
  EXPECT_DOUBLE_EQ(num(t, 2, "kernel_count"), 4);
  EXPECT_DOUBLE_EQ(num(t, 2, "api_calls"), 4);
  EXPECT_TRUE(has_note(t, "kernels per decode step: mean 3.0 (min 2, max 4) over 4 decode steps"));
}

TEST(GenerationAnalyses, G4CountsOnlyTheStepsOfRequestsWhoseKernelsWereKept) {
  EvaluationRecord e = generation_record();
  GenerationTraceBuilder k;
  k.request(0, 10'000, 2, kernel_content());
  k.request(1, 20'000, 2, kernel_content());
  k.request(9, 90'000, 2);  // MODEL spans only: its ops and kernels were dropped (tail traces)
  e.runs[2] = run(TraceLevel::kKernel, k.trace, 3);
  const Table t = g4_kernels_per_step(e, 2);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(num(t, 0, "samples"), 2);
  EXPECT_DOUBLE_EQ(num(t, 1, "kernel_count"), 2);
  EXPECT_TRUE(has_note(t, "kernels per decode step: mean 3.0 (min 2, max 4) over 4 decode steps"));
  EXPECT_TRUE(has_note(t, "2 requests with their ops kept, 4 decode steps (of 3 request spans"));
}

TEST(GenerationAnalyses, G4WithoutKernels) {
  EvaluationRecord e = generation_record();
  e.runs.pop_back();  // a CPU evaluation: no KERNEL-level run
  e.trace_level = TraceLevel::kFramework;
  const Table none = g4_kernels_per_step(e, 2);
  EXPECT_TRUE(none.rows.empty());
  EXPECT_TRUE(has_note(none, kNoKernelRun));

  EvaluationRecord cpu = generation_record();
  GenerationTraceBuilder k;  // a kernel-level run whose trace has no KERNEL spans
  k.request(0, 10'000, 2, ops_content(2));
  cpu.runs[2] = run(TraceLevel::kKernel, k.trace);
  const Table empty = g4_kernels_per_step(cpu, 2);
  EXPECT_TRUE(empty.rows.empty());
  EXPECT_TRUE(has_note(empty, "no KERNEL spans"));
}

// A counter run's trace by hand: request 10 over prefill 11 (step 0) and decode 12 (step 1); op 13 under the prefill;
// HARDWARE spans under the op, the steps and (one) the request itself.
Trace counter_trace() {
  Trace t;
  auto span = [&t](SpanId id, SpanId parent, Level level, std::string name, std::vector<Tag> tags) {
    Span s;
    s.id = id;
    s.parent_id = parent;
    s.level = level;
    s.name = std::move(name);
    s.tags = std::move(tags);
    t.spans.push_back(std::move(s));
  };
  span(10, kNoSpan, Level::kModel, kStageRequest, {{"request", 0}});
  span(11, 10, Level::kModel, kStagePrefill, {{"step", 0}});
  span(12, 10, Level::kModel, kStageDecode, {{"step", 1}});
  span(13, 11, Level::kFramework, "aten::linear", {});
  span(20, 13, Level::kHardware, "gemm", {{"fp32_flops", 4e6}, {"dram_read_bytes", 1e6}, {"dram_write_bytes", 1e6}});
  span(21, 11, Level::kHardware, "softmax",
       {{"fp32_flops", 2e6}, {"dram_read_bytes", 5e5}, {"dram_write_bytes", 5e5}, {"range_index", 1}});
  span(22, 12, Level::kHardware, "gemv", {{"fp16_flops", 1e6}, {"dram_read_bytes", 2e6}, {"dram_write_bytes", 0.0}});
  span(23, 12, Level::kHardware, "add", {{"fp32_flops", 1e6}});  // no DRAM counters
  span(24, 10, Level::kHardware, "copy", {{"dram_read_bytes", 8.0}, {"dram_write_bytes", 8.0}});
  return t;
}

TEST(GenerationAnalyses, G5SumsEachStepsKernelCountersAndDividesFlopsByDramBytes) {
  std::size_t outside = 0;
  const std::vector<StepCounters> steps = generation_step_counters(counter_trace(), &outside);
  EXPECT_EQ(outside, 1u);  // the copy under the request, outside any step
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].step, 0);
  EXPECT_EQ(steps[0].phase, kStagePrefill);
  EXPECT_EQ(steps[0].requests, 1u);
  EXPECT_DOUBLE_EQ(steps[0].kernels, 2);               // the gemm (through its op) and the softmax
  EXPECT_DOUBLE_EQ(steps[0].flops.value(), 6e6);       // 4 + 2 MFLOP
  EXPECT_DOUBLE_EQ(steps[0].dram_bytes.value(), 3e6);  // 2 + 1 MB
  EXPECT_DOUBLE_EQ(steps[0].arithmetic_intensity.value(), 2.0);
  EXPECT_EQ(steps[1].phase, kStageDecode);
  EXPECT_DOUBLE_EQ(steps[1].kernels, 2);
  EXPECT_DOUBLE_EQ(steps[1].flops.value(), 2e6);       // FP16 and FP32 FLOPs together
  EXPECT_DOUBLE_EQ(steps[1].dram_bytes.value(), 2e6);  // the add had no DRAM counters
  EXPECT_DOUBLE_EQ(steps[1].arithmetic_intensity.value(), 1.0);

  EvaluationRecord e = generation_record();
  EXPECT_TRUE(g5_counters_per_step(e, 2).rows.empty());  // no counter run
  EXPECT_TRUE(has_note(g5_counters_per_step(e, 2), "--trace-level hardware"));
  e.runs.push_back(run(TraceLevel::kHardware, counter_trace(), 1));
  const Table t = g5_counters_per_step(e, 2);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(num(t, 0, "gflops"), 6e-3);
  EXPECT_DOUBLE_EQ(num(t, 0, "dram_mb"), 3.0);
  EXPECT_DOUBLE_EQ(num(t, 1, "arithmetic_intensity"), 1.0);
  EXPECT_TRUE(has_note(t, "1 HARDWARE spans are not under a prefill or decode step"));
}

TEST(GenerationAnalyses, RecordsWithoutGenerationRunsGiveNoRows) {
  EvaluationRecord e = generation_record();
  for (RunRecord& r : e.runs) r.generation.reset();
  EXPECT_FALSE(is_generation_evaluation(e));
  const auto tables = run_analyses(e, {"G1", "G2", "G3", "G4"}, std::nullopt);
  ASSERT_EQ(tables.size(), 4u);
  for (const Table& t : tables) {
    EXPECT_TRUE(t.rows.empty()) << t.id;
    EXPECT_TRUE(has_note(t, kNotGeneration)) << t.id;
    EXPECT_EQ(t.columns.size(), analysis_spec(t.id).columns.size());
  }
  const auto defaults = default_analysis_ids(e);
  EXPECT_EQ(defaults, (std::vector<std::string>{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "ops"}));
}

TEST(GenerationAnalyses, RunAnalysesDispatchesTheGenerationIds) {
  const EvaluationRecord e = generation_record();
  EXPECT_TRUE(is_generation_evaluation(e));
  const auto& ids = analysis_ids();
  ASSERT_GE(ids.size(), 6u);  // the generation ids, then serving-tail (serving_join.h)
  EXPECT_EQ(std::vector<std::string>(ids.end() - 6, ids.end() - 1), generation_analysis_ids());
  const auto tables = run_analyses(e, {"g4", "G1", "G2", "G3"}, std::nullopt);
  ASSERT_EQ(tables.size(), 4u);
  EXPECT_EQ(tables[0].id, "G4");
  EXPECT_EQ(tables[0].rows.size(), 3u);
  EXPECT_EQ(tables[1].id, "G1");
  EXPECT_EQ(tables[2].id, "G2");
  EXPECT_EQ(tables[3].id, "G3");
  const auto defaults = default_analysis_ids(e);
  EXPECT_EQ(std::vector<std::string>(defaults.end() - 5, defaults.end()), generation_analysis_ids());
  for (const Table& t : tables) {
    EXPECT_EQ(t.spec, t.id);
    for (const auto& row : t.rows) EXPECT_EQ(row.size(), t.columns.size());
    EXPECT_TRUE(vega_lite_chart(t).is_object()) << t.id;
  }
}

}  // namespace
}  // namespace xsp
