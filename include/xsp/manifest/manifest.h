// Model manifest (SPEC §5): YAML description of a model, its inputs, pre/post-processing and provenance.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace xsp {

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
/// Parameters are kept as YAML scalars/sequences converted to strings or lists of doubles.
struct ProcessingStep {
  std::string op;  ///< decode | resize | center_crop | normalize | softmax | top_k
  std::map<std::string, std::string> params;               ///< scalar parameters as written
  std::map<std::string, std::vector<double>> list_params;  ///< numeric list parameters (mean, std, ...)
  int line = 0;  ///< line of the step in the manifest, for later error messages
};

struct InputSpec {
  std::string type;          ///< image | tensor
  std::string element_type;  ///< float32
  std::string layout;        ///< NCHW
  std::string color_mode;    ///< RGB | BGR | GRAY ("" for non-images)
  std::vector<long> dimensions;  ///< per-sample shape, e.g. [3, 224, 224]
  std::vector<ProcessingStep> steps;
};

struct OutputSpec {
  std::string type;    ///< classification
  std::string labels;  ///< labels file relative to the manifest directory ("" = none)
  std::vector<ProcessingStep> steps;
};

struct Manifest {
  std::filesystem::path path;  ///< the file it was read from
  std::string name;
  std::string version;  ///< semver
  std::string description;
  std::string framework_name;
  std::string framework_constraint;  ///< semver constraint, e.g. ">=1.13", ">=1.13, <3"
  std::string graph_path;            ///< as written
  std::string checksum;              ///< "sha256:<64 lower-case hex>"
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::map<std::string, std::string> attributes;  ///< task, training_dataset, source, weights...
  std::string source_yaml;                        ///< the file's text, stored with evaluations

  /// graph_path resolved against the manifest's directory (absolute paths kept).
  std::filesystem::path resolved_graph_path() const;
  /// labels file of output `i` resolved likewise (empty when none).
  std::filesystem::path resolved_labels_path(std::size_t i = 0) const;
};

/// Reads and validates a manifest. Throws ManifestError (file, line, field, what was expected) for
/// unreadable files, malformed YAML, missing or ill-typed required fields, bad semver / constraint /
/// checksum syntax, unknown processing steps or bad step parameters.
/// Required: name, version, framework.name, framework.version, model.graph_path, model.checksum, inputs
/// (non-empty; each with type, element_type, dimensions), outputs (non-empty; each with type).
Manifest load_manifest(const std::filesystem::path& file);
/// Same, from text; `file` is only used in messages and to resolve relative paths.
Manifest parse_manifest(const std::string& yaml_text, const std::filesystem::path& file);

/// All manifests (*.yaml, *.yml) of a model-zoo folder, sorted by name then version. Throws ManifestError
/// for the first invalid one.
std::vector<Manifest> load_zoo(const std::filesystem::path& dir);

/// Finds a model by name (case-insensitive) and optional version in a zoo; throws std::runtime_error listing
/// the known names when there is none.
const Manifest& find_model(const std::vector<Manifest>& zoo, const std::string& name,
                           const std::string& version = "");

/// Verifies the graph file exists and its SHA-256 equals manifest.checksum. Throws std::runtime_error
/// naming the file and both digests (or "missing", with the export command to run).
void verify_checksum(const Manifest& manifest);

/// SHA-256 of a file as 64 lower-case hex digits (FIPS 180-4). Throws std::runtime_error if unreadable.
std::string sha256_file(const std::filesystem::path& file);

}  // namespace xsp
