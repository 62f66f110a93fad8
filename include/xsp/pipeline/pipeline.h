// Pipeline stages around the predictor (SPEC §1 "pipeline", §5 steps): input, pre-process, post-process.
// The stages themselves are timed by the evaluation runner as MODEL spans.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "xsp/manifest/manifest.h"
#include "xsp/predictor/tensor.h"

namespace xsp {

/// One encoded input as read from disk (e.g. a JPEG file's bytes).
struct EncodedInput {
  std::string id;  ///< file name
  std::vector<std::uint8_t> bytes;
};

/// Image files (.jpg .jpeg .png .bmp, case-insensitive) of `dir`, sorted by name. Throws std::runtime_error
/// naming the folder when it does not exist or holds no image.
std::vector<std::filesystem::path> list_images(const std::filesystem::path& dir);

/// Limits on what one input may cost, so that a small hostile file cannot take the machine's memory. A 196-byte
/// 1×40000 PNG resized to a shorter side of 256 would be 256×10,240,000 pixels.
inline constexpr std::uintmax_t kMaxInputFileBytes = 256ull << 20;  ///< an encoded input file, bytes
/// An input image as its header gives it, decoded or resized, pixels (width x height).
inline constexpr std::int64_t kMaxImagePixels = 64ll << 20;
inline constexpr long kMaxImageSide = 1 << 16;  ///< resize/center_crop sizes, pixels
/// Default limit on one batch tensor (float32 values × 4 bytes), checked before allocating. An evaluation raises
/// or lowers it with EvaluationRequest::max_batch_bytes (`xsp evaluate --max-batch-bytes`).
inline constexpr std::uint64_t kDefaultMaxBatchBytes = 8ull << 30;

/// The bytes of a float32 tensor of `shape`, or std::nullopt when a dimension is < 1 or the product overflows.
std::optional<std::uint64_t> tensor_bytes(const std::vector<std::int64_t>& shape);
/// Throws std::invalid_argument naming `what`, the shape and the limit when tensor_bytes(shape) is unknown or
/// above `max_bytes`.
void check_tensor_bytes(const std::vector<std::int64_t>& shape, std::uint64_t max_bytes, const std::string& what);

/// Reads an input file's bytes (RegularFile, xsp/manifest/files.h: no further than its size at open). Throws
/// std::runtime_error naming the file when it cannot be read, is not a regular file (a folder, /dev/zero, a FIFO: the
/// message says which), is empty, or is larger than kMaxInputFileBytes.
EncodedInput read_input(const std::filesystem::path& file);

/// Checks the encoded bytes of an image for truncation before decoding: a JPEG (FF D8) must end with its
/// end-of-image marker FF D9 (ITU-T T.81 §B.2.1) and a PNG must end with its IEND chunk (PNG spec §11.2.5),
/// trailing zero bytes allowed. Decoders fill a truncated image with grey and only warn, so without this a cut
/// file would be measured and stored as if whole. Returns an empty string when the bytes look whole, else why not.
std::string truncation_problem(const std::vector<std::uint8_t>& bytes);

/// True when this build reads an encoded image's width and height from its header (stb_image's
/// stbi_info_from_memory, Debian's libstb-dev) and refuses it before decoding when it is above kMaxImagePixels
/// (Preprocessor::run). Without stb_image the decoded image is checked after decoding. Never throws.
bool have_image_header_check();

/// Applies a manifest input's steps (decode, resize, center_crop, normalize) to a batch of encoded images
/// and stacks them into one NCHW float32 tensor {N, C, H, W}.
/// Semantics follow torchvision.transforms: resize scales the shorter side to `shorter_side` (longer side
/// truncated, as torchvision does), center_crop takes the centred size×size window (offset rounded),
/// normalize computes (pixel / scale − mean[c]) / std[c]. Resampling uses OpenCV (cv::resize), which does
/// not antialias like PIL; outputs differ from torchvision's PIL path by a few grey levels.
class Preprocessor {
 public:
  /// `max_batch_bytes` bounds the batch tensor run() makes (check_tensor_bytes, before allocating). Throws
  /// std::invalid_argument naming the step when a parameter is unusable (e.g. crop larger than the resized image
  /// is only known per image, see run()).
  explicit Preprocessor(const InputSpec& spec, std::uint64_t max_batch_bytes = kDefaultMaxBatchBytes);
  /// Decodes and transforms every input. Before decoding, each input's header is read (have_image_header_check()):
  /// one that gives more than kMaxImagePixels pixels is refused ("input ID: its image header gives 32000x32000 pixels,
  /// more than the 67108864 an input image may have; refused from the header, before decoding"), and one whose header
  /// cannot be read (not a JPEG, PNG or BMP; an arithmetic-coded JPEG; an RLE-compressed BMP) is refused as
  /// undecodable. Throws std::runtime_error naming the input id when it is empty, truncated, refused so, cannot be
  /// decoded, is above kMaxImagePixels once decoded or resized, or when the result's shape differs from the
  /// manifest's dimensions.
  Tensor run(const std::vector<EncodedInput>& batch) const;
  /// Per-sample output shape (the manifest's dimensions).
  const std::vector<long>& sample_shape() const { return spec_.dimensions; }

 private:
  InputSpec spec_;
  std::uint64_t max_batch_bytes_;
};

/// An input file that screen_inputs() left out, and why (the message run() or read_input() gave).
struct SkippedInput {
  std::string file;
  std::string reason;
};

/// What screen_inputs() found: the files that read and pre-process, in the given order, and the ones left out.
struct ScreenedInputs {
  std::vector<std::filesystem::path> usable;
  std::vector<SkippedInput> skipped;
};

/// Reads and pre-processes every file once, before anything is timed, so that an unreadable, empty, truncated or
/// undecodable input stops an evaluation before its first batch rather than after minutes of measuring. With
/// `skip_bad` such files are left out and listed instead. `prepared`, when given, receives the pre-processed
/// tensor ({1, C, H, W}) of each usable file, in order (the scenario runner's sample library).
/// Throws std::runtime_error naming the file and what is wrong with it when !skip_bad and one file is bad, and
/// naming the count and the first reason when skip_bad and no file is usable.
ScreenedInputs screen_inputs(const std::vector<std::filesystem::path>& files, const Preprocessor& pre, bool skip_bad,
                             std::vector<Tensor>* prepared = nullptr);

/// A synthetic batch {N, dims...} of standard-normal values from a fixed seed (no decode, no steps). Throws
/// std::invalid_argument (check_tensor_bytes) when the batch would exceed `max_bytes`.
Tensor synthetic_batch(const std::vector<long>& sample_dims, int batch_size, std::uint64_t seed,
                       std::uint64_t max_bytes = kDefaultMaxBatchBytes);

/// One classification result.
struct Classification {
  std::string input_id;
  std::vector<int> top_classes;          ///< class indices, best first
  std::vector<float> top_probabilities;  ///< softmax probabilities (or raw scores without a softmax step)
  std::vector<std::string> top_labels;   ///< label of each class ("" without labels)
};

/// Reads a labels file, one label per line (RegularFile, xsp/manifest/files.h). Throws std::runtime_error naming the
/// file when it cannot be read, is not a regular file (a folder, /dev/zero, a FIFO), or is larger than 64 MiB.
std::vector<std::string> load_labels(const std::filesystem::path& file);

/// Applies a manifest output's steps (softmax, top_k) to logits {N, classes}.
class Postprocessor {
 public:
  Postprocessor(const OutputSpec& spec, std::vector<std::string> labels);
  /// `ids` names the batch's inputs (may be shorter than N: missing ids are ""). Throws
  /// std::invalid_argument when logits are not 2-D.
  std::vector<Classification> run(const Tensor& logits, const std::vector<std::string>& ids) const;

 private:
  OutputSpec spec_;
  std::vector<std::string> labels_;
};

}  // namespace xsp
