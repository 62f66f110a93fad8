// An AOTInductor package recorded on an H200 (scripts/gpu/aoti.sh "classify", tests/fixtures/aoti/README.md), checked
// without a GPU: ResNet-50 compiled by torch._inductor.aoti_compile_and_package (PyTorch 2.11, dynamic batch) and
// run by XSP's aotinductor predictor, `--batch-sizes 1,32`: evaluation 1 at the MODEL level, evaluation 2 at the
// kernel level.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "recorded_store.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/store/store.h"

namespace fs = std::filesystem;
using namespace xsp;

namespace {

EvaluationRecord recorded(int id) {
  // Opening migrates the store to this build's schema: work on a copy, never on the fixture.
  const fs::path dir = fs::temp_directory_path() / ("xsp-aoti-fixture-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fs::path(XSP_TEST_FIXTURES) / "aoti" / "resnet50_aoti_h200.db", dir / "x.db",
                fs::copy_options::overwrite_existing);
  auto record = Store::open(dir / "x.db")->load(id);
  fs::remove_all(dir);
  if (!record) throw std::runtime_error("resnet50_aoti_h200.db has no evaluation " + std::to_string(id));
  return *record;
}

bool is_triton(std::string_view name) { return name.rfind("triton_", 0) == 0; }

std::string text_at(const Table& t, const std::vector<Cell>& row, const std::string& column) {
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].name == column) {
      const auto* s = std::get_if<std::string>(&row.at(i));
      return s ? *s : std::string();
    }
  ADD_FAILURE() << "no column " << column << " in " << t.id;
  return "";
}

}  // namespace

TEST(RecordedAotInductor, RunsOnThePackageAndTimesEveryBatchSize) {
  const EvaluationRecord e = recorded(1);
  EXPECT_EQ(e.framework_name, "aotinductor");
  EXPECT_EQ(e.framework_version, "2.11.0");
  for (int b : {1, 32}) {
    const RunRecord* run = e.run_for_level(b, Level::kModel);
    ASSERT_NE(run, nullptr) << b;
    EXPECT_GT(run->predict_latency_ns.size(), 10u) << b;
  }
}

// What a package runs: Inductor's generated Triton kernels, launched by the package's own code (so under no
// framework op), and cuDNN/CUTLASS convolutions it still calls through ATen (so under aten::cudnn_convolution).
TEST(RecordedAotInductor, KernelLevelRunSeparatesInductorKernelsFromAtenFallbacks) {
  const EvaluationRecord e = recorded(2);
  for (int b : {1, 32}) {
    const RunRecord* run = e.run_for_level(b, Level::kKernel);
    ASSERT_NE(run, nullptr) << b;
    const Trace& t = run->trace;
    EXPECT_EQ(t.assembly.unparented, 0u);
    const KernelTimeline kt = extract_kernels(t);
    ASSERT_GT(kt.batches(), 5u);
    std::unordered_map<SpanId, const Span*> by_id;
    for (const Span& s : t.spans) by_id[s.id] = &s;
    auto nearest_op = [&](SpanId id) -> const Span* {
      for (auto it = by_id.find(id); it != by_id.end(); it = by_id.find(it->second->parent_id))
        if (it->second->level == Level::kFramework) return it->second;
      return nullptr;
    };
    std::map<std::size_t, std::size_t> per_batch, triton_per_batch;
    std::set<std::string> ops_over_aten_kernels;
    for (const GpuKernel& k : kt.kernels) {
      ++per_batch[k.batch];
      const Span* op = nearest_op(k.span_id);
      if (is_triton(k.name)) {
        ++triton_per_batch[k.batch];
        EXPECT_EQ(op, nullptr) << k.name;  // launched by generated code, not through the dispatcher
        EXPECT_EQ(k.layer_index, kNoLayer) << k.name;
        ASSERT_TRUE(k.has_launch()) << k.name;
        EXPECT_EQ(by_id.at(k.launch_span_id)->level, Level::kSystem);
      } else if (k.compute && op != nullptr) {
        ops_over_aten_kernels.insert(op->name);
      }
    }
    // The same work in every batch: 157 kernels and the input and output copies (torch.profiler counted 218
    // kernels and 9 memsets per batch-1 inference of the TorchScript ResNet-50 on the same machine).
    const std::size_t expected = b == 1 ? 159 : 177;
    for (const auto& [batch, n] : per_batch) EXPECT_EQ(n, expected) << "batch size " << b << " batch " << batch;
    // Inductor fused every batch norm with its ReLU (and the residual add): 50 Triton kernels, whatever the batch.
    for (const auto& [batch, n] : triton_per_batch) EXPECT_EQ(n, 50u) << "batch size " << b << " batch " << batch;
    EXPECT_EQ(triton_per_batch.size(), per_batch.size());
    EXPECT_TRUE(ops_over_aten_kernels.count("aten::cudnn_convolution")) << "batch size " << b;
  }
}

TEST(RecordedAotInductor, KernelTableNamesWhatInductorFusedIntoEachKernel) {
  const EvaluationRecord e = recorded(2);
  const Table t = a8_kernel_information(e, 1);
  std::size_t inductor = 0, outside = 0;
  for (const auto& row : t.rows) {
    const std::string layer = text_at(t, row, "layer_name");
    const std::string kernel = text_at(t, row, "kernel_name");
    if (layer == "(outside layers)") ++outside;
    if (layer.rfind("(Inductor ", 0) != 0) continue;
    ++inductor;
    EXPECT_EQ(kernel.rfind("triton_", 0), 0u) << kernel;
    EXPECT_NE(kernel.find(layer.substr(layer.find(": ") + 2, layer.size() - layer.find(": ") - 3)), std::string::npos)
        << layer << " / " << kernel;
  }
  EXPECT_EQ(inductor, 50u);  // every Triton kernel of the batch: each one row
  EXPECT_EQ(outside, 1u);    // the one non-Inductor kernel launched outside ops (ATen's, at the output)
}

TEST(InductorKernelNames, KindAndFusedOpsFromTheName) {
  auto k = parse_inductor_kernel_name("triton_poi_fused__native_batch_norm_legit_no_training_add_relu_3");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "pointwise");
  EXPECT_EQ(k->fused_ops, "_native_batch_norm_legit_no_training_add_relu");
  k = parse_inductor_kernel_name("void triton_red_fused_mean_sum_12(float*, float*, int)");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "reduction");
  EXPECT_EQ(k->fused_ops, "mean_sum");
  EXPECT_EQ(parse_inductor_kernel_name("triton_per_fused__softmax_0")->kind, "persistent reduction");
  EXPECT_EQ(parse_inductor_kernel_name("triton_tem_fused_mm_7")->kind, "template");
  EXPECT_EQ(parse_inductor_kernel_name("cpp_fused_convolution_relu_1")->kind, "C++");
  // Not Inductor's, or no ops, or no counter.
  EXPECT_FALSE(parse_inductor_kernel_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>(Params)"));
  EXPECT_FALSE(parse_inductor_kernel_name("triton_poi_fused_3"));
  EXPECT_FALSE(parse_inductor_kernel_name("triton_poi_fused_add"));
  EXPECT_FALSE(parse_inductor_kernel_name("my_triton_poi_fused_add_0"));
  EXPECT_FALSE(parse_inductor_kernel_name(""));
}

// A Hugging Face Llama as transformers' static-cache export writes it (scripts/export_hf.py --models llama_tiny_hf:
// 2 layers, 4 query and 2 KV heads, cache of 128 positions), compiled into one AOTInductor package and driven by
// XSP's hf-static-cache generator: `xsp evaluate llama_tiny_hf --device cuda --synthetic --batch-sizes 1
// --prompt-tokens 16 --output-tokens 4 --trace-level kernel --iterations 2 --warmup 1` (scripts/gpu/aoti.sh part
// fixture; tests/fixtures/aoti/llama_tiny_hf_decode_h200.db).
namespace {

EvaluationRecord recorded_llama() {
  return xsp::testing::recorded_evaluation(fs::path(XSP_TEST_FIXTURES) / "aoti" / "llama_tiny_hf_decode_h200.db", 1);
}

double number_at(const Table& t, std::size_t row, std::string_view column) {
  const Cell& c = cell(t, t.rows.at(row), column);
  return std::holds_alternative<double>(c) ? std::get<double>(c) : static_cast<double>(std::get<std::int64_t>(c));
}

}  // namespace

TEST(RecordedAotInductor, EveryDecodeStepOfTheExportedLlamaRunsTheSameDeviceWork) {
  const EvaluationRecord e = recorded_llama();
  EXPECT_EQ(e.framework_name, "aotinductor");
  const RunRecord* run = e.run_for_level(1, Level::kKernel);
  ASSERT_NE(run, nullptr);
  const Trace& t = run->trace;
  EXPECT_EQ(t.assembly.unparented, 0u);
  std::unordered_map<SpanId, const Span*> by_id;
  for (const Span& s : t.spans) by_id[s.id] = &s;
  // Device activities (kernels, copies) per step, found up the parent chain (through the ops or, for the package's
  // own Triton kernels, its launch calls), and the Triton ones among them.
  std::map<SpanId, std::size_t> per_step, triton_per_step;
  for (const Span& s : t.spans) {
    if (s.level != Level::kKernel) continue;
    for (auto it = by_id.find(s.parent_id); it != by_id.end(); it = by_id.find(it->second->parent_id)) {
      if (it->second->name != "prefill" && it->second->name != "decode") continue;
      ++per_step[it->first];
      triton_per_step[it->first] += is_triton(s.name);
      break;
    }
  }
  std::size_t prefills = 0, decodes = 0;
  for (const auto& [id, n] : per_step) {
    const bool prefill = by_id.at(id)->name == "prefill";
    (prefill ? prefills : decodes) += 1;
    // Recorded: 45 kernels and 2 copies per prefill, 43 kernels and the token's copy to the host per decode step
    // (Kineto counted the same on llama_1b_hf: bench/aoti_reference --kineto, BENCHMARKS.md); 23 of the kernels are
    // Inductor's Triton kernels in either step.
    EXPECT_EQ(n, prefill ? 47u : 44u) << by_id.at(id)->name << " " << id;
    EXPECT_EQ(triton_per_step[id], 23u) << id;
  }
  EXPECT_GE(prefills, 2u);
  EXPECT_EQ(decodes, 3 * prefills);  // 4 output tokens: the prefill's and 3 decode steps

  // G4 over the same run, and G3: the cache the package holds is exactly the grouped-query formula over the static
  // cache's 128 positions (2 × 2 layers × 2 KV heads × 16 head_dim × 128 × 1 × 4 bytes), not the 4 query heads'.
  const std::vector<Table> tables = run_analyses(e, {"G3", "G4"}, std::nullopt);
  ASSERT_EQ(tables.size(), 2u);
  const Table& g3 = tables[0];
  ASSERT_EQ(g3.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(number_at(g3, 0, "kv_cache_bytes"), 65536);
  EXPECT_DOUBLE_EQ(number_at(g3, 0, "recorded_over_formula"), 1.0);
  const Table& g4 = tables[1];
  ASSERT_EQ(g4.rows.size(), 4u);
  EXPECT_DOUBLE_EQ(number_at(g4, 0, "kernel_count"), 47);
  for (std::size_t i = 1; i < 4; ++i) EXPECT_DOUBLE_EQ(number_at(g4, i, "kernel_count"), 44) << i;
}
