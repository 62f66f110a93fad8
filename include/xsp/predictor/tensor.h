// Framework-neutral dense tensor passed between the pipeline and predictors.
#pragma once

#include <cstdint>
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

}  // namespace xsp
