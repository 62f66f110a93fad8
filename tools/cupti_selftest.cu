// GPU half of the CUPTI self-test (xsp_cupti_selftest): the workload, in plain CUDA C++17 so that nvcc never
// sees XSP's C++20 headers (CMake 3.25 cannot ask nvcc for C++20). The checks are in cupti_selftest_main.cc.
//
// Workload on two streams: op A = NVTX range { vector add kernel, memset } on stream A; op B = on stream B (after
// op A, through an event) HtoD + DtoH copies and a 2-kernel CUDA graph replayed twice, while a second vector add
// runs on stream A at the same time; then, outside any op, a cudaStreamSynchronize of each stream.
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
cudaStream_t stream = nullptr, stream_b = nullptr;
cudaEvent_t a_done = nullptr;
float* d = nullptr;
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
  CUDA_CHECK(cudaMalloc(&d, kBytes));
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_b, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&a_done, cudaEventDisableTiming));
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
  CUDA_CHECK(cudaEventRecord(a_done, stream));
  CUDA_CHECK(cudaStreamWaitEvent(stream_b, a_done, 0));
  CUDA_CHECK(cudaMemcpyAsync(b, h, kBytes, cudaMemcpyHostToDevice, stream_b));
  CUDA_CHECK(cudaGraphLaunch(exec, stream_b));
  // Overlaps the graph on stream B: two streams busy at once, as a viewer must show on two tracks.
  vector_add<<<kN / 256, 256, 0, stream>>>(a, a, d, kN);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaGraphLaunch(exec, stream_b));
  CUDA_CHECK(cudaMemcpyAsync(h, c, kBytes, cudaMemcpyDeviceToHost, stream_b));
}

void synchronize() {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaStreamSynchronize(stream_b));
}

void teardown() {
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaStreamDestroy(stream_b);
  cudaEventDestroy(a_done);
  cudaFree(d);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFreeHost(h);
}

}  // namespace selftest
