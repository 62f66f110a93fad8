// What the LibTorch-based predictors (TorchScript: libtorch_predictor.cc; AOTInductor: aoti_predictor.cc) share:
// turning XSP's host tensors into device tensors as the manifest describes them, and model outputs back.
// Private to those predictors.
#pragma once

#include <torch/script.h>

#include <string>
#include <vector>

#include "xsp/manifest/manifest.h"
#include "xsp/predictor/predictor.h"

namespace xsp::libtorch {

/// Appends every tensor of a model output to `out`, in order: a tuple or list element by element, a dict value by
/// value (named by its string key), a tensor as itself (named `name`). Copied to the host (which synchronizes with
/// the device), floating types as float32, integer and bool types as int64.
void flatten(const c10::IValue& v, const std::string& name, std::vector<Tensor>& out);

/// The scalar type of a precision name: fp32 -> float, fp16 -> half, bf16 -> bfloat16. Throws
/// std::invalid_argument naming `who` and the value for anything else.
c10::ScalarType scalar_type_of(const std::string& precision, const std::string& who);

/// One manifest input as a predictor feeds it to the model, decided at load() (not per batch: conversion runs
/// inside the timed predict span).
struct InputBinding {
  std::string name, element_type;
  std::string who;                             ///< "PREDICTOR: input 'NAME'", for messages
  bool integer = false;                        ///< int64 | int32 | bool: fed from Tensor::int_data
  c10::ScalarType scalar_type = torch::kLong;  ///< the integer type the model takes
  std::vector<std::int64_t> dims;              ///< per sample; a text input's pad_truncate.length
};

/// The bindings of `manifest`'s inputs, in the manifest's order; `predictor` prefixes the messages.
std::vector<InputBinding> bind_inputs(const Manifest& manifest, const std::string& predictor);

/// One batch's inputs as tensors on `device` (`predictor` prefixes the messages): integers in their binding's type,
/// floats in `float_type`. Wraps the host buffers without a copy before moving them. Throws std::invalid_argument when
/// the count differs from the bindings, a shape does not match (check_input_batch), the batch sizes differ between
/// inputs, or an input's values are integer where the manifest says float (or the reverse), naming the input.
std::vector<at::Tensor> to_model_inputs(const std::string& predictor, const std::vector<InputBinding>& bindings,
                                        const std::vector<Tensor>& inputs, torch::Device device,
                                        c10::ScalarType float_type);

/// Greedy decoding's next tokens: the argmax of `logits` [B, vocab] kept on the device in `last` as [B, 1] (the
/// next step's input), and copied to the host, which synchronizes with the device: the tokens are out on return.
std::vector<std::int64_t> greedy_tokens(const at::Tensor& logits, at::Tensor& last);

}  // namespace xsp::libtorch
