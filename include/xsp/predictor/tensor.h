// Framework-neutral dense tensor passed between the pipeline and predictors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xsp {

/// Row-major tensor. shape e.g. {N, C, H, W}. A float tensor (the default) holds product(shape) values in `data`;
/// an integer one (token ids, attention masks: `int64`) holds them in `int_data` and leaves `data` empty.
/// The model's own element type (float16, int32, ...) is the predictor's business: it converts from these two.
struct Tensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
  /// The values of an integer tensor (is_int()), row-major; empty for a float tensor.
  std::vector<std::int64_t> int_data;
  /// The model's name for this tensor: the manifest input's name going in; coming out, the key of a dict output
  /// ("out"), else "" (positional).
  std::string name;
  /// Whether the values are in int_data (true) or data (false).
  bool integer = false;

  bool is_int() const { return integer; }
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  /// The number of values held (int_data.size() for integer tensors, else data.size()).
  std::size_t size() const { return integer ? int_data.size() : data.size(); }
};

/// "[1,3,224,224]".
std::string shape_string(const std::vector<std::int64_t>& shape);

/// Checks that `input` is a batch {N >= 1, sample_dims...} whose value count matches its shape. Predictors call
/// it first in predict(). Throws std::invalid_argument prefixed with `who` (e.g. "libtorch predictor"), naming
/// the expected and actual shape or sizes.
void check_input_batch(const Tensor& input, const std::vector<std::int64_t>& sample_dims, const std::string& who);

}  // namespace xsp
