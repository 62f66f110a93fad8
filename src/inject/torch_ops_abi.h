// The C interface between libxsp_inject.so and libxsp_torch_ops.so (docs/profile.md "PyTorch ops without
// emit_nvtx"). The injection library dlopens the companion only into a process that already has LibTorch mapped and
// hands it a sink; the companion registers a global at::RecordFunction callback that reports every op through it.
// Plain C types only: the two libraries are built separately (the companion against the program's LibTorch) and
// share no C++ types.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bumped whenever XspTorchOpSink changes layout or meaning; the companion refuses a sink of another version.
#define XSP_TORCH_OP_SINK_VERSION 3

/// What a reported range is (XspTorchOpSink::push).
#define XSP_TORCH_OP 0  ///< a dispatcher op (RecordScope::FUNCTION) or an autograd backward node (BACKWARD_FUNCTION)
#define XSP_TORCH_USER_SCOPE \
  1  ///< a range the program named itself: torch.autograd.profiler.record_function (USER_SCOPE)

/// Where the companion reports ops. Both functions run on the thread that runs the op, inside PyTorch's dispatcher:
/// they must be fast and must not throw. No text is built on this path but the shapes, and only when asked.
typedef struct XspTorchOpSink {
  uint32_t version;  ///< XSP_TORCH_OP_SINK_VERSION
  /// An op (`kind` XSP_TORCH_OP) or a user scope (XSP_TORCH_USER_SCOPE) began on the calling thread. `name`
  /// (NUL-terminated, "aten::conv2d") is PyTorch's own string (RecordFunction::name()): the same op gives the same
  /// pointer, valid at least during the call. `sequence` is its autograd sequence number, -1 when it has none. `shapes`
  /// (not NUL-terminated, `shapes_length` bytes; NULL unless record_shapes) is its inputs' sizes as PyTorch's emit_nvtx
  /// writes them after "sizes = " (torch/csrc/profiler/util.cpp getNvtxStr): "[[1, 3, 224, 224], []]", one list per
  /// input, [] for an input that is no tensor, a tensor list as a list of lists. Valid during the call only.
  void (*push)(int kind, const char* name, int64_t sequence, const char* shapes, size_t shapes_length);
  /// The innermost op of the calling thread ended (every push has one pop, on the same thread).
  void (*pop)(void);
  /// Non-zero: record each op's input shapes (needs PyTorch to keep the inputs: costs more per op).
  int record_shapes;
} XspTorchOpSink;

/// Registers the op callback for every thread of the process (at::addGlobalCallback; scopes FUNCTION,
/// BACKWARD_FUNCTION and USER_SCOPE: the dispatcher's ops, autograd's backward nodes and record_function ranges,
/// what torch.profiler's key_averages() lists but for TorchScript's own frames). Returns 1 on success; 0 with a message
/// in `error` (at most `error_size` bytes, NUL-terminated) when the sink's version is not this library's or PyTorch
/// refuses the callback. Called at most once per process; the callback stays registered for the process's life.
int xsp_torch_ops_install(const XspTorchOpSink* sink, char* error, size_t error_size);

/// The PyTorch version this library was built against, "MAJOR.MINOR.PATCH" (torch/version.h).
const char* xsp_torch_ops_built_for(void);

#ifdef __cplusplus
}
#endif
