// LibTorch (TorchScript) predictor. Compiled only when XSP_WITH_LIBTORCH is defined.
#pragma once

namespace xsp {

/// Registers the "libtorch" predictor with the predictor registry (idempotent).
void register_libtorch_predictor();

}  // namespace xsp
