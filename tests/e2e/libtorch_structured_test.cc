// The LibTorch predictor with structured inputs and outputs (Predictor::predict_all, docs/tasks.md): a forward taking
// a Dict[str, Tensor] keyed by the manifest's input names, a tuple or a list of tensors, and returning dicts (values
// named by key), tuples and lists, flattened in order; integer inputs and outputs stay integers. Fixtures:
// tests/fixtures/models/{dict,tuple,list}_io.pt (make_structured.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "xsp/manifest/manifest.h"
#include "xsp/predictor/predictor.h"
#include "xsp/predictors/libtorch.h"

namespace xsp {
namespace {

// A manifest of the fixture `stem` with inputs (name, element type) of per-sample dims [2].
Manifest fixture(const std::string& stem, std::vector<std::pair<std::string, std::string>> inputs) {
  Manifest m;
  m.path = std::filesystem::path(XSP_SOURCE_DIR) / "tests/fixtures/models" / (stem + ".yaml");
  m.name = stem;
  m.graphs.push_back(GraphSpec{"libtorch", ">=1.13", stem + ".pt", "", 0});
  for (const auto& [name, type] : inputs) {
    InputSpec in;
    in.name = name;
    in.type = "tensor";
    in.element_type = type;
    in.dimensions = {2};
    m.inputs.push_back(in);
  }
  OutputSpec out;
  out.name = "out";
  out.type = "classification";
  m.outputs.push_back(out);
  return m;
}

Tensor floats(std::string name, std::vector<float> v) {
  Tensor t;
  t.name = std::move(name);
  t.shape = {1, static_cast<std::int64_t>(v.size())};
  t.data = std::move(v);
  return t;
}

Tensor ints(std::string name, std::vector<std::int64_t> v) {
  Tensor t;
  t.name = std::move(name);
  t.shape = {1, static_cast<std::int64_t>(v.size())};
  t.int_data = std::move(v);
  t.integer = true;
  return t;
}

class LibTorchStructured : public ::testing::Test {
 protected:
  void SetUp() override {
    register_libtorch_predictor();
    predictor_ = create_predictor("libtorch");
  }
  std::unique_ptr<Predictor> predictor_;
};

TEST_F(LibTorchStructured, DictInKeyedByInputNamesDictOutNamedByKey) {
  predictor_->load(fixture("dict_io", {{"a", "float32"}, {"b", "float32"}, {"ids", "int64"}}), DeviceSpec{});
  const auto out = predictor_->predict_all({floats("a", {1, 2}), floats("b", {10, 20}), ints("ids", {3, 4})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "sum");
  EXPECT_EQ(out[0].data, (std::vector<float>{11, 22}));
  EXPECT_FALSE(out[0].is_int());
  EXPECT_EQ(out[1].name, "ids");
  EXPECT_TRUE(out[1].is_int());
  EXPECT_EQ(out[1].int_data, (std::vector<std::int64_t>{6, 8}));
  EXPECT_EQ(out[1].shape, (std::vector<std::int64_t>{1, 2}));
  // Element types are checked against the manifest, naming the input.
  try {
    predictor_->predict_all({floats("a", {1, 2}), floats("b", {10, 20}), floats("ids", {3, 4})});
    FAIL() << "a float tensor for an int64 input was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'ids'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(predictor_->predict_all({floats("a", {1, 2})}), std::invalid_argument);  // too few inputs
}

TEST_F(LibTorchStructured, TupleInNestedTupleAndListOutFlattenedInOrder) {
  predictor_->load(fixture("tuple_io", {{"x", "float32"}, {"y", "float32"}}), DeviceSpec{});
  const auto out = predictor_->predict_all({floats("x", {3, 4}), floats("y", {1, 2})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].data, (std::vector<float>{3, 8}));  // x * y
  EXPECT_EQ(out[1].data, (std::vector<float>{2, 2}));  // x - y
  EXPECT_EQ(out[2].data, (std::vector<float>{4, 6}));  // x + y
  EXPECT_EQ(out[0].name, "");
}

TEST_F(LibTorchStructured, ListIn) {
  predictor_->load(fixture("list_io", {{"p", "float32"}, {"q", "float32"}, {"r", "float32"}}), DeviceSpec{});
  const auto out = predictor_->predict_all({floats("p", {1, 1}), floats("q", {2, 2}), floats("r", {3, 4})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, (std::vector<float>{6, 7}));
}

}  // namespace
}  // namespace xsp
