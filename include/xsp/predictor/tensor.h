// Framework-neutral dense tensor passed between the pipeline and predictors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xsp {

/// Row-major float32 tensor. shape e.g. {N, C, H, W}; data.size() == product(shape).
struct Tensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

/// "[1,3,224,224]".
std::string shape_string(const std::vector<std::int64_t>& shape);

/// Checks that `input` is a batch {N >= 1, sample_dims...} whose data size matches its shape. Predictors call
/// it first in predict(). Throws std::invalid_argument prefixed with `who` (e.g. "libtorch predictor"), naming
/// the expected and actual shape or sizes.
void check_input_batch(const Tensor& input, const std::vector<std::int64_t>& sample_dims, const std::string& who);

}  // namespace xsp
