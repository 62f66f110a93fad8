// GPU half of the CUPTI self-test (xsp_cupti_selftest): the workload, in plain CUDA C++17 so that nvcc never
// sees XSP's C++20 headers (CMake 3.25 cannot ask nvcc for C++20). The checks are in cupti_selftest_main.cc.
//
// Workload: op A = NVTX range { vector add kernel, memset }; op B = HtoD + DtoH copies and a 2-kernel CUDA
// graph replayed twice; then, outside any op, a cudaStreamSynchronize.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

#include "cupti_selftest.h"

namespace {

constexpr int kN = 1 << 20;
constexpr std::size_t kBytes = kN * sizeof(float);

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void graph_scale(float* x, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

__global__ void graph_offset(float* x, float o, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += o;
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "FAIL: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}
#define CUDA_CHECK(call) cuda_check((call), #call)

float *h = nullptr, *a = nullptr, *b = nullptr, *c = nullptr;
cudaStream_t stream = nullptr;
cudaGraph_t graph = nullptr;
cudaGraphExec_t exec = nullptr;

}  // namespace

namespace selftest {

std::size_t buffer_bytes() { return kBytes; }

void setup() {
  CUDA_CHECK(cudaMallocHost(&h, kBytes));
  for (int i = 0; i < kN; ++i) h[i] = 1.0f;
  CUDA_CHECK(cudaMalloc(&a, kBytes));
  CUDA_CHECK(cudaMalloc(&b, kBytes));
  CUDA_CHECK(cudaMalloc(&c, kBytes));
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Captured outside the ops: only the replays belong to op B.
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  graph_scale<<<kN / 256, 256, 0, stream>>>(c, 2.0f, kN);
  graph_offset<<<kN / 256, 256, 0, stream>>>(c, 1.0f, kN);
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
}

void op_a_work() {
  nvtxRangePushA(kNvtxRange);
  vector_add<<<kN / 256, 256, 0, stream>>>(a, b, c, kN);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemsetAsync(a, 0, kBytes, stream));
  nvtxRangePop();
}

void op_b_work() {
  CUDA_CHECK(cudaMemcpyAsync(b, h, kBytes, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  CUDA_CHECK(cudaMemcpyAsync(h, c, kBytes, cudaMemcpyDeviceToHost, stream));
}

void synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream)); }

void teardown() {
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFreeHost(h);
}

}  // namespace selftest
