// LibTorch (TorchScript) predictor: loads a scripted/traced module with torch::jit::load and runs it under
// InferenceMode. The module is kept as scripted, not frozen (torch::jit::freeze/optimize_for_inference):
// freezing inlines submodules and their attributes into one graph, which erases the module hierarchy the
// framework profiler reports (tag "module", e.g. "layer1.0.conv1"); the few percent it may gain on CPU are
// not worth losing layer attribution in a profiling platform.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "record_function_profiler.h"
#include "torch_util.h"
#include "xsp/predictors/libtorch.h"

// CUDA graphs need a LibTorch built with CUDA (CMake defines XSP_LIBTORCH_CUDA when it has torch_cuda).
#if defined(XSP_LIBTORCH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

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

#if defined(XSP_LIBTORCH_CUDA)
/// Captures what `run` launches on `side` (the current stream while it runs) into `graph`. When capture fails,
/// leaves the stream out of capture mode (so that the process goes on and the error can be reported) and throws
/// std::runtime_error "<what> cannot be captured into a CUDA graph (cuda_graphs): op '<op>' was running ...", the op
/// being the last ATen op that started on this thread.
void capture_or_explain(at::cuda::CUDAGraph& graph, const c10::cuda::CUDAStream& side, const std::string& what,
                        const std::function<void()>& run) {
  static thread_local std::string t_last_op;
  t_last_op.clear();
  const at::CallbackHandle watch = at::addThreadLocalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
        t_last_op = fn.name();
        return nullptr;
      }).scopes({at::RecordScope::FUNCTION}));
  try {
    graph.capture_begin();
    run();
    graph.capture_end();
  } catch (const std::exception& e) {
    at::removeCallback(watch);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(side.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(side.stream(), &partial);
      if (partial != nullptr) cudaGraphDestroy(partial);
    }
    (void)cudaGetLastError();
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw std::runtime_error(
        what + " cannot be captured into a CUDA graph (cuda_graphs): op '" +
        (t_last_op.empty() ? std::string("(none recorded)") : t_last_op) +
        "' was running when capture failed (a host synchronization such as .item(), or a shape that depends on "
        "values, cannot be captured): " +
        (c10_error ? c10_error->what_without_backtrace() : e.what()) + "; run without --cuda-graphs");
  }
  at::removeCallback(watch);
}
#endif

// Greedy generation through the TorchScript methods of an exported decoder (scripts/export_zoo.py, GPT-2 with
// a KV cache): init_cache(batch, length) -> (K, V) of [n_layer, batch, n_head, length, head_dim],
// prefill(ids [B, T], K, V) -> last-position logits [B, vocab] (caches written in place), decode(token [B, 1],
// position, K, V) -> logits [B, vocab]. The argmax runs on the device; copying the B token ids to the host is the
// step's synchronization point, as in a plain PyTorch generate loop (scripts/generate_reference.py).
class LibTorchGenerator final : public Generator {
 public:
  /// `cuda_graphs`: decode steps replay a CUDA graph of decode_static (see decode()); `capture_seen` says whether a
  /// device profiler listens now (a kernel-level run must see the capture of what it replays, so a graph captured
  /// without one is captured again under it, as the predictor's forward graphs are).
  LibTorchGenerator(torch::jit::Module& module, torch::Device device, std::string file, bool cuda_graphs,
                    std::function<bool()> capture_seen)
      : module_(module),
        device_(device),
        file_(std::move(file)),
        cuda_graphs_(cuda_graphs),
        capture_seen_(std::move(capture_seen)) {
    for (const char* m : {"init_cache", "prefill", "decode"})
      if (!module_.find_method(m))
        throw std::runtime_error("TorchScript model " + file_ + " has no method '" + m +
                                 "': a generation model needs init_cache, prefill and decode (scripts/export_zoo.py)");
    if (cuda_graphs_ && !module_.find_method("decode_static"))
      throw std::invalid_argument(
          "libtorch predictor: cuda_graphs needs the generation model's decode_static(token [B, 1], position [1] "
          "int64 tensor, K, V) method (the decode step with its position on the device, which a graph can replay); " +
          file_ + " has none: re-export it with scripts/export_zoo.py, or run without --cuda-graphs");
    auto int_attr = [&](const char* name) {
      if (!module_.hasattr(name) || !module_.attr(name).isInt())
        throw std::runtime_error("TorchScript model " + file_ + " has no integer attribute '" + name + "'");
      return static_cast<int>(module_.attr(name).toInt());
    };
    max_positions_ = int_attr("max_positions");
    vocab_size_ = int_attr("vocab_size");
    dims_ = {{"n_layer", int_attr("n_layer")}, {"n_head", int_attr("n_head")}, {"head_dim", int_attr("head_dim")}};
    // The contract's cache holds n_head heads per layer unless the model says it keeps fewer (grouped-query
    // attention: an integer attribute n_kv_head, init_cache's third dimension).
    dims_["n_kv_head"] = module_.hasattr("n_kv_head") && module_.attr("n_kv_head").isInt()
                             ? module_.attr("n_kv_head").toInt()
                             : dims_["n_head"];
    for (const auto& p : module_.parameters()) {  // the cache takes the parameters' dtype (init_cache)
      dims_["element_bytes"] = static_cast<std::int64_t>(p.element_size());
      break;
    }
  }

  std::map<std::string, std::int64_t> model_dimensions() const override { return dims_; }

  int max_positions() const override { return max_positions_; }
  int vocab_size() const override { return vocab_size_; }

  std::vector<std::int64_t> prefill(const std::vector<std::int64_t>& prompt_ids, int batch, int prompt_tokens,
                                    int max_new_tokens) override {
    if (open_) throw std::logic_error("libtorch generator: prefill while a request is open (call end())");
    check_prefill_request("libtorch generator", prompt_ids, batch, prompt_tokens, max_new_tokens, max_positions_,
                          vocab_size_);
    c10::InferenceMode guard;
    at::Tensor ids =
        torch::from_blob(const_cast<std::int64_t*>(prompt_ids.data()), {batch, prompt_tokens}, torch::kLong);
    if (device_.is_cuda()) ids = ids.to(device_);
    const std::int64_t length = prompt_tokens + max_new_tokens;
    if (cuda_graphs_) {
      // A graph reads the cache at the addresses it was captured with: one cache per (batch, length), kept across
      // requests. Positions a request has not written yet hold an earlier request's keys; decode_static masks
      // every position past the one it decodes, so they never count.
      StaticDecode& s = static_decode(batch, length);
      k_ = s.k;
      v_ = s.v;
      graph_ = &s;
    } else {
      std::tie(k_, v_) = init_cache(batch, length);
    }
    open_ = true;
    position_ = prompt_tokens;
    produced_ = 0;
    max_new_ = max_new_tokens;
    return next_tokens(module_.get_method("prefill")({ids, k_, v_}).toTensor());
  }

  std::vector<std::int64_t> decode() override {
    if (!open_) throw std::logic_error("libtorch generator: decode before prefill");
    if (produced_ >= max_new_)
      throw std::logic_error("libtorch generator: all " + std::to_string(max_new_) + " tokens are out already");
    c10::InferenceMode guard;
#if defined(XSP_LIBTORCH_CUDA)
    if (graph_ != nullptr) {
      at::Tensor logits = replay_decode(*graph_);
      ++position_;
      return next_tokens(logits);
    }
#endif
    at::Tensor logits = module_.get_method("decode")({last_, static_cast<std::int64_t>(position_), k_, v_}).toTensor();
    ++position_;
    return next_tokens(logits);
  }

  std::uint64_t kv_cache_bytes() const override {
    if (!open_) return 0;
    return static_cast<std::uint64_t>(k_.numel()) * k_.element_size() +
           static_cast<std::uint64_t>(v_.numel()) * v_.element_size();
  }

  void end() override {
    open_ = false;
    graph_ = nullptr;  // the static cache and its graphs stay for the next request of its (batch, length)
    k_ = v_ = last_ = at::Tensor();
  }

 private:
  /// Graph mode's state for one (batch, cache length): the cache, the static token and position buffers the
  /// captured decode step reads, and its graphs (one captured without a device profiler listening, one with).
  struct StaticDecode {
    at::Tensor k, v, token, position;
#if defined(XSP_LIBTORCH_CUDA)
    std::map<bool, std::pair<std::unique_ptr<at::cuda::CUDAGraph>, at::Tensor>> graphs;  // -> (graph, logits)
#endif
  };

  /// The model's empty KV cache for `batch` sequences of `length` positions: init_cache's (K, V).
  std::pair<at::Tensor, at::Tensor> init_cache(int batch, std::int64_t length) {
    auto cache = module_.get_method("init_cache")({static_cast<std::int64_t>(batch), length});
    const auto& kv = cache.toTupleRef().elements();
    return {kv.at(0).toTensor(), kv.at(1).toTensor()};
  }

  StaticDecode& static_decode(int batch, std::int64_t length) {
    auto it = static_.find({batch, length});
    if (it != static_.end()) return it->second;
    StaticDecode s;
    std::tie(s.k, s.v) = init_cache(batch, length);
    s.token = torch::zeros({batch, 1}, torch::TensorOptions().dtype(torch::kLong).device(device_));
    s.position = torch::zeros({1}, torch::TensorOptions().dtype(torch::kLong).device(device_));
    return static_.emplace(std::make_pair(batch, length), std::move(s)).first->second;
  }

#if defined(XSP_LIBTORCH_CUDA)
  /// One decode step in graph mode: writes the last tokens and the position into the static buffers (device-side
  /// copies on the current stream, no host synchronization) and replays the step's graph, capturing it on first
  /// use. Returns the captured logits [B, vocab] (overwritten by the next replay).
  at::Tensor replay_decode(StaticDecode& s) {
    s.token.copy_(last_);
    s.position.fill_(static_cast<std::int64_t>(position_));
    const bool seen = capture_seen_ && capture_seen_();
    auto it = s.graphs.find(seen);
    if (it == s.graphs.end()) it = s.graphs.emplace(seen, capture_decode(s)).first;
    it->second.first->replay();
    return it->second.second;
  }

  /// Captures decode_static over `s`'s buffers as torch.cuda.graphs prescribes (warm-up on a side stream, then
  /// capture there). The warm-ups run the step the replay will run (same token, position and cache), so the cache
  /// entries they write are the ones the replay writes again. Throws std::runtime_error naming the op that was
  /// running when capture failed.
  std::pair<std::unique_ptr<at::cuda::CUDAGraph>, at::Tensor> capture_decode(StaticDecode& s) {
    const std::vector<c10::IValue> args{s.token, s.position, s.k, s.v};
    torch::jit::Method step = module_.get_method("decode_static");
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device_.index());
    at::cuda::CUDAEvent inputs_ready;
    inputs_ready.record(c10::cuda::getCurrentCUDAStream(device_.index()));
    inputs_ready.block(side);
    c10::cuda::CUDAStreamGuard on_side(side);
    for (int i = 0; i < kDecodeCaptureWarmups; ++i) step(args);
    side.synchronize();
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    at::Tensor logits;
    capture_or_explain(*graph, side, "libtorch generator: the decode step (decode_static) of " + file_,
                       [&] { logits = step(args).toTensor(); });
    return {std::move(graph), logits};
  }

  static constexpr int kDecodeCaptureWarmups = 3;
#endif

  std::vector<std::int64_t> next_tokens(const at::Tensor& logits) {
    ++produced_;
    return libtorch::greedy_tokens(logits, last_);
  }

  torch::jit::Module& module_;
  torch::Device device_;
  std::string file_;
  int max_positions_ = 0, vocab_size_ = 0;
  std::map<std::string, std::int64_t> dims_;
  bool open_ = false;
  int position_ = 0, produced_ = 0, max_new_ = 0;
  at::Tensor k_, v_, last_;
  bool cuda_graphs_ = false;
  std::function<bool()> capture_seen_;
  std::map<std::pair<int, std::int64_t>, StaticDecode> static_;  // graph mode: by (batch, cache length)
  StaticDecode* graph_ = nullptr;                                // the open request's, in graph mode
};

class LibTorchPredictor final : public Predictor {
 public:
  std::string framework_name() const override { return "libtorch"; }
  std::string framework_version() const override { return TORCH_VERSION; }

  nlohmann::json framework_facts() const override {
    auto available = [](bool yes) { return yes ? "available" : "not in this build"; };
    nlohmann::json facts;
    facts["threads"] = {{"intra_op", at::get_num_threads()}, {"inter_op", at::get_num_interop_threads()}};
    facts["backends"] = {
        {"MKL", available(at::hasMKL())},
        {"oneDNN (MKL-DNN)",
         at::hasMKLDNN() ? (at::globalContext().userEnabledMkldnn() ? "available, enabled" : "available, disabled")
                         : "not in this build"},
        {"OpenMP", available(at::hasOpenMP())},
        {"CUDA", available(at::hasCUDA())}};
    return facts;
  }

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
    dtype_ = libtorch::scalar_type_of(device.precision, "libtorch predictor");
    if (dtype_ != torch::kFloat) {
      if (dtype_ == torch::kHalf && !device_.is_cuda())
        throw std::invalid_argument(
            "libtorch predictor: precision fp16 needs device cuda (LibTorch's CPU kernels "
            "lack half precision for many ops); use bf16 or fp32 on cpu");
      module_->to(dtype_);
    }
    if (!manifest.outputs.empty() && manifest.outputs[0].type == "generation") {
      const std::string signature = manifest.outputs[0].steps.at(0).param("signature", "xsp-contract");
      if (signature != "xsp-contract")
        throw std::invalid_argument("libtorch predictor: model " + manifest.name + " has the generation signature '" +
                                    signature +
                                    "'; this predictor drives TorchScript models written to XSP's contract "
                                    "(xsp-contract: init_cache/prefill/decode); use --framework aotinductor");
      generator_ = std::make_unique<LibTorchGenerator>(*module_, device_, file, device.cuda_graphs && device_.is_cuda(),
                                                       [this] { return profiler_.has_correlation_listener(); });
    }
    cuda_graphs_ = device.cuda_graphs;
    if (cuda_graphs_) {
      if (!device_.is_cuda()) throw std::invalid_argument("libtorch predictor: cuda_graphs needs device cuda");
#if !defined(XSP_LIBTORCH_CUDA)
      throw std::invalid_argument(
          "libtorch predictor: cuda_graphs needs a LibTorch built with CUDA; this build's "
          "LibTorch " TORCH_VERSION " has none (rebuild XSP against a CUDA LibTorch)");
#endif
    }
    sample_dims_.assign(manifest.inputs[0].dimensions.begin(), manifest.inputs[0].dimensions.end());
    inputs_ = libtorch::bind_inputs(manifest, "libtorch predictor");
    // A forward that takes one structured argument (a Dict[str, Tensor] keyed by the manifest's input names, a
    // tuple or a list of tensors in manifest order) gets the inputs packed so; otherwise one argument per input.
    pack_ = Pack::kPositional;
    const auto& arguments = module_->get_method("forward").function().getSchema().arguments();
    if (arguments.size() == 2) {  // self, then the one argument
      const c10::TypeKind kind = arguments[1].type()->kind();
      if (kind == c10::TypeKind::DictType) pack_ = Pack::kDict;
      if (kind == c10::TypeKind::TupleType) pack_ = Pack::kTuple;
      if (kind == c10::TypeKind::ListType) pack_ = Pack::kList;
    }
  }

  std::vector<Tensor> predict_all(const std::vector<Tensor>& inputs) override {
    if (!module_) throw std::logic_error("libtorch predictor: predict before load");
    c10::InferenceMode guard;
    const std::vector<at::Tensor> xs =
        libtorch::to_model_inputs("libtorch predictor", inputs_, inputs, device_, dtype_);
    std::vector<Tensor> out;
    libtorch::flatten(forward(xs), "", out);
    if (out.empty()) throw std::runtime_error("libtorch predictor: the model's output holds no tensor");
    return out;
  }

  Tensor predict(const Tensor& input) override {
    if (!module_) throw std::logic_error("libtorch predictor: predict before load");
    check_input_batch(input, sample_dims_, "libtorch predictor");
    // InferenceMode: no autograd bookkeeping (version counters, grad graph) — what a deployment would use.
    c10::InferenceMode guard;
    // from_blob wraps the caller's buffer without a copy; the module never writes to its input.
    at::Tensor x = torch::from_blob(const_cast<float*>(input.data.data()), input.shape, torch::kFloat);
    if (device_.is_cuda()) x = x.to(device_, /*non_blocking=*/false);
    if (dtype_ != torch::kFloat) x = x.to(dtype_);
    at::Tensor y = first_tensor(forward({x}));
    // .to(kCPU) synchronizes with the device, so the result is ready when predict returns.
    y = y.to(torch::kCPU, torch::kFloat).contiguous();
    Tensor out;
    out.shape.assign(y.sizes().begin(), y.sizes().end());
    out.data.assign(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
    return out;
  }

  void close() override {
#if defined(XSP_LIBTORCH_CUDA)
    graphs_.clear();  // before the module: graphs hold memory of its pool
#endif
    generator_.reset();
    module_.reset();
  }

  Generator* generator() override { return generator_.get(); }

  FrameworkProfiler* framework_profiler() override { return &profiler_; }

 private:
  /// The module's inputs as forward() takes them: one argument each, or packed into one dict, tuple or list.
  std::vector<c10::IValue> pack(const std::vector<at::Tensor>& xs) const {
    std::vector<c10::IValue> args(xs.begin(), xs.end());
    if (pack_ == Pack::kDict) {
      c10::Dict<std::string, at::Tensor> dict;
      for (std::size_t i = 0; i < xs.size(); ++i) dict.insert(inputs_[i].name, xs[i]);
      return {c10::IValue(dict)};
    }
    if (pack_ == Pack::kTuple) return {c10::ivalue::Tuple::create(std::move(args))};
    if (pack_ == Pack::kList) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& x : xs) list.push_back(x);
      return {c10::IValue(list)};
    }
    return args;
  }

  /// Runs the forward on device tensors `xs`: directly, or in graph mode by replaying the graph captured for their
  /// shapes (captured on first use).
  c10::IValue forward(const std::vector<at::Tensor>& xs) {
#if defined(XSP_LIBTORCH_CUDA)
    if (cuda_graphs_) return replay(xs);
#endif
    return module_->forward(pack(xs));
  }

#if defined(XSP_LIBTORCH_CUDA)
  /// One captured forward: the graph, and the static buffers it reads its inputs from and writes its outputs to.
  struct CapturedForward {
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    std::vector<at::Tensor> inputs;
    c10::IValue output;
  };

  c10::IValue replay(const std::vector<at::Tensor>& xs) {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const at::Tensor& x : xs) shapes.emplace_back(x.sizes().begin(), x.sizes().end());
    // Captured apart under a device profiler: a kernel-level run must see the capture of what it replays to
    // attribute the replayed kernels to their ops (CUPTI names graph nodes only while it listens).
    const GraphKey key{profiler_.has_correlation_listener(), std::move(shapes)};
    auto it = graphs_.find(key);
    if (it == graphs_.end()) it = graphs_.emplace(key, capture(xs)).first;
    CapturedForward& c = it->second;
    for (std::size_t i = 0; i < xs.size(); ++i) c.inputs[i].copy_(xs[i]);
    c.graph->replay();
    return c.output;
  }

  /// Captures the forward for inputs shaped as `xs`, as torch.cuda.graphs prescribes: static input buffers, a
  /// warm-up on a side stream (cuDNN/cuBLAS autotuning and workspaces happen outside the graph), then the capture
  /// on that stream. Throws std::runtime_error naming the op that was running when capture failed (a host
  /// synchronization such as .item(), or a dynamic shape).
  CapturedForward capture(const std::vector<at::Tensor>& xs) {
    CapturedForward c;
    for (const at::Tensor& x : xs) c.inputs.push_back(x.clone());
    const std::vector<c10::IValue> args = pack(c.inputs);
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device_.index());
    at::cuda::CUDAEvent inputs_ready;  // the static inputs were written on the current stream
    inputs_ready.record(c10::cuda::getCurrentCUDAStream(device_.index()));
    inputs_ready.block(side);
    c10::cuda::CUDAStreamGuard on_side(side);
    for (int i = 0; i < kCaptureWarmups; ++i) module_->forward(args);
    side.synchronize();
    c.graph = std::make_unique<at::cuda::CUDAGraph>();
    capture_or_explain(*c.graph, side, "libtorch predictor: the model", [&] { c.output = module_->forward(args); });
    return c;
  }

  static constexpr int kCaptureWarmups = 3;
  using GraphKey = std::pair<bool, std::vector<std::vector<std::int64_t>>>;
  std::map<GraphKey, CapturedForward> graphs_;
#endif

  std::optional<torch::jit::Module> module_;
  torch::Device device_{torch::kCPU};
  std::vector<std::int64_t> sample_dims_;
  c10::ScalarType dtype_ = torch::kFloat;
  std::unique_ptr<LibTorchGenerator> generator_;  // generation models only; refers to module_
  std::vector<libtorch::InputBinding> inputs_;    // the manifest's inputs, in order
  enum class Pack { kPositional, kDict, kTuple, kList };
  Pack pack_ = Pack::kPositional;  // how predict_all() hands the inputs to forward()
  bool cuda_graphs_ = false;
  libtorch::RecordFunctionProfiler profiler_;
};

}  // namespace

void register_libtorch_predictor() {
  static std::once_flag once;
  std::call_once(once, [] { register_predictor("libtorch", [] { return std::make_unique<LibTorchPredictor>(); }); });
}

}  // namespace xsp
