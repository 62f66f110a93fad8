// OpenCV DNN predictor: runs the manifest's ONNX graph with cv::dnn, and turns OpenCV's per-layer timings
// into FRAMEWORK spans. The worked example of docs/adding-a-framework.md: keep it small.
//
// Why the profiler lives in the predictor: OpenCV has no per-layer callback, only getPerfProfile(), which
// gives the durations of the *last* forward. So the predictor hands the profiler the forward's start and end
// after each forward (LayerTimingProfiler::on_forward); the profiler copies the timings (a few hundred
// doubles) and formats spans only in stop(), off the measured path.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <opencv2/core/utility.hpp>
#include <opencv2/core/version.hpp>
#include <opencv2/dnn.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "xsp/predictor/predictor.h"
#include "xsp/predictors/opencv_dnn.h"
#include "xsp/trace/run_statistics.h"

namespace xsp {
namespace {

/// FRAMEWORK spans from cv::dnn::Net::getPerfProfile (see register_opencv_dnn_predictor() for what they hold).
class LayerTimingProfiler final : public FrameworkProfiler {
 public:
  /// Layer names and types by OpenCV layer id (ids 1..n; 0 is the input layer), taken once after load.
  void set_layers(std::vector<std::string> names, std::vector<std::string> types) {
    names_ = std::move(names);
    types_ = std::move(types);
  }
  void set_net(cv::dnn::Net* net) { net_ = net; }

  void start(TraceRecorder& recorder, SpanId parent) override {
    if (recorder_ != nullptr) throw std::logic_error("opencv-dnn profiler: start: already started");
    recorder_ = &recorder;
    parent_.store(parent, std::memory_order_relaxed);
    thread_ = current_thread_id();
  }
  void set_parent(SpanId parent) override { parent_.store(parent, std::memory_order_relaxed); }
  bool recording() const { return recorder_ != nullptr; }

  /// Called by the predictor right after each forward: [start_ns, end_ns] is the forward call (host clock).
  void on_forward(std::int64_t start_ns, std::int64_t end_ns, const std::vector<std::int64_t>& input_shape) {
    Forward f{start_ns, end_ns, parent_.load(std::memory_order_relaxed), timings_.size(), 0, input_shape};
    std::vector<double> ticks;
    net_->getPerfProfile(ticks);
    timings_.insert(timings_.end(), ticks.begin(), ticks.end());
    f.count = ticks.size();
    forwards_.push_back(std::move(f));
  }

  void stop() override {
    if (recorder_ == nullptr) return;
    // getTickCount() counts getTickFrequency() ticks per second (1e9 on Linux: CLOCK_MONOTONIC ns).
    const double ns_per_tick = 1e9 / cv::getTickFrequency();
    std::uint64_t fused = 0, overrun = 0;
    std::vector<Span> spans;
    for (const Forward& f : forwards_) {
      const auto shapes = layer_shapes(f.input_shape);
      std::int64_t cursor = f.start_ns;
      for (std::size_t i = 0; i < f.count; ++i) {
        const double ticks = timings_[f.offset + i];
        // getPerfProfile reports 0 for layers that did not run on their own (fused into the previous one).
        if (ticks <= 0) {
          ++fused;
          continue;
        }
        const std::size_t id = i + 1;  // timings skip the input layer (id 0)
        Span s;
        s.level = Level::kFramework;
        s.name = id < types_.size() ? types_[id] : "layer";
        s.start_ns = cursor;
        s.end_ns = cursor + static_cast<std::int64_t>(ticks * ns_per_tick + 0.5);
        cursor = s.end_ns;
        s.track = Track::host_thread(thread_);
        if (f.parent != kNoSpan) {
          s.parent_id = f.parent;
          s.parent_rule = ParentRule::kContext;
        }
        if (id < names_.size()) s.tags.push_back({"module", names_[id]});
        s.tags.emplace_back("layer_id", id);
        if (id < shapes.size() && !shapes[id].empty()) s.tags.push_back({"shapes", shapes[id]});
        s.tags.emplace_back("start_reconstructed", true);
        spans.push_back(std::move(s));
      }
      if (cursor > f.end_ns) ++overrun;  // layer times exceed the forward's wall time: clocks disagree
    }
    if (!spans.empty()) {
      SpanId id = recorder_->reserve_ids(spans.size());
      for (Span& s : spans) s.id = id++;
    }
    recorder_->add_all(std::move(spans));
    recorder_->count(stat::kFrameworkDroppedSpans, 0);
    recorder_->count(stat::kFrameworkFusedLayers, fused);
    if (overrun > 0) recorder_->count(stat::kFrameworkLayerTimesExceedForward, overrun);
    forwards_.clear();
    timings_.clear();
    recorder_ = nullptr;
  }

 private:
  struct Forward {
    std::int64_t start_ns, end_ns;
    SpanId parent;
    std::size_t offset, count = 0;
    std::vector<std::int64_t> input_shape;
  };

  /// Input blob shapes per layer id for a network input of `input_shape`, as text; empty when OpenCV cannot
  /// infer them. Cached per input shape (one per batch size).
  const std::vector<std::string>& layer_shapes(const std::vector<std::int64_t>& input_shape) {
    auto it =
        std::find_if(shape_cache_.begin(), shape_cache_.end(), [&](const auto& e) { return e.first == input_shape; });
    if (it != shape_cache_.end()) return it->second;
    std::vector<std::string> out(names_.size());
    try {
      std::vector<int> ids;
      std::vector<std::vector<cv::dnn::MatShape>> in, outs;
      net_->getLayersShapes(cv::dnn::MatShape(input_shape.begin(), input_shape.end()), ids, in, outs);
      for (std::size_t k = 0; k < ids.size(); ++k) {
        const auto id = static_cast<std::size_t>(ids[k]);
        if (id >= out.size()) continue;
        for (std::size_t j = 0; j < in[k].size(); ++j) {
          if (j > 0) out[id] += ',';
          out[id] += shape_string(std::vector<std::int64_t>(in[k][j].begin(), in[k][j].end()));
        }
      }
    } catch (const cv::Exception&) {
      // Shapes are optional: without them the spans simply carry no "shapes" tag.
    }
    return shape_cache_.emplace_back(input_shape, std::move(out)).second;
  }

  cv::dnn::Net* net_ = nullptr;
  TraceRecorder* recorder_ = nullptr;
  std::atomic<SpanId> parent_{kNoSpan};
  std::uint64_t thread_ = 0;
  std::vector<std::string> names_, types_;
  std::vector<Forward> forwards_;
  std::vector<double> timings_;
  std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::string>>> shape_cache_;
};

class OpenCvDnnPredictor final : public Predictor {
 public:
  OpenCvDnnPredictor() { profiler_.set_net(&net_); }

  std::string framework_name() const override { return "opencv-dnn"; }
  std::string framework_version() const override { return CV_VERSION; }

  nlohmann::json framework_facts() const override {
    nlohmann::json facts;
    facts["threads"] = {{"intra_op", cv::getNumThreads()}};
    // load() sets these; OpenCV's own implementation on the CPU is the only one this predictor runs.
    facts["backends"] = {{"DNN backend", "OpenCV (DNN_BACKEND_OPENCV), target CPU"},
                         {"optimized code (SIMD)", cv::useOptimized() ? "enabled" : "disabled"}};
    return facts;
  }

  void load(const Manifest& manifest, const DeviceSpec& device) override {
    close();
    if (manifest.inputs.empty()) throw std::invalid_argument("opencv-dnn predictor: manifest has no inputs");
    // One float32 image/tensor input and a classification output: the task this predictor's pipeline feeds
    // (docs/generation.md "What runs where").
    if (device.precision != "fp32")
      throw std::invalid_argument("opencv-dnn predictor: precision " + device.precision +
                                  " is not supported (fp32 only)");
    if (manifest.inputs.size() != 1 || manifest.inputs[0].element_type != "float32" || manifest.outputs.empty() ||
        manifest.outputs[0].type != "classification")
      throw std::invalid_argument("opencv-dnn predictor: model " + manifest.name +
                                  " is not one float32 input with a classification output, the only form it runs");
    if (device.kind != "cpu")
      throw std::invalid_argument("opencv-dnn predictor: device '" + device.kind +
                                  "' not supported (this predictor runs DNN_TARGET_CPU only; use --device cpu)");
    const std::string file = manifest.resolved_graph_path(framework_name()).string();
    try {
      net_ = cv::dnn::readNetFromONNX(file);
    } catch (const cv::Exception& e) {
      throw std::runtime_error("cannot load ONNX model " + file + " with OpenCV " + CV_VERSION + ": " + e.what());
    }
    if (net_.empty()) throw std::runtime_error("cannot load ONNX model " + file + ": OpenCV returned an empty net");
    net_.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net_.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    net_.enableFusion(true);  // the default, said explicitly: fused layers are what the profiler reports as 0
    std::vector<std::string> names{"_input"}, types{"Input"};
    for (const std::string& n : net_.getLayerNames()) {
      const int id = net_.getLayerId(n);
      if (id >= static_cast<int>(names.size())) names.resize(id + 1), types.resize(id + 1);
      // OpenCV prefixes ONNX node names with "onnx_node!"; the rest is the exporter's node name.
      names[id] = n.rfind("onnx_node!", 0) == 0 ? n.substr(10) : n;
      types[id] = net_.getLayer(id)->type;
    }
    profiler_.set_layers(std::move(names), std::move(types));
    sample_dims_.assign(manifest.inputs[0].dimensions.begin(), manifest.inputs[0].dimensions.end());
  }

  Tensor predict(const Tensor& input) override {
    if (net_.empty()) throw std::logic_error("opencv-dnn predictor: predict before load");
    check_input_batch(input, sample_dims_, "opencv-dnn predictor");
    // A Mat header over the caller's buffer: no copy here (setInput keeps a reference; OpenCV copies it into
    // its input layer during forward). The net never writes to it.
    const std::vector<int> dims(input.shape.begin(), input.shape.end());
    const cv::Mat blob(static_cast<int>(dims.size()), dims.data(), CV_32F, const_cast<float*>(input.data.data()));
    net_.setInput(blob);
    const std::int64_t start = now_ns();
    cv::Mat y = net_.forward();
    const std::int64_t end = now_ns();
    if (profiler_.recording()) profiler_.on_forward(start, end, input.shape);
    if (y.type() != CV_32F) y.convertTo(y, CV_32F);
    if (!y.isContinuous()) y = y.clone();
    Tensor out;
    for (int d = 0; d < y.dims; ++d) out.shape.push_back(y.size[d]);
    out.data.assign(y.ptr<float>(), y.ptr<float>() + y.total());
    return out;
  }

  void close() override { net_ = cv::dnn::Net(); }

  FrameworkProfiler* framework_profiler() override { return &profiler_; }

 private:
  cv::dnn::Net net_;
  std::vector<std::int64_t> sample_dims_;
  LayerTimingProfiler profiler_;
};

}  // namespace

void register_opencv_dnn_predictor() {
  static std::once_flag once;
  std::call_once(once, [] { register_predictor("opencv-dnn", [] { return std::make_unique<OpenCvDnnPredictor>(); }); });
}

}  // namespace xsp
