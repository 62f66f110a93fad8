// The predictor interface: one framework adapter behind it per framework (SPEC §1 "predictor").
// Contract in the style of MLPerf LoadGen's SystemUnderTest: few methods, each with its rules.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "xsp/manifest/manifest.h"
#include "xsp/predictor/generator.h"
#include "xsp/predictor/tensor.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// Told where each framework op begins and ends, on the op's thread, so that a deeper profiler can tie the
/// work the op issues (CUDA launches) to it: CUPTI's external correlation id (SPEC §1). Called on the hot
/// path: implementations must not allocate, lock or format.
class OpCorrelationListener {
 public:
  virtual ~OpCorrelationListener() = default;
  /// Op `op` (its span id, final) starts on the calling thread; nested ops enter after their parent.
  virtual void op_enter(SpanId op) noexcept = 0;
  /// The op entered last on the calling thread ends (strict LIFO per thread).
  virtual void op_exit(SpanId op) noexcept = 0;
};

/// The framework-level (FRAMEWORK spans) profiler a predictor owns.
class FrameworkProfiler {
 public:
  virtual ~FrameworkProfiler() = default;
  /// Starts recording framework spans into `recorder`. Top-level spans get `parent` (usually the predict
  /// span) as context parent; nested ones their enclosing op. Must be called on the thread that will call
  /// Predictor::predict. Throws std::logic_error if already started.
  virtual void start(TraceRecorder& recorder, SpanId parent) = 0;
  /// Changes the context parent for following top-level spans (next batch's predict span). Cheap.
  virtual void set_parent(SpanId parent) = 0;
  /// Stops recording and flushes every span and counter (e.g. "framework.dropped_spans") to the recorder.
  virtual void stop() = 0;
  /// Installs (or, with nullptr, removes) the listener told of every recorded op's start and end, with the
  /// op's span id. Call before start(). A profiler that cannot report ops ignores it.
  virtual void set_correlation_listener(OpCorrelationListener* listener) { (void)listener; }
  /// Says whether the batches between set_parent() calls run the same ops with the same shapes (true, the default:
  /// a profiler may read shapes and modules in the first batch only and copy them to later ones) or not (false:
  /// token generation, whose prefill and decode steps run different ops on growing shapes; every op must be read).
  /// Call before start(). A profiler that reads every op anyway ignores it.
  virtual void set_uniform_batches(bool uniform) { (void)uniform; }
};

/// Where the model runs, and at which precision.
struct DeviceSpec {
  std::string kind = "cpu";  ///< cpu | cuda
  int index = 0;
  /// Floating-point precision of the model's weights and activations: fp32 | fp16 | bf16. A predictor that cannot
  /// run a precision throws std::invalid_argument from load() naming it and what it supports.
  std::string precision = "fp32";
  /// Capture the forward into a CUDA graph (per input shape, after a warm-up) and replay it for every batch
  /// (docs/cuda-graphs.md). A predictor that cannot throws std::invalid_argument from load() saying why.
  bool cuda_graphs = false;
};

/// A framework adapter. Not thread-safe: one thread drives a predictor.
class Predictor {
 public:
  virtual ~Predictor() = default;
  /// Registry name, e.g. "libtorch".
  virtual std::string framework_name() const = 0;
  /// The framework's own version string, e.g. "1.13.1"; checked against the manifest's constraint.
  virtual std::string framework_version() const = 0;
  /// Loads the model of `manifest` (whose checksum the caller has verified) onto `device`. Throws
  /// std::runtime_error naming the file when it cannot be read or is not a model of this framework.
  virtual void load(const Manifest& manifest, const DeviceSpec& device) = 0;
  /// Runs one batch: input {N, ...per-sample dims}; returns the output (e.g. logits {N, classes}),
  /// synchronized (the result is ready when it returns). Throws std::invalid_argument on a shape mismatch.
  virtual Tensor predict(const Tensor& input) = 0;
  /// Runs one batch of a model with several inputs or several (or structured) outputs: `inputs` holds one tensor
  /// per manifest input, in the manifest's order, each {N, per-sample dims...} with the same N, integer tensors for
  /// int64/int32/bool inputs (Tensor::int_data). Returns every tensor the model returns, flattened in order (a tuple
  /// or list element by element, a dict value by value with Tensor::name its key), float outputs as float32 values,
  /// integer ones in int_data; synchronized. The default runs predict() when there is exactly one float input and
  /// throws std::invalid_argument naming the framework and the count otherwise. Throws std::invalid_argument on a
  /// shape or element-type mismatch.
  virtual std::vector<Tensor> predict_all(const std::vector<Tensor>& inputs) {
    if (inputs.size() != 1 || inputs.front().is_int())
      throw std::invalid_argument(framework_name() + " predictor: runs models with one float input; this batch has " +
                                  std::to_string(inputs.size()) + " input(s)" +
                                  (inputs.size() == 1 ? " of integer values" : "") + " (docs/tasks.md)");
    std::vector<Tensor> out;
    out.push_back(predict(inputs.front()));
    return out;
  }
  /// Releases the model. Idempotent.
  virtual void close() = 0;
  /// The framework-level profiler, or nullptr if this framework has none.
  virtual FrameworkProfiler* framework_profiler() = 0;
  /// The token generator of the loaded model when its output type is "generation" (docs/generation.md), else
  /// nullptr. Owned by the predictor, valid until close() or the next load().
  virtual Generator* generator() { return nullptr; }
  /// How the framework's runtime is set up to run the model, recorded with the evaluation's system description
  /// (system.framework) and printed by `xsp show`: {"threads": {"intra_op": N, "inter_op": N}, "backends":
  /// {"MKL": "available", ...}} (values text or numbers; a key absent when the framework does not say). The
  /// default: an empty object (nothing recorded).
  virtual nlohmann::json framework_facts() const { return nlohmann::json::object(); }
};

using PredictorFactory = std::function<std::unique_ptr<Predictor>()>;

/// Registers a factory under `name` (done by each predictor's translation unit at start-up).
void register_predictor(const std::string& name, PredictorFactory factory);
/// Records that this build has no predictor `name` and why (e.g. "needs LibTorch >= 2.6; this build's is 1.13.1"),
/// so that asking for it says so rather than "unknown framework". A later register_predictor() of the name wins.
void register_unavailable_predictor(const std::string& name, const std::string& reason);
/// Why this build lacks predictor `name` (register_unavailable_predictor()), "" when it has it or nothing was said.
std::string unavailable_predictor_reason(const std::string& name);
/// Creates the predictor registered as `name`; throws std::runtime_error with the reason recorded by
/// register_unavailable_predictor(), else listing the registered names.
std::unique_ptr<Predictor> create_predictor(const std::string& name);
/// Registered names, sorted.
std::vector<std::string> registered_predictors();

}  // namespace xsp
