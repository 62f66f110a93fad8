// Manifest parsing and validation, model zoo, checksums (SPEC §5).
#include "xsp/manifest/manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using xsp::ManifestError;

namespace {

const fs::path kFixtures = fs::path(XSP_TEST_FIXTURES) / "manifests";
const fs::path kValid = kFixtures / "valid.yaml";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

int indent(const std::string& l) { return static_cast<int>(l.find_first_not_of(' ')); }

// Removes the first line equal to `line` and the block nested under it (lines indented deeper).
std::string remove_block(const std::string& text, const std::string& line) {
  auto ls = lines_of(text);
  std::string out;
  bool found = false;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    if (!found && ls[i] == line) {
      found = true;
      int ind = indent(ls[i]);
      while (i + 1 < ls.size() && !ls[i + 1].empty() && indent(ls[i + 1]) > ind) ++i;
      continue;
    }
    out += ls[i] + "\n";
  }
  EXPECT_TRUE(found) << "fixture has no line '" << line << "'";
  return out;
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "fixture has no '" << from << "'";
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

// Parses `text` expecting a ManifestError; returns it.
ManifestError parse_error(const std::string& text, const fs::path& file = kValid) {
  try {
    xsp::parse_manifest(text, file);
  } catch (const ManifestError& e) {
    return e;
  }
  ADD_FAILURE() << "manifest parsed although it should not:\n" << text;
  return ManifestError("", 0, "", "");
}

}  // namespace

TEST(Manifest, ValidManifestParsesEveryField) {
  const xsp::Manifest m = xsp::load_manifest(kValid);
  EXPECT_EQ(m.path, kValid);
  EXPECT_EQ(m.name, "TestNet");
  EXPECT_EQ(m.version, "1.2.3");
  EXPECT_EQ(m.description, "a manifest for the unit tests");
  ASSERT_EQ(m.graphs.size(), 1u);
  EXPECT_EQ(m.default_framework(), "libtorch");
  EXPECT_EQ(m.graphs[0].framework, "libtorch");
  EXPECT_EQ(m.graphs[0].constraint, ">=1.13, <3");
  EXPECT_EQ(m.graphs[0].graph_path, "small.bin");
  EXPECT_EQ(m.graphs[0].checksum, "sha256:0b5c28c9832c01e51d52c7c7e33ddda0a2c4c69474b3a08a9a1ad6319a51cdea");
  EXPECT_EQ(m.graphs[0].line, 7);  // the framework mapping's first key
  EXPECT_EQ(&m.graph_for("libtorch"), &m.graphs[0]);
  EXPECT_EQ(m.resolved_graph_path("libtorch"), kFixtures / "small.bin");
  EXPECT_EQ(m.resolved_labels_path(0), kFixtures / "labels.txt");
  EXPECT_EQ(m.resolved_labels_path(1), fs::path());
  EXPECT_EQ(m.source_yaml, read(kValid));

  ASSERT_EQ(m.inputs.size(), 1u);
  const auto& in = m.inputs[0];
  EXPECT_EQ(in.type, "image");
  EXPECT_EQ(in.element_type, "float32");
  EXPECT_EQ(in.layout, "NCHW");
  EXPECT_EQ(in.color_mode, "BGR");
  EXPECT_EQ(in.dimensions, (std::vector<long>{3, 224, 224}));
  ASSERT_EQ(in.steps.size(), 4u);
  EXPECT_EQ(in.steps[0].op, "decode");
  EXPECT_TRUE(in.steps[0].params.empty());
  EXPECT_EQ(in.steps[0].line, 19);
  EXPECT_EQ(in.steps[1].op, "resize");
  EXPECT_EQ(in.steps[1].params.at("shorter_side"), "256");
  EXPECT_EQ(in.steps[1].params.at("method"), "bicubic");
  EXPECT_EQ(in.steps[2].op, "center_crop");
  EXPECT_EQ(in.steps[2].params.at("size"), "224");
  EXPECT_EQ(in.steps[3].op, "normalize");
  EXPECT_EQ(in.steps[3].list_params.at("mean"), (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(in.steps[3].list_params.at("std"), (std::vector<double>{0.229, 0.224, 0.225}));
  EXPECT_EQ(in.steps[3].params.at("scale"), "255");
  EXPECT_EQ(in.steps[3].line, 22);

  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_EQ(m.outputs[0].type, "classification");
  EXPECT_EQ(m.outputs[0].labels, "labels.txt");
  ASSERT_EQ(m.outputs[0].steps.size(), 2u);
  EXPECT_EQ(m.outputs[0].steps[0].op, "softmax");
  EXPECT_EQ(m.outputs[0].steps[1].op, "top_k");
  EXPECT_EQ(m.outputs[0].steps[1].params.at("k"), "5");

  EXPECT_EQ(m.attributes.at("task"), "image_classification");
  EXPECT_EQ(m.attributes.at("training_dataset"), "none");
}

TEST(Manifest, DefaultsForOptionalFields) {
  std::string text = read(kValid);
  text = remove_block(text, "  - layout: NCHW");  // also drops the rest of the input; put a minimal one back
  text = replace(text, "inputs:\n",
                 "inputs:\n  - type: image\n    element_type: float32\n    dimensions: [3, 8, 8]\n"
                 "    steps: [{resize: {shorter_side: 8}}, {normalize: {mean: [0.5], std: [0.5]}}, {decode: }]\n");
  const auto m = xsp::parse_manifest(text, "inline.yaml");
  EXPECT_EQ(m.inputs[0].layout, "NCHW");
  EXPECT_EQ(m.inputs[0].color_mode, "RGB");
  EXPECT_EQ(m.inputs[0].steps[0].params.at("method"), "bilinear");
  EXPECT_EQ(m.inputs[0].steps[1].params.at("scale"), "1");
  EXPECT_EQ(m.inputs[0].steps[2].op, "decode");
}

TEST(Manifest, TensorInputHasNoColorMode) {
  std::string text = replace(read(kValid), "    type: image", "    type: tensor");
  text = remove_block(text, "    color_mode: BGR");
  EXPECT_EQ(xsp::parse_manifest(text, "t.yaml").inputs[0].color_mode, "");
}

TEST(Manifest, EveryZooManifestLoads) {
  const fs::path zoo_dir = fs::path(XSP_SOURCE_DIR) / "models";
  const auto zoo = xsp::load_zoo(zoo_dir);
  std::vector<std::string> names;
  for (const auto& m : zoo) names.push_back(m.name);
  for (const char* expected :
       {"ResNet18", "ResNet50", "MobileNet_v2", "VGG16", "Inception_v3", "DenseNet121", "ViT_B_16", "Digits_CNN",
        "GPT2_Tiny", "GPT2_Small", "GPT2_Medium", "SSDlite_MobileNet_v3", "LRASPP_MobileNet_v3", "BERT_Tiny",
        "BERT_Base", "llama_tiny_hf", "llama_1b_hf"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  for (const auto& m : zoo) {
    SCOPED_TRACE(m.path.string());
    if (xsp::is_generation(m) && m.has_framework("aotinductor")) {
      // Hugging Face decoders as transformers exports them (scripts/export_hf.py): one AOTInductor package with a
      // model per static batch size, the static-cache signature, and the config's dimensions for analysis G3.
      EXPECT_EQ(m.framework_names(), std::vector<std::string>{"aotinductor"});
      EXPECT_EQ(m.graph_for("aotinductor").graph_path, m.path.stem().string() + ".pt2");
      EXPECT_NE(m.graph_for("aotinductor").checksum, "sha256:" + std::string(64, '0'));
      EXPECT_EQ(m.outputs.at(0).steps.at(0).params.at("signature"), "hf-static-cache");
      ASSERT_EQ(m.precisions.size(), 1u);  // a package fixes its precision
      EXPECT_EQ(m.attributes.at("aotinductor_precision"), m.precisions[0]);
      for (const char* k : {"static_batch_sizes", "max_cache_len", "vocab_size", "n_layer", "n_head", "n_kv_head",
                            "head_dim", "element_bytes"})
        EXPECT_TRUE(m.attributes.count(k)) << k;
      // Grouped-query attention: fewer KV heads than query heads, a divisor of them.
      const long heads = std::stol(m.attributes.at("n_head")), kv = std::stol(m.attributes.at("n_kv_head"));
      EXPECT_LT(kv, heads);
      EXPECT_EQ(heads % kv, 0);
      EXPECT_EQ(m.inputs.at(0).dimensions, (std::vector<long>{std::stol(m.attributes.at("max_cache_len"))}));
      continue;
    }
    if (xsp::is_generation(m)) {
      // The GPT-2 decoders: TorchScript only (the KV-cache loop is no single static graph: docs/generation.md), a
      // text prompt input tokenized by the exported SentencePiece model, and a generation output.
      EXPECT_EQ(m.framework_names(), std::vector<std::string>{"libtorch"});
      EXPECT_EQ(m.graph_for("libtorch").graph_path, m.path.stem().string() + ".pt");
      EXPECT_NE(m.graph_for("libtorch").checksum, "sha256:" + std::string(64, '0'));
      ASSERT_EQ(m.inputs.size(), 1u);
      EXPECT_EQ(m.inputs[0].type, "text");
      EXPECT_EQ(m.inputs[0].element_type, "int64");
      ASSERT_FALSE(m.inputs[0].steps.empty());
      EXPECT_EQ(m.inputs[0].steps[0].op, "tokenize");
      EXPECT_EQ(m.inputs[0].steps[0].params.at("model"), "gpt2_tokenizer.model");
      EXPECT_EQ(m.outputs.at(0).type, "generation");
      EXPECT_EQ(m.attributes.at("task"), "text_generation");
      EXPECT_EQ(m.attributes.at("prompts"), "gpt2_prompts.txt");
      EXPECT_EQ(m.precisions, (std::vector<std::string>{"fp32", "bf16", "fp16"}));
      continue;
    }
    const std::string type = m.outputs.at(0).type;
    if (type == "detection" || type == "segmentation" || type == "text_classification") {
      // The task models (docs/tasks.md): TorchScript only, their labels beside them, a task attribute per type.
      EXPECT_EQ(m.framework_names(), std::vector<std::string>{"libtorch"});
      EXPECT_EQ(m.graph_for("libtorch").graph_path, m.path.stem().string() + ".pt");
      EXPECT_NE(m.graph_for("libtorch").checksum, "sha256:" + std::string(64, '0'));
      EXPECT_TRUE(fs::exists(m.resolved_labels_path())) << m.resolved_labels_path();
      const std::map<std::string, std::string> task = {{"detection", "object_detection"},
                                                       {"segmentation", "semantic_segmentation"},
                                                       {"text_classification", "text_classification"}};
      EXPECT_EQ(m.attributes.at("task"), task.at(type));
      if (type == "text_classification") {
        ASSERT_EQ(m.inputs.size(), 2u);
        EXPECT_EQ(m.inputs[0].name, "input_ids");
        EXPECT_EQ(m.inputs[0].type, "text");
        EXPECT_EQ(m.inputs[1].name, "attention_mask");
        EXPECT_EQ(m.inputs[1].element_type, "int64");
        EXPECT_EQ(m.inputs[1].dimensions, m.inputs[0].dimensions);
      } else {
        ASSERT_EQ(m.inputs.size(), 1u);
        EXPECT_EQ(m.inputs[0].type, "image");
        EXPECT_EQ(m.outputs[0].steps.at(0).op, type == "detection" ? "nms" : "argmax");
      }
      continue;
    }
    // Every zoo model has a TorchScript and an ONNX graph; ViT-B/16 alone lacks opencv-dnn (OpenCV 4.6 cannot
    // import its graph; docs/adding-a-framework.md says why).
    // ResNet-18 and -50 also have an AOTInductor package (scripts/export_hf.py).
    const bool vit = m.path.stem() == "vit_b_16";
    std::vector<std::string> want = vit ? std::vector<std::string>{"libtorch", "onnxruntime"}
                                        : std::vector<std::string>{"libtorch", "opencv-dnn", "onnxruntime"};
    if (m.path.stem() == "resnet18" || m.path.stem() == "resnet50") {
      want.push_back("aotinductor");
      EXPECT_EQ(m.graph_for("aotinductor").graph_path, m.path.stem().string() + ".pt2");
    }
    EXPECT_EQ(m.framework_names(), want);
    EXPECT_EQ(m.default_framework(), "libtorch");
    EXPECT_EQ(m.graph_for("libtorch").constraint, ">=1.13");
    EXPECT_EQ(m.graph_for("libtorch").graph_path, m.path.stem().string() + ".pt");
    EXPECT_EQ(m.graph_for("onnxruntime").graph_path, m.path.stem().string() + ".onnx");
    if (!vit) {
      EXPECT_EQ(m.graph_for("opencv-dnn").graph_path, m.path.stem().string() + ".onnx");
      // Same file, same digest.
      EXPECT_EQ(m.graph_for("opencv-dnn").checksum, m.graph_for("onnxruntime").checksum);
    }
    EXPECT_NE(m.graph_for("libtorch").checksum, m.graph_for("onnxruntime").checksum);
    for (const auto& g : m.graphs)
      EXPECT_NE(g.checksum, "sha256:" + std::string(64, '0')) << g.framework << ": export_zoo.py --record was not run";
    // digits_cnn alone is trained (scikit-learn digits, 10 classes); the others have random weights, ImageNet labels.
    const bool trained = m.path.stem() == "digits_cnn";
    EXPECT_EQ(m.outputs.at(0).labels, trained ? "digits_labels.txt" : "imagenet_labels.txt");
    EXPECT_TRUE(fs::exists(m.resolved_labels_path())) << m.resolved_labels_path();
    EXPECT_EQ(m.attributes.at("task"), "image_classification");
    EXPECT_EQ(m.attributes.at("training_dataset"), trained ? "scikit-learn digits (train 80%)" : "none");
    EXPECT_TRUE(m.attributes.count("source") && m.attributes.count("weights") && m.attributes.count("export"));
    EXPECT_EQ(xsp::load_manifest(m.path).name, m.name);
  }
  // Sorted by name, case-insensitively.
  EXPECT_EQ(zoo.front().name, "BERT_Base");
  const auto& inception = xsp::find_model(zoo, "inception_v3");
  EXPECT_EQ(inception.inputs.at(0).dimensions, (std::vector<long>{3, 299, 299}));
  EXPECT_EQ(inception.inputs.at(0).steps.at(1).params.at("shorter_side"), "342");
  EXPECT_EQ(inception.inputs.at(0).steps.at(2).params.at("size"), "299");

  std::ifstream labels(fs::path(XSP_SOURCE_DIR) / "models" / "imagenet_labels.txt");
  std::vector<std::string> ls;
  for (std::string l; std::getline(labels, l);) ls.push_back(l);
  ASSERT_EQ(ls.size(), 1000u);
  EXPECT_EQ(ls.front(), "tench");
  EXPECT_EQ(ls.back(), "toilet tissue");
}

TEST(Manifest, MalformedYamlGivesItsLine) {
  const fs::path file = kFixtures / "malformed.yaml";
  try {
    xsp::load_manifest(file);
    FAIL() << "malformed YAML accepted";
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.file(), file.string());
    EXPECT_EQ(e.line(), 7);
    EXPECT_NE(std::string(e.what()).find(file.string() + ":7: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("malformed YAML"), std::string::npos) << e.what();
  }
  auto e = parse_error("name: a\nversion: 1.0.0\n\tframework: x\n");
  EXPECT_EQ(e.line(), 3) << e.what();
}

TEST(Manifest, UnreadableFile) {
  try {
    xsp::load_manifest(kFixtures / "does_not_exist.yaml");
    FAIL();
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.line(), 0);
    EXPECT_NE(std::string(e.what()).find("does_not_exist.yaml"), std::string::npos);
  }
}

TEST(Manifest, EveryRequiredFieldIsReported) {
  struct Case {
    std::string line;   // fixture line removed (with its nested block)
    std::string field;  // field the error must name
    int error_line;     // line of the enclosing mapping
  };
  const std::vector<Case> cases = {
      {"name: TestNet", "name", 3},
      {"version: 1.2.3", "version", 3},
      {"framework:", "framework", 3},
      {"  name: libtorch", "framework.name", 7},
      {"  version: \">=1.13, <3\"", "framework.version", 7},
      {"model:", "model", 3},
      {"  graph_path: small.bin", "model.graph_path", 10},
      {"  checksum: sha256:0b5c28c9832c01e51d52c7c7e33ddda0a2c4c69474b3a08a9a1ad6319a51cdea", "model.checksum", 10},
      {"inputs:", "inputs", 3},
      {"    type: image", "inputs[0].type", 13},
      {"    element_type: float32", "inputs[0].element_type", 13},
      {"    dimensions: [3, 224, 224]", "inputs[0].dimensions", 13},
      {"outputs:", "outputs", 3},
      {"    type: classification", "outputs[0].type", 24},
  };
  const std::string valid = read(kValid);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field);
    auto e = parse_error(remove_block(valid, c.line));
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_EQ(e.line(), c.error_line) << e.what();
    EXPECT_EQ(e.file(), kValid.string());
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(kValid.string() + ":" + std::to_string(c.error_line) + ": field '" + c.field + "': ", 0), 0u)
        << what;
    EXPECT_NE(what.find("missing"), std::string::npos) << what;
  }
}

TEST(Manifest, RequiredStepParameters) {
  const std::string valid = read(kValid);
  struct Case {
    std::string from, to, field;
  };
  const std::vector<Case> cases = {
      {"{shorter_side: 256, method: bicubic}", "{method: bicubic}", "inputs[0].steps[1].resize.shorter_side"},
      {"{size: 224}", "{}", "inputs[0].steps[2].center_crop.size"},
      {"mean: [0.485, 0.456, 0.406], ", "", "inputs[0].steps[3].normalize.mean"},
      {", std: [0.229, 0.224, 0.225]", "", "inputs[0].steps[3].normalize.std"},
      {"{k: 5}", "{}", "outputs[0].steps[1].top_k.k"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field);
    auto e = parse_error(replace(valid, c.from, c.to));
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_GT(e.line(), 0);
  }
}

TEST(Manifest, WrongTypesAndValues) {
  const std::string valid = read(kValid);
  struct Case {
    std::string from, to, field, expect;  // expect: a phrase the message must contain
    int line;
  };
  const std::vector<Case> cases = {
      {"[3, 224, 224]", "\"abc\"", "inputs[0].dimensions", "'abc'", 17},
      {"[3, 224, 224]", "[3, -1, 224]", "inputs[0].dimensions[1]", "positive integer", 17},
      {"[3, 224, 224]", "[3, x, 224]", "inputs[0].dimensions[1]", "'x'", 17},
      {"[3, 224, 224]", "[1, 224, 224]", "inputs[0].dimensions[0]", "3 channels", 17},
      {"sha256:0b5c28c9832c01e51d52c7c7e33ddda0a2c4c69474b3a08a9a1ad6319a51cdea", "md5:abc", "model.checksum",
       "64 lower-case hex", 11},
      {"sha256:0b5c28c9832c01e51d52c7c7e33ddda0a2c4c69474b3a08a9a1ad6319a51cdea",
       "sha256:0B5C28C9832C01E51D52C7C7E33DDDA0A2C4C69474B3A08A9A1AD6319A51CDEA", "model.checksum", "lower-case", 11},
      {"- center_crop: {size: 224}", "- sharpen: {amount: 2}", "inputs[0].steps[2]",
       "unknown pre-processing step 'sharpen'", 21},
      {"{softmax: {}}", "{sigmoid: {}}", "outputs[0].steps[0]", "unknown post-processing step 'sigmoid'", 26},
      // A known step of another output type (segmentation).
      {"{softmax: {}}", "{argmax: {}}", "outputs[0].steps[0]",
       "'argmax' is not allowed on an output of type "
       "classification",
       26},
      {"{softmax: {}}", "{resize: {shorter_side: 2}}", "outputs[0].steps[0]", "softmax, top_k", 26},
      {"{size: 224}", "{size: 0}", "inputs[0].steps[2].center_crop.size", "positive integer", 21},
      {"{size: 224}", "{size: 224, mode: x}", "inputs[0].steps[2].center_crop.mode", "unknown key 'mode'", 21},
      {"method: bicubic", "method: lanczos", "inputs[0].steps[1].resize.method", "bilinear, nearest, bicubic, area",
       20},
      {"std: [0.229, 0.224, 0.225]", "std: [0.229, 0, 0.225]", "inputs[0].steps[3].normalize.std[1]", "non-zero", 22},
      {"std: [0.229, 0.224, 0.225]", "std: [0.229, 0.224]", "inputs[0].steps[3].normalize.std", "as many values", 22},
      {"scale: 255", "scale: -1", "inputs[0].steps[3].normalize.scale", "> 0", 22},
      {"scale: 255", "scale: big", "inputs[0].steps[3].normalize.scale", "expected a number", 22},
      {"- decode: {}", "- decode", "inputs[0].steps[0]", "one key", 19},
      {"{k: 5}", "{k: five}", "outputs[0].steps[1].top_k.k", "'five'", 26},
      {"version: 1.2.3", "version: 1.2", "version", "semantic version", 4},
      {"version: \">=1.13, <3\"", "version: \">=one\"", "framework.version", "'>=one'", 8},
      {"version: \">=1.13, <3\"", "version: \"=>1.13\"", "framework.version", "'=>1.13'", 8},
      {"type: image", "type: video", "inputs[0].type", "image, tensor, text", 14},
      {"element_type: float32", "element_type: int8", "inputs[0].element_type", "float32", 15},
      {"layout: NCHW", "layout: NWCH", "inputs[0].layout", "NCHW", 13},
      {"color_mode: BGR", "color_mode: CMYK", "inputs[0].color_mode", "RGB, BGR, GRAY", 16},
      {"type: classification", "type: regression", "outputs[0].type", "classification, detection", 25},
      {"name: TestNet", "name: \"\"", "name", "non-empty string", 3},
      {"name: TestNet", "name: [a, b]", "name", "a list", 3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field + " <- " + c.to);
    auto e = parse_error(replace(valid, c.from, c.to));
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_EQ(e.line(), c.line) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
  }
}

TEST(Manifest, EmptyInputsOrOutputs) {
  const std::string valid = read(kValid);
  auto e = parse_error(replace(remove_block(valid, "inputs:"), "outputs:", "inputs: []\noutputs:"));
  EXPECT_EQ(e.field(), "inputs");
  EXPECT_EQ(e.line(), 12) << e.what();
  EXPECT_NE(std::string(e.what()).find("non-empty list"), std::string::npos) << e.what();
  e = parse_error(remove_block(valid, "outputs:") + "outputs: {}\n");
  EXPECT_EQ(e.field(), "outputs");
  EXPECT_NE(std::string(e.what()).find("non-empty list"), std::string::npos) << e.what();
}

TEST(Manifest, UnknownKeysAreErrors) {
  const std::string valid = read(kValid);
  auto e = parse_error(replace(valid, "description:", "descripton:"));
  EXPECT_EQ(e.field(), "descripton");
  EXPECT_EQ(e.line(), 5);
  EXPECT_NE(std::string(e.what()).find("unknown key 'descripton'"), std::string::npos) << e.what();

  e = parse_error(replace(valid, "    color_mode: BGR", "    colour_mode: BGR"));
  EXPECT_EQ(e.field(), "inputs[0].colour_mode");

  e = parse_error(replace(valid, "  graph_path:", "  graph: x\n  graph_path:"));
  EXPECT_EQ(e.field(), "model.graph");

  e = parse_error(valid + "name: Again\n");
  EXPECT_EQ(e.field(), "name");
  EXPECT_NE(std::string(e.what()).find("duplicate"), std::string::npos) << e.what();
}

TEST(Manifest, TopLevelMustBeAMapping) {
  auto e = parse_error("- just\n- a list\n");
  EXPECT_EQ(e.line(), 1);
  e = parse_error("");
  EXPECT_NE(std::string(e.what()).find("expected a mapping"), std::string::npos) << e.what();
}

TEST(Zoo, FindModel) {
  std::vector<xsp::Manifest> zoo;
  for (const char* v : {"1.0.0", "1.10.0", "1.2.0"}) {
    auto text = replace(read(kValid), "version: 1.2.3", std::string("version: ") + v);
    zoo.push_back(xsp::parse_manifest(text, kValid));
  }
  zoo.push_back(xsp::parse_manifest(replace(read(kValid), "name: TestNet", "name: Other"), kValid));
  EXPECT_EQ(xsp::find_model(zoo, "testnet").version, "1.10.0");  // highest by semver, not by text
  EXPECT_EQ(xsp::find_model(zoo, "TESTNET", "1.2.0").version, "1.2.0");
  EXPECT_EQ(xsp::find_model(zoo, "other").name, "Other");
  try {
    xsp::find_model(zoo, "resnet999");
    FAIL();
  } catch (const std::runtime_error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("unknown model 'resnet999'"), std::string::npos) << w;
    EXPECT_NE(w.find("TestNet, Other"), std::string::npos) << w;
  }
  try {
    xsp::find_model(zoo, "TestNet", "9.9.9");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("1.0.0, 1.10.0, 1.2.0"), std::string::npos) << e.what();
  }
}

TEST(Zoo, LoadZooRejectsDuplicatesAndMissingFolder) {
  EXPECT_THROW(xsp::load_zoo(kFixtures / "no_such_dir"), ManifestError);
  const fs::path dir =
      fs::temp_directory_path() / ("xsp_zoo_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::create_directories(dir);
  for (const char* f : {"a.yaml", "b.yml"}) std::ofstream(dir / f) << read(kValid);
  std::ofstream(dir / "notes.txt") << "ignored";
  try {
    xsp::load_zoo(dir);
    ADD_FAILURE() << "duplicate accepted";
  } catch (const ManifestError& e) {
    EXPECT_NE(std::string(e.what()).find("unique"), std::string::npos) << e.what();
  }
  fs::remove(dir / "b.yml");
  EXPECT_EQ(xsp::load_zoo(dir).size(), 1u);
  fs::remove_all(dir);
}

TEST(Checksum, Sha256OfFixtureMatchesSha256sum) {
  // Digest computed with `sha256sum tests/fixtures/manifests/small.bin`.
  EXPECT_EQ(xsp::sha256_file(kFixtures / "small.bin"),
            "0b5c28c9832c01e51d52c7c7e33ddda0a2c4c69474b3a08a9a1ad6319a51cdea");
  // FIPS 180-4 test vector: the empty message.
  const fs::path empty = fs::temp_directory_path() / "xsp_sha256_empty";
  std::ofstream(empty).close();
  EXPECT_EQ(xsp::sha256_file(empty), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  fs::remove(empty);
  EXPECT_THROW(xsp::sha256_file(kFixtures / "nope.bin"), std::runtime_error);
}

TEST(Checksum, VerifyMatchMismatchMissing) {
  auto m = xsp::load_manifest(kValid);
  EXPECT_NO_THROW(xsp::verify_checksum(m, "libtorch"));

  auto bad = m;
  bad.graphs[0].checksum = "sha256:" + std::string(64, 'a');
  try {
    xsp::verify_checksum(bad, "libtorch");
    FAIL();
  } catch (const std::runtime_error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("mismatch"), std::string::npos) << w;
    EXPECT_NE(w.find((kFixtures / "small.bin").string()), std::string::npos) << w;
    EXPECT_NE(w.find(bad.graphs[0].checksum), std::string::npos) << w;
    EXPECT_NE(w.find("sha256:0b5c28c9832c01e51d52c7c7e33ddda0a2c4c69474b3a08a9a1ad6319a51cdea"), std::string::npos)
        << w;
  }

  auto missing = m;
  missing.graphs[0].graph_path = "resnet77.pt";
  try {
    xsp::verify_checksum(missing, "libtorch");
    FAIL();
  } catch (const std::runtime_error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("missing"), std::string::npos) << w;
    EXPECT_NE(w.find("scripts/export_zoo.py --models resnet77"), std::string::npos) << w;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Several frameworks per manifest (`frameworks:` list)
// ---------------------------------------------------------------------------------------------------------

namespace {

const std::string kSmallDigest = "sha256:0b5c28c9832c01e51d52c7c7e33ddda0a2c4c69474b3a08a9a1ad6319a51cdea";

// The fixture with its framework:/model: blocks replaced by a frameworks: list of two graphs.
std::string multi_framework_text() {
  std::string text = remove_block(remove_block(read(kValid), "framework:"), "model:");
  return replace(text, "inputs:\n",
                 "frameworks:\n"
                 "  - name: libtorch\n"
                 "    version: \">=1.13\"\n"
                 "    graph_path: small.bin\n"
                 "    checksum: " +
                     kSmallDigest +
                     "\n"
                     "  - name: opencv-dnn\n"
                     "    version: \">=4.5\"\n"
                     "    graph_path: /abs/small.onnx\n"
                     "    checksum: sha256:" +
                     std::string(64, 'b') +
                     "\n"
                     "inputs:\n");
}

}  // namespace

TEST(ManifestFrameworks, ListFormParses) {
  const auto m = xsp::parse_manifest(multi_framework_text(), kValid);
  ASSERT_EQ(m.graphs.size(), 2u);
  EXPECT_EQ(m.framework_names(), (std::vector<std::string>{"libtorch", "opencv-dnn"}));
  EXPECT_EQ(m.default_framework(), "libtorch");
  EXPECT_TRUE(m.has_framework("opencv-dnn"));
  EXPECT_FALSE(m.has_framework("onnxruntime"));
  const auto& cv = m.graph_for("opencv-dnn");
  EXPECT_EQ(cv.constraint, ">=4.5");
  EXPECT_EQ(cv.graph_path, "/abs/small.onnx");
  EXPECT_EQ(cv.checksum, "sha256:" + std::string(64, 'b'));
  EXPECT_EQ(m.graphs[0].line, 7);  // the entries' "- name:" lines
  EXPECT_EQ(cv.line, 11);
  EXPECT_EQ(m.resolved_graph_path("libtorch"), kFixtures / "small.bin");
  EXPECT_EQ(m.resolved_graph_path("opencv-dnn"), fs::path("/abs/small.onnx"));  // absolute paths kept
  EXPECT_NO_THROW(xsp::verify_checksum(m, "libtorch"));
}

TEST(ManifestFrameworks, UnknownFrameworkNamesFileAndChoices) {
  const auto m = xsp::parse_manifest(multi_framework_text(), kValid);
  for (auto call : {+[](const xsp::Manifest& x) { (void)x.graph_for("tensorflow"); },
                    +[](const xsp::Manifest& x) { xsp::verify_checksum(x, "tensorflow"); },
                    +[](const xsp::Manifest& x) { (void)x.resolved_graph_path("tensorflow"); }}) {
    try {
      call(m);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find(kValid.string()), std::string::npos) << w;
      EXPECT_NE(w.find("'tensorflow'"), std::string::npos) << w;
      EXPECT_NE(w.find("libtorch, opencv-dnn"), std::string::npos) << w;
    }
  }
}

TEST(ManifestFrameworks, ChecksumIsPerFramework) {
  auto m = xsp::parse_manifest(multi_framework_text(), kValid);
  m.graphs[1].graph_path = "small.bin";  // same file, but the recorded digest is 'bbbb...'
  EXPECT_NO_THROW(xsp::verify_checksum(m, "libtorch"));
  try {
    xsp::verify_checksum(m, "opencv-dnn");
    FAIL() << "mismatch not detected";
  } catch (const std::runtime_error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("opencv-dnn"), std::string::npos) << w;
    EXPECT_NE(w.find("sha256:" + std::string(64, 'b')), std::string::npos) << w;
    EXPECT_NE(w.find(kSmallDigest), std::string::npos) << w;
  }
}

TEST(ManifestFrameworks, Errors) {
  const std::string multi = multi_framework_text();
  struct Case {
    std::string text, field, expect;
    int line;
  };
  const std::vector<Case> cases = {
      // Both forms at once.
      {replace(multi, "inputs:\n", "framework: {name: libtorch, version: \">=1\"}\ninputs:\n"), "framework",
       "cannot be combined with 'frameworks'", 15},
      {replace(multi, "inputs:\n", "model: {graph_path: a.pt, checksum: x}\ninputs:\n"), "model", "cannot be combined",
       15},
      // Duplicate framework names.
      {replace(multi, "  - name: opencv-dnn", "  - name: libtorch"), "frameworks[1].name",
       "duplicate framework 'libtorch' (also at line 7)", 11},
      // Missing keys of an entry, reported at the entry's line.
      {replace(multi, "    graph_path: /abs/small.onnx\n", ""), "frameworks[1].graph_path", "missing", 11},
      {replace(multi, "    version: \">=4.5\"\n", ""), "frameworks[1].version", "missing", 11},
      // Bad values.
      {replace(multi, "\">=4.5\"", "\"four\""), "frameworks[1].version", "'four'", 12},
      {replace(multi, "sha256:" + std::string(64, 'b'), "sha256:xyz"), "frameworks[1].checksum", "64 lower-case hex",
       14},
      {replace(multi, "    graph_path: small.bin\n", "    graph_path: small.bin\n    path: x\n"), "frameworks[0].path",
       "unknown key 'path'", 10},
      // Empty or not a list (appended as the last line, 24).
      {remove_block(multi, "frameworks:") + "frameworks: []\n", "frameworks", "non-empty list", 24},
      {remove_block(multi, "frameworks:") + "frameworks: libtorch\n", "frameworks", "non-empty list", 24},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field + ": " + c.expect);
    auto e = parse_error(c.text);
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_EQ(e.line(), c.line) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
  }
  // Neither form: the single form's first required field is reported.
  auto e = parse_error(remove_block(multi, "frameworks:"));
  EXPECT_EQ(e.field(), "framework") << e.what();
}
