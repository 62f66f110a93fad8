// A LibTorch program as a PyTorch user writes one, with NVTX "step" ranges and no emit_nvtx: the profile tests run it
// under `xsp profile` to see its ops come from the RecordFunction observer (libxsp_torch_ops.so). No GPU.
//   torch_ops_program [--steps N] [--emit-nvtx] [--train] [--exit N]
// Each step: x (8×32, requires grad) @ w (32×16) through at::matmul (which calls aten::mm), then at::relu, inside an
// NVTX "step" range of at least 5 ms (a known sleep after the ops). With --emit-nvtx the program also wraps the
// matmul in an NVTX range named as emit_nvtx names ops ("aten::matmul, seq = N"), as a program under emit_nvtx has
// both. With --train each step then runs the backward pass of relu(y).sum() inside a record_function scope
// "backward_pass" (RECORD_USER_SCOPE), on this thread (CPU tensors). Prints one line to stdout ("sum <value>") and
// exits with N (default 0).
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

int main(int argc, char** argv) {
  int steps = 3, code = 0;
  bool emit_nvtx = false, train = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--emit-nvtx") == 0) emit_nvtx = true;
    if (std::strcmp(argv[i], "--train") == 0) train = true;
    if (std::strcmp(argv[i], "--exit") == 0 && i + 1 < argc) code = std::atoi(argv[++i]);
  }
  // Made before the first NVTX call: the library observes the ops from its first call on (as in a Python program,
  // whose model is built before CUDA initializes).
  const at::Tensor x = at::ones({8, 32}).set_requires_grad(true);
  const at::Tensor w = at::ones({32, 16});
  double sum = 0;
  for (int step = 0; step < steps; ++step) {
    nvtxRangePushA("step");
    if (emit_nvtx) nvtxRangePushA(("aten::matmul, seq = " + std::to_string(100 + step)).c_str());
    const at::Tensor y = at::matmul(x, w);
    if (emit_nvtx) nvtxRangePop();
    const at::Tensor loss = at::relu(y).sum();
    sum += loss.item<double>();
    if (train) {
      RECORD_USER_SCOPE("backward_pass");
      loss.backward();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    nvtxRangePop();
  }
  std::printf("sum %.0f\n", sum);
  return code;
}
