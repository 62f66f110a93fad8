// ONNX Runtime predictor. Compiled only when XSP_WITH_ONNXRUNTIME is defined (CMake found ONNX Runtime >= 1.16).
#pragma once

namespace xsp {

/// Registers the "onnxruntime" predictor with the predictor registry (idempotent).
///
/// What it does: load() opens the manifest's `onnxruntime` graph (ONNX) in an Ort::Session with all graph
/// optimizations and binds each manifest input to the graph input of the same name (Session::GetInputNameAllocated).
/// framework_version() is ONNX Runtime's version string.
///  - Inputs: float32, int64, int32 and bool (the manifest's element_type must be the one the graph declares); each
///    fed {N, per-sample dims...}, a text input's per-sample dims being its pad_truncate.length. float32 and int64
///    batches are passed without a copy; int32 and bool ones are converted from Tensor::int_data.
///  - predict_all() (Predictor's contract): one tensor per manifest input, in the manifest's order; returns every graph
///    output in the graph's order, Tensor::name the graph's output name, floating outputs (float32, float16,
///    bfloat16, float64) as float32 values, integer and bool outputs as int64 in Tensor::int_data; synchronized
///    (Session::Run returns outputs in host memory).
///  - predict(): a model with one float32 input; returns the graph's first output.
///  - Batch size: a graph input with a static batch dimension (e.g. [1, C, H, W]) runs only that batch size; another
///    is refused with std::invalid_argument. A symbolic (dynamic) batch dimension runs any.
///  - Devices: cpu runs the CPU execution provider; cuda runs ONNX Runtime's CUDA execution provider on GPU
///    DeviceSpec::index (nodes it lacks fall back to the CPU provider) when the library has it
///    (Ort::GetAvailableProviders() lists "CUDAExecutionProvider"). Precision fp32 only; no cuda_graphs.
///  - framework_facts(): "execution_providers" (the session's, in priority order, e.g. ["CUDAExecutionProvider",
///    "CPUExecutionProvider"]) and, under "backends", the providers used, the providers in this library and the
///    graph optimization level.
///  - No framework profiler (framework_profiler() returns nullptr), so only trace level `model` is available; ONNX
///    Runtime's own profiler (SessionOptions::EnableProfiling, a Chrome-trace JSON per session) is the source a
///    FRAMEWORK-level profiler would read.
///
/// Errors of load(): std::invalid_argument for a precision other than fp32, a generation model, cuda_graphs, an
/// unknown device kind, device cuda when the library has no CUDA execution provider (naming the providers it has),
/// a manifest input that names no graph input (listing the graph's inputs with their types and shapes), a graph input
/// the manifest does not give, an element_type other than the graph's (naming both), an element type this predictor
/// does not feed, a per-sample shape other than the graph's static dimensions, or a graph input or output that is not
/// a tensor; std::runtime_error naming the file when ONNX Runtime cannot load it, or naming the provider when the
/// CUDA provider cannot be set up. predict_all() and predict() throw std::invalid_argument on an input count, shape,
/// batch size or value-kind mismatch and for an int64 value that does not fit a graph's int32 input,
/// std::runtime_error when Session::Run fails or an output holds strings, std::logic_error before load().
void register_onnxruntime_predictor();

}  // namespace xsp
