#include "xsp/pipeline/pipeline.h"

#include <algorithm>
#include <cmath>

#include "xsp/manifest/files.h"
#include "xsp/pipeline/tasks.h"
#include "xsp/util/strings.h"
#ifdef XSP_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif
#include <random>
#include <stdexcept>
#ifdef XSP_WITH_STB
#include <stb/stb_image.h>  // Debian's libstb-dev: the implementation is in libstb, this is the declarations only
#endif

namespace xsp {
namespace {

/// An image size parameter: an integer in [1, kMaxImageSide], the whole text (no "224px", no 4294967520 that an
/// int would wrap to 224).
long int_param(const ProcessingStep& step, const std::string& key) {
  auto it = step.params.find(key);
  if (it == step.params.end())
    throw std::invalid_argument("pre-processing step '" + step.op + "' needs parameter '" + key + "'");
  const std::string& text = it->second;
  const auto bad = [&] {
    return std::invalid_argument("pre-processing step '" + step.op + "': '" + key + "' must be an integer from 1 to " +
                                 std::to_string(kMaxImageSide) + ", got '" + text.substr(0, 40) +
                                 (text.size() > 40 ? "...'" : "'"));
  };
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  if (used != text.size() || value < 1 || value > kMaxImageSide) throw bad();
  return value;
}

enum class Interpolation { kBilinear, kNearest, kBicubic, kArea };

Interpolation interpolation(const ProcessingStep& step) {
  auto it = step.params.find("method");
  const std::string method = it == step.params.end() ? "bilinear" : it->second;
  if (method == "bilinear") return Interpolation::kBilinear;
  if (method == "nearest") return Interpolation::kNearest;
  if (method == "bicubic") return Interpolation::kBicubic;
  if (method == "area") return Interpolation::kArea;
  throw std::invalid_argument("resize: unknown method '" + method + "'");
}

#ifdef XSP_WITH_OPENCV
int cv_interpolation(Interpolation i) {
  switch (i) {
    case Interpolation::kNearest:
      return cv::INTER_NEAREST;
    case Interpolation::kBicubic:
      return cv::INTER_CUBIC;
    case Interpolation::kArea:
      return cv::INTER_AREA;
    default:
      return cv::INTER_LINEAR;
  }
}
#endif

constexpr std::uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

#if defined(XSP_WITH_OPENCV) && defined(XSP_WITH_STB)
// Refuses an image whose header gives more than kMaxImagePixels before anything decodes it: a 1 MB PNG of 32000x32000
// pixels costs 3 GB in cv::imdecode before the decoded size can be checked (issue 31). stbi_info_from_memory reads
// only the header of a JPEG (up to its frame header), a PNG (its IHDR chunk) or a BMP. An image whose header
// stb_image cannot read is refused too, since its size could only be known by decoding it: another format under an
// image extension, an arithmetic-coded JPEG, an RLE-compressed BMP.
void check_image_header(const EncodedInput& input) {
  if (input.bytes.size() > kMaxInputFileBytes)  // read_input()'s limit; stb_image takes the length as an int
    throw std::runtime_error("input " + input.id + " has " + std::to_string(input.bytes.size()) +
                             " bytes, more than the " + std::to_string(kMaxInputFileBytes) + " an input may have");
  int width = 0, height = 0, components = 0;
  if (stbi_info_from_memory(input.bytes.data(), static_cast<int>(input.bytes.size()), &width, &height, &components) !=
      1) {
    // stb_image refuses a PNG whose IHDR gives a side above 2^24 pixels or more than 2^30 bytes decoded, but its
    // failure reason is then the last format it tried ("unknown image type"). Such a PNG is named by its size:
    // width and height are the big-endian words at bytes 16 and 20, after the IHDR chunk's length and type (PNG
    // spec §11.2.2).
    const auto& b = input.bytes;
    if (b.size() >= 24 && std::equal(kPngSignature, kPngSignature + 8, b.begin()) && b[12] == 'I' && b[13] == 'H' &&
        b[14] == 'D' && b[15] == 'R') {
      const auto be32 = [&](std::size_t at) {
        return std::uint32_t{b[at]} << 24 | std::uint32_t{b[at + 1]} << 16 | std::uint32_t{b[at + 2]} << 8 |
               std::uint32_t{b[at + 3]};
      };
      if (static_cast<std::uint64_t>(be32(16)) * be32(20) > static_cast<std::uint64_t>(kMaxImagePixels))
        throw std::runtime_error("input " + input.id + ": its image header gives " + std::to_string(be32(16)) + "x" +
                                 std::to_string(be32(20)) + " pixels, more than the " +
                                 std::to_string(kMaxImagePixels) +
                                 " an input image may have; refused from the header, before decoding");
    }
    const char* why = stbi_failure_reason();
    throw std::runtime_error(
        "cannot decode input " + input.id +
        " as an image: its header cannot be read (stb_image: " + (why != nullptr ? why : "no reason given") +
        "); inputs are JPEG (baseline or progressive), PNG or BMP (not RLE-compressed)");
  }
  if (static_cast<std::int64_t>(width) * height > kMaxImagePixels)
    throw std::runtime_error("input " + input.id + ": its image header gives " + std::to_string(width) + "x" +
                             std::to_string(height) + " pixels, more than the " + std::to_string(kMaxImagePixels) +
                             " an input image may have; refused from the header, before decoding");
}
#endif

}  // namespace

bool have_image_header_check() {
#if defined(XSP_WITH_OPENCV) && defined(XSP_WITH_STB)
  return true;
#else
  return false;
#endif
}

std::vector<std::filesystem::path> list_images(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw std::runtime_error("inputs folder " + dir.string() + " does not exist or is not a folder");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const auto ext = util::to_lower(entry.path().extension().string());
    if (ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp") files.push_back(entry.path());
  }
  if (files.empty())
    throw std::runtime_error("inputs folder " + dir.string() + " holds no image (.jpg, .jpeg, .png, .bmp)");
  std::sort(files.begin(), files.end());
  return files;
}

std::optional<std::uint64_t> tensor_bytes(const std::vector<std::int64_t>& shape) {
  std::uint64_t bytes = sizeof(float);
  for (std::int64_t d : shape) {
    if (d < 1 || __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes)) return std::nullopt;
  }
  return bytes;
}

void check_tensor_bytes(const std::vector<std::int64_t>& shape, std::uint64_t max_bytes, const std::string& what) {
  std::string dims;
  for (std::int64_t d : shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
  const auto bytes = tensor_bytes(shape);
  if (!bytes) throw std::invalid_argument(what + ": shape " + dims + " has a dimension below 1 or too many values");
  if (*bytes > max_bytes) {
    throw std::invalid_argument(what + ": a float32 tensor of shape " + dims + " needs " + std::to_string(*bytes) +
                                " bytes, more than the limit of " + std::to_string(max_bytes) +
                                " bytes (smaller batch sizes or inputs)");
  }
}

EncodedInput read_input(const std::filesystem::path& file) {
  RegularFile in(file, "input " + file.string());  // "input F is not a regular file (it is a FIFO (named pipe))"
  if (in.size() == 0) throw std::runtime_error("input " + file.string() + " is empty (0 bytes)");
  if (in.size() > kMaxInputFileBytes)
    throw std::runtime_error("input " + file.string() + " has " + std::to_string(in.size()) + " bytes, more than the " +
                             std::to_string(kMaxInputFileBytes) + " an input may have");
  EncodedInput input;
  input.id = file.filename().string();
  input.bytes.resize(static_cast<std::size_t>(in.size()));
  in.read_exactly(input.bytes.data(), input.bytes.size(), "the image");
  return input;
}

std::string truncation_problem(const std::vector<std::uint8_t>& bytes) {
  std::size_t end = bytes.size();
  while (end > 0 && bytes[end - 1] == 0) --end;  // padding after the last marker is common and harmless
  if (bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8) {
    if (end < 4 || bytes[end - 2] != 0xFF || bytes[end - 1] != 0xD9)
      return "truncated JPEG: it does not end with the end-of-image marker FF D9";
  }
  if (bytes.size() >= 8 && std::equal(kPngSignature, kPngSignature + 8, bytes.begin())) {
    static constexpr std::uint8_t kIend[4] = {'I', 'E', 'N', 'D'};
    // The IEND chunk: length 0, "IEND", 4 bytes of CRC.
    if (end < 8 + 12 || !std::equal(kIend, kIend + 4, bytes.begin() + static_cast<std::ptrdiff_t>(end - 8)))
      return "truncated PNG: it does not end with an IEND chunk";
  }
  return "";
}

Preprocessor::Preprocessor(const InputSpec& spec, std::uint64_t max_batch_bytes)
    : spec_(spec), max_batch_bytes_(max_batch_bytes) {
  if (spec_.dimensions.size() != 3)
    throw std::invalid_argument("image input needs dimensions [C, H, W], got " +
                                std::to_string(spec_.dimensions.size()) + " dimensions");
  for (const auto& step : spec_.steps) {
    if (step.op == "resize") {
      if (int_param(step, "shorter_side") <= 0) throw std::invalid_argument("resize: shorter_side must be > 0");
      interpolation(step);
    } else if (step.op == "center_crop") {
      if (int_param(step, "size") <= 0) throw std::invalid_argument("center_crop: size must be > 0");
    } else if (step.op == "normalize") {
      const auto c = static_cast<std::size_t>(spec_.dimensions[0]);
      for (const char* key : {"mean", "std"}) {
        auto it = step.list_params.find(key);
        if (it == step.list_params.end() || (it->second.size() != c && it->second.size() != 1))
          throw std::invalid_argument(std::string("normalize: '") + key + "' needs 1 or " + std::to_string(c) +
                                      " values");
      }
    } else if (step.op != "decode") {
      throw std::invalid_argument("unknown pre-processing step '" + step.op + "'");
    }
  }
}

Tensor Preprocessor::run(const std::vector<EncodedInput>& batch) const {
#ifndef XSP_WITH_OPENCV
  (void)batch;
  throw std::runtime_error("this build has no image decoder (configured without OpenCV): use --synthetic");
#else
  const long channels = spec_.dimensions[0], height = spec_.dimensions[1], width = spec_.dimensions[2];
  Tensor out;
  out.shape = {static_cast<std::int64_t>(batch.size()), channels, height, width};
  check_tensor_bytes(out.shape, max_batch_bytes_, "pre-processed batch");
  out.data.resize(static_cast<std::size_t>(out.numel()));
  const std::size_t plane = static_cast<std::size_t>(height * width);

  for (std::size_t n = 0; n < batch.size(); ++n) {
    const auto& input = batch[n];
    if (input.bytes.empty()) throw std::runtime_error("input " + input.id + " is empty (0 bytes)");
    if (const std::string why = truncation_problem(input.bytes); !why.empty())
      throw std::runtime_error("input " + input.id + ": " + why);
#ifdef XSP_WITH_STB
    check_image_header(input);
#endif
    cv::Mat raw(1, static_cast<int>(input.bytes.size()), CV_8UC1, const_cast<std::uint8_t*>(input.bytes.data()));
    cv::Mat image;
    try {
      image = cv::imdecode(raw, channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
    } catch (const cv::Exception& e) {
      throw std::runtime_error("cannot decode input " + input.id + " as an image: " + e.msg);
    }
    if (image.empty()) throw std::runtime_error("cannot decode input " + input.id + " as an image");
    if (static_cast<std::int64_t>(image.rows) * image.cols > kMaxImagePixels)
      throw std::runtime_error("input " + input.id + ": " + std::to_string(image.cols) + "x" +
                               std::to_string(image.rows) + " pixels, more than the " +
                               std::to_string(kMaxImagePixels) + " an input image may have");
    if (channels == 3 && spec_.color_mode != "BGR") cv::cvtColor(image, image, cv::COLOR_BGR2RGB);

    std::vector<double> mean(static_cast<std::size_t>(channels), 0.0), stddev(static_cast<std::size_t>(channels), 1.0);
    double scale = 1.0;
    for (const auto& step : spec_.steps) {
      if (step.op == "resize") {
        const long side = int_param(step, "shorter_side");
        const long h = image.rows, w = image.cols;
        // torchvision keeps the aspect ratio and truncates the longer side.
        const long long_h = h <= w ? side : side * h / w;
        const long long_w = h <= w ? side * w / h : side;
        if (long_h < 1 || long_w < 1 || long_h * long_w > kMaxImagePixels)
          throw std::runtime_error("input " + input.id + ": resizing " + std::to_string(w) + "x" + std::to_string(h) +
                                   " to a shorter side of " + std::to_string(side) + " gives " +
                                   std::to_string(long_w) + "x" + std::to_string(long_h) + ", more than the " +
                                   std::to_string(kMaxImagePixels) + " pixels an image may have");
        const int new_h = static_cast<int>(long_h), new_w = static_cast<int>(long_w);
        cv::resize(image, image, cv::Size(new_w, new_h), 0, 0, cv_interpolation(interpolation(step)));
      } else if (step.op == "center_crop") {
        const int size = static_cast<int>(int_param(step, "size"));
        if (image.rows < size || image.cols < size)
          throw std::runtime_error("input " + input.id + ": center_crop " + std::to_string(size) +
                                   " is larger than the image (" + std::to_string(image.cols) + "x" +
                                   std::to_string(image.rows) + ")");
        const int top = static_cast<int>(std::lround((image.rows - size) / 2.0));
        const int left = static_cast<int>(std::lround((image.cols - size) / 2.0));
        image = image(cv::Rect(left, top, size, size)).clone();
      } else if (step.op == "normalize") {
        auto fill = [&](const std::vector<double>& src, std::vector<double>& dst) {
          for (std::size_t c = 0; c < dst.size(); ++c) dst[c] = src.size() == 1 ? src[0] : src[c];
        };
        fill(step.list_params.at("mean"), mean);
        fill(step.list_params.at("std"), stddev);
        auto it = step.params.find("scale");
        scale = it == step.params.end() ? 1.0 : std::stod(it->second);
      }
    }
    if (image.rows != height || image.cols != width || image.channels() != channels)
      throw std::runtime_error("input " + input.id + ": pre-processing gave " + std::to_string(image.channels()) + "x" +
                               std::to_string(image.rows) + "x" + std::to_string(image.cols) +
                               ", the manifest expects " + std::to_string(channels) + "x" + std::to_string(height) +
                               "x" + std::to_string(width) + " (check resize/center_crop steps)");
    float* dst = out.data.data() + n * static_cast<std::size_t>(channels) * plane;
    for (int y = 0; y < image.rows; ++y) {
      const std::uint8_t* row = image.ptr<std::uint8_t>(y);
      for (int x = 0; x < image.cols; ++x)
        for (long c = 0; c < channels; ++c) {
          const double v = row[x * channels + c] / scale;
          dst[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(y * width + x)] =
              static_cast<float>((v - mean[static_cast<std::size_t>(c)]) / stddev[static_cast<std::size_t>(c)]);
        }
    }
  }
  return out;
#endif
}

ScreenedInputs screen_inputs(const std::vector<std::filesystem::path>& files, const Preprocessor& pre, bool skip_bad,
                             std::vector<Tensor>* prepared) {
  ScreenedInputs out;
  for (const auto& file : files) {
    try {
      Tensor t = pre.run({read_input(file)});
      if (prepared) prepared->push_back(std::move(t));
      out.usable.push_back(file);
    } catch (const std::exception& e) {
      // run() names an input by its file name only; the whole path tells which folder it came from.
      std::string why = e.what();
      if (why.find(file.string()) == std::string::npos) why = file.string() + ": " + why;
      if (!skip_bad)
        throw std::runtime_error(why +
                                 " (found before measuring; set inputs.skip_bad_inputs, "
                                 "`xsp evaluate --skip-bad-inputs`, to leave such files out)");
      out.skipped.push_back({file.string(), why});
    }
  }
  if (out.usable.empty() && !out.skipped.empty())
    throw std::runtime_error("no usable input: all " + std::to_string(out.skipped.size()) +
                             " files were left out; the first, " + out.skipped.front().file + ": " +
                             out.skipped.front().reason);
  return out;
}

Tensor synthetic_batch(const std::vector<long>& sample_dims, int batch_size, std::uint64_t seed,
                       std::uint64_t max_bytes) {
  Tensor out;
  out.shape.push_back(batch_size);
  for (long d : sample_dims) out.shape.push_back(d);
  check_tensor_bytes(out.shape, max_bytes, "synthetic batch of " + std::to_string(batch_size));
  out.data.resize(static_cast<std::size_t>(out.numel()));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : out.data) v = normal(rng);
  return out;
}

std::vector<std::string> load_labels(const std::filesystem::path& file) {
  constexpr std::uintmax_t kMaxLabelsBytes = 64u << 20;
  const std::string bytes = read_regular_file(file, "labels file " + file.string(), kMaxLabelsBytes);
  std::vector<std::string> labels;
  for (std::size_t start = 0; start < bytes.size();) {
    std::size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    std::string line = bytes.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(std::move(line));
  }
  return labels;
}

Postprocessor::Postprocessor(const OutputSpec& spec, std::vector<std::string> labels)
    : spec_(spec), labels_(std::move(labels)) {}

std::vector<Classification> Postprocessor::run(const Tensor& logits, const std::vector<std::string>& ids) const {
  if (logits.shape.size() != 2)
    throw std::invalid_argument("post-processing expects logits {N, classes}, got " +
                                std::to_string(logits.shape.size()) + " dimensions");
  const auto n = static_cast<std::size_t>(logits.shape[0]);
  const auto classes = static_cast<std::size_t>(logits.shape[1]);
  bool softmax = false;
  std::size_t k = classes;
  for (const auto& step : spec_.steps) {
    if (step.op == "softmax") softmax = true;
    if (step.op == "top_k") k = std::min<std::size_t>(classes, std::stoul(step.params.at("k")));
  }
  std::vector<Classification> results(n);
  for (std::size_t i = 0; i < n; ++i) {
    const InputPrediction p =
        classify_row(i < ids.size() ? ids[i] : "", logits.data.data() + i * classes, classes, softmax, k);
    auto& r = results[i];
    r.input_id = p.input_id;
    r.top_classes = p.top_classes;
    for (const int cls : p.top_classes) {
      r.top_probabilities.push_back(p.probabilities[static_cast<std::size_t>(cls)]);
      r.top_labels.push_back(static_cast<std::size_t>(cls) < labels_.size() ? labels_[cls] : "");
    }
  }
  return results;
}

}  // namespace xsp
