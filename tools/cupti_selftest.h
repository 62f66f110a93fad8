// The GPU workload of xsp_cupti_selftest (tools/cupti_selftest.cu), callable from C++20 code.
#pragma once

#include <cstddef>

namespace selftest {

inline constexpr const char* kNvtxRange = "selftest.nvtx_range";

/// Bytes of each buffer (the size of every memcpy and of the memset).
std::size_t buffer_bytes();
/// Allocates buffers and two streams, captures the 2-kernel graph. Exits with status 2 on a CUDA error.
void setup();
/// NVTX range { vector_add kernel, cudaMemsetAsync }.
void op_a_work();
/// On stream B after op A: cudaMemcpyAsync HtoD, cudaGraphLaunch x2, cudaMemcpyAsync DtoH; meanwhile a vector add
/// on stream A.
void op_b_work();
/// cudaStreamSynchronize on both streams.
void synchronize();
void teardown();

}  // namespace selftest
