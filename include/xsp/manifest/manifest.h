// Model manifest (SPEC §5): YAML description of a model, its inputs, pre/post-processing and provenance.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace xsp {

/// Bounds on what a manifest may hold. A manifest beyond one is refused with a ManifestError naming the file,
/// the field, the value (cut to 60 characters when longer, with its length) and the bound, never truncated,
/// wrapped or clamped.
namespace manifest_limits {
inline constexpr std::size_t kMaxFileBytes = 1 << 20;  ///< size of a manifest file (1 MiB)
/// name, version, framework names, version constraints, checksums, enumerations (type, method, ...), attribute keys,
/// input and output names
inline constexpr std::size_t kMaxNameLength = 256;
/// graph_path, labels, tokenize.model, detokenize.model, attributes.prompts and attributes.dataset_path, as written
/// and resolved against the manifest's folder (PATH_MAX); such a path also has no NUL byte.
inline constexpr std::size_t kMaxPathLength = 4096;
inline constexpr std::size_t kMaxPathComponentLength = 255;  ///< one name between '/' of such a path (NAME_MAX)
inline constexpr std::size_t kMaxTextLength = 65536;         ///< description, attribute values
/// Entries of any list: inputs, outputs, frameworks, steps, mean/std values.
inline constexpr std::size_t kMaxListLength = 1024;
inline constexpr std::size_t kMaxRank = 8;  ///< entries of an input's dimensions
/// Elements of one input sample (product of its dimensions, e.g. 3x224x224 = 150528); also bounds each dimension.
inline constexpr long kMaxInputElements = 1L << 31;
/// resize.shorter_side, center_crop.size, and an image input's height and width (dimensions[1], [2]).
inline constexpr long kMaxImageSide = 16384;
inline constexpr long kMaxTopK = 1'000'000;  ///< top_k.k
inline constexpr double kMaxScale = 1e9;     ///< normalize.scale (must also be > 0)
/// A text input's dimensions[0] (its maximum sequence length, in tokens) and generate.max_new_tokens.
inline constexpr long kMaxSequenceLength = 1L << 20;
inline constexpr long kMaxTokenId = 2147483647;                    ///< pad_truncate.pad_id (fits int32 token ids)
inline constexpr long kMaxDetections = 100'000;                    ///< nms.max_detections
inline constexpr long kMaxAxis = static_cast<long>(kMaxRank) - 1;  ///< argmax.axis
}  // namespace manifest_limits

/// A manifest that cannot be used. what() reads "FILE:LINE: field 'a.b[2].c': expected ..., got ...".
class ManifestError : public std::runtime_error {
 public:
  ManifestError(std::string file, int line, std::string field, const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }  ///< 1-based; 0 when unknown (e.g. file unreadable)
  const std::string& field() const { return field_; }

 private:
  std::string file_;
  int line_;
  std::string field_;
};

/// One pre- or post-processing step, e.g. {resize: {shorter_side: 256, method: bilinear}}.
/// Parameters are kept as YAML scalars/sequences converted to strings or lists of doubles. After parsing, every
/// optional parameter is in `params` too, with its default when the manifest leaves it out, so that consumers
/// read one place. Steps, where they are allowed, and their parameters (defaults in brackets):
///  - inputs of type image or tensor: decode {}; resize {shorter_side, method [bilinear]};
///    center_crop {size}; normalize {mean, std (list_params), scale [1]};
///  - inputs of type text: tokenize {model, checksum, add_bos [false], add_eos [false]}, required and first;
///    pad_truncate {length (1..dimensions[0]), side [right], pad_id [0]}, at most once, after tokenize;
///  - outputs of type classification or text_classification: softmax {}; top_k {k};
///  - detection: nms {iou_threshold (0, 1], score_threshold [0.05], max_detections [100]};
///  - segmentation: argmax {axis [0]} (the class axis of one sample's output);
///  - generation: generate {max_new_tokens [32], sampling [greedy]}, required and first;
///    detokenize {model, checksum}, at most once, after generate.
/// model (tokenize, detokenize) is a SentencePiece model file relative to the manifest (Manifest::resolve());
/// checksum is its "sha256:<64 lower-case hex>"; booleans are stored as "true" / "false".
struct ProcessingStep {
  /// decode | resize | center_crop | normalize | tokenize | pad_truncate (inputs);
  /// softmax | top_k | nms | argmax | generate | detokenize (outputs)
  std::string op;
  std::map<std::string, std::string> params;               ///< scalar parameters as written, defaults filled in
  std::map<std::string, std::vector<double>> list_params;  ///< numeric list parameters (mean, std, ...)
  int line = 0;  ///< line of the step in the manifest, for later error messages

  /// params[key], or `fallback` when the step has no such parameter. Never throws (but std::bad_alloc).
  std::string param(std::string_view key, std::string_view fallback = "") const;
};

/// One model input. `name` is the input's name (what a runtime binds it to); unnamed inputs get "input" when
/// the manifest has one, "input_<i>" (0-based position) when it has several; names are unique among inputs.
/// element_type by type: image: float32 | float16 | bfloat16 (normalized pixels); text: int64 | int32 (token ids);
/// tensor: any of float32 | float16 | bfloat16 | int64 | int32 | bool.
struct InputSpec {
  std::string name;          ///< [A-Za-z_][A-Za-z0-9_.-]*, at most kMaxNameLength characters
  std::string type;          ///< image | tensor | text
  std::string element_type;  ///< float32 | float16 | bfloat16 | int64 | int32 | bool
  std::string layout;        ///< NCHW ("" for text)
  std::string color_mode;    ///< RGB | BGR | GRAY ("" for non-images)
  /// Per-sample shape, e.g. [3, 224, 224] (image: [C, H, W]); a text input has exactly one entry, its maximum
  /// sequence length in tokens (1..kMaxSequenceLength).
  std::vector<long> dimensions;
  std::vector<ProcessingStep> steps;
};

/// One model output. Names follow the inputs' rules ("output", "output_<i>" by default; unique among outputs).
struct OutputSpec {
  std::string name;  ///< [A-Za-z_][A-Za-z0-9_.-]*, at most kMaxNameLength characters
  /// classification | detection | segmentation | text_classification | generation. A generation output needs
  /// exactly one input of type text, and its generate.max_new_tokens plus that input's pad_truncate.length (when
  /// it has one) must not exceed the input's dimensions[0].
  std::string type;
  std::string labels;  ///< labels file relative to the manifest directory ("" = none; generation has none)
  std::vector<ProcessingStep> steps;
};

/// The model's graph for one framework: which predictor loads which file. A manifest has one per framework
/// it can run on (SPEC §5 `framework:` + `model:`, or the list form `frameworks:`).
struct GraphSpec {
  std::string framework;   ///< predictor name, e.g. "libtorch", "opencv-dnn", "onnxruntime"
  std::string constraint;  ///< semver constraint on the framework's version, e.g. ">=1.13", ">=1.13, <3"
  std::string graph_path;  ///< as written (relative to the manifest, or absolute)
  std::string checksum;    ///< "sha256:<64 lower-case hex>"
  int line = 0;            ///< line of the entry in the manifest (0 when built in code)
  bool operator==(const GraphSpec&) const = default;
};

struct Manifest {
  std::filesystem::path path;  ///< the file it was read from
  std::string name;
  std::string version;  ///< semver
  std::string description;
  /// One entry per framework, in manifest order, framework names unique; never empty after parsing. The
  /// first entry is the default framework (the single-framework form has exactly one).
  std::vector<GraphSpec> graphs;
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  /// Numeric precisions the model may run at: fp32 | fp16 | bf16, unique, in manifest order; [fp32] when the
  /// manifest has no `precisions:`.
  std::vector<std::string> precisions;
  std::map<std::string, std::string> attributes;  ///< task, training_dataset, source, weights...
  std::string source_yaml;                        ///< the file's text, stored with evaluations

  /// The graph for `framework`. Throws std::runtime_error naming the manifest file, the framework asked for
  /// and the frameworks the manifest has.
  const GraphSpec& graph_for(const std::string& framework) const;
  GraphSpec& graph_for(const std::string& framework);
  /// Whether the manifest has a graph for `framework`.
  bool has_framework(const std::string& framework) const;
  /// Framework names in manifest order.
  std::vector<std::string> framework_names() const;
  /// The default framework (first entry). Throws std::logic_error when there is none (unparsed manifest).
  const std::string& default_framework() const;
  /// graph_for(framework).graph_path resolved against the manifest's directory (absolute paths and URLs kept).
  std::filesystem::path resolved_graph_path(const std::string& framework) const;
  /// labels file of output `i` resolved likewise (empty when none).
  std::filesystem::path resolved_labels_path(std::size_t i = 0) const;
  /// `relative` (a path as written in the manifest, e.g. tokenize.model) resolved against the manifest's
  /// directory and normalized; an absolute path is returned as is, an empty one as an empty path. Never throws
  /// (but std::bad_alloc); does not look at the file system.
  std::filesystem::path resolve(const std::string& relative) const;
  /// The input (output) called `wanted` (InputSpec::name, default names included), or nullptr when there is
  /// none. Never throws.
  const InputSpec* find_input(std::string_view wanted) const;
  const OutputSpec* find_output(std::string_view wanted) const;
};

/// Whether the manifest describes a token-generation model (one of its outputs has type generation). Never throws.
bool is_generation(const Manifest& manifest);

/// Reads and validates a manifest. Throws ManifestError (file, line, field, what was expected) for
/// unreadable files, malformed YAML, missing or ill-typed required fields, bad semver / constraint /
/// checksum syntax, unknown processing steps or bad step parameters, and any value beyond manifest_limits
/// (version numbers above kMaxVersionNumber included). Never throws anything else for bad input.
/// Required: name, version, inputs (non-empty; each with type, element_type, dimensions), outputs (non-empty;
/// each with type), and the graphs in exactly one of two forms:
///  - single framework: framework.name, framework.version, model.graph_path, model.checksum;
///  - several: `frameworks:`, a non-empty list of {name, version, graph_path, checksum}, names unique.
/// Mixing the forms (frameworks: together with framework: or model:) is an error.
/// Also refused, each naming the field: an input or output name that is not [A-Za-z_][A-Za-z0-9_.-]* or repeats
/// another's (the message names both entries); an element_type the input's type does not allow; a text input
/// with other than one dimension, with a layout or color_mode, or without tokenize as its first step; a step not
/// allowed for its input or output type (see ProcessingStep; the message names the step and the type); a step
/// repeated where it may appear once; pad_truncate.length above dimensions[0]; a generation output with labels,
/// without exactly one text input, or whose max_new_tokens plus pad_truncate.length exceeds the text input's
/// dimensions[0]; precisions that are empty, unknown or repeated; a file path (graph_path, labels, tokenize.model,
/// detokenize.model, attributes.prompts, attributes.dataset_path) with a NUL byte, a name between '/' longer than
/// kMaxPathComponentLength (255 bytes, NAME_MAX) or more than kMaxPathLength bytes (4096, PATH_MAX) as written or
/// resolved against the manifest's folder. The file itself must be a regular file of at most kMaxFileBytes
/// (RegularFile: a FIFO or /dev/zero is refused without reading it).
Manifest load_manifest(const std::filesystem::path& file);
/// Same, from text; `file` is only used in messages and to resolve relative paths.
Manifest parse_manifest(const std::string& yaml_text, const std::filesystem::path& file);

/// A *.yaml / *.yml file of a zoo folder that could not be used as a manifest.
struct ZooProblem {
  std::filesystem::path file;
  std::string message;  ///< the ManifestError's what(): "FILE[:LINE]: [field 'F': ]what was expected, got ..."
  std::string name;     ///< the model name the file claims when its YAML has a readable `name`, else ""
};

/// A model zoo as scan_zoo() found it: the usable manifests and the files that are not.
struct Zoo {
  std::vector<Manifest> models;      ///< sorted by name (case-insensitive) then semver; name+version unique
  std::vector<ZooProblem> problems;  ///< sorted by file
};

/// All manifests (*.yaml, *.yml) of a model-zoo folder, tolerating bad files: each file that is not a readable
/// regular file (symlink loop, dangling link, folder), is malformed or invalid, or repeats the name and version
/// of an earlier file (by path; that one is kept) becomes a ZooProblem and the others are still loaded.
/// Throws ManifestError only when `dir` is not a directory or cannot be listed.
Zoo scan_zoo(const std::filesystem::path& dir);

/// As scan_zoo() but strict: returns the models and throws the ManifestError of the first problem (by file).
std::vector<Manifest> load_zoo(const std::filesystem::path& dir);

/// Finds a model by name (case-insensitive) and optional version in a zoo; throws std::runtime_error listing
/// the known names when there is none.
const Manifest& find_model(const std::vector<Manifest>& zoo, const std::string& name, const std::string& version = "");

/// find_model() on a scanned zoo. When a bad file may be the model asked for (its claimed name or its file
/// name without extension equals `name`, case-insensitive), throws std::runtime_error naming that file and its
/// problem, even if other versions of the model loaded (which one was meant cannot be known). When the model is
/// not found, the message also lists the files that could not be read.
const Manifest& find_model(const Zoo& zoo, const std::string& name, const std::string& version = "");

/// Verifies that the graph file of `framework` exists and its SHA-256 equals the recorded checksum. Throws
/// std::runtime_error naming the file and both digests (or "missing", with the export command to run), or,
/// when the manifest has no graph for `framework`, the frameworks it has (as graph_for()); Interrupted when
/// `interrupt` (see sha256_file()) was set while hashing.
void verify_checksum(const Manifest& manifest, const std::string& framework,
                     const std::atomic<int>* interrupt = nullptr);

/// Work stopped because the interrupt flag was set (e.g. sha256_file() while the server shuts down).
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// SHA-256 of a file as 64 lower-case hex digits (FIPS 180-4). Reads only a regular file (RegularFile,
/// xsp/manifest/files.h), and only the bytes it had when opened. `interrupt`, when given, is checked before each
/// 1 MiB chunk: non-zero stops the work. Throws std::runtime_error naming the file when it does not exist, is not a
/// regular file (a folder, /dev/zero, a FIFO: "FILE is not a regular file (it is a character device)"), cannot be
/// read or shrinks while it is read; Interrupted when the flag was set.
std::string sha256_file(const std::filesystem::path& file, const std::atomic<int>* interrupt = nullptr);

}  // namespace xsp
