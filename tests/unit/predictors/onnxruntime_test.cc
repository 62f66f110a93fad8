// The ONNX Runtime predictor (issue 26) on ONNX graphs this test writes itself (ModelProto bytes encoded here, no
// Python): several named int64 inputs bound by name, int32/bool/float inputs, every output by name, the refusals at
// load(), static and dynamic batch, and the CUDA execution provider where the library has it. With
// XSP_ORT_TEST_MODEL set, also an exported BERT classifier (scripts/gpu/onnx_export.py) against its reference logits.
#include "xsp/predictors/onnxruntime.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "xsp/manifest/manifest.h"
#include "xsp/predictor/predictor.h"

namespace xsp {
namespace {

namespace fs = std::filesystem;

// ---- ONNX protobuf, written by hand (field numbers of onnx/onnx.proto) -------------------------------------------

/// A protobuf message being written: fields appended in order.
class Proto {
 public:
  Proto& varint(int field, std::uint64_t v) {
    key(field, 0);
    put(v);
    return *this;
  }
  Proto& bytes(int field, const std::string& s) {
    key(field, 2);
    put(s.size());
    out_ += s;
    return *this;
  }
  Proto& message(int field, const Proto& m) { return bytes(field, m.out_); }
  Proto& packed(int field, const std::vector<std::int64_t>& values) {
    Proto p;
    for (const std::int64_t v : values) p.put(static_cast<std::uint64_t>(v));
    return bytes(field, p.out_);
  }
  const std::string& str() const { return out_; }

 private:
  void key(int field, int wire_type) { put((static_cast<std::uint64_t>(field) << 3) | wire_type); }
  void put(std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) out_ += static_cast<char>((v & 0x7f) | 0x80);
    out_ += static_cast<char>(v);
  }
  std::string out_;
};

// TensorProto.DataType
constexpr int kFloat = 1, kInt32 = 6, kInt64 = 7, kBool = 9;

/// A dimension: a fixed size, or (size < 0) the symbolic dimension `name`.
struct Dim {
  std::int64_t size;
  std::string name;
};
const Dim kBatch{-1, "batch"};

/// ValueInfoProto{name, TypeProto{tensor_type{elem_type, shape}}}.
Proto value_info(const std::string& name, int elem_type, const std::vector<Dim>& dims) {
  Proto shape;
  for (const Dim& d : dims) shape.message(1, d.size >= 0 ? Proto().varint(1, d.size) : Proto().bytes(2, d.name));
  Proto tensor;
  tensor.varint(1, elem_type).message(2, shape);
  return Proto().bytes(1, name).message(2, Proto().message(1, tensor));
}

/// NodeProto{input..., output..., op_type, attribute{name, i, type INT}...}.
Proto node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
           const std::vector<std::pair<std::string, std::int64_t>>& int_attributes = {}) {
  Proto n;
  for (const std::string& in : inputs) n.bytes(1, in);
  n.bytes(2, output).bytes(4, op);
  for (const auto& [name, value] : int_attributes)
    n.message(5, Proto().bytes(1, name).varint(3, static_cast<std::uint64_t>(value)).varint(20, 2));
  return n;
}

/// TensorProto of int64 values: {dims, data_type, int64_data, name}.
Proto int64_initializer(const std::string& name, const std::vector<std::int64_t>& values) {
  return Proto().varint(1, values.size()).varint(2, kInt64).packed(7, values).bytes(8, name);
}

/// Writes ModelProto{ir_version 8, opset 17, graph} to `path`.
void write_model(const fs::path& path, const std::vector<Proto>& nodes, const std::vector<Proto>& initializers,
                 const std::vector<Proto>& inputs, const std::vector<Proto>& outputs) {
  Proto graph;
  for (const Proto& n : nodes) graph.message(1, n);
  graph.bytes(2, "xsp_test");
  for (const Proto& t : initializers) graph.message(5, t);
  for (const Proto& v : inputs) graph.message(11, v);
  for (const Proto& v : outputs) graph.message(12, v);
  Proto model;
  model.varint(1, 8).bytes(2, "xsp onnxruntime_test").message(7, graph).message(8, Proto().varint(2, 17));
  std::ofstream(path, std::ios::binary) << model.str();
}

constexpr std::int64_t kSeq = 8;

/// A text-classifier-shaped graph: input_ids, token_type_ids, attention_mask [batch, 8] int64 (in that graph order)
/// -> logits [batch, 2] float = (sum of input_ids * attention_mask, sum of token_type_ids) per row, and lengths
/// [batch] int64 = sum of attention_mask per row.
void write_text_model(const fs::path& path) {
  const std::vector<Dim> seq{kBatch, {kSeq, ""}};
  write_model(path,
              {node("Mul", {"input_ids", "attention_mask"}, "kept"), node("Cast", {"kept"}, "kept_f", {{"to", kFloat}}),
               node("ReduceSum", {"kept_f", "axes"}, "s", {{"keepdims", 1}}),
               node("Cast", {"token_type_ids"}, "types_f", {{"to", kFloat}}),
               node("ReduceSum", {"types_f", "axes"}, "t", {{"keepdims", 1}}),
               node("Concat", {"s", "t"}, "logits", {{"axis", 1}}),
               node("ReduceSum", {"attention_mask", "axes"}, "lengths", {{"keepdims", 0}})},
              {int64_initializer("axes", {1})},
              {value_info("input_ids", kInt64, seq), value_info("token_type_ids", kInt64, seq),
               value_info("attention_mask", kInt64, seq)},
              {value_info("logits", kFloat, {kBatch, {2, ""}}), value_info("lengths", kInt64, {kBatch})});
}

/// a int64, b int32, c bool, d float, each [batch, 2] -> y [batch, 2] float = a + b + c + d.
void write_mixed_model(const fs::path& path) {
  const std::vector<Dim> two{kBatch, {2, ""}};
  write_model(path,
              {node("Cast", {"a"}, "af", {{"to", kFloat}}), node("Cast", {"b"}, "bf", {{"to", kFloat}}),
               node("Cast", {"c"}, "cf", {{"to", kFloat}}), node("Sum", {"af", "bf", "cf", "d"}, "y")},
              {},
              {value_info("a", kInt64, two), value_info("b", kInt32, two), value_info("c", kBool, two),
               value_info("d", kFloat, two)},
              {value_info("y", kFloat, two)});
}

/// x [1, 4] float (a static batch of 1) -> y = x + x.
void write_static_float_model(const fs::path& path) {
  const std::vector<Dim> shape{{1, ""}, {4, ""}};
  write_model(path, {node("Add", {"x", "x"}, "y")}, {}, {value_info("x", kFloat, shape)},
              {value_info("y", kFloat, shape)});
}

// ---- manifests and tensors ---------------------------------------------------------------------------------------

struct InputDecl {
  std::string name, element_type;
  std::int64_t length;
};

Manifest manifest_for(const fs::path& graph, const std::vector<InputDecl>& inputs, const std::string& output_type) {
  std::string yaml =
      "name: ort_test\nversion: 1.0.0\nframeworks:\n  - name: onnxruntime\n    version: \">=1.16\"\n"
      "    graph_path: " +
      graph.string() + "\n    checksum: sha256:" + std::string(64, '0') + "\ninputs:\n";
  for (const InputDecl& in : inputs)
    yaml += "  - name: " + in.name + "\n    type: tensor\n    element_type: " + in.element_type +
            "\n    dimensions: [" + std::to_string(in.length) + "]\n";
  yaml += "outputs:\n  - name: logits\n    type: " + output_type + "\n";
  return parse_manifest(yaml, graph.parent_path() / "ort_test.yaml");
}

Tensor ints(const std::string& name, std::vector<std::int64_t> shape, std::vector<std::int64_t> values) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.integer = true;
  t.int_data = std::move(values);
  return t;
}

Tensor floats(const std::string& name, std::vector<std::int64_t> shape, std::vector<float> values) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.data = std::move(values);
  return t;
}

/// The message of what `f` throws as E, or a failure when it throws nothing or something else.
template <typename E, typename F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "threw nothing";
  return "";
}

class OnnxRuntimePredictorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_onnxruntime_predictor();
    dir_ = fs::temp_directory_path() / ("xsp-ort-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    write_text_model(dir_ / "text.onnx");
    write_mixed_model(dir_ / "mixed.onnx");
    write_static_float_model(dir_ / "static.onnx");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  /// The manifest of text.onnx as a text classifier gives it: in another order than the graph's.
  static Manifest text_manifest() {
    return manifest_for(
        dir_ / "text.onnx",
        {{"input_ids", "int64", kSeq}, {"attention_mask", "int64", kSeq}, {"token_type_ids", "int64", kSeq}},
        "text_classification");
  }

  /// A text batch of `rows` rows: ids 1..8 (+ row), the first 8 - row tokens unmasked, token type 1 from position 6.
  static std::vector<Tensor> text_batch(std::int64_t rows) {
    std::vector<std::int64_t> ids, mask, types;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t i = 0; i < kSeq; ++i) {
        ids.push_back(i + 1 + r);
        mask.push_back(i < kSeq - r ? 1 : 0);
        types.push_back(i >= 6 ? 1 : 0);
      }
    return {ints("input_ids", {rows, kSeq}, ids), ints("attention_mask", {rows, kSeq}, mask),
            ints("token_type_ids", {rows, kSeq}, types)};
  }

  static fs::path dir_;
};

fs::path OnnxRuntimePredictorTest::dir_;

TEST_F(OnnxRuntimePredictorTest, BindsNamedInt64InputsAndReturnsEveryOutputByName) {
  auto p = create_predictor("onnxruntime");
  p->load(text_manifest(), DeviceSpec{});
  for (const std::int64_t rows : {3, 1}) {  // a dynamic batch runs any batch size
    const std::vector<Tensor> in = text_batch(rows);
    const std::vector<Tensor> out = p->predict_all(in);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].name, "logits");
    EXPECT_EQ(out[1].name, "lengths");
    EXPECT_EQ(out[0].shape, (std::vector<std::int64_t>{rows, 2}));
    EXPECT_EQ(out[1].shape, (std::vector<std::int64_t>{rows}));
    EXPECT_FALSE(out[0].is_int());
    ASSERT_TRUE(out[1].is_int());
    ASSERT_EQ(out[0].data.size(), static_cast<std::size_t>(rows * 2));
    for (std::int64_t r = 0; r < rows; ++r) {
      double kept = 0;
      for (std::int64_t i = 0; i < kSeq - r; ++i) kept += static_cast<double>(i + 1 + r);
      EXPECT_EQ(out[0].data[r * 2], kept) << "row " << r;
      EXPECT_EQ(out[0].data[r * 2 + 1], 2.0f) << "row " << r;  // token types 1 at positions 6 and 7
      EXPECT_EQ(out[1].int_data[r], kSeq - r) << "row " << r;
    }
  }
}

TEST_F(OnnxRuntimePredictorTest, RefusesAManifestInputTheGraphDoesNotHave) {
  auto p = create_predictor("onnxruntime");
  const Manifest m =
      manifest_for(dir_ / "text.onnx",
                   {{"input_ids", "int64", kSeq}, {"attention_mask", "int64", kSeq}, {"segment_ids", "int64", kSeq}},
                   "text_classification");
  const std::string message = thrown<std::invalid_argument>([&] { p->load(m, DeviceSpec{}); });
  EXPECT_NE(message.find("manifest input 'segment_ids'"), std::string::npos) << message;
  EXPECT_NE(message.find("'token_type_ids' (int64 [batch,8])"), std::string::npos) << message;  // the graph's inputs
  EXPECT_THROW(p->predict_all(text_batch(1)), std::logic_error);                                // nothing loaded
}

TEST_F(OnnxRuntimePredictorTest, RefusesAGraphInputTheManifestDoesNotGive) {
  auto p = create_predictor("onnxruntime");
  const Manifest m = manifest_for(dir_ / "text.onnx", {{"input_ids", "int64", kSeq}, {"attention_mask", "int64", kSeq}},
                                  "text_classification");
  const std::string message = thrown<std::invalid_argument>([&] { p->load(m, DeviceSpec{}); });
  EXPECT_NE(message.find("'token_type_ids'"), std::string::npos) << message;
  EXPECT_NE(message.find("not in the manifest"), std::string::npos) << message;
}

TEST_F(OnnxRuntimePredictorTest, RefusesAnElementTypeOtherThanTheGraphs) {
  auto p = create_predictor("onnxruntime");
  const Manifest m =
      manifest_for(dir_ / "text.onnx",
                   {{"input_ids", "int64", kSeq}, {"attention_mask", "int32", kSeq}, {"token_type_ids", "int64", kSeq}},
                   "text_classification");
  const std::string message = thrown<std::invalid_argument>([&] { p->load(m, DeviceSpec{}); });
  EXPECT_NE(message.find("input 'attention_mask'"), std::string::npos) << message;
  EXPECT_NE(message.find("element_type is int32"), std::string::npos) << message;
  EXPECT_NE(message.find("the graph declares int64"), std::string::npos) << message;
}

TEST_F(OnnxRuntimePredictorTest, RefusesASampleShapeOtherThanTheGraphs) {
  auto p = create_predictor("onnxruntime");
  const Manifest m =
      manifest_for(dir_ / "text.onnx",
                   {{"input_ids", "int64", 16}, {"attention_mask", "int64", 16}, {"token_type_ids", "int64", 16}},
                   "text_classification");
  const std::string message = thrown<std::invalid_argument>([&] { p->load(m, DeviceSpec{}); });
  EXPECT_NE(message.find("[N,16]"), std::string::npos) << message;
  EXPECT_NE(message.find("[batch,8]"), std::string::npos) << message;
}

TEST_F(OnnxRuntimePredictorTest, RefusesABatchThatDoesNotMatchTheManifest) {
  auto p = create_predictor("onnxruntime");
  p->load(text_manifest(), DeviceSpec{});
  std::vector<Tensor> in = text_batch(2);
  EXPECT_THROW(p->predict_all({in[0], in[1]}), std::invalid_argument);  // an input short
  std::vector<Tensor> uneven = in;
  uneven[2] = text_batch(1)[2];
  EXPECT_THROW(p->predict_all(uneven), std::invalid_argument);  // batch sizes differ
  std::vector<Tensor> as_float = in;
  as_float[1] = floats("attention_mask", {2, kSeq}, std::vector<float>(2 * kSeq, 1.f));
  const std::string message = thrown<std::invalid_argument>([&] { p->predict_all(as_float); });
  EXPECT_NE(message.find("needs integer values"), std::string::npos) << message;
}

TEST_F(OnnxRuntimePredictorTest, FeedsInt64Int32BoolAndFloatInputs) {
  auto p = create_predictor("onnxruntime");
  const Manifest m =
      manifest_for(dir_ / "mixed.onnx", {{"a", "int64", 2}, {"b", "int32", 2}, {"c", "bool", 2}, {"d", "float32", 2}},
                   "classification");
  p->load(m, DeviceSpec{});
  const std::vector<Tensor> in = {ints("a", {2, 2}, {1, 2, 3, 4}), ints("b", {2, 2}, {10, 20, -30, 40}),
                                  ints("c", {2, 2}, {0, 1, 5, 0}), floats("d", {2, 2}, {0.5f, 0.25f, -1.f, 2.f})};
  const std::vector<Tensor> out = p->predict_all(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "y");
  EXPECT_EQ(out[0].shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(out[0].data, (std::vector<float>{11.5f, 23.25f, -27.f, 46.f}));  // a bool is 1 for any non-zero value
  std::vector<Tensor> too_wide = in;
  too_wide[1].int_data[0] = std::int64_t{1} << 40;
  const std::string message = thrown<std::invalid_argument>([&] { p->predict_all(too_wide); });
  EXPECT_NE(message.find("does not fit the graph's int32"), std::string::npos) << message;
}

TEST_F(OnnxRuntimePredictorTest, PredictRunsOneFloatInputAtTheGraphsStaticBatch) {
  auto p = create_predictor("onnxruntime");
  p->load(manifest_for(dir_ / "static.onnx", {{"x", "float32", 4}}, "classification"), DeviceSpec{});
  const Tensor y = p->predict(floats("x", {1, 4}, {1.f, -2.f, 0.5f, 3.f}));
  EXPECT_EQ(y.shape, (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(y.data, (std::vector<float>{2.f, -4.f, 1.f, 6.f}));
  const std::string message = thrown<std::invalid_argument>([&] {
    p->predict(floats("x", {2, 4}, std::vector<float>(8)));
  });
  EXPECT_NE(message.find("static batch size of 1"), std::string::npos) << message;
  // The several-input model is not run through predict().
  auto text = create_predictor("onnxruntime");
  text->load(text_manifest(), DeviceSpec{});
  EXPECT_THROW(text->predict(floats("input_ids", {1, kSeq}, std::vector<float>(kSeq))), std::invalid_argument);
}

TEST_F(OnnxRuntimePredictorTest, RecordsTheExecutionProvidersItRan) {
  auto p = create_predictor("onnxruntime");
  p->load(text_manifest(), DeviceSpec{});
  const nlohmann::json facts = p->framework_facts();
  EXPECT_EQ(facts.at("execution_providers"), nlohmann::json::array({"CPUExecutionProvider"}));
  EXPECT_EQ(facts.at("backends").at("execution providers (used)"), "CPUExecutionProvider");
  EXPECT_NE(
      facts.at("backends").at("execution providers (in this library)").get<std::string>().find("CPUExecutionProvider"),
      std::string::npos);
}

TEST_F(OnnxRuntimePredictorTest, RunsCudaOnlyWithTheCudaExecutionProvider) {
  auto p = create_predictor("onnxruntime");
  const std::string available =
      p->framework_facts().at("backends").at("execution providers (in this library)").get<std::string>();
  DeviceSpec cuda;
  cuda.kind = "cuda";
  if (available.find("CUDAExecutionProvider") == std::string::npos) {
    const std::string message = thrown<std::invalid_argument>([&] { p->load(text_manifest(), cuda); });
    EXPECT_NE(message.find("needs ONNX Runtime's CUDAExecutionProvider"), std::string::npos) << message;
    EXPECT_NE(message.find(available), std::string::npos) << message;  // the providers this library has
    return;
  }
  try {
    p->load(text_manifest(), cuda);
  } catch (const std::runtime_error& e) {  // the library has the provider, but CUDA cannot start here (no GPU)
    EXPECT_NE(std::string(e.what()).find("CUDAExecutionProvider"), std::string::npos) << e.what();
    GTEST_SKIP() << "the CUDA execution provider is in the library but does not start here: " << e.what();
  }
  EXPECT_EQ(p->framework_facts().at("execution_providers"),
            nlohmann::json::array({"CUDAExecutionProvider", "CPUExecutionProvider"}));
  auto cpu = create_predictor("onnxruntime");
  cpu->load(text_manifest(), DeviceSpec{});
  const std::vector<Tensor> on_gpu = p->predict_all(text_batch(3)), on_cpu = cpu->predict_all(text_batch(3));
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  for (std::size_t i = 0; i < on_gpu.size(); ++i) {
    EXPECT_EQ(on_gpu[i].shape, on_cpu[i].shape);
    EXPECT_EQ(on_gpu[i].data, on_cpu[i].data);
    EXPECT_EQ(on_gpu[i].int_data, on_cpu[i].int_data);
  }
}

// ---- an exported model against its reference (scripts/gpu/onnx_export.py) -----------------------------------------

/// XSP_ORT_TEST_MODEL=<file>.onnx, with <file>.reference.json beside it: its inputs (name, element_type, shape, data)
/// and the outputs torch computed for them. XSP_ORT_TEST_DEVICE=cuda runs it on the CUDA execution provider.
TEST(OnnxRuntimeExportedModel, MatchesTheReferenceOutputs) {
  const char* model = std::getenv("XSP_ORT_TEST_MODEL");
  if (model == nullptr || *model == '\0')
    GTEST_SKIP() << "XSP_ORT_TEST_MODEL is not set: export a model with scripts/gpu/onnx_export.py and point "
                    "XSP_ORT_TEST_MODEL at its .onnx to compare XSP's outputs with torch's";
  register_onnxruntime_predictor();
  fs::path reference_file = model;
  reference_file.replace_extension(".reference.json");
  std::ifstream reference_in(reference_file);
  ASSERT_TRUE(reference_in) << "no reference " << reference_file;
  const nlohmann::json reference = nlohmann::json::parse(reference_in);
  std::vector<InputDecl> decls;
  std::vector<Tensor> inputs;
  for (const nlohmann::json& in : reference.at("inputs")) {
    const auto shape = in.at("shape").get<std::vector<std::int64_t>>();
    ASSERT_EQ(shape.size(), 2u) << "a [batch, sequence] input";
    decls.push_back({in.at("name"), in.at("element_type"), shape[1]});
    inputs.push_back(ints(in.at("name"), shape, in.at("data").get<std::vector<std::int64_t>>()));
  }
  DeviceSpec device;
  if (const char* d = std::getenv("XSP_ORT_TEST_DEVICE")) device.kind = d;
  auto p = create_predictor("onnxruntime");
  p->load(manifest_for(model, decls, "text_classification"), device);
  std::cout << "execution providers: " << p->framework_facts().at("execution_providers").dump() << "\n";
  const double tolerance = reference.value("tolerance", 1e-4);
  const std::vector<Tensor> out = p->predict_all(inputs);
  const nlohmann::json& expected = reference.at("outputs");
  ASSERT_EQ(out.size(), expected.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].name, expected[i].at("name").get<std::string>());
    EXPECT_EQ(out[i].shape, expected[i].at("shape").get<std::vector<std::int64_t>>());
    const auto values = expected[i].at("data").get<std::vector<double>>();
    ASSERT_EQ(out[i].data.size(), values.size());
    double worst = 0;
    for (std::size_t k = 0; k < values.size(); ++k)
      worst = std::max(worst, std::abs(static_cast<double>(out[i].data[k]) - values[k]));
    EXPECT_LT(worst, tolerance) << "output " << out[i].name;
    std::cout << "output " << out[i].name << ": max |XSP - torch| = " << worst << "\n";
  }
  // The first row alone (a batch of 1: the export's batch axis is dynamic) gives the first row of the reference.
  std::vector<Tensor> first;
  for (const Tensor& in : inputs) {
    const auto row = static_cast<std::ptrdiff_t>(in.shape[1]);
    first.push_back(ints(in.name, {1, in.shape[1]}, {in.int_data.begin(), in.int_data.begin() + row}));
  }
  const std::vector<Tensor> one = p->predict_all(first);
  const auto logits = expected[0].at("data").get<std::vector<double>>();
  ASSERT_EQ(one[0].shape.at(0), 1);
  for (std::size_t k = 0; k < one[0].data.size(); ++k) EXPECT_NEAR(one[0].data[k], logits[k], tolerance) << k;
}

}  // namespace
}  // namespace xsp
