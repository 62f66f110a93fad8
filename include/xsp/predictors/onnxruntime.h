// ONNX Runtime predictor. Compiled only when XSP_WITH_ONNXRUNTIME is defined (CMake found ONNX Runtime >= 1.16).
#pragma once

namespace xsp {

/// Registers the "onnxruntime" predictor with the predictor registry (idempotent).
///
/// What it does: loads the manifest's `onnxruntime` graph (ONNX) into an Ort::Session on the CPU execution
/// provider with all graph optimizations, and runs the graph's first input → first output.
/// framework_version() is ONNX Runtime's version string. Batch size: a graph with a static batch dimension (the
/// zoo's exports are [1, C, H, W]) runs only that batch size; predict() throws std::invalid_argument for
/// another. It has no framework profiler (framework_profiler() returns nullptr), so only trace level `model`
/// is available; ONNX Runtime's own profiler (SessionOptions::EnableProfiling, a Chrome-trace JSON per
/// session) is the source a FRAMEWORK-level profiler would read.
void register_onnxruntime_predictor();

}  // namespace xsp
