#include "torch_util.h"

#include <stdexcept>

namespace xsp::libtorch {

void flatten(const c10::IValue& v, const std::string& name, std::vector<Tensor>& out) {
  if (v.isTensor()) {
    at::Tensor y = v.toTensor();
    Tensor t;
    t.name = name;
    t.shape.assign(y.sizes().begin(), y.sizes().end());
    if (at::isFloatingType(y.scalar_type())) {
      y = y.to(torch::kCPU, torch::kFloat).contiguous();
      t.data.assign(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
    } else {
      y = y.to(torch::kCPU, torch::kLong).contiguous();
      t.integer = true;
      t.int_data.assign(y.data_ptr<std::int64_t>(), y.data_ptr<std::int64_t>() + y.numel());
    }
    out.push_back(std::move(t));
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten(e, "", out);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) flatten(e, "", out);
  } else if (v.isGenericDict()) {
    for (const auto& kv : v.toGenericDict())
      flatten(kv.value(), kv.key().isString() ? kv.key().toStringRef() : std::string(), out);
  }
}

c10::ScalarType scalar_type_of(const std::string& precision, const std::string& who) {
  if (precision == "fp32") return torch::kFloat;
  if (precision == "fp16") return torch::kHalf;
  if (precision == "bf16") return torch::kBFloat16;
  throw std::invalid_argument(who + ": unknown precision '" + precision + "' (fp32|fp16|bf16)");
}

std::vector<InputBinding> bind_inputs(const Manifest& manifest, const std::string& predictor) {
  std::vector<InputBinding> bindings;
  for (const InputSpec& in : manifest.inputs) {
    InputBinding b;
    b.name = in.name;
    b.element_type = in.element_type;
    b.who = predictor + ": input '" + in.name + "'";
    b.integer = in.element_type == "int64" || in.element_type == "int32" || in.element_type == "bool";
    b.scalar_type = in.element_type == "int32" ? torch::kInt : in.element_type == "bool" ? torch::kBool : torch::kLong;
    b.dims.assign(in.dimensions.begin(), in.dimensions.end());
    // A text input's rows are cut or padded to pad_truncate.length tokens (xsp::TextBatcher).
    for (const ProcessingStep& s : in.steps)
      if (in.type == "text" && s.op == "pad_truncate") b.dims = {std::stol(s.param("length"))};
    bindings.push_back(std::move(b));
  }
  return bindings;
}

std::vector<at::Tensor> to_model_inputs(const std::string& predictor, const std::vector<InputBinding>& bindings,
                                        const std::vector<Tensor>& inputs, torch::Device device,
                                        c10::ScalarType float_type) {
  if (inputs.size() != bindings.size())
    throw std::invalid_argument(predictor + ": the model takes " + std::to_string(bindings.size()) +
                                " input(s) (manifest inputs), got " + std::to_string(inputs.size()));
  std::vector<at::Tensor> xs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const InputBinding& b = bindings[i];
    const Tensor& in = inputs[i];
    check_input_batch(in, b.dims, b.who);
    if (in.shape[0] != inputs.front().shape[0])
      throw std::invalid_argument(b.who + ": batch of " + std::to_string(in.shape[0]) + ", input '" + bindings[0].name +
                                  "' has " + std::to_string(inputs.front().shape[0]));
    if (b.integer != in.is_int())
      throw std::invalid_argument(b.who + ": element_type " + b.element_type + " needs " +
                                  (b.integer ? "integer" : "float") + " values");
    // from_blob wraps the caller's buffer without a copy; models never write to their inputs.
    at::Tensor x = in.is_int() ? torch::from_blob(const_cast<std::int64_t*>(in.int_data.data()), in.shape, torch::kLong)
                               : torch::from_blob(const_cast<float*>(in.data.data()), in.shape, torch::kFloat);
    if (device.is_cuda()) x = x.to(device, /*non_blocking=*/false);
    if (b.integer && b.scalar_type != torch::kLong)
      x = x.to(b.scalar_type);
    else if (!b.integer && float_type != torch::kFloat)
      x = x.to(float_type);
    xs.push_back(std::move(x));
  }
  return xs;
}

std::vector<std::int64_t> greedy_tokens(const at::Tensor& logits, at::Tensor& last) {
  last = logits.argmax(-1).view({-1, 1});
  const at::Tensor host = last.to(torch::kCPU).contiguous();
  const auto* p = host.data_ptr<std::int64_t>();
  return std::vector<std::int64_t>(p, p + host.numel());
}

}  // namespace xsp::libtorch
