// ONNX Runtime predictor (C++ API of ONNX Runtime >= 1.16). Optional: CMake builds it only when ONNX Runtime's
// headers and library are found (XSP_WITH_ONNXRUNTIME). Binds every manifest input to the graph input of the same
// name and returns every graph output (include/xsp/predictors/onnxruntime.h); no framework profiler.
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "xsp/predictor/predictor.h"
#include "xsp/predictors/onnxruntime.h"

namespace xsp {
namespace {

const std::string kWho = "onnxruntime predictor";
constexpr const char* kCpuProvider = "CPUExecutionProvider";
constexpr const char* kCudaProvider = "CUDAExecutionProvider";

/// An element type as the manifest spells it (float32, int64, ...), so that the two compare as text.
std::string type_name(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      return "int16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      return "uint16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      return "uint32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      return "uint64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return "bool";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING:
      return "string";
    default:
      return "ONNX element type " + std::to_string(static_cast<int>(t));
  }
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

/// One input or output of the graph as the session declares it.
struct GraphTensor {
  std::string name;
  bool is_tensor = false;  ///< false: a sequence, map or optional, which XSP neither feeds nor reads
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<std::int64_t> shape;  ///< a dimension < 0 is symbolic (dynamic)
  std::string shape_text;           ///< "[batch,64]": symbolic dimensions by their names, for messages

  std::string describe() const {
    return "'" + name + "' (" + (is_tensor ? type_name(type) + " " + shape_text : std::string("not a tensor")) + ")";
  }
};

GraphTensor graph_tensor(std::string name, const Ort::TypeInfo& info) {
  GraphTensor g;
  g.name = std::move(name);
  g.is_tensor = info.GetONNXType() == ONNX_TYPE_TENSOR;
  if (!g.is_tensor) return g;
  const auto t = info.GetTensorTypeAndShapeInfo();
  g.type = t.GetElementType();
  g.shape = t.GetShape();
  std::vector<const char*> symbols(g.shape.size(), nullptr);
  if (!symbols.empty()) t.GetSymbolicDimensions(symbols.data(), symbols.size());
  g.shape_text = "[";
  for (std::size_t i = 0; i < g.shape.size(); ++i) {
    if (i > 0) g.shape_text += ',';
    const bool named = g.shape[i] < 0 && symbols[i] != nullptr && symbols[i][0] != '\0';
    g.shape_text += g.shape[i] >= 0 ? std::to_string(g.shape[i]) : named ? std::string(symbols[i]) : "?";
  }
  g.shape_text += "]";
  return g;
}

std::string describe_all(const std::vector<GraphTensor>& tensors) {
  std::vector<std::string> parts;
  for (const GraphTensor& g : tensors) parts.push_back(g.describe());
  return parts.empty() ? std::string("none") : join(parts);
}

/// One manifest input bound to the graph input of its name, decided at load() so that predict only converts.
struct Binding {
  std::string name, element_type;
  std::string who;  ///< "onnxruntime predictor: input 'NAME'", for messages
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  bool integer = false;                   ///< fed from Tensor::int_data
  std::vector<std::int64_t> dims;         ///< per sample; a text input's pad_truncate.length
  std::vector<std::int64_t> graph_shape;  ///< as the graph declares it, batch first
  // Conversion buffers, kept between batches so that a batch allocates nothing once the sizes settle.
  std::vector<std::int32_t> int32_values;
  std::vector<std::uint8_t> bool_values;  // ONNX Runtime's bool is one byte
};

/// The per-sample shape a predictor is fed for `in`: its dimensions, except a text input, whose rows XSP's
/// TextBatcher cuts or pads to pad_truncate.length tokens.
std::vector<std::int64_t> sample_dims(const InputSpec& in) {
  std::vector<std::int64_t> dims(in.dimensions.begin(), in.dimensions.end());
  for (const ProcessingStep& s : in.steps)
    if (in.type == "text" && s.op == "pad_truncate") dims = {std::stol(s.param("length"))};
  return dims;
}

/// Checks one manifest input against the graph input of its name and returns its binding. Throws
/// std::invalid_argument naming the input when the element types or the shapes disagree.
Binding bind(const InputSpec& in, const GraphTensor& g) {
  Binding b;
  b.name = in.name;
  b.element_type = in.element_type;
  b.who = kWho + ": input '" + in.name + "'";
  if (!g.is_tensor)
    throw std::invalid_argument(b.who +
                                ": the graph's input of that name is not a tensor (a sequence, map or "
                                "optional), which XSP does not feed");
  if (type_name(g.type) != in.element_type)
    throw std::invalid_argument(b.who + ": the manifest's element_type is " + in.element_type +
                                ", the graph declares " + type_name(g.type) + " " + g.shape_text);
  if (in.element_type != "float32" && in.element_type != "int64" && in.element_type != "int32" &&
      in.element_type != "bool")
    throw std::invalid_argument(b.who + ": element_type " + in.element_type +
                                " is not fed by this predictor (float32, int64, int32, bool)");
  b.type = g.type;
  b.integer = in.element_type != "float32";
  b.dims = sample_dims(in);
  b.graph_shape = g.shape;
  std::string per_sample = "[N";
  for (const std::int64_t d : b.dims) per_sample += "," + std::to_string(d);
  per_sample += "]";
  bool fits = g.shape.size() == b.dims.size() + 1;
  for (std::size_t i = 0; fits && i < b.dims.size(); ++i) fits = g.shape[i + 1] < 0 || g.shape[i + 1] == b.dims[i];
  if (!fits)
    throw std::invalid_argument(b.who + ": the manifest gives batches of " + per_sample + ", the graph declares " +
                                g.shape_text);
  return b;
}

/// Binds every manifest input by name. Throws std::invalid_argument when a manifest input names no graph input (the
/// message lists the graph's inputs), when the graph has inputs the manifest does not give, or as bind() does.
std::vector<Binding> bind_inputs(const Manifest& manifest, const std::vector<GraphTensor>& graph) {
  std::vector<Binding> bindings;
  for (const InputSpec& in : manifest.inputs) {
    const auto g = std::find_if(graph.begin(), graph.end(), [&](const GraphTensor& t) { return t.name == in.name; });
    if (g == graph.end())
      throw std::invalid_argument(kWho + ": manifest input '" + in.name + "' of model " + manifest.name +
                                  " names no input of the graph; the graph's inputs: " + describe_all(graph));
    bindings.push_back(bind(in, *g));
  }
  std::vector<GraphTensor> missing;
  for (const GraphTensor& g : graph)
    if (!manifest.find_input(g.name)) missing.push_back(g);
  if (!missing.empty())
    throw std::invalid_argument(kWho + ": the graph's input(s) " + describe_all(missing) +
                                " are not in the manifest of model " + manifest.name +
                                " (a graph input has no default: list it under the manifest's inputs)");
  return bindings;
}

/// Copies `n` values of type T from ONNX Runtime's buffer into int_data (integer and bool outputs).
template <typename T>
void widen(const Ort::Value& v, std::size_t n, Tensor& t) {
  const T* p = v.GetTensorData<T>();
  t.integer = true;
  t.int_data.resize(n);
  for (std::size_t i = 0; i < n; ++i) t.int_data[i] = static_cast<std::int64_t>(p[i]);
}

/// Converts `n` values of type T into `data` (floating outputs other than float32).
template <typename T>
void to_float(const Ort::Value& v, std::size_t n, Tensor& t) {
  const T* p = v.GetTensorData<T>();
  t.data.resize(n);
  for (std::size_t i = 0; i < n; ++i) t.data[i] = static_cast<float>(p[i]);
}

/// One output value as an XSP tensor named `name`: floating types as float32, integer and bool types as int64.
/// Throws std::runtime_error for any other element type (string).
Tensor to_tensor(const Ort::Value& v, const std::string& name) {
  if (!v.IsTensor()) throw std::runtime_error(kWho + ": output '" + name + "' is not a tensor");
  const Ort::TensorTypeAndShapeInfo info = v.GetTensorTypeAndShapeInfo();
  Tensor t;
  t.name = name;
  t.shape = info.GetShape();
  const std::size_t n = info.GetElementCount();
  switch (info.GetElementType()) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: {
      const float* p = v.GetTensorData<float>();
      t.data.assign(p, p + n);
      break;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      to_float<double>(v, n, t);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: {
      const Ort::Float16_t* p = v.GetTensorData<Ort::Float16_t>();
      t.data.resize(n);
      for (std::size_t i = 0; i < n; ++i) t.data[i] = p[i].ToFloat();
      break;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: {
      const Ort::BFloat16_t* p = v.GetTensorData<Ort::BFloat16_t>();
      t.data.resize(n);
      for (std::size_t i = 0; i < n; ++i) t.data[i] = p[i].ToFloat();
      break;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      widen<std::int64_t>(v, n, t);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      widen<std::int32_t>(v, n, t);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      widen<std::int16_t>(v, n, t);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      widen<std::int8_t>(v, n, t);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      widen<std::uint8_t>(v, n, t);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      widen<std::uint16_t>(v, n, t);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      widen<std::uint32_t>(v, n, t);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      widen<std::uint64_t>(v, n, t);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      widen<bool>(v, n, t);
      break;
    default:
      throw std::runtime_error(kWho + ": output '" + name + "' holds " + type_name(info.GetElementType()) +
                               " values, which XSP does not read (floating, integer and bool outputs only)");
  }
  return t;
}

/// Appends ONNX Runtime's CUDA execution provider on GPU `device_index` (the V2 options: ONNX Runtime's defaults but
/// the device). Throws std::runtime_error with ONNX Runtime's reason when the provider cannot be set up.
void append_cuda(Ort::SessionOptions& options, int device_index) {
  const OrtApi& api = Ort::GetApi();
  OrtCUDAProviderOptionsV2* raw = nullptr;
  try {
    Ort::ThrowOnError(api.CreateCUDAProviderOptions(&raw));
    const std::unique_ptr<OrtCUDAProviderOptionsV2, decltype(api.ReleaseCUDAProviderOptions)> cuda(
        raw, api.ReleaseCUDAProviderOptions);
    const std::string id = std::to_string(device_index);
    const char* keys[] = {"device_id"};
    const char* values[] = {id.c_str()};
    Ort::ThrowOnError(api.UpdateCUDAProviderOptions(cuda.get(), keys, values, 1));
    options.AppendExecutionProvider_CUDA_V2(*cuda);
  } catch (const Ort::Exception& e) {
    throw std::runtime_error(kWho + ": cannot set up " + kCudaProvider + " on cuda:" + std::to_string(device_index) +
                             " (ONNX Runtime " + OrtGetApiBase()->GetVersionString() + "): " + e.what());
  }
}

class OnnxRuntimePredictor final : public Predictor {
 public:
  std::string framework_name() const override { return "onnxruntime"; }
  // OrtApiBase::GetVersionString is part of the stable C ABI (every ONNX Runtime release has it).
  std::string framework_version() const override { return OrtGetApiBase()->GetVersionString(); }

  nlohmann::json framework_facts() const override {
    nlohmann::json facts;
    const std::vector<std::string> available = Ort::GetAvailableProviders();
    facts["backends"]["execution providers (in this library)"] = join(available);
    if (session_) {
      facts["execution_providers"] = providers_;
      facts["backends"]["execution providers (used)"] = join(providers_);
      facts["backends"]["graph optimization"] = "ORT_ENABLE_ALL";
    }
    return facts;
  }

  void load(const Manifest& manifest, const DeviceSpec& device) override {
    close();
    if (manifest.inputs.empty()) throw std::invalid_argument(kWho + ": manifest has no inputs");
    if (device.precision != "fp32")
      throw std::invalid_argument(kWho + ": precision " + device.precision + " is not supported (fp32 only)");
    if (is_generation(manifest))
      throw std::invalid_argument(kWho + ": model " + manifest.name +
                                  " is a generation model; this predictor has no token generator "
                                  "(docs/generation.md): use --framework libtorch");
    if (device.cuda_graphs)
      throw std::invalid_argument(kWho + ": cuda_graphs is not supported (this predictor does not capture graphs)");
    // The environment first: appending the CUDA provider logs through its default logger.
    if (!env_) env_ = std::make_unique<Ort::Env>(ORT_LOGGING_LEVEL_WARNING, "xsp");
    Ort::SessionOptions options;
    options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
    std::vector<std::string> providers = select_providers(device, options);
    const std::string file = manifest.resolved_graph_path(framework_name()).string();
    std::vector<GraphTensor> graph_inputs;
    try {
      session_ = std::make_unique<Ort::Session>(*env_, file.c_str(), options);
      Ort::AllocatorWithDefaultOptions allocator;
      for (std::size_t i = 0; i < session_->GetInputCount(); ++i)
        graph_inputs.push_back(
            graph_tensor(session_->GetInputNameAllocated(i, allocator).get(), session_->GetInputTypeInfo(i)));
      for (std::size_t i = 0; i < session_->GetOutputCount(); ++i)
        outputs_.push_back(
            graph_tensor(session_->GetOutputNameAllocated(i, allocator).get(), session_->GetOutputTypeInfo(i)));
    } catch (const Ort::Exception& e) {
      close();
      throw std::runtime_error("cannot load ONNX model " + file + " with ONNX Runtime " + framework_version() + ": " +
                               e.what());
    }
    try {
      if (outputs_.empty()) throw std::invalid_argument(kWho + ": the graph " + file + " has no output");
      for (const GraphTensor& g : outputs_)
        if (!g.is_tensor)
          throw std::invalid_argument(kWho + ": graph output '" + g.name +
                                      "' is not a tensor (a sequence, map or optional), which XSP does not read");
      bindings_ = bind_inputs(manifest, graph_inputs);
    } catch (...) {
      close();
      throw;
    }
    for (const Binding& b : bindings_) input_names_.push_back(b.name.c_str());
    for (const GraphTensor& g : outputs_) output_names_.push_back(g.name.c_str());
    providers_ = std::move(providers);
  }

  std::vector<Tensor> predict_all(const std::vector<Tensor>& inputs) override {
    if (!session_) throw std::logic_error(kWho + ": predict before load");
    if (inputs.size() != bindings_.size())
      throw std::invalid_argument(kWho + ": the model takes " + std::to_string(bindings_.size()) +
                                  " input(s) (manifest inputs), got " + std::to_string(inputs.size()));
    std::vector<Ort::Value> values;
    values.reserve(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].shape.empty() && !inputs.front().shape.empty() && inputs[i].shape[0] != inputs.front().shape[0])
        throw std::invalid_argument(bindings_[i].who + ": batch of " + std::to_string(inputs[i].shape[0]) +
                                    ", input '" + bindings_[0].name + "' has " +
                                    std::to_string(inputs.front().shape[0]));
      values.push_back(to_value(bindings_[i], inputs[i]));
    }
    std::vector<Ort::Value> y = run(values, output_names_.size());
    std::vector<Tensor> out;
    for (std::size_t i = 0; i < y.size(); ++i) out.push_back(to_tensor(y[i], outputs_[i].name));
    return out;
  }

  Tensor predict(const Tensor& input) override {
    if (!session_) throw std::logic_error(kWho + ": predict before load");
    if (bindings_.size() != 1 || bindings_[0].integer)
      throw std::invalid_argument(kWho + ": predict() runs a model with one float32 input; this one has " +
                                  std::to_string(bindings_.size()) + " input(s)" +
                                  (bindings_.size() == 1 ? " of integer values" : "") + ": use predict_all()");
    std::vector<Ort::Value> values;
    values.push_back(to_value(bindings_[0], input));
    std::vector<Ort::Value> y = run(values, 1);  // the first output: the classifier's scores
    Tensor out = to_tensor(y.front(), outputs_.front().name);
    if (out.is_int())
      throw std::runtime_error(kWho + ": output '" + outputs_.front().name + "' holds integers, not scores");
    return out;
  }

  void close() override {
    session_.reset();
    bindings_.clear();
    outputs_.clear();
    input_names_.clear();
    output_names_.clear();
    providers_.clear();
  }

  FrameworkProfiler* framework_profiler() override { return nullptr; }

 private:
  /// Appends the execution providers for `device` to `options` and returns their names, in priority order. Throws
  /// std::invalid_argument for an unknown device kind, or for cuda when this library has no CUDA execution provider
  /// (naming the providers it has); std::runtime_error when the CUDA provider cannot be set up.
  std::vector<std::string> select_providers(const DeviceSpec& device, Ort::SessionOptions& options) const {
    if (device.kind == "cpu") return {kCpuProvider};
    if (device.kind != "cuda")
      throw std::invalid_argument(kWho + ": unknown device kind '" + device.kind + "' (cpu|cuda)");
    const std::vector<std::string> available = Ort::GetAvailableProviders();
    if (std::find(available.begin(), available.end(), kCudaProvider) == available.end())
      throw std::invalid_argument(kWho + ": device cuda needs ONNX Runtime's " + kCudaProvider + "; this library (" +
                                  "ONNX Runtime " + framework_version() + ") has " + join(available) +
                                  " (build XSP against a CUDA build of ONNX Runtime, e.g. the library of the "
                                  "onnxruntime-gpu wheel, or use --device cpu)");
    if (device.index < 0)
      throw std::invalid_argument(kWho + ": device index " + std::to_string(device.index) + " is negative");
    append_cuda(options, device.index);
    // ONNX Runtime runs the nodes the CUDA provider lacks (often shape arithmetic) on the CPU provider.
    return {kCudaProvider, kCpuProvider};
  }

  /// One batch's value for binding `b`: wraps the caller's buffer without a copy (float32, int64) or converts into
  /// the binding's buffers (int32, bool). Throws std::invalid_argument on a shape, batch or value-kind mismatch.
  Ort::Value to_value(Binding& b, const Tensor& in) {
    check_input_batch(in, b.dims, b.who);
    if (!b.graph_shape.empty() && b.graph_shape[0] > 0 && in.shape[0] != b.graph_shape[0])
      throw std::invalid_argument(b.who + ": the graph has a static batch size of " + std::to_string(b.graph_shape[0]) +
                                  ", got a batch of " + std::to_string(in.shape[0]) +
                                  " (export with a dynamic batch axis to run other batch sizes)");
    if (b.integer != in.is_int())
      throw std::invalid_argument(b.who + ": element_type " + b.element_type + " needs " +
                                  (b.integer ? "integer" : "float") + " values");
    const std::int64_t* shape = in.shape.data();
    const std::size_t rank = in.shape.size(), n = in.size();
    // ONNX Runtime never writes to inputs, hence the const_casts.
    if (b.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
      return Ort::Value::CreateTensor<float>(memory_, const_cast<float*>(in.data.data()), n, shape, rank);
    if (b.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
      return Ort::Value::CreateTensor<std::int64_t>(memory_, const_cast<std::int64_t*>(in.int_data.data()), n, shape,
                                                    rank);
    if (b.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
      b.int32_values.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t v = in.int_data[i];
        if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
          throw std::invalid_argument(b.who + ": value " + std::to_string(v) + " at " + std::to_string(i) +
                                      " does not fit the graph's int32");
        b.int32_values[i] = static_cast<std::int32_t>(v);
      }
      return Ort::Value::CreateTensor<std::int32_t>(memory_, b.int32_values.data(), n, shape, rank);
    }
    b.bool_values.resize(n);
    for (std::size_t i = 0; i < n; ++i) b.bool_values[i] = in.int_data[i] != 0 ? 1 : 0;
    return Ort::Value::CreateTensor(memory_, b.bool_values.data(), n, shape, rank, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL);
  }

  /// Runs the session on `values` (one per binding, in binding order) for the first `outputs` graph outputs. The
  /// outputs come back in host memory: Run copies them off the device and waits for it.
  std::vector<Ort::Value> run(const std::vector<Ort::Value>& values, std::size_t outputs) {
    try {
      return session_->Run(Ort::RunOptions{nullptr}, input_names_.data(), values.data(), values.size(),
                           output_names_.data(), outputs);
    } catch (const Ort::Exception& e) {
      throw std::runtime_error(kWho + ": Run failed: " + e.what());
    }
  }

  std::unique_ptr<Ort::Env> env_;
  std::unique_ptr<Ort::Session> session_;
  Ort::MemoryInfo memory_ = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<Binding> bindings_;          // the manifest's inputs, in the manifest's order
  std::vector<GraphTensor> outputs_;       // every graph output, in the graph's order
  std::vector<const char*> input_names_;   // into bindings_, for Run
  std::vector<const char*> output_names_;  // into outputs_, for Run
  std::vector<std::string> providers_;     // the session's execution providers, in priority order
};

}  // namespace

void register_onnxruntime_predictor() {
  static std::once_flag once;
  std::call_once(once,
                 [] { register_predictor("onnxruntime", [] { return std::make_unique<OnnxRuntimePredictor>(); }); });
}

}  // namespace xsp
