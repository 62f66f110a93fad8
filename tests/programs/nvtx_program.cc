// A program annotated with NVTX as users annotate theirs, with known sleeps inside its ranges; the nvtx tests run it
// with the injection library (tests/unit/nvtx/nvtx_injection_test.cc). No GPU, no CUDA: NVTX v3 is header-only.
//   nvtx_program [--fork] [--exit N] [--abort] [--spawn PROGRAM] [--sleep-first-ms MS] [--loop-ms MS]
// Main thread: "infer" (40 ms) > a PyTorch-style op range (10 ms) and a cuBLAS-domain range (5 ms); a worker thread:
// a registered-string range "worker step" (15 ms) in domain "my_app", category 7; a start/end range "request"
// started on the main thread and ended on the worker; "plugin range" (5 ms) from a shared library with its own NVTX
// instance, after the program's first ranges. With --fork a child process emits "child range" (5 ms).
// With --spawn the program runs PROGRAM (a new process, exec'd) and waits for it. Prints one line to stdout and one to
// stderr, and exits with N (default 0); with --abort it opens a range "doomed" and aborts inside it instead. With
// --sleep-first-ms it sleeps that long after its first NVTX call (the library is loaded then), before any range. With
// --loop-ms it then runs "step" ranges of 10 ms each, one after another, for that long (a server's loop), first.
#include <nvtx3/nvToolsExt.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

extern "C" void xsp_plugin_range(int ms);  // tests/programs/nvtx_plugin.cc

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

nvtxEventAttributes_t attributes(std::uint32_t category) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = category;
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  bool fork_child = false, abort_inside = false;
  int exit_code = 0;
  const char* spawn = nullptr;
  int sleep_first_ms = 0, loop_ms = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fork") == 0) fork_child = true;
    if (std::strcmp(argv[i], "--abort") == 0) abort_inside = true;
    if (std::strcmp(argv[i], "--exit") == 0 && i + 1 < argc) exit_code = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--spawn") == 0 && i + 1 < argc) spawn = argv[++i];
    if (std::strcmp(argv[i], "--sleep-first-ms") == 0 && i + 1 < argc) sleep_first_ms = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--loop-ms") == 0 && i + 1 < argc) loop_ms = std::atoi(argv[++i]);
  }
  nvtxDomainHandle_t app = nvtxDomainCreateA("my_app");
  nvtxDomainHandle_t cublas = nvtxDomainCreateA("cuBLAS");
  nvtxStringHandle_t step = nvtxDomainRegisterStringA(app, "worker step");
  sleep_ms(sleep_first_ms);
  const auto loop_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(loop_ms);
  while (std::chrono::steady_clock::now() < loop_end) {
    nvtxRangePushA("step");
    sleep_ms(10);
    nvtxRangePop();
  }

  nvtxRangeId_t request = nvtxRangeStartA("request");
  std::thread worker([&] {
    sleep_ms(5);
    nvtxEventAttributes_t a = attributes(7);
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = step;
    nvtxDomainRangePushEx(app, &a);
    sleep_ms(15);
    nvtxDomainRangePop(app);
    nvtxRangeEnd(request);
  });

  nvtxRangePushA("infer");
  sleep_ms(10);
  nvtxRangePushA("aten::linear, seq = 3, sizes = [[2, 8], [4, 8], [4]]");
  sleep_ms(10);
  nvtxRangePop();
  nvtxEventAttributes_t gemm = attributes(0);
  gemm.messageType = NVTX_MESSAGE_TYPE_ASCII;
  gemm.message.ascii = "cublasSgemm_v2";
  nvtxDomainRangePushEx(cublas, &gemm);
  sleep_ms(5);
  nvtxDomainRangePop(cublas);
  sleep_ms(15);
  nvtxRangePop();
  worker.join();
  xsp_plugin_range(5);

  if (fork_child) {
    const pid_t pid = fork();
    if (pid == 0) {
      nvtxRangePushA("child range");
      sleep_ms(5);
      nvtxRangePop();
      std::exit(0);  // exit, not _exit: the child's part is written at exit
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  if (spawn != nullptr) {
    pid_t pid = 0;
    char* args[] = {const_cast<char*>(spawn), nullptr};
    if (posix_spawn(&pid, spawn, nullptr, nullptr, args, environ) == 0) {
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
  if (abort_inside) {
    nvtxRangePushA("doomed");
    std::fflush(stdout);
    std::abort();
  }
  std::printf("hello from the program\n");
  std::fprintf(stderr, "a line on stderr\n");
  return exit_code;
}
