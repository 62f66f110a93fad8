// Manifests of other tasks than image classification (issue 15, "Manifest and pipeline"): named inputs and
// outputs, element types, text inputs (tokenize, pad_truncate), detection (nms), segmentation (argmax), token
// generation (generate, detokenize) and precisions (SPEC §5).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "xsp/manifest/manifest.h"

namespace fs = std::filesystem;
using xsp::ManifestError;

namespace {

const fs::path kFixtures = fs::path(XSP_TEST_FIXTURES) / "manifests";
const fs::path kValid = kFixtures / "valid.yaml";
const fs::path kGpt2 = kFixtures / "gpt2_tiny.yaml";
const fs::path kBert = kFixtures / "bert_tiny.yaml";
const fs::path kDetection = kFixtures / "detection.yaml";
const fs::path kSegmentation = kFixtures / "segmentation.yaml";
const std::string kTokenizerDigest = "sha256:" + std::string(64, '1');
// The text input's one step in gpt2_tiny.yaml (line 13).
const std::string kTokenizeLine =
    "      - tokenize: {model: gpt2_tokenizer.model, checksum: \"" + kTokenizerDigest + "\", add_bos: true}\n";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "fixture has no '" << from << "'";
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A fixture with `from` replaced by `to` that must be refused: the error names `file`, `line` and `field` (also at
// the start of what(), "FILE:LINE: field 'F': ") and its message contains `expect`.
struct Bad {
  fs::path file;
  std::string from, to;
  std::string field;
  int line;
  std::string expect;
};

void expect_refused(const Bad& c) {
  SCOPED_TRACE(c.file.filename().string() + ": " + c.field + " <- " + c.to);
  const std::string text = replace(read(c.file), c.from, c.to);
  try {
    (void)xsp::parse_manifest(text, c.file);
    ADD_FAILURE() << "manifest parsed although it should not:\n" << text;
  } catch (const ManifestError& e) {
    const std::string w = e.what();
    EXPECT_EQ(e.file(), c.file.string()) << w;
    EXPECT_EQ(e.line(), c.line) << w;
    EXPECT_EQ(e.field(), c.field) << w;
    EXPECT_EQ(w.rfind(c.file.string() + ":" + std::to_string(c.line) + ": field '" + c.field + "': ", 0), 0u) << w;
    EXPECT_TRUE(has(w, c.expect)) << w;
  }
}

void expect_all_refused(const std::vector<Bad>& cases) {
  for (const auto& c : cases) expect_refused(c);
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Manifests that parse
// ---------------------------------------------------------------------------------------------------------

TEST(ManifestTasks, Gpt2GenerationManifestParsesWithDefaultsFilled) {
  const xsp::Manifest m = xsp::load_manifest(kGpt2);
  EXPECT_EQ(m.name, "GPT2_Tiny");
  EXPECT_EQ(m.default_framework(), "libtorch");
  EXPECT_EQ(m.precisions, (std::vector<std::string>{"fp32", "bf16", "fp16"}));
  EXPECT_TRUE(xsp::is_generation(m));

  ASSERT_EQ(m.inputs.size(), 1u);
  const xsp::InputSpec& in = m.inputs[0];
  EXPECT_EQ(in.name, "prompt");
  EXPECT_EQ(in.type, "text");
  EXPECT_EQ(in.element_type, "int64");
  EXPECT_EQ(in.layout, "");
  EXPECT_EQ(in.color_mode, "");
  EXPECT_EQ(in.dimensions, (std::vector<long>{128}));
  ASSERT_EQ(in.steps.size(), 1u);
  const xsp::ProcessingStep& tok = in.steps[0];
  EXPECT_EQ(tok.op, "tokenize");
  EXPECT_EQ(tok.line, 13);
  EXPECT_EQ(tok.params.at("model"), "gpt2_tokenizer.model");
  EXPECT_EQ(tok.params.at("checksum"), kTokenizerDigest);
  EXPECT_EQ(tok.params.at("add_bos"), "true");
  EXPECT_EQ(tok.params.at("add_eos"), "false");  // default written
  EXPECT_EQ(tok.param("add_eos", "x"), "false");
  EXPECT_EQ(tok.param("no_such", "fallback"), "fallback");
  EXPECT_EQ(tok.param("no_such"), "");
  EXPECT_EQ(m.resolve(tok.params.at("model")), kFixtures / "gpt2_tokenizer.model");

  ASSERT_EQ(m.outputs.size(), 1u);
  const xsp::OutputSpec& out = m.outputs[0];
  EXPECT_EQ(out.name, "tokens");
  EXPECT_EQ(out.type, "generation");
  EXPECT_EQ(out.labels, "");
  ASSERT_EQ(out.steps.size(), 2u);
  EXPECT_EQ(out.steps[0].op, "generate");
  EXPECT_EQ(out.steps[0].params.at("max_new_tokens"), "32");
  EXPECT_EQ(out.steps[0].params.at("sampling"), "greedy");
  EXPECT_EQ(out.steps[1].op, "detokenize");
  EXPECT_EQ(out.steps[1].params.at("model"), "gpt2_tokenizer.model");
  EXPECT_EQ(out.steps[1].params.at("checksum"), kTokenizerDigest);
  EXPECT_EQ(out.steps[1].line, 19);

  EXPECT_EQ(m.find_input("prompt"), &m.inputs[0]);
  EXPECT_EQ(m.find_input("tokens"), nullptr);
  EXPECT_EQ(m.find_output("tokens"), &m.outputs[0]);
  EXPECT_EQ(m.find_output("prompt"), nullptr);
  EXPECT_EQ(m.attributes.at("task"), "text_generation");
}

TEST(ManifestTasks, GenerationDefaultsAndPadTruncate) {
  // generate with no parameters, pad_truncate with only its length: every default is written into params.
  std::string text = replace(read(kGpt2), ", add_bos: true}\n", "}\n      - pad_truncate: {length: 96}\n");
  text = replace(text, "{max_new_tokens: 32, sampling: greedy}", "{}");
  const auto m = xsp::parse_manifest(text, kGpt2);
  const auto& tok = m.inputs[0].steps.at(0);
  EXPECT_EQ(tok.params.at("add_bos"), "false");
  EXPECT_EQ(tok.params.at("add_eos"), "false");
  const auto& pad = m.inputs[0].steps.at(1);
  EXPECT_EQ(pad.op, "pad_truncate");
  EXPECT_EQ(pad.params.at("length"), "96");
  EXPECT_EQ(pad.params.at("side"), "right");
  EXPECT_EQ(pad.params.at("pad_id"), "0");
  EXPECT_EQ(m.outputs[0].steps.at(0).params.at("max_new_tokens"), "32");
  EXPECT_EQ(m.outputs[0].steps.at(0).params.at("sampling"), "greedy");
  EXPECT_EQ(m.outputs[0].steps.at(0).params.at("signature"), "xsp-contract");
  // A Hugging Face static-cache export says so (the AOTInductor predictor drives it).
  const auto hf = xsp::parse_manifest(
      replace(read(kGpt2), "sampling: greedy}", "sampling: greedy, signature: hf-static-cache}"), kGpt2);
  EXPECT_EQ(hf.outputs[0].steps.at(0).params.at("signature"), "hf-static-cache");

  // Given values are kept; 96 + 32 = 128 exactly fits; int32 token ids; detokenize is optional.
  text = replace(read(kGpt2), ", add_bos: true}\n",
                 ", add_eos: false}\n      - pad_truncate: {length: 96, side: left, pad_id: 50256}\n");
  text = replace(text, "element_type: int64", "element_type: int32");
  text = text.substr(0, text.find("      - detokenize:")) + text.substr(text.find("attributes:"));
  const auto m2 = xsp::parse_manifest(text, kGpt2);
  EXPECT_EQ(m2.inputs[0].element_type, "int32");
  EXPECT_EQ(m2.inputs[0].steps.at(0).params.at("add_bos"), "false");
  EXPECT_EQ(m2.inputs[0].steps.at(1).params.at("side"), "left");
  EXPECT_EQ(m2.inputs[0].steps.at(1).params.at("pad_id"), "50256");
  ASSERT_EQ(m2.outputs[0].steps.size(), 1u);

  // The upper bounds themselves are accepted.
  text = replace(read(kGpt2), "dimensions: [128]", "dimensions: [1048576]");
  text = replace(text, "max_new_tokens: 32", "max_new_tokens: 1048576");
  EXPECT_EQ(xsp::parse_manifest(text, kGpt2).outputs[0].steps[0].params.at("max_new_tokens"), "1048576");
}

TEST(ManifestTasks, BertTwoNamedInt64InputsAndTextClassification) {
  const xsp::Manifest m = xsp::load_manifest(kBert);
  EXPECT_FALSE(xsp::is_generation(m));
  EXPECT_EQ(m.precisions, (std::vector<std::string>{"fp32"}));  // default
  ASSERT_EQ(m.inputs.size(), 2u);
  for (const auto& in : m.inputs) {
    EXPECT_EQ(in.type, "tensor");
    EXPECT_EQ(in.element_type, "int64");
    EXPECT_EQ(in.dimensions, (std::vector<long>{128}));
    EXPECT_TRUE(in.steps.empty());
  }
  EXPECT_EQ(m.inputs[0].name, "input_ids");
  EXPECT_EQ(m.inputs[1].name, "attention_mask");
  EXPECT_EQ(m.find_input("attention_mask"), &m.inputs[1]);
  EXPECT_EQ(m.find_input("input_ids"), &m.inputs[0]);
  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_EQ(m.outputs[0].name, "logits");
  EXPECT_EQ(m.outputs[0].type, "text_classification");
  EXPECT_EQ(m.outputs[0].steps.at(1).params.at("k"), "2");
  EXPECT_EQ(m.resolved_labels_path(0), kFixtures / "sst2_labels.txt");
  EXPECT_EQ(m.resolved_graph_path("onnxruntime"), fs::path("/models/bert_tiny.onnx"));  // absolute kept
  EXPECT_EQ(m.resolve("/models/bert_tiny.onnx"), fs::path("/models/bert_tiny.onnx"));
  EXPECT_EQ(m.resolve("../x/vocab.model"), (kFixtures.parent_path() / "x" / "vocab.model"));
  EXPECT_EQ(m.resolve(""), fs::path());

  // Unnamed inputs and outputs are numbered when there are several.
  std::string text = replace(read(kBert), "  - name: input_ids\n    type", "  - type");
  text = replace(text, "  - name: attention_mask\n    type", "  - type");
  const auto unnamed = xsp::parse_manifest(text, kBert);
  EXPECT_EQ(unnamed.inputs[0].name, "input_0");
  EXPECT_EQ(unnamed.inputs[1].name, "input_1");
}

TEST(ManifestTasks, DetectionManifestParses) {
  const xsp::Manifest m = xsp::load_manifest(kDetection);
  EXPECT_EQ(m.precisions, (std::vector<std::string>{"fp16"}));
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].name, "input");  // the default of a single input
  EXPECT_EQ(m.inputs[0].element_type, "float16");
  EXPECT_EQ(m.inputs[0].layout, "NCHW");
  ASSERT_EQ(m.outputs.size(), 2u);
  EXPECT_EQ(m.outputs[0].name, "boxes");
  EXPECT_EQ(m.outputs[0].type, "detection");
  EXPECT_EQ(m.outputs[0].labels, "coco_labels.txt");
  const auto& nms = m.outputs[0].steps.at(0);
  EXPECT_EQ(nms.op, "nms");
  EXPECT_EQ(nms.line, 21);
  EXPECT_EQ(nms.params.at("iou_threshold"), "0.45");
  EXPECT_EQ(nms.params.at("score_threshold"), "0.05");  // defaults
  EXPECT_EQ(nms.params.at("max_detections"), "100");
  const auto& strict = m.outputs[1].steps.at(0);
  EXPECT_EQ(strict.params.at("iou_threshold"), "1");  // 1 is allowed: (0, 1]
  EXPECT_EQ(strict.params.at("score_threshold"), "0.25");
  EXPECT_EQ(strict.params.at("max_detections"), "300");
  EXPECT_EQ(m.find_output("boxes_strict"), &m.outputs[1]);
  EXPECT_FALSE(xsp::is_generation(m));
}

TEST(ManifestTasks, SegmentationManifestParses) {
  const xsp::Manifest m = xsp::load_manifest(kSegmentation);
  EXPECT_EQ(m.inputs.at(0).element_type, "bfloat16");
  EXPECT_EQ(m.inputs.at(0).color_mode, "GRAY");
  ASSERT_EQ(m.outputs.size(), 2u);
  EXPECT_EQ(m.outputs[0].name, "output_0");  // several outputs, unnamed
  EXPECT_EQ(m.outputs[1].name, "output_1");
  EXPECT_EQ(m.outputs[0].type, "segmentation");
  EXPECT_EQ(m.outputs[0].labels, "voc_labels.txt");
  EXPECT_EQ(m.outputs[0].steps.at(0).op, "argmax");
  EXPECT_EQ(m.outputs[0].steps.at(0).params.at("axis"), "0");  // default
  EXPECT_EQ(m.outputs[1].steps.at(0).params.at("axis"), "1");
}

TEST(ManifestTasks, EveryElementTypeOnATensorInput) {
  std::string tensor = replace(read(kValid), "    type: image", "    type: tensor");
  tensor = replace(tensor, "    color_mode: BGR\n", "");
  for (const char* t : {"float32", "float16", "bfloat16", "int64", "int32", "bool"}) {
    SCOPED_TRACE(t);
    const auto m =
        xsp::parse_manifest(replace(tensor, "element_type: float32", std::string("element_type: ") + t), kValid);
    EXPECT_EQ(m.inputs.at(0).element_type, t);
  }
  // Images take the floating-point types.
  for (const char* t : {"float16", "bfloat16"})
    EXPECT_EQ(
        xsp::parse_manifest(replace(read(kValid), "element_type: float32", std::string("element_type: ") + t), kValid)
            .inputs.at(0)
            .element_type,
        t);
}

TEST(ManifestTasks, ExistingManifestsGetDefaultNamesAndPrecision) {
  const auto m = xsp::load_manifest(kValid);
  EXPECT_EQ(m.inputs.at(0).name, "input");
  EXPECT_EQ(m.outputs.at(0).name, "output");
  EXPECT_EQ(m.precisions, (std::vector<std::string>{"fp32"}));
  EXPECT_FALSE(xsp::is_generation(m));
  EXPECT_EQ(m.find_input("input"), &m.inputs[0]);
  EXPECT_EQ(m.find_output("output"), &m.outputs[0]);
  for (const auto& zm : xsp::load_zoo(fs::path(XSP_SOURCE_DIR) / "models")) {
    SCOPED_TRACE(zm.path.string());
    // GPT-2 and the task models (docs/tasks.md) have named inputs and precisions of their own.
    if (zm.path.stem().string().rfind("gpt2_", 0) == 0 || zm.outputs.at(0).type != "classification") continue;
    EXPECT_EQ(zm.inputs.at(0).name, "input");
    EXPECT_EQ(zm.precisions, (std::vector<std::string>{"fp32"}));
    EXPECT_FALSE(xsp::is_generation(zm));
  }
}

TEST(ManifestTasks, NewFixturesLoadAsAZoo) {
  const fs::path dir = fs::temp_directory_path() / ("xsp_tasks_zoo_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& f : {kGpt2, kBert, kDetection, kSegmentation}) fs::copy_file(f, dir / f.filename());
  const auto zoo = xsp::scan_zoo(dir);
  EXPECT_TRUE(zoo.problems.empty()) << (zoo.problems.empty() ? "" : zoo.problems[0].message);
  EXPECT_EQ(zoo.models.size(), 4u);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------------------
// Manifests that are refused: each names the file, the line and the field
// ---------------------------------------------------------------------------------------------------------

TEST(ManifestTasks, ElementTypeMustSuitTheInputType) {
  expect_all_refused({
      {kValid, "element_type: float32", "element_type: int64", "inputs[0].element_type", 15,
       "float32, float16 or bfloat16 for an input of type image"},
      {kValid, "element_type: float32", "element_type: bool", "inputs[0].element_type", 15, "got 'bool'"},
      {kGpt2, "element_type: int64", "element_type: float32", "inputs[0].element_type", 10,
       "int64 or int32 for an input of type text"},
      {kGpt2, "element_type: int64", "element_type: bool", "inputs[0].element_type", 10, "token ids"},
      {kBert, "element_type: int64", "element_type: int8", "inputs[0].element_type", 13,
       "float32, float16, bfloat16, int64, int32, bool"},
  });
}

TEST(ManifestTasks, UnknownTypes) {
  expect_all_refused({
      {kGpt2, "type: text", "type: audio", "inputs[0].type", 9, "expected one of image, tensor, text"},
      {kGpt2, "type: generation", "type: captioning", "outputs[0].type", 16,
       "classification, detection, segmentation, text_classification, generation"},
  });
}

TEST(ManifestTasks, NamesAreCheckedAndUnique) {
  expect_all_refused({
      // Duplicates: the message names both entries.
      {kBert, "name: attention_mask", "name: input_ids", "inputs[1].name", 15,
       "duplicate input name 'input_ids' (also inputs[0] at line 11)"},
      {kDetection, "name: boxes_strict", "name: boxes", "outputs[1].name", 22,
       "duplicate output name 'boxes' (also outputs[0] at line 17)"},
      // A given name that equals another entry's default: reported at the unnamed entry.
      {kBert,
       "input_ids\n    type: tensor\n    element_type: int64\n    dimensions: [128]\n  - name: attention_mask\n    "
       "type",
       "input_1\n    type: tensor\n    element_type: int64\n    dimensions: [128]\n  - type", "inputs[1].name", 15,
       "duplicate input name 'input_1' (also inputs[0] at line 11)"},
      // Syntax and length.
      {kGpt2, "name: prompt", "name: 1prompt", "inputs[0].name", 8, "starts with a letter or '_', got '1prompt'"},
      {kGpt2, "name: prompt", "name: \"the prompt\"", "inputs[0].name", 8, "got 'the prompt'"},
      {kGpt2, "name: prompt", "name: \"\"", "inputs[0].name", 8, "non-empty string"},
      {kGpt2, "name: prompt", "name: [a]", "inputs[0].name", 8, "a list"},
      {kGpt2, "name: tokens", "name: tokens/out", "outputs[0].name", 15, "got 'tokens/out'"},
      {kGpt2, "name: tokens", "name: " + std::string(257, 'a'), "outputs[0].name", 15, "at most 256 characters"},
  });
  // The allowed characters.
  const auto m = xsp::parse_manifest(replace(read(kGpt2), "name: prompt", "name: _in.ids-0"), kGpt2);
  EXPECT_EQ(m.inputs[0].name, "_in.ids-0");
}

TEST(ManifestTasks, TextInputShapeLayoutAndSteps) {
  const std::string pad = "}\n      - pad_truncate: {length: 64}\n";
  expect_all_refused({
      {kGpt2, "dimensions: [128]", "dimensions: [2, 64]", "inputs[0].dimensions", 11,
       "expected one dimension for an input of type text, its maximum sequence length, got 2"},
      {kGpt2, "dimensions: [128]", "dimensions: [1048577]", "inputs[0].dimensions[0]", 11,
       "sequence length from 1 to 1048576, got 1048577"},
      {kGpt2, "dimensions: [128]", "dimensions: [0]", "inputs[0].dimensions[0]", 11, "positive integer"},
      {kGpt2, "    dimensions: [128]\n", "    dimensions: [128]\n    layout: NCHW\n", "inputs[0].layout", 12,
       "has no layout"},
      {kGpt2, "    dimensions: [128]\n", "    dimensions: [128]\n    color_mode: RGB\n", "inputs[0].color_mode", 12,
       "only image inputs"},
      // tokenize: missing, not first, twice.
      {kGpt2, kTokenizeLine, "", "inputs[0].steps", 8, "missing required step 'tokenize'"},  // "steps:" alone
      {kGpt2, "    steps:\n" + kTokenizeLine, "", "inputs[0].steps", 8, "missing required step 'tokenize'"},
      {kGpt2, "    steps:\n" + kTokenizeLine, "    steps: []\n", "inputs[0].steps", 12, "missing required step"},
      {kGpt2, "      - tokenize:", "      - pad_truncate: {length: 8}\n      - tokenize:", "inputs[0].steps[0]", 13,
       "expected 'tokenize' as the first step of a text input, got 'pad_truncate'"},
      {kGpt2, ", add_bos: true}\n", "}\n      - tokenize: {model: b.model, checksum: " + kTokenizerDigest + "}\n",
       "inputs[0].steps[1]", 14,
       "step 'tokenize' may appear once in a text input (also inputs[0].steps[0] at line 13)"},
      {kGpt2, ", add_bos: true}\n", pad + "      - pad_truncate: {length: 8}\n", "inputs[0].steps[2]", 15,
       "may appear once"},
      // Image steps on a text input, text steps on image and tensor inputs: the step and the type are named.
      {kGpt2, ", add_bos: true}\n", "}\n      - resize: {shorter_side: 8}\n", "inputs[0].steps[1]", 14,
       "step 'resize' is not allowed on an input of type text; expected one of tokenize, pad_truncate"},
      {kValid, "- decode: {}", "- tokenize: {model: a.model, checksum: " + kTokenizerDigest + "}", "inputs[0].steps[0]",
       19, "step 'tokenize' is not allowed on an input of type image"},
      {kValid, "- decode: {}", "- frobnicate: {}", "inputs[0].steps[0]", 19,
       "unknown pre-processing step 'frobnicate'"},
  });
  // A text step on a tensor input.
  std::string tensor =
      replace(read(kBert), "    dimensions: [128]\n  - name: attention_mask",
              "    dimensions: [128]\n    steps: [{pad_truncate: {length: 8}}]\n  - name: attention_mask");
  try {
    (void)xsp::parse_manifest(tensor, kBert);
    ADD_FAILURE() << "pad_truncate accepted on a tensor input";
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.field(), "inputs[0].steps[0]");
    EXPECT_EQ(e.line(), 15);
    EXPECT_TRUE(has(e.what(), "step 'pad_truncate' is not allowed on an input of type tensor")) << e.what();
  }
}

TEST(ManifestTasks, TokenizeAndPadTruncateParameters) {
  const std::string tok = "{model: gpt2_tokenizer.model, checksum: \"" + kTokenizerDigest + "\", add_bos: true}";
  expect_all_refused({
      {kGpt2, tok, "{checksum: \"" + kTokenizerDigest + "\"}", "inputs[0].steps[0].tokenize.model", 13, "missing"},
      {kGpt2, tok, "{model: gpt2_tokenizer.model}", "inputs[0].steps[0].tokenize.checksum", 13, "missing"},
      {kGpt2, tok, "{model: m, checksum: \"sha256:abc\"}", "inputs[0].steps[0].tokenize.checksum", 13,
       "64 lower-case hex"},
      {kGpt2, tok, "{model: " + std::string(4097, 'm') + ", checksum: \"" + kTokenizerDigest + "\"}",
       "inputs[0].steps[0].tokenize.model", 13, "at most 4096 characters"},
      {kGpt2, "add_bos: true", "add_bos: maybe", "inputs[0].steps[0].tokenize.add_bos", 13,
       "expected true or false, got 'maybe'"},
      {kGpt2, "add_bos: true", "lowercase: true", "inputs[0].steps[0].tokenize.lowercase", 13, "unknown key"},
      {kGpt2, ", add_bos: true}\n", "}\n      - pad_truncate: {length: 129}\n",
       "inputs[0].steps[1].pad_truncate.length", 14, "from 1 to 128, got '129'"},
      {kGpt2, ", add_bos: true}\n", "}\n      - pad_truncate: {length: 0}\n", "inputs[0].steps[1].pad_truncate.length",
       14, "from 1 to 128"},
      {kGpt2, ", add_bos: true}\n", "}\n      - pad_truncate: {side: left}\n", "inputs[0].steps[1].pad_truncate.length",
       14, "missing"},
      {kGpt2, ", add_bos: true}\n", "}\n      - pad_truncate: {length: 8, side: middle}\n",
       "inputs[0].steps[1].pad_truncate.side", 14, "left, right"},
      {kGpt2, ", add_bos: true}\n", "}\n      - pad_truncate: {length: 8, pad_id: -1}\n",
       "inputs[0].steps[1].pad_truncate.pad_id", 14, "from 0 to 2147483647"},
      {kGpt2, ", add_bos: true}\n", "}\n      - pad_truncate: {length: 8, pad_id: 2147483648}\n",
       "inputs[0].steps[1].pad_truncate.pad_id", 14, "out of range"},
  });
}

TEST(ManifestTasks, NmsAndArgmaxParameters) {
  expect_all_refused({
      {kDetection, "iou_threshold: 0.45", "iou_threshold: 0", "outputs[0].steps[0].nms.iou_threshold", 21,
       "expected a number in (0, 1], got '0'"},
      {kDetection, "iou_threshold: 0.45", "iou_threshold: 1.5", "outputs[0].steps[0].nms.iou_threshold", 21,
       "expected a number in (0, 1], got '1.5'"},
      {kDetection, "iou_threshold: 0.45", "iou_threshold: high", "outputs[0].steps[0].nms.iou_threshold", 21,
       "expected a number"},
      {kDetection, "{iou_threshold: 0.45}", "{}", "outputs[0].steps[0].nms.iou_threshold", 21, "missing"},
      {kDetection, "score_threshold: 0.25", "score_threshold: -0.1", "outputs[1].steps[0].nms.score_threshold", 25,
       "[0, 1]"},
      {kDetection, "max_detections: 300", "max_detections: 100001", "outputs[1].steps[0].nms.max_detections", 25,
       "from 1 to 100000"},
      {kDetection, "max_detections: 300", "max_detections: 0", "outputs[1].steps[0].nms.max_detections", 25,
       "from 1 to 100000"},
      {kSegmentation, "{axis: 1}", "{axis: 8}", "outputs[1].steps[0].argmax.axis", 19, "from 0 to 7"},
      {kSegmentation, "{axis: 1}", "{axis: -1}", "outputs[1].steps[0].argmax.axis", 19, "from 0 to 7"},
      {kSegmentation, "{axis: 1}", "{dim: 1}", "outputs[1].steps[0].argmax.dim", 19, "unknown key 'dim'"},
  });
}

TEST(ManifestTasks, GenerateAndDetokenize) {
  expect_all_refused({
      {kGpt2, "max_new_tokens: 32", "max_new_tokens: 0", "outputs[0].steps[0].generate.max_new_tokens", 18,
       "from 1 to 1048576, got '0'"},
      {kGpt2, "max_new_tokens: 32", "max_new_tokens: 1048577", "outputs[0].steps[0].generate.max_new_tokens", 18,
       "from 1 to 1048576, got '1048577'"},
      // The new tokens alone, then with the padded prompt, must fit the positions of the text input.
      {kGpt2, "max_new_tokens: 32", "max_new_tokens: 129", "outputs[0].steps[0].generate.max_new_tokens", 18,
       "expected max_new_tokens to be at most dimensions[0] of input 'prompt', its maximum sequence length 128, got "
       "129"},
      {kGpt2, ", add_bos: true}\n", "}\n      - pad_truncate: {length: 100}\n",
       "outputs[0].steps[0].generate.max_new_tokens", 19,
       "expected max_new_tokens + pad_truncate.length (the prompt) to be at most dimensions[0] of input 'prompt', its "
       "maximum sequence length 128, got 32 + 100 = 132"},
      {kGpt2, "sampling: greedy", "sampling: top_p", "outputs[0].steps[0].generate.sampling", 18,
       "expected one of greedy"},
      {kGpt2, "sampling: greedy}", "sampling: greedy, signature: onnx}", "outputs[0].steps[0].generate.signature", 18,
       "expected one of xsp-contract, hf-static-cache"},
      {kGpt2, "      - generate: {max_new_tokens: 32, sampling: greedy}\n", "", "outputs[0].steps[0]", 18,
       "expected 'generate' as the first step of a generation output, got 'detokenize'"},
      {kGpt2,
       "      - generate: {max_new_tokens: 32, sampling: greedy}\n      - detokenize: {model: gpt2_tokenizer.model, "
       "checksum: \"" +
           kTokenizerDigest + "\"}\n",
       "", "outputs[0].steps", 15, "missing required step 'generate' (the first step of a generation output)"},
      // detokenize needs its checksum (and its model).
      {kGpt2, "{model: gpt2_tokenizer.model, checksum: \"" + kTokenizerDigest + "\"}\nattributes",
       "{model: gpt2_tokenizer.model}\nattributes", "outputs[0].steps[1].detokenize.checksum", 19, "missing"},
      {kGpt2, "{model: gpt2_tokenizer.model, checksum: \"" + kTokenizerDigest + "\"}\nattributes",
       "{checksum: \"" + kTokenizerDigest + "\"}\nattributes", "outputs[0].steps[1].detokenize.model", 19, "missing"},
      {kGpt2, "{model: gpt2_tokenizer.model, checksum: \"" + kTokenizerDigest + "\"}\nattributes",
       "{model: m, checksum: \"" + kTokenizerDigest + "\", add_eos: true}\nattributes",
       "outputs[0].steps[1].detokenize.add_eos", 19, "unknown key 'add_eos'"},
      // No labels on a generation output.
      {kGpt2, "    type: generation\n", "    type: generation\n    labels: vocab.txt\n", "outputs[0].labels", 17,
       "no labels"},
  });
}

TEST(ManifestTasks, GenerationNeedsExactlyOneTextInput) {
  // An image model with a generation output.
  std::string text = replace(
      read(kValid), "  - labels: labels.txt\n    type: classification\n    steps: [{softmax: {}}, {top_k: {k: 5}}]",
      "  - type: generation\n    steps: [{generate: {}}]");
  try {
    (void)xsp::parse_manifest(text, kValid);
    ADD_FAILURE() << "generation output accepted without a text input";
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.file(), kValid.string());
    EXPECT_EQ(e.line(), 24);
    EXPECT_EQ(e.field(), "outputs[0].type");
    EXPECT_TRUE(has(e.what(), "expected exactly one input of type text for an output of type generation, got 0"))
        << e.what();
  }
  // Two text inputs.
  const std::string second =
      "  - name: prompt2\n    type: text\n    element_type: int64\n    dimensions: [64]\n"
      "    steps: [{tokenize: {model: t.model, checksum: \"" +
      kTokenizerDigest + "\"}}]\n";
  expect_refused({kGpt2, "outputs:\n", second + "outputs:\n", "outputs[0].type", 21, "got 2 (prompt, prompt2)"});
}

TEST(ManifestTasks, StepNotAllowedForTheOutputType) {
  expect_all_refused({
      {kDetection, "- nms: {iou_threshold: 0.45}", "- softmax: {}", "outputs[0].steps[0]", 21,
       "step 'softmax' is not allowed on an output of type detection; expected one of nms"},
      {kValid, "{softmax: {}}", "{nms: {iou_threshold: 0.5}}", "outputs[0].steps[0]", 26,
       "step 'nms' is not allowed on an output of type classification; expected one of softmax, top_k"},
      {kValid, "{softmax: {}}", "{argmax: {}}", "outputs[0].steps[0]", 26,
       "step 'argmax' is not allowed on an output of type classification"},
      {kSegmentation, "{argmax: {}}", "{top_k: {k: 1}}", "outputs[0].steps[0]", 17,
       "step 'top_k' is not allowed on an output of type segmentation; expected one of argmax"},
      {kGpt2, "      - detokenize:", "      - top_k: {k: 1}\n      - detokenize:", "outputs[0].steps[1]", 19,
       "step 'top_k' is not allowed on an output of type generation; expected one of generate, detokenize"},
      {kBert, "{softmax: {}}", "{generate: {}}", "outputs[0].steps[0]", 23,
       "step 'generate' is not allowed on an output of type text_classification"},
      {kBert, "{softmax: {}}", "{sigmoid: {}}", "outputs[0].steps[0]", 23,
       "unknown post-processing step 'sigmoid'; expected one of softmax, top_k"},
      {kGpt2, "      - detokenize:", "      - generate: {}\n      - detokenize:", "outputs[0].steps[1]", 19,
       "step 'generate' may appear once in a generation output"},
  });
}

TEST(ManifestTasks, Precisions) {
  expect_all_refused({
      {kGpt2, "precisions: [fp32, bf16, fp16]", "precisions: [fp32, int8]", "precisions[1]", 6,
       "expected one of fp32, fp16, bf16, got 'int8'"},
      {kGpt2, "precisions: [fp32, bf16, fp16]", "precisions: [fp32, bf16, fp32]", "precisions[2]", 6,
       "duplicate precision 'fp32' (also precisions[0])"},
      {kGpt2, "precisions: [fp32, bf16, fp16]", "precisions: []", "precisions", 6, "got an empty list"},
      {kGpt2, "precisions: [fp32, bf16, fp16]", "precisions: fp16", "precisions", 6, "non-empty list"},
      {kGpt2, "precisions: [fp32, bf16, fp16]", "precisions: [FP16]", "precisions[0]", 6, "got 'FP16'"},
  });
}
