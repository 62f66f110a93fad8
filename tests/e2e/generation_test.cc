// End to end on the CI-size GPT-2 (gpt2_tiny: TorchScript with a KV cache, Debian's LibTorch) through evaluate(), the
// one library call, with real prompts tokenized by the exported SentencePiece model: spans of every step, framework
// ops under prefill and decode, token counts, the KV cache size by its formula, greedy outputs equal across levels,
// the store round trip; then the CLI with good and bad requests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "e2e_shell.h"
#include "xsp/eval/evaluate.h"
#include "xsp/predictors/libtorch.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;
using namespace xsp;

namespace {

const fs::path kZoo = XSP_TEST_ZOO;

using xsp::e2e::sh;

using xsp::e2e::temp_dir;

constexpr int kPromptTokens = 16, kOutputTokens = 8;

class Gpt2Tiny : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_libtorch_predictor();
    dir_ = new fs::path(temp_dir("gpt2"));
    EvaluationRequest r;
    r.model = "gpt2_tiny";
    r.batch_sizes = {1, 2};
    r.trace_level = TraceLevel::kFramework;
    r.leveled = true;
    r.measurement.warmup_min_batches = 1;
    r.measurement.warmup_min_ms = r.measurement.warmup_max_ms = 0;
    r.measurement.min_batches = 3;
    r.measurement.min_duration_ms = r.measurement.max_duration_ms = 0;
    r.generation.prompt_tokens = {kPromptTokens, kPromptTokens};
    r.generation.output_tokens = TokenRange{kOutputTokens, kOutputTokens};
    r.generation.tail_steps = 2;
    EvaluationContext c;
    c.zoo = kZoo;
    c.record_machine_state = false;
    auto store = Store::open(*dir_ / "xsp.db");
    c.store = store.get();
    record_ = new EvaluationRecord(evaluate(r, c));
    loaded_ = new EvaluationRecord(store->load(record_->id).value());
  }
  static void TearDownTestSuite() {
    delete record_;
    delete loaded_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  static fs::path* dir_;
  static EvaluationRecord* record_;
  static EvaluationRecord* loaded_;
};
fs::path* Gpt2Tiny::dir_ = nullptr;
EvaluationRecord* Gpt2Tiny::record_ = nullptr;
EvaluationRecord* Gpt2Tiny::loaded_ = nullptr;

TEST_F(Gpt2Tiny, EveryRunGeneratesTheRequestedTokensFromRealPrompts) {
  const EvaluationRecord& rec = *record_;
  EXPECT_EQ(rec.scenario, "generation");
  ASSERT_EQ(rec.runs.size(), 4u);  // batch sizes 1, 2 × levels M, M/F
  for (const RunRecord& run : rec.runs) {
    SCOPED_TRACE(std::to_string(run.batch_size) + " " + run_name(run.trace_level));
    ASSERT_TRUE(run.generation.has_value());
    const GenerationOutcome& g = *run.generation;
    EXPECT_EQ(g.requests, 3);
    EXPECT_EQ(g.sequences, 3 * run.batch_size);
    EXPECT_EQ(g.output_tokens_total, 3 * run.batch_size * kOutputTokens);
    EXPECT_EQ(g.input_tokens, 3 * run.batch_size * kPromptTokens);
    // One prefill + 7 decode steps per request, each a MODEL span under its request span.
    std::size_t requests = 0, prefills = 0, decodes = 0;
    for (const Span& s : run.trace.spans) {
      requests += s.name == kStageRequest;
      prefills += s.name == kStagePrefill;
      decodes += s.name == kStageDecode;
    }
    EXPECT_EQ(requests, 3u);
    EXPECT_EQ(prefills, 3u);
    EXPECT_EQ(decodes, 3u * (kOutputTokens - 1));
    // TTFT <= E2E; TPOT > 0.
    EXPECT_LE(g.ttft_ns.p50, g.e2e_ns.p50);
    EXPECT_GT(g.tpot_ns.p50, 0);
    // The KV cache: 2 (K and V) × n_layer 2 × batch × n_head 2 × positions (16 + 8) × head_dim 32 × 4 bytes
    // (fp32) = 24,576 bytes per sequence (Kwon et al. 2023, PagedAttention, §2: the cache per token is
    // 2 × layers × hidden × bytes).
    EXPECT_EQ(g.kv_cache_bytes, 24576u * static_cast<std::uint64_t>(run.batch_size));
  }
  // Real prompts were tokenized, and the generated text decoded.
  const auto& samples = rec.settings["sample_outputs"];
  ASSERT_TRUE(samples.contains("1/M"));
  EXPECT_NE(samples["1/M"]["prompt"].get<std::string>(), "(synthetic)");
  EXPECT_FALSE(samples["1/M"]["output"].get<std::string>().empty());
  // Greedy decoding of the same prompt gives the same text whatever the trace level.
  EXPECT_EQ(samples["1/M"]["output"], samples["1/M/F"]["output"]);
  EXPECT_GT(rec.settings["generation"]["prompts"].get<int>(), 100);
  EXPECT_EQ(rec.settings["generation"]["model"],
            (nlohmann::json{{"element_bytes", 4}, {"head_dim", 32}, {"n_head", 2}, {"n_kv_head", 2}, {"n_layer", 2}}));
}

TEST_F(Gpt2Tiny, FrameworkOpsOfTheTransformerLayersSitUnderPrefillAndDecodeSteps) {
  const RunRecord* run = record_->find_run(1, TraceLevel::kFramework);
  ASSERT_NE(run, nullptr);
  std::map<SpanId, const Span*> by_id;
  for (const Span& s : run->trace.spans) by_id[s.id] = &s;
  std::map<std::string, std::size_t> ops_under;  // step span name -> top-level ops
  std::set<std::string> modules;
  std::size_t layer_ops = 0;  // linear and layer-norm ops directly under decode steps
  for (const Span& s : run->trace.spans) {
    if (s.level != Level::kFramework || s.parent_id == kNoSpan) continue;
    const Span* parent = by_id.at(s.parent_id);
    if (parent->level != Level::kModel) continue;
    ops_under[parent->name]++;
    // Prefill and decode steps run different ops on growing shapes: every op is read, none copies another's tags.
    // (Ops of the root module and of the C++ loop, argmax and the copy to the host, have no module path.)
    EXPECT_TRUE(s.tag("shapes").has_value()) << s.name << " under " << parent->name;
    if (s.name == "aten::linear" || s.name == "aten::layer_norm") {
      EXPECT_TRUE(s.tag("module").has_value()) << s.name << " under " << parent->name;
      layer_ops += parent->name == kStageDecode;
    }
    EXPECT_GE(s.start_ns, parent->start_ns);
    EXPECT_LE(s.end_ns, parent->end_ns);
    if (auto m = s.tag("module")) modules.insert(std::string(*m));
  }
  EXPECT_EQ(run->trace.counters.count("framework.detail_mismatches"), 0u);
  EXPECT_GT(layer_ops, 0u);
  EXPECT_GT(ops_under[kStagePrefill], 0u);
  EXPECT_GT(ops_under[kStageDecode], 0u);
  EXPECT_EQ(ops_under.count(kStageTokenize), 0u);
  // Both transformer blocks. TorchScript's module hierarchy (torch::jit::currentModuleHierarchy) names a block of
  // the ModuleList transformer.h by its index alone: a ModuleList has no forward, so no call frame of its own.
  bool layer0 = false, layer1 = false;
  for (const auto& m : modules) {
    layer0 |= m.rfind("transformer.0.attn", 0) == 0;
    layer1 |= m.rfind("transformer.1.mlp", 0) == 0;
  }
  std::string seen;
  for (const auto& m : modules) seen += m + " ";
  EXPECT_TRUE(layer0 && layer1) << "modules seen: " << seen;
  // Tail: 2 slowest first tokens and 2 slowest decode steps, their requests' full traces kept.
  const auto& tail = run->generation.value().tail;
  ASSERT_EQ(tail.size(), 4u);
  for (const auto& t : tail) EXPECT_TRUE(t.full_trace);
  EXPECT_GE(run->trace.counters.at("generation.kept_request_traces"), 1u);
}

TEST_F(Gpt2Tiny, TheStoreKeepsTheTokenLatencies) {
  ASSERT_EQ(loaded_->runs.size(), record_->runs.size());
  for (std::size_t i = 0; i < loaded_->runs.size(); ++i)
    EXPECT_EQ(loaded_->runs[i].generation, record_->runs[i].generation) << i;
  EXPECT_EQ(loaded_->settings["request"]["generation"]["output_tokens"], "8");
}

TEST(Gpt2TinyCli, EvaluateShowAndBadRequests) {
  const fs::path dir = temp_dir("gpt2-cli");
  const std::string xsp = std::string(XSP_CLI) + " --zoo " + kZoo.string() + " --store " + (dir / "x.db").string();
  const auto [rc, out] = sh(xsp +
                            " evaluate gpt2_tiny --prompt-tokens 8:12 --output-tokens 4 --iterations 3 "
                            "--warmup 1 --warmup-min-ms 0 --warmup-max-ms 0 --min-duration-ms 0 --max-duration-ms 0");
  ASSERT_EQ(rc, 0) << out;
  const auto [rc2, shown] = sh(xsp + " show 1");
  ASSERT_EQ(rc2, 0) << shown;
  EXPECT_NE(shown.find("TTFT"), std::string::npos) << shown;
  // Too long for the model's 128 positions: the flag is named, nothing is stored.
  const auto [rc3, too_long] = sh(xsp + " evaluate gpt2_tiny --prompt-tokens 120 --output-tokens 16");
  EXPECT_EQ(rc3, 2) << too_long;
  EXPECT_NE(too_long.find("--prompt-tokens"), std::string::npos) << too_long;
  EXPECT_NE(too_long.find("128 positions"), std::string::npos) << too_long;
  const auto [rc4, bad_range] = sh(xsp + " evaluate gpt2_tiny --output-tokens 9:3");
  EXPECT_EQ(rc4, 2) << bad_range;
  EXPECT_NE(bad_range.find("--output-tokens"), std::string::npos) << bad_range;
  const auto [rc5, fp16] = sh(xsp + " evaluate gpt2_tiny --precision fp16 --output-tokens 2 --iterations 1");
  EXPECT_NE(rc5, 0) << fp16;
  EXPECT_NE(fp16.find("fp16"), std::string::npos) << fp16;
  const auto [rc6, multi] = sh(xsp + " evaluate gpt2_tiny --scenario multi-stream");
  EXPECT_EQ(rc6, 2) << multi;
  EXPECT_NE(multi.find("--scenario"), std::string::npos) << multi;
  // A classification model at a precision its manifest does not list.
  const auto [rc7, prec] = sh(xsp + " evaluate digits_cnn --precision bf16 --synthetic");
  EXPECT_EQ(rc7, 2) << prec;
  EXPECT_NE(prec.find("--precision"), std::string::npos) << prec;
  // Counters per decode step need a GPU: on the CPU the level is refused by its flag, and nothing is stored.
  const auto [rc9, hardware] = sh(xsp + " evaluate gpt2_tiny --trace-level hardware --output-tokens 2 --iterations 1");
  EXPECT_EQ(rc9, 2) << hardware;
  EXPECT_NE(hardware.find("--trace-level"), std::string::npos) << hardware;
  EXPECT_NE(hardware.find("cuda"), std::string::npos) << hardware;
  const auto [rc10, stored] = sh(xsp + " list");
  ASSERT_EQ(rc10, 0) << stored;
  EXPECT_EQ(stored.find("hardware"), std::string::npos) << stored;
  const auto [rc8, listed] = sh(xsp + " list");
  EXPECT_NE(listed.find("GPT2_Tiny"), std::string::npos) << listed;
  fs::remove_all(dir);
}

}  // namespace
