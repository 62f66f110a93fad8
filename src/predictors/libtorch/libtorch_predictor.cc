// LibTorch (TorchScript) predictor: loads a scripted/traced module with torch::jit::load and runs it under
// InferenceMode. The module is kept as scripted, not frozen (torch::jit::freeze/optimize_for_inference):
// freezing inlines submodules and their attributes into one graph, which erases the module hierarchy the
// framework profiler reports (tag "module", e.g. "layer1.0.conv1"); the few percent it may gain on CPU are
// not worth losing layer attribution in a profiling platform.
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "record_function_profiler.h"
#include "xsp/predictors/libtorch.h"

namespace xsp {
namespace {

/// The first tensor of a model output: the tensor itself, or the first tensor in a tuple/list (models that
/// return (logits, aux) or [logits]). Throws std::runtime_error when there is none.
at::Tensor first_tensor(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor();
  if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements())
      if (e.isTensor() || e.isTuple() || e.isList()) return first_tensor(e);
  }
  if (v.isList()) {
    for (const c10::IValue& e : v.toListRef())
      if (e.isTensor() || e.isTuple() || e.isList()) return first_tensor(e);
  }
  throw std::runtime_error("libtorch predictor: the model's output holds no tensor (got " + v.tagKind() + ")");
}

class LibTorchPredictor final : public Predictor {
 public:
  std::string framework_name() const override { return "libtorch"; }
  std::string framework_version() const override { return TORCH_VERSION; }

  void load(const Manifest& manifest, const DeviceSpec& device) override {
    close();
    if (manifest.inputs.empty()) throw std::invalid_argument("libtorch predictor: manifest has no inputs");
    if (device.kind == "cpu") {
      device_ = torch::Device(torch::kCPU);
    } else if (device.kind == "cuda") {
      if (!torch::cuda::is_available())
        throw std::runtime_error("libtorch predictor: device cuda requested but this LibTorch build sees no GPU");
      device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device.index));
    } else {
      throw std::invalid_argument("libtorch predictor: unknown device kind '" + device.kind + "' (cpu|cuda)");
    }
    const std::string file = manifest.resolved_graph_path(framework_name()).string();
    try {
      module_ = torch::jit::load(file, device_);
    } catch (const c10::Error& e) {
      throw std::runtime_error("cannot load TorchScript model " + file + ": " + e.what_without_backtrace());
    } catch (const std::exception& e) {  // e.g. std::runtime_error from the file reader
      throw std::runtime_error("cannot load TorchScript model " + file + ": " + e.what());
    }
    module_->eval();
    sample_dims_.assign(manifest.inputs[0].dimensions.begin(), manifest.inputs[0].dimensions.end());
  }

  Tensor predict(const Tensor& input) override {
    if (!module_) throw std::logic_error("libtorch predictor: predict before load");
    check_input_batch(input, sample_dims_, "libtorch predictor");
    // InferenceMode: no autograd bookkeeping (version counters, grad graph) — what a deployment would use.
    c10::InferenceMode guard;
    // from_blob wraps the caller's buffer without a copy; the module never writes to its input.
    at::Tensor x = torch::from_blob(const_cast<float*>(input.data.data()), input.shape, torch::kFloat);
    if (device_.is_cuda()) x = x.to(device_, /*non_blocking=*/false);
    at::Tensor y = first_tensor(module_->forward({x}));
    // .to(kCPU) synchronizes with the device, so the result is ready when predict returns.
    y = y.to(torch::kCPU, torch::kFloat).contiguous();
    Tensor out;
    out.shape.assign(y.sizes().begin(), y.sizes().end());
    out.data.assign(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
    return out;
  }

  void close() override { module_.reset(); }

  FrameworkProfiler* framework_profiler() override { return &profiler_; }

 private:
  std::optional<torch::jit::Module> module_;
  torch::Device device_{torch::kCPU};
  std::vector<std::int64_t> sample_dims_;
  libtorch::RecordFunctionProfiler profiler_;
};

}  // namespace

void register_libtorch_predictor() {
  static std::once_flag once;
  std::call_once(once, [] { register_predictor("libtorch", [] { return std::make_unique<LibTorchPredictor>(); }); });
}

}  // namespace xsp
