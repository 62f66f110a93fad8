// AOTInductor predictor: runs `.pt2` packages written by torch._inductor.aoti_compile_and_package (PyTorch >= 2.6)
// through LibTorch's torch::inductor::AOTIModelPackageLoader (docs/models.md "AOTInductor packages"). Built only
// against a LibTorch that has the loader (CMake: XSP_WITH_AOTINDUCTOR).
//
// What such a package runs is Inductor's generated code: fused Triton (CUDA) or C++ (CPU) kernels and a few
// fallback ATen calls, not the source model's modules. The framework profiler (RecordFunction) sees only the ATen
// ops the package still calls through the dispatcher; kernels keep Inductor's names (triton_poi_fused_add_relu_3),
// which the kernel analyses read as the ops fused into them.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "record_function_profiler.h"
#include "torch_util.h"
#include "xsp/predictors/aotinductor.h"

namespace xsp {
namespace {

constexpr const char* kWho = "aotinductor predictor";

std::string what_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

/// Opens model `model_name` of package `file` for `device`. Throws std::runtime_error naming the file and the
/// model when LibTorch cannot (not a package, compiled for another device kind, no such model in it).
std::unique_ptr<torch::inductor::AOTIModelPackageLoader> open_package(const std::string& file,
                                                                      const std::string& model_name,
                                                                      torch::Device device) {
  try {
    return std::make_unique<torch::inductor::AOTIModelPackageLoader>(
        file, model_name, /*run_single_threaded=*/false, /*num_runners=*/1,
        device.is_cuda() ? device.index() : static_cast<c10::DeviceIndex>(-1));
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot load AOTInductor package " + file + " (model '" + model_name +
                             "') with LibTorch " TORCH_VERSION ": " + what_of(e));
  }
}

/// The manifest attribute `key` as a positive integer. Throws std::invalid_argument naming the manifest, the
/// attribute and what the export script writes there when it is missing or not one.
std::int64_t positive_attribute(const Manifest& m, const std::string& key) {
  auto it = m.attributes.find(key);
  std::int64_t v = 0;
  if (it != m.attributes.end()) {
    std::istringstream in(it->second);
    in >> v;
    if (!in || !in.eof()) v = 0;
  }
  if (v < 1)
    throw std::invalid_argument(std::string(kWho) + ": manifest " + m.path.string() + " attribute '" + key +
                                "' must be a positive integer " +
                                (it == m.attributes.end() ? std::string("(missing)") : "(got '" + it->second + "')") +
                                "; scripts/export_hf.py writes it from the model's config");
  return v;
}

// Greedy generation through Hugging Face's static-cache export (transformers.integrations.executorch,
// TorchExportableModuleWithStaticCache, compiled by scripts/export_hf.py): forward(input_ids [B, T] int64,
// cache_position [T] int64) -> logits [B, T, vocab]; the KV cache is module state of shape [B, n_kv_head,
// max_cache_len, head_dim] per layer, written at cache_position. A static cache fixes the batch size, so the
// package holds one model per batch size, named "b<N>". Positions past the current one are masked by the model
// (from cache_position), so a request needs no cache reset: the next prefill overwrites from position 0.
class AotiGenerator final : public Generator {
 public:
  AotiGenerator(const Manifest& manifest, std::string file, torch::Device device)
      : file_(std::move(file)), device_(device) {
    max_positions_ = static_cast<int>(positive_attribute(manifest, "max_cache_len"));
    vocab_size_ = static_cast<int>(positive_attribute(manifest, "vocab_size"));
    for (const char* k : {"n_layer", "n_head", "n_kv_head", "head_dim", "element_bytes"})
      dims_[k] = positive_attribute(manifest, k);
    dims_["cache_positions"] = max_positions_;
    const auto listed = manifest.attributes.find("static_batch_sizes");
    std::istringstream sizes(listed == manifest.attributes.end() ? std::string() : listed->second);
    for (std::string s; std::getline(sizes, s, ',');)
      if (!s.empty()) batch_sizes_.push_back(std::stoi(s));
    if (batch_sizes_.empty())
      throw std::invalid_argument(std::string(kWho) + ": manifest " + manifest.path.string() +
                                  " has no attribute 'static_batch_sizes' (the batch sizes the package holds a "
                                  "model for, e.g. \"1,8\"; scripts/export_hf.py writes it)");
  }

  std::map<std::string, std::int64_t> model_dimensions() const override { return dims_; }
  int max_positions() const override { return max_positions_; }
  int vocab_size() const override { return vocab_size_; }

  std::vector<std::int64_t> prefill(const std::vector<std::int64_t>& prompt_ids, int batch, int prompt_tokens,
                                    int max_new_tokens) override {
    if (open_) throw std::logic_error("aotinductor generator: prefill while a request is open (call end())");
    check_request(prompt_ids, batch, prompt_tokens, max_new_tokens);
    c10::InferenceMode guard;
    runner_ = &model_for(batch);
    at::Tensor ids =
        torch::from_blob(const_cast<std::int64_t*>(prompt_ids.data()), {batch, prompt_tokens}, torch::kLong);
    ids = ids.to(device_);
    const at::Tensor positions = torch::arange(prompt_tokens, torch::dtype(torch::kLong).device(device_));
    const at::Tensor logits = runner_->run({ids, positions}).at(0);  // [B, T, vocab]
    open_ = true;
    position_ = prompt_tokens;
    produced_ = 0;
    max_new_ = max_new_tokens;
    return next_tokens(logits.select(1, prompt_tokens - 1));
  }

  std::vector<std::int64_t> decode() override {
    if (!open_) throw std::logic_error("aotinductor generator: decode before prefill");
    if (produced_ >= max_new_)
      throw std::logic_error("aotinductor generator: all " + std::to_string(max_new_) + " tokens are out already");
    c10::InferenceMode guard;
    // full() fills on the device: no host-to-device copy in the step.
    const at::Tensor position = torch::full({1}, position_, torch::dtype(torch::kLong).device(device_));
    const at::Tensor logits = runner_->run({last_, position}).at(0);  // [B, 1, vocab]
    ++position_;
    return next_tokens(logits.select(1, 0));
  }

  std::uint64_t kv_cache_bytes() const override { return open_ ? cache_bytes_.at(current_batch_) : 0; }

  void end() override {
    open_ = false;
    last_ = at::Tensor();
  }

 private:
  void check_request(const std::vector<std::int64_t>& prompt_ids, int batch, int prompt_tokens,
                     int max_new_tokens) const {
    check_prefill_request("aotinductor generator", prompt_ids, batch, prompt_tokens, max_new_tokens, max_positions_,
                          vocab_size_, "the static cache's max_cache_len");
    if (std::find(batch_sizes_.begin(), batch_sizes_.end(), batch) == batch_sizes_.end()) {
      std::string have;
      for (int b : batch_sizes_) have += (have.empty() ? "" : ", ") + std::to_string(b);
      throw std::invalid_argument("aotinductor generator: package " + file_ + " has no model for batch size " +
                                  std::to_string(batch) + " (a static KV cache fixes the batch; exported for " + have +
                                  ": scripts/export_hf.py --batch-sizes)");
    }
  }

  /// The package's model for `batch` (loaded on first use: loading compiles nothing, it maps the model's shared
  /// library and weights). Its KV cache's bytes are read once, from the constants named key_cache_<i> and
  /// value_cache_<i> (the buffers TorchExportableModuleWithStaticCache registers).
  torch::inductor::AOTIModelPackageLoader& model_for(int batch) {
    current_batch_ = batch;
    auto it = models_.find(batch);
    if (it != models_.end()) return *it->second;
    auto loader = open_package(file_, "b" + std::to_string(batch), device_);
    std::uint64_t bytes = 0;
    static const std::regex cache_name(R"((^|\.)(key|value)_cache_\d+$)");
    try {
      torch::inductor::AOTIModelContainerRunner* runner = loader->get_runner();
      const auto fqns = runner->getConstantNamesToOriginalFQNs();
      for (const auto& [name, tensor] : runner->extract_constants_map(/*use_inactive=*/false)) {
        auto f = fqns.find(name);
        const std::string& fqn = f == fqns.end() ? name : f->second;
        if (std::regex_search(fqn, cache_name))
          bytes += static_cast<std::uint64_t>(tensor.numel()) * tensor.element_size();
      }
    } catch (const std::exception& e) {
      throw std::runtime_error("aotinductor generator: cannot read the KV cache buffers of " + file_ + ": " +
                               what_of(e));
    }
    if (bytes == 0)
      throw std::runtime_error("aotinductor generator: package " + file_ +
                               " holds no constant named key_cache_<i>/value_cache_<i> (not a static-cache export "
                               "of transformers.integrations.executorch?)");
    cache_bytes_[batch] = bytes;
    return *models_.emplace(batch, std::move(loader)).first->second;
  }

  std::vector<std::int64_t> next_tokens(const at::Tensor& logits) {
    ++produced_;
    return libtorch::greedy_tokens(logits, last_);
  }

  std::string file_;
  torch::Device device_;
  int max_positions_ = 0, vocab_size_ = 0;
  std::vector<int> batch_sizes_;
  std::map<std::string, std::int64_t> dims_;
  std::map<int, std::unique_ptr<torch::inductor::AOTIModelPackageLoader>> models_;
  std::map<int, std::uint64_t> cache_bytes_;
  torch::inductor::AOTIModelPackageLoader* runner_ = nullptr;
  int current_batch_ = 0;
  bool open_ = false;
  std::int64_t position_ = 0;
  int produced_ = 0, max_new_ = 0;
  at::Tensor last_;
};

class AotiPredictor final : public Predictor {
 public:
  std::string framework_name() const override { return "aotinductor"; }
  std::string framework_version() const override { return TORCH_VERSION; }

  nlohmann::json framework_facts() const override {
    nlohmann::json facts;
    facts["threads"] = {{"intra_op", at::get_num_threads()}, {"inter_op", at::get_num_interop_threads()}};
    facts["runtime"] = "torch::inductor::AOTIModelPackageLoader (LibTorch " TORCH_VERSION ")";
    facts["package"] = metadata_;
    return facts;
  }

  void load(const Manifest& manifest, const DeviceSpec& device) override {
    close();
    if (manifest.inputs.empty()) throw std::invalid_argument(std::string(kWho) + ": manifest has no inputs");
    if (device.cuda_graphs)
      throw std::invalid_argument(std::string(kWho) +
                                  ": cuda_graphs is not supported (an AOTInductor model container records a CUDA "
                                  "event per run and queries it before the next; one recorded during a capture "
                                  "cannot be queried)");
    if (device.kind == "cpu") {
      device_ = torch::Device(torch::kCPU);
    } else if (device.kind == "cuda") {
      if (!torch::cuda::is_available())
        throw std::runtime_error(std::string(kWho) + ": device cuda requested but this LibTorch sees no GPU");
      device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device.index));
    } else {
      throw std::invalid_argument(std::string(kWho) + ": unknown device kind '" + device.kind + "' (cpu|cuda)");
    }
    // The package's weights and kernels have the dtype it was compiled with: the manifest's attribute
    // aotinductor_precision (scripts/export_hf.py), fp32 when absent.
    dtype_ = libtorch::scalar_type_of(device.precision, kWho);
    const auto compiled = manifest.attributes.find("aotinductor_precision");
    const std::string package_precision = compiled == manifest.attributes.end() ? "fp32" : compiled->second;
    if (device.precision != package_precision)
      throw std::invalid_argument(std::string(kWho) + ": the package of " + manifest.name + " was compiled for " +
                                  package_precision + ", not " + device.precision +
                                  " (an AOTInductor package fixes its precision; use --precision " + package_precision +
                                  ")");
    const std::string file = manifest.resolved_graph_path(framework_name()).string();
    const bool generation = !manifest.outputs.empty() && manifest.outputs[0].type == "generation";
    if (generation) {
      const std::string signature = manifest.outputs[0].steps.at(0).param("signature", "xsp-contract");
      if (signature != "hf-static-cache")
        throw std::invalid_argument(std::string(kWho) + ": model " + manifest.name + " has the generation signature '" +
                                    signature +
                                    "'; this predictor drives hf-static-cache exports (input_ids, "
                                    "cache_position; scripts/export_hf.py)");
      generator_ = std::make_unique<AotiGenerator>(manifest, file, device_);
      metadata_ = package_metadata(file, "b" + manifest.attributes.at("static_batch_sizes")
                                                   .substr(0, manifest.attributes.at("static_batch_sizes").find(',')));
    } else {
      loader_ = open_package(file, "model", device_);
      for (const auto& [k, v] : loader_->get_metadata()) metadata_[k] = v;
    }
    check_device(file);
    inputs_ = libtorch::bind_inputs(manifest, kWho);
  }

  std::vector<Tensor> predict_all(const std::vector<Tensor>& inputs) override {
    if (!loader_) throw std::logic_error(std::string(kWho) + ": predict before load");
    c10::InferenceMode guard;
    const std::vector<at::Tensor> xs = libtorch::to_model_inputs(kWho, inputs_, inputs, device_, dtype_);
    std::vector<Tensor> out;
    for (const at::Tensor& y : run(xs)) libtorch::flatten(y, "", out);
    if (out.empty()) throw std::runtime_error(std::string(kWho) + ": the package returned no tensor");
    return out;
  }

  Tensor predict(const Tensor& input) override {
    if (!loader_) throw std::logic_error(std::string(kWho) + ": predict before load");
    if (inputs_.size() != 1 || inputs_[0].integer)
      throw std::invalid_argument(std::string(kWho) + ": predict() takes one float input; this model has " +
                                  std::to_string(inputs_.size()) + " (use predict_all)");
    check_input_batch(input, inputs_[0].dims, inputs_[0].who);
    c10::InferenceMode guard;
    // Wraps the caller's buffer: copying a batch-32 image input (19 MB) into a fresh vector cost 21.6 ms of page
    // faults per batch on the lent H200 (seen in the trace as a gap before aten::to).
    at::Tensor x = torch::from_blob(const_cast<float*>(input.data.data()), input.shape, torch::kFloat);
    if (device_.is_cuda()) x = x.to(device_, /*non_blocking=*/false);
    if (dtype_ != torch::kFloat) x = x.to(dtype_);
    std::vector<Tensor> out;
    libtorch::flatten(run({x}).at(0), "", out);
    return std::move(out.front());
  }

  void close() override {
    generator_.reset();
    loader_.reset();
    metadata_ = nlohmann::json::object();
  }

  Generator* generator() override { return generator_.get(); }
  FrameworkProfiler* framework_profiler() override { return &profiler_; }

 private:
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& xs) {
    try {
      return loader_->run(xs);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(kWho) + ": the package's run failed: " + what_of(e));
    }
  }

  static nlohmann::json package_metadata(const std::string& file, const std::string& model_name) {
    nlohmann::json m = nlohmann::json::object();
    try {
      for (const auto& [k, v] : torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(file, model_name))
        m[k] = v;
    } catch (const std::exception& e) {
      m["error"] = what_of(e);
    }
    return m;
  }

  /// A package runs only on the device kind it was compiled for (its metadata's AOTI_DEVICE_KEY).
  void check_device(const std::string& file) const {
    if (!metadata_.contains("AOTI_DEVICE_KEY") || !metadata_["AOTI_DEVICE_KEY"].is_string()) return;
    const std::string compiled = metadata_["AOTI_DEVICE_KEY"].get<std::string>();
    const std::string wanted = device_.is_cuda() ? "cuda" : "cpu";
    if (compiled != wanted)
      throw std::invalid_argument(std::string(kWho) + ": package " + file + " was compiled for " + compiled + ", not " +
                                  wanted +
                                  " (export it again for that device: scripts/export_hf.py "
                                  "--device " +
                                  wanted + ")");
  }

  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
  std::unique_ptr<AotiGenerator> generator_;
  nlohmann::json metadata_ = nlohmann::json::object();
  torch::Device device_{torch::kCPU};
  c10::ScalarType dtype_ = torch::kFloat;
  std::vector<libtorch::InputBinding> inputs_;
  // Module paths come from TorchScript's interpreter frames, which a package has none of.
  libtorch::RecordFunctionProfiler profiler_{libtorch::RecordFunctionProfilerOptions{true, true, false, true}};
};

}  // namespace

void register_aotinductor_predictor() {
  static std::once_flag once;
  std::call_once(once, [] { register_predictor("aotinductor", [] { return std::make_unique<AotiPredictor>(); }); });
}

}  // namespace xsp
