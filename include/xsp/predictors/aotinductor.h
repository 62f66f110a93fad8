// AOTInductor predictor (`.pt2` packages of torch._inductor.aoti_compile_and_package). Compiled only when
// XSP_WITH_AOTINDUCTOR is defined: LibTorch >= 2.6, which has torch::inductor::AOTIModelPackageLoader.
#pragma once

namespace xsp {

/// Registers the "aotinductor" predictor with the predictor registry (idempotent).
void register_aotinductor_predictor();

}  // namespace xsp
