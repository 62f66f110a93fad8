// GPU self-test of the counter profiler and the ceilings benchmark (needs a GPU; not part of CI):
//  1. counters of cuBLAS GEMMs with known work: tensor-path FP16 FLOPs and CUDA-core FP32 FLOPs must equal
//     2·M·N·K within 1% (the FMA weights of xsp/profilers/hardware_counters.h), and DRAM bytes must be at least
//     the bytes the operands occupy once;
//  2. `measure_machine_ceilings` on the device, printed as JSON.
// Exit status 0 when every check passes. Output: one JSON object on stdout. The counter profiler's options come from
// the XSP_* variables of env_overrides() (XSP_COUNTER_REPLAY, XSP_COUNTER_TIMING...: scripts/gpu/hardware_verify.sh);
// a bad value exits 2.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "xsp/profilers/ceilings_benchmark.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/profilers/hardware_counters.h"
#include "xsp/profilers/profiler_options.h"
#include "xsp/trace/trace.h"

namespace {

struct GemmCase {
  const char* name;
  cudaDataType type;
  cublasComputeType_t compute;
  const char* flop_counter;
  int n;
  std::size_t elem;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace xsp;
  if (argc > 1 && std::string(argv[1]) == "--metrics") {  // the metric list, comma-separated (for ncu --metrics)
    std::string list;
    for (const auto& m : hw::metric_names()) list += (list.empty() ? "" : ",") + m;
    std::cout << list << "\n";
    return 0;
  }
  CounterOptions counter_options;
  try {
    CuptiOptions unused;
    apply_env_overrides(unused, counter_options);
  } catch (const std::invalid_argument& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  nlohmann::json out;
  out["options"] = {{"replay", std::string(to_string(counter_options.replay))},
                    {"max_ranges", counter_options.max_ranges}};
  bool ok = true;
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::cerr << "cublasCreate failed (no GPU?)\n";
    return 2;
  }
  const GemmCase cases[] = {
      {"hgemm_tensor", CUDA_R_16F, CUBLAS_COMPUTE_32F, "tensor_fp16_flops", 1024, 2},
      {"sgemm_cuda_core", CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, "fp32_flops", 512, 4},
  };
  for (const GemmCase& g : cases) {
    const std::size_t n = g.n;
    void *a, *b, *c;
    cudaMalloc(&a, n * n * g.elem);
    cudaMalloc(&b, n * n * g.elem);
    cudaMalloc(&c, n * n * g.elem);
    cudaMemset(a, 0, n * n * g.elem);
    cudaMemset(b, 0, n * n * g.elem);
    const float alpha = 1, beta = 0;
    const auto gemm = [&] {
      return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, g.n, g.n, g.n, &alpha, a, g.type, g.n, b, g.type, g.n,
                          &beta, c, g.type, g.n, g.compute, CUBLAS_GEMM_DEFAULT);
    };
    gemm();  // warm-up: cuBLAS picks and loads its kernel outside the profiled region
    cudaDeviceSynchronize();
    TraceRecorder recorder;
    auto profiler = create_counter_profiler(counter_options);
    profiler->start(recorder, {});
    // User replay (the default) needs the same work once per metric pass; kernel replay needs it once.
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    for (int pass = 0; pass < std::max(1, profiler->batches_needed()); ++pass) {
      profiler->begin_batch();
      if (const auto st = gemm(); st != CUBLAS_STATUS_SUCCESS) status = st;
      profiler->end_batch();
    }
    profiler->stop();
    const Trace t = recorder.take();
    double flops = 0, total = 0, dram = 0;
    nlohmann::json kernels = nlohmann::json::array();
    for (const Span& s : t.spans) {
      if (s.level != Level::kHardware) continue;
      std::map<std::string, double> counters;
      for (const Tag& tag : s.tags)
        if (hw::find_counter(tag.key) != nullptr) counters[tag.key] = std::stod(tag.value);
      flops += counters[g.flop_counter];
      total += hw::total_flops(counters).value_or(0);
      dram += counters["dram_read_bytes"];
      kernels.push_back({{"name", s.name}, {"counters", counters}});
    }
    const double expected = 2.0 * n * n * n;
    const bool pass = status == CUBLAS_STATUS_SUCCESS && std::abs(flops - expected) <= 0.01 * expected &&
                      dram >= 2.0 * n * n * g.elem * 0.99;
    ok = ok && pass;
    out[g.name] = {
        {"expected_flops", expected}, {g.flop_counter, flops},  {"all_flops", total}, {"dram_read_bytes", dram},
        {"kernels", kernels},         {"counters", t.counters}, {"pass", pass}};
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
  cublasDestroy(handle);
  try {
    const MachineCeilings m = measure_machine_ceilings({});
    nlohmann::json cj = nlohmann::json::array();
    for (const auto& c : m.ceilings)
      cj.push_back({{"name", c.name}, {"value", c.value}, {"unit", c.unit}, {"method", c.method}});
    out["ceilings"] = {{"gpu", m.gpu_name}, {"uuid", m.gpu_uuid}, {"host", m.hostname}, {"ceilings", cj}};
  } catch (const std::exception& e) {
    out["ceilings_error"] = e.what();
    ok = false;
  }
  out["pass"] = ok;
  std::cout << out.dump(1) << "\n";
  return ok ? 0 : 1;
}
