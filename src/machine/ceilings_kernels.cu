// `xsp machine ceilings`: micro-benchmarks for the roofline's measured peaks (SPEC §4). Compute: FMA kernels on the
// CUDA cores (FP64, FP32, FP16x2) and cuBLAS GEMMs on the tensor cores; memory: a streaming copy far larger than
// L2 (DRAM), reads of an L2-resident buffer that bypass L1 (L2), reads of a per-block L1-resident tile (L1).
// Every figure is the best of `repetitions` timed launches (CUDA events), after one untimed launch. Clocks and
// other device settings are never changed.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

#include "ceilings_kernels.h"

namespace xsp {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("machine ceilings: ") + what + ": " + cudaGetErrorName(e) + ": " +
                             cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("machine ceilings: ") + what + ": cuBLAS status " + std::to_string(s));
}

/// Best (shortest) time in seconds of `launch` over `reps` timed runs after one warm-up.
double best_seconds(const std::function<void()>& launch, int reps) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  launch();
  check(cudaGetLastError(), "warm-up launch");
  check(cudaDeviceSynchronize(), "warm-up");
  float best_ms = 1e30f;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(a), "cudaEventRecord");
    launch();
    check(cudaEventRecord(b), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    check(cudaGetLastError(), "timed launch");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    best_ms = std::min(best_ms, ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best_ms * 1e-3;
}

// ---- compute: kChains independent FMA chains per thread keep the FMA pipes full despite their latency -------
constexpr int kChains = 8;
constexpr int kFmaIters = 4096;

template <typename T>
__global__ void fma_kernel(T* out, T b, T c) {
  T acc[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) acc[k] = static_cast<T>(threadIdx.x + k);
  for (int i = 0; i < kFmaIters; ++i) {
#pragma unroll
    for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * b + c;  // contracted to one FMA
  }
  T sum = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) sum += acc[k];
  if (sum == static_cast<T>(-1.2345)) out[0] = sum;  // keeps the chains alive; never true
}

__global__ void hfma2_kernel(__half2* out, __half2 b, __half2 c) {
  __half2 acc[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) acc[k] = __floats2half2_rn(threadIdx.x * 1e-3f + k, k);
  for (int i = 0; i < kFmaIters; ++i) {
#pragma unroll
    for (int k = 0; k < kChains; ++k) acc[k] = __hfma2(acc[k], b, c);
  }
  __half2 sum = acc[0];
#pragma unroll
  for (int k = 1; k < kChains; ++k) sum = __hadd2(sum, acc[k]);
  if (__low2float(sum) == -1.2345f) out[0] = sum;
}

// ---- memory --------------------------------------------------------------------------------------------------
__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = in[i];
}

/// Each thread reads the whole L2-resident buffer `reps` times (strided so a warp reads contiguous 512 bytes);
/// __ldcg caches in L2 only, so every load is served by L2.
__global__ void l2_read_kernel(const float4* __restrict__ in, size_t n, int reps, float* out) {
  float acc = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (int r = 0; r < reps; ++r)
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
      const float4 v = __ldcg(in + i);
      acc += v.x + v.y + v.z + v.w;
    }
  if (acc == -1.2345f) out[0] = acc;
}

/// Each block reads its own `tile` float4s (fits L1) `reps` times with __ldca (cache at all levels).
__global__ void l1_read_kernel(const float4* __restrict__ in, int tile, int reps, float* out) {
  const float4* base = in + (size_t)blockIdx.x * tile;
  float acc = 0;
  for (int r = 0; r < reps; ++r)
    for (int i = threadIdx.x; i < tile; i += blockDim.x) {
      const float4 v = __ldca(base + i);
      acc += v.x + v.y + v.z + v.w;
    }
  if (acc == -1.2345f) out[0] = acc;
}

RawCeiling raw(std::string name, double value, std::string unit, std::string method) {
  RawCeiling c;
  c.name = std::move(name);
  c.value = value;
  c.unit = std::move(unit);
  c.method = std::move(method);
  return c;
}

}  // namespace

RawCeilings run_ceiling_benchmarks(const RawCeilingOptions& options) {
  if (options.repetitions < 1) throw std::invalid_argument("machine ceilings: repetitions must be >= 1");
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount (is there a GPU and a driver?)");
  if (options.device < 0 || options.device >= count)
    throw std::invalid_argument("machine ceilings: device " + std::to_string(options.device) + " out of range (" +
                                std::to_string(count) + " visible)");
  check(cudaSetDevice(options.device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, options.device), "cudaGetDeviceProperties");

  RawCeilings out;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  out.hostname = host;
  out.gpu_name = prop.name;
  char uuid[64];
  const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  out.gpu_uuid = uuid;
  const int reps = options.repetitions;
  const int sms = prop.multiProcessorCount;

  // Compute: 64 blocks of 256 threads per SM saturate every FMA pipe.
  {
    const dim3 grid(sms * 8), block(256);
    const double fmas = double(grid.x) * block.x * kChains * kFmaIters;
    void* sink = nullptr;
    check(cudaMalloc(&sink, 64), "cudaMalloc");
    const double t64 = best_seconds([&] { fma_kernel<double><<<grid, block>>>((double*)sink, 0.999, 1e-3); }, reps);
    const double t32 = best_seconds([&] { fma_kernel<float><<<grid, block>>>((float*)sink, 0.999f, 1e-3f); }, reps);
    const __half2 hb = __floats2half2_rn(0.999f, 0.999f), hc = __floats2half2_rn(1e-3f, 1e-3f);
    const double t16 = best_seconds([&] { hfma2_kernel<<<grid, block>>>((__half2*)sink, hb, hc); }, reps);
    cudaFree(sink);
    const std::string how = "FMA kernel, " + std::to_string(grid.x) + "x256 threads x " + std::to_string(kChains) +
                            " chains x " + std::to_string(kFmaIters) + " FMAs";
    out.ceilings.push_back(raw("fp64", 2 * fmas / t64, "flop/s", how + ", best of " + std::to_string(reps)));
    out.ceilings.push_back(raw("fp32", 2 * fmas / t32, "flop/s", how + ", best of " + std::to_string(reps)));
    out.ceilings.push_back(raw("fp16", 4 * fmas / t16, "flop/s", "HFMA2 " + how + ", best of " + std::to_string(reps)));
  }

  // Tensor cores through cuBLAS: square GEMMs large enough to reach the steady state.
  {
    cublasHandle_t handle = nullptr;
    check(cublasCreate(&handle), "cublasCreate");
    struct Gemm {
      const char* name;
      cudaDataType ab, c;
      cublasComputeType_t compute;
      int n;
      std::size_t elem_ab, elem_c;
    };
    const Gemm gemms[] = {
        {"tensor_fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 8192, 2, 2},
        {"tensor_bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 8192, 2, 2},
        {"tensor_tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 8192, 4, 4},
        {"tensor_fp64", CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 4096, 8, 8},
        {"tensor_int8", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, 8192, 1, 4},
    };
    for (const Gemm& g : gemms) {
      const std::size_t n = static_cast<std::size_t>(g.n);
      void *a = nullptr, *b = nullptr, *c = nullptr;
      check(cudaMalloc(&a, n * n * g.elem_ab), "cudaMalloc (GEMM A)");
      check(cudaMalloc(&b, n * n * g.elem_ab), "cudaMalloc (GEMM B)");
      check(cudaMalloc(&c, n * n * g.elem_c), "cudaMalloc (GEMM C)");
      cudaMemset(a, 0, n * n * g.elem_ab);
      cudaMemset(b, 0, n * n * g.elem_ab);
      const float alpha_f = 1, beta_f = 0;
      const double alpha_d = 1, beta_d = 0;
      const int alpha_i = 1, beta_i = 0;
      const void* alpha = g.compute == CUBLAS_COMPUTE_64F   ? (const void*)&alpha_d
                          : g.compute == CUBLAS_COMPUTE_32I ? (const void*)&alpha_i
                                                            : (const void*)&alpha_f;
      const void* beta = g.compute == CUBLAS_COMPUTE_64F   ? (const void*)&beta_d
                         : g.compute == CUBLAS_COMPUTE_32I ? (const void*)&beta_i
                                                           : (const void*)&beta_f;
      // INT8 GEMMs need A transposed (the "TN" layout cuBLAS supports for IMMA).
      const cublasOperation_t ta = g.compute == CUBLAS_COMPUTE_32I ? CUBLAS_OP_T : CUBLAS_OP_N;
      cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
      const auto run = [&] {
        status = cublasGemmEx(handle, ta, CUBLAS_OP_N, g.n, g.n, g.n, alpha, a, g.ab, g.n, b, g.ab, g.n, beta, c, g.c,
                              g.n, g.compute, CUBLAS_GEMM_DEFAULT);
      };
      run();
      if (status == CUBLAS_STATUS_SUCCESS) {
        const double t = best_seconds(run, reps);
        out.ceilings.push_back(
            raw(g.name, 2.0 * n * n * n / t, g.compute == CUBLAS_COMPUTE_32I ? "op/s" : "flop/s",
                std::string("cublasGemmEx ") + std::to_string(n) + "^3, best of " + std::to_string(reps)));
      } else {
        std::fprintf(stderr, "machine ceilings: %s skipped (cublasGemmEx status %d)\n", g.name, int(status));
      }
      cudaFree(a);
      cudaFree(b);
      cudaFree(c);
    }
    cublasDestroy(handle);
  }

  // Memory.
  {
    // DRAM: a copy of 2 x 1 GiB (or a quarter of memory), far beyond L2; read + write bytes both count.
    std::size_t bytes = std::min<std::size_t>(1ull << 30, prop.totalGlobalMem / 8) & ~std::size_t(15);
    void *in = nullptr, *dst = nullptr;
    check(cudaMalloc(&in, bytes), "cudaMalloc (copy source)");
    check(cudaMalloc(&dst, bytes), "cudaMalloc (copy destination)");
    cudaMemset(in, 1, bytes);
    const std::size_t n4 = bytes / 16;
    const double t = best_seconds([&] { copy_kernel<<<sms * 16, 512>>>((const float4*)in, (float4*)dst, n4); }, reps);
    out.ceilings.push_back(
        raw("dram", 2.0 * bytes / t, "bytes/s",
            "copy kernel " + std::to_string(bytes >> 20) + " MiB (read + write), best of " + std::to_string(reps)));
    const double tm = best_seconds([&] { cudaMemcpyAsync(dst, in, bytes, cudaMemcpyDeviceToDevice); }, reps);
    out.ceilings.push_back(raw("dram_memcpy", 2.0 * bytes / tm, "bytes/s",
                               "cudaMemcpy device-to-device " + std::to_string(bytes >> 20) +
                                   " MiB (read + write; reference for dram), best of " + std::to_string(reps)));
    cudaFree(dst);

    // L2: a buffer of a quarter of L2, read 64 times through L2 only.
    const std::size_t l2_bytes = std::max<std::size_t>(prop.l2CacheSize / 4, 1 << 20) & ~std::size_t(15);
    const int l2_reps = 64;
    float* sink = nullptr;
    check(cudaMalloc(&sink, 64), "cudaMalloc");
    const double tl2 =
        best_seconds([&] { l2_read_kernel<<<sms * 4, 512>>>((const float4*)in, l2_bytes / 16, l2_reps, sink); }, reps);
    out.ceilings.push_back(raw("l2", double(l2_bytes) * l2_reps / tl2, "bytes/s",
                               "L2-resident read (" + std::to_string(l2_bytes >> 10) + " KiB, ld.global.cg) x " +
                                   std::to_string(l2_reps) + ", best of " + std::to_string(reps)));

    // L1: each block re-reads its own 16 KiB tile.
    const int tile = 1024, l1_reps = 2048, blocks = sms * 4;
    const double tl1 =
        best_seconds([&] { l1_read_kernel<<<blocks, 512>>>((const float4*)in, tile, l1_reps, sink); }, reps);
    out.ceilings.push_back(raw("l1", double(blocks) * tile * 16 * l1_reps / tl1, "bytes/s",
                               "L1-resident read (16 KiB tile per block, ld.global.ca) x " + std::to_string(l1_reps) +
                                   ", best of " + std::to_string(reps)));
    cudaFree(sink);
    cudaFree(in);
  }
  return out;
}

}  // namespace xsp
