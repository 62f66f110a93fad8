// A shared library with its own NVTX instance (NVTX v3 is header-only: every binary that includes the headers keeps
// its own function tables, as cuBLAS and PyTorch do), loaded by nvtx_program: the injection library is initialized once
// per instance and must keep one collector for all of them.
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <thread>

extern "C" __attribute__((visibility("default"))) void xsp_plugin_range(int ms) {
  nvtxRangePushA("plugin range");
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  nvtxRangePop();
}
