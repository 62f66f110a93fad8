// ONNX Runtime predictor (C++ API of ONNX Runtime >= 1.16). Optional: CMake builds it only when ONNX Runtime's
// package is found (XSP_WITH_ONNXRUNTIME). Written to the same contract as the OpenCV DNN predictor, without a
// framework profiler (see include/xsp/predictors/onnxruntime.h).
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "xsp/predictor/predictor.h"
#include "xsp/predictors/onnxruntime.h"

namespace xsp {
namespace {

class OnnxRuntimePredictor final : public Predictor {
 public:
  std::string framework_name() const override { return "onnxruntime"; }
  // OrtApiBase::GetVersionString is part of the stable C ABI (every ONNX Runtime release has it).
  std::string framework_version() const override { return OrtGetApiBase()->GetVersionString(); }

  void load(const Manifest& manifest, const DeviceSpec& device) override {
    close();
    if (manifest.inputs.empty()) throw std::invalid_argument("onnxruntime predictor: manifest has no inputs");
    // One float32 image/tensor input and a classification output: the task this predictor's pipeline feeds
    // (docs/generation.md "What runs where").
    if (device.precision != "fp32")
      throw std::invalid_argument("onnxruntime predictor: precision " + device.precision +
                                  " is not supported (fp32 only)");
    if (manifest.inputs.size() != 1 || manifest.inputs[0].element_type != "float32" || manifest.outputs.empty() ||
        manifest.outputs[0].type != "classification")
      throw std::invalid_argument("onnxruntime predictor: model " + manifest.name +
                                  " is not one float32 input with a classification output, the only form it runs");
    if (device.kind != "cpu")
      throw std::invalid_argument("onnxruntime predictor: device '" + device.kind +
                                  "' not supported (this predictor uses the CPU execution provider; use --device cpu)");
    const std::string file = manifest.resolved_graph_path(framework_name()).string();
    try {
      if (!env_) env_ = std::make_unique<Ort::Env>(ORT_LOGGING_LEVEL_WARNING, "xsp");
      Ort::SessionOptions options;
      options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
      session_ = std::make_unique<Ort::Session>(*env_, file.c_str(), options);
      if (session_->GetInputCount() < 1 || session_->GetOutputCount() < 1)
        throw std::runtime_error("the graph has no input or no output");
      Ort::AllocatorWithDefaultOptions allocator;
      input_name_ = session_->GetInputNameAllocated(0, allocator).get();
      output_name_ = session_->GetOutputNameAllocated(0, allocator).get();
      const std::vector<std::int64_t> in_shape = session_->GetInputTypeInfo(0).GetTensorTypeAndShapeInfo().GetShape();
      // A negative dimension is symbolic (dynamic); a positive first dimension fixes the batch size.
      static_batch_ = in_shape.empty() ? -1 : in_shape[0];
    } catch (const Ort::Exception& e) {
      session_.reset();
      throw std::runtime_error("cannot load ONNX model " + file + " with ONNX Runtime " + framework_version() + ": " +
                               e.what());
    } catch (const std::runtime_error& e) {
      session_.reset();
      throw std::runtime_error("cannot load ONNX model " + file + ": " + e.what());
    }
    sample_dims_.assign(manifest.inputs[0].dimensions.begin(), manifest.inputs[0].dimensions.end());
  }

  Tensor predict(const Tensor& input) override {
    if (!session_) throw std::logic_error("onnxruntime predictor: predict before load");
    check_input_batch(input, sample_dims_, "onnxruntime predictor");
    if (static_batch_ > 0 && input.shape[0] != static_batch_)
      throw std::invalid_argument("onnxruntime predictor: the graph has a static batch size of " +
                                  std::to_string(static_batch_) + ", got a batch of " + std::to_string(input.shape[0]) +
                                  " (export with a dynamic batch axis to run other batch sizes)");
    try {
      // The tensor wraps the caller's buffer (no copy); ONNX Runtime does not write to inputs.
      const Ort::MemoryInfo memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
      const Ort::Value x = Ort::Value::CreateTensor<float>(memory, const_cast<float*>(input.data.data()),
                                                           input.data.size(), input.shape.data(), input.shape.size());
      const char* in_names[] = {input_name_.c_str()};
      const char* out_names[] = {output_name_.c_str()};
      std::vector<Ort::Value> y = session_->Run(Ort::RunOptions{nullptr}, in_names, &x, 1, out_names, 1);
      const Ort::TensorTypeAndShapeInfo info = y.front().GetTensorTypeAndShapeInfo();
      if (info.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
        throw std::runtime_error("onnxruntime predictor: output '" + output_name_ + "' is not float32");
      Tensor out;
      out.shape = info.GetShape();
      const float* data = y.front().GetTensorData<float>();
      out.data.assign(data, data + info.GetElementCount());
      return out;
    } catch (const Ort::Exception& e) {
      throw std::runtime_error(std::string("onnxruntime predictor: Run failed: ") + e.what());
    }
  }

  void close() override { session_.reset(); }

  FrameworkProfiler* framework_profiler() override { return nullptr; }

 private:
  std::unique_ptr<Ort::Env> env_;
  std::unique_ptr<Ort::Session> session_;
  std::string input_name_, output_name_;
  std::int64_t static_batch_ = -1;
  std::vector<std::int64_t> sample_dims_;
};

}  // namespace

void register_onnxruntime_predictor() {
  static std::once_flag once;
  std::call_once(once,
                 [] { register_predictor("onnxruntime", [] { return std::make_unique<OnnxRuntimePredictor>(); }); });
}

}  // namespace xsp
