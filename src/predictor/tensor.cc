#include "xsp/predictor/tensor.h"

#include <algorithm>
#include <stdexcept>

namespace xsp {

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

void check_input_batch(const Tensor& input, const std::vector<std::int64_t>& sample_dims, const std::string& who) {
  const bool shape_ok = input.shape.size() == sample_dims.size() + 1 && input.shape[0] > 0 &&
                        std::equal(sample_dims.begin(), sample_dims.end(), input.shape.begin() + 1);
  if (!shape_ok)
    throw std::invalid_argument(who + ": input shape mismatch: expected [N," + shape_string(sample_dims).substr(1) +
                                ", got " + shape_string(input.shape));
  if (static_cast<std::int64_t>(input.size()) != input.numel())
    throw std::invalid_argument(who + ": input data holds " + std::to_string(input.size()) + " values, shape " +
                                shape_string(input.shape) + " needs " + std::to_string(input.numel()));
}

}  // namespace xsp
