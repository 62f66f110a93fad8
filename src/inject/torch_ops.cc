// libxsp_torch_ops.so (docs/profile.md "PyTorch ops without emit_nvtx"): PyTorch's ops reported to libxsp_inject.so
// through one global at::RecordFunction callback, the source torch.profiler itself uses, instead of NVTX strings.
// emit_nvtx makes PyTorch format every op's name, sequence number and shapes into a string and call NVTX (7.95 ms a
// ResNet-50 step against 3.12 ms plain on the H200, BENCHMARKS.md); this callback hands over PyTorch's own name
// pointer and the sequence number, and formats the shapes (into a reused per-thread buffer) only when asked.
//
// Built against LibTorch (the one the profiled program uses: its symbols resolve to the libtorch_cpu.so already
// mapped in the process), and dlopened by libxsp_inject.so only into a process that has LibTorch mapped.
#include <ATen/record_function.h>
#include <c10/util/ArrayRef.h>
#include <torch/version.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "torch_ops_abi.h"

namespace {

XspTorchOpSink g_sink{};

#define XSP_STR2(x) #x
#define XSP_STR(x) XSP_STR2(x)
constexpr const char* kBuiltFor =
    XSP_STR(TORCH_VERSION_MAJOR) "." XSP_STR(TORCH_VERSION_MINOR) "." XSP_STR(TORCH_VERSION_PATCH);

void append_int(std::string& out, std::int64_t v) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, ec == std::errc() ? end : digits);
}

void append_sizes(std::string& out, c10::IntArrayRef sizes) {
  out += '[';
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i != 0) out += ", ";
    append_int(out, sizes[i]);
  }
  out += ']';
}

// "[[1, 3, 224, 224], [[2, 2], [2, 2]], []]" as getNvtxStr() writes it after "sizes = ": one entry per input, a
// tensor list as a list of its tensors' sizes, [] for anything else (and for an undefined tensor).
void append_shapes(std::string& out, const at::RecordFunction& fn) {
  out += '[';
  bool first = true;
  for (const c10::IValue& v : fn.inputs()) {
    if (!first) out += ", ";
    first = false;
    if (v.isTensor() && v.toTensor().defined()) {
      append_sizes(out, v.toTensor().sizes());
    } else if (v.isTensorList()) {
      out += '[';
      bool first_tensor = true;
      for (const at::Tensor& t : v.toTensorList()) {
        if (!first_tensor) out += ", ";
        first_tensor = false;
        if (t.defined()) {
          append_sizes(out, t.sizes());
        } else {
          out += "[]";
        }
      }
      out += ']';
    } else {
      out += "[]";
    }
  }
  out += ']';
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  const int kind = fn.scope() == at::RecordScope::USER_SCOPE ? XSP_TORCH_USER_SCOPE : XSP_TORCH_OP;
  if (g_sink.record_shapes == 0 || kind == XSP_TORCH_USER_SCOPE) {
    g_sink.push(kind, fn.name(), fn.seqNr(), nullptr, 0);
    return nullptr;
  }
  // One buffer per thread, reused: after the first ops of a thread no op allocates.
  thread_local std::string shapes;
  shapes.clear();
  append_shapes(shapes, fn);
  g_sink.push(kind, fn.name(), fn.seqNr(), shapes.data(), shapes.size());
  return nullptr;
}

void on_op_end(const at::RecordFunction& /*fn*/, at::ObserverContext* /*ctx*/) { g_sink.pop(); }

void copy_error(char* error, std::size_t error_size, const std::string& message) {
  if (error == nullptr || error_size == 0) return;
  std::snprintf(error, error_size, "%s", message.c_str());
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int xsp_torch_ops_install(const XspTorchOpSink* sink, char* error,
                                                                            std::size_t error_size) {
  if (sink == nullptr || sink->version != XSP_TORCH_OP_SINK_VERSION || sink->push == nullptr || sink->pop == nullptr) {
    copy_error(error, error_size,
               "the injection library's op sink is not version " + std::to_string(XSP_TORCH_OP_SINK_VERSION) +
                   " (libxsp_inject.so and libxsp_torch_ops.so come from different builds)");
    return 0;
  }
  g_sink = *sink;
  try {
    at::RecordFunctionCallback callback(&on_op_start, &on_op_end);
    callback.needsInputs(sink->record_shapes != 0)
        .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE});
    at::addGlobalCallback(callback);
  } catch (const std::exception& e) {
    copy_error(error, error_size, std::string("at::addGlobalCallback failed: ") + e.what());
    return 0;
  }
  return 1;
}

extern "C" __attribute__((visibility("default"))) const char* xsp_torch_ops_built_for() { return kBuiltFor; }
