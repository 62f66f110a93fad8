// What CUPTI reports about CUDA graphs, as JSON lines on stdout: the resource callbacks of graph, node and exec
// creation and cloning (with the "op" the program had open on the capturing thread at that moment, and the runtime
// call they happened in), the runtime API records, and the kernel/memset activity records of eager launches and of
// graph replays (graph id, graph node id, correlation id). A recorder for issue 25's fixtures (CUDA graphs
// attributed by default); not part of the build yet:
//   nvcc -O2 -std=c++17 -arch=sm_90 tests/programs/cuda_graph_probe.cu -I$CUDA/extras/CUPTI/include \
//     -L$CUDA/extras/CUPTI/lib64 -lcupti -lcuda -o cuda_graph_probe && ./cuda_graph_probe > probe.jsonl
// Scenarios, in order: a graph captured before CUPTI is enabled (replayed after: "captured before profiling"); a
// graph captured on one stream with ops "layer1.conv", "layer2.relu" (a kernel and a memset) and "layer3" (two
// kernels), instantiated, replayed 3 times; the same graph instantiated a second time and replayed once; a clone
// (cudaGraphClone) instantiated and replayed once; a graph captured across two streams (fork and join through
// events); one eager launch.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

thread_local const char* t_op = "(none)";  // the "framework op" open on this thread
thread_local uint32_t t_correlation = 0;   // the runtime call this thread is in, 0 outside
std::mutex g_print;

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)
#define CHECK_CUPTI(x)                                                     \
  do {                                                                     \
    CUptiResult r_ = (x);                                                  \
    if (r_ != CUPTI_SUCCESS) {                                             \
      const char* s_ = nullptr;                                            \
      cuptiGetResultString(r_, &s_);                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_); \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

__global__ void k_add(float* x, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}
__global__ void k_mul(float* x, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= v;
}

uint32_t graph_id(CUgraph g) {
  uint32_t id = 0;
  if (g != nullptr) cuptiGetGraphId(g, &id);
  return id;
}
uint64_t node_id(CUgraphNode n) {
  uint64_t id = 0;
  if (n != nullptr) cuptiGetGraphNodeId(n, &id);
  return id;
}
uint32_t exec_id(CUgraphExec e) {
  uint32_t id = 0;
  if (e != nullptr) cuptiGetGraphExecId(e, &id);
  return id;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  std::lock_guard<std::mutex> lock(g_print);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    const auto* c = static_cast<const CUpti_CallbackData*>(data);
    if (c->callbackSite == CUPTI_API_ENTER) {
      t_correlation = c->correlationId;
      std::printf("{\"cb\":\"runtime_enter\",\"name\":\"%s\",\"correlation\":%u,\"op\":\"%s\"}\n", c->functionName,
                  c->correlationId, t_op);
    } else {
      t_correlation = 0;
    }
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
  const auto* r = static_cast<const CUpti_ResourceData*>(data);
  const auto* g = static_cast<const CUpti_GraphData*>(r->resourceDescriptor);
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPH_CREATED:
      std::printf("{\"cb\":\"graph_created\",\"graph\":%u,\"in_correlation\":%u,\"op\":\"%s\"}\n", graph_id(g->graph),
                  t_correlation, t_op);
      break;
    case CUPTI_CBID_RESOURCE_GRAPH_CLONED:
      std::printf("{\"cb\":\"graph_cloned\",\"graph\":%u,\"original_graph\":%u,\"in_correlation\":%u}\n",
                  graph_id(g->graph), graph_id(g->originalGraph), t_correlation);
      break;
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
      std::printf(
          "{\"cb\":\"node_created\",\"graph\":%u,\"node\":%llu,\"node_type\":%d,\"in_correlation\":%u,\"op\":\"%s\"}\n",
          graph_id(g->graph), static_cast<unsigned long long>(node_id(g->node)), static_cast<int>(g->nodeType),
          t_correlation, t_op);
      break;
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
      std::printf(
          "{\"cb\":\"node_cloned\",\"graph\":%u,\"node\":%llu,\"original_graph\":%u,\"original_node\":%llu,"
          "\"node_type\":%d,\"in_correlation\":%u}\n",
          graph_id(g->graph), static_cast<unsigned long long>(node_id(g->node)), graph_id(g->originalGraph),
          static_cast<unsigned long long>(node_id(g->originalNode)), static_cast<int>(g->nodeType), t_correlation);
      break;
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
      std::printf("{\"cb\":\"exec_created\",\"exec\":%u,\"graph\":%u,\"in_correlation\":%u}\n", exec_id(g->graphExec),
                  graph_id(g->graph), t_correlation);
      break;
    default:
      break;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_print);
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      std::printf(
          "{\"act\":\"kernel\",\"name\":\"%s\",\"correlation\":%u,\"graph\":%u,\"node\":%llu,\"stream\":%u,"
          "\"start\":%llu,\"end\":%llu}\n",
          k->name, k->correlationId, k->graphId, static_cast<unsigned long long>(k->graphNodeId), k->streamId,
          static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end));
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      std::printf(
          "{\"act\":\"memset\",\"correlation\":%u,\"graph\":%u,\"node\":%llu,\"stream\":%u,\"start\":%llu,"
          "\"end\":%llu}\n",
          m->correlationId, m->graphId, static_cast<unsigned long long>(m->graphNodeId), m->streamId,
          static_cast<unsigned long long>(m->start), static_cast<unsigned long long>(m->end));
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      const char* name = nullptr;
      cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name);
      std::printf("{\"act\":\"runtime\",\"name\":\"%s\",\"correlation\":%u,\"start\":%llu,\"end\":%llu}\n",
                  name ? name : "?", a->correlationId, static_cast<unsigned long long>(a->start),
                  static_cast<unsigned long long>(a->end));
    }
  }
  std::free(buffer);
}

constexpr int kN = 1 << 16;
constexpr int kBlock = 256;
constexpr int kGrid = (kN + kBlock - 1) / kBlock;

// One captured "model": three ops, the second with a kernel and a memset, the third with two kernels.
cudaGraph_t capture_model(cudaStream_t s, float* x, const char* prefix) {
  static char names[3][64];
  std::snprintf(names[0], sizeof names[0], "%slayer1.conv", prefix);
  std::snprintf(names[1], sizeof names[1], "%slayer2.relu", prefix);
  std::snprintf(names[2], sizeof names[2], "%slayer3", prefix);
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  t_op = names[0];
  k_add<<<kGrid, kBlock, 0, s>>>(x, kN, 1.0f);
  t_op = names[1];
  k_mul<<<kGrid, kBlock, 0, s>>>(x, kN, 0.5f);
  CHECK_CUDA(cudaMemsetAsync(x, 0, 1024, s));
  t_op = names[2];
  k_add<<<kGrid, kBlock, 0, s>>>(x, kN, 2.0f);
  k_mul<<<kGrid, kBlock, 0, s>>>(x, kN, 3.0f);
  t_op = "(none)";
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  return graph;
}

void marker(const char* what) {
  std::lock_guard<std::mutex> lock(g_print);
  std::printf("{\"marker\":\"%s\"}\n", what);
}

}  // namespace

int main() {
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, kN * sizeof(float)));
  cudaStream_t s1, s2;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));

  // Captured and instantiated before any CUPTI subscription: a server that captured its graphs at start-up.
  cudaGraph_t pre = capture_model(s1, x, "pre.");
  cudaGraphExec_t pre_exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&pre_exec, pre, 0));

  CUpti_SubscriberHandle sub;
  CHECK_CUPTI(cuptiSubscribe(&sub, on_callback, nullptr));
  CHECK_CUPTI(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE));
  CHECK_CUPTI(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
  CHECK_CUPTI(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  CHECK_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CHECK_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  CHECK_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));

  marker("capture g1");
  cudaGraph_t g1 = capture_model(s1, x, "");
  marker("instantiate g1");
  cudaGraphExec_t e1 = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&e1, g1, 0));
  marker("replay g1 x3");
  for (int i = 0; i < 3; ++i) CHECK_CUDA(cudaGraphLaunch(e1, s1));
  CHECK_CUDA(cudaStreamSynchronize(s1));

  marker("instantiate g1 again, replay x1");
  cudaGraphExec_t e1b = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&e1b, g1, 0));
  CHECK_CUDA(cudaGraphLaunch(e1b, s1));
  CHECK_CUDA(cudaStreamSynchronize(s1));

  marker("clone g1, instantiate, replay x1");
  cudaGraph_t g1c = nullptr;
  CHECK_CUDA(cudaGraphClone(&g1c, g1));
  cudaGraphExec_t e1c = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&e1c, g1c, 0));
  CHECK_CUDA(cudaGraphLaunch(e1c, s1));
  CHECK_CUDA(cudaStreamSynchronize(s1));

  marker("replay pre (captured before profiling) x2");
  for (int i = 0; i < 2; ++i) CHECK_CUDA(cudaGraphLaunch(pre_exec, s1));
  CHECK_CUDA(cudaStreamSynchronize(s1));

  marker("capture g2 across two streams");
  cudaEvent_t fork, join;
  CHECK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  cudaGraph_t g2 = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
  CHECK_CUDA(cudaEventRecord(fork, s1));
  CHECK_CUDA(cudaStreamWaitEvent(s2, fork, 0));
  t_op = "branchA";
  k_add<<<kGrid, kBlock, 0, s1>>>(x, kN, 1.0f);
  t_op = "branchB";
  k_mul<<<kGrid, kBlock, 0, s2>>>(x + kN / 2, kN / 2, 2.0f);
  CHECK_CUDA(cudaEventRecord(join, s2));
  CHECK_CUDA(cudaStreamWaitEvent(s1, join, 0));
  t_op = "(none)";
  CHECK_CUDA(cudaStreamEndCapture(s1, &g2));
  cudaGraphExec_t e2 = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&e2, g2, 0));
  marker("replay g2 x2");
  for (int i = 0; i < 2; ++i) CHECK_CUDA(cudaGraphLaunch(e2, s1));
  CHECK_CUDA(cudaStreamSynchronize(s1));

  marker("eager");
  t_op = "eager.op";
  k_add<<<kGrid, kBlock, 0, s1>>>(x, kN, 1.0f);
  t_op = "(none)";
  CHECK_CUDA(cudaStreamSynchronize(s1));

  CHECK_CUPTI(cuptiActivityFlushAll(1));
  marker("end");
  return 0;
}
