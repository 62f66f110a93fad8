#include "xsp/pipeline/tasks.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace xsp {
namespace {

const ProcessingStep* step_of(const std::vector<ProcessingStep>& steps, std::string_view op) {
  for (const auto& s : steps)
    if (s.op == op) return &s;
  return nullptr;
}

bool integer_type(const std::string& element_type) {
  return element_type == "int64" || element_type == "int32" || element_type == "bool";
}

std::string where(const Manifest& m, const std::string& what) { return m.path.string() + ": " + what; }

}  // namespace

bool uses_task_pipeline(const Manifest& manifest) {
  if (manifest.inputs.size() != 1 || manifest.outputs.empty()) return true;
  if (manifest.inputs.front().type == "text") return true;
  return manifest.outputs.front().type != "classification";
}

// ---- text inputs ------------------------------------------------------------------------------------------------

TextBatcher::TextBatcher(const Manifest& manifest, const Tokenizer& tokenizer) : tokenizer_(tokenizer) {
  const InputSpec* text = nullptr;
  for (const InputSpec& in : manifest.inputs) {
    if (in.type == "text") {
      if (text)
        throw std::invalid_argument(
            where(manifest, "inputs '" + text->name + "' and '" + in.name + "' are both text; one text input is run"));
      text = &in;
    }
  }
  if (!text) throw std::invalid_argument(where(manifest, "no input of type text to tokenize"));
  const ProcessingStep* tok = step_of(text->steps, "tokenize");
  if (!tok) throw std::invalid_argument(where(manifest, "input '" + text->name + "' has no tokenize step"));
  add_bos_ = tok->param("add_bos") == "true";
  add_eos_ = tok->param("add_eos") == "true";
  length_ = text->dimensions.empty() ? 0 : text->dimensions.front();
  pad_id_ = tokenizer.pad_id() >= 0 ? tokenizer.pad_id() : 0;
  if (const ProcessingStep* pad = step_of(text->steps, "pad_truncate")) {
    length_ = std::stol(pad->param("length", std::to_string(length_)));
    pad_id_ = std::stol(pad->param("pad_id", std::to_string(pad_id_)));
    pad_left_ = pad->param("side", "right") == "left";
  }
  if (length_ < 1) throw std::invalid_argument(where(manifest, "input '" + text->name + "' has no token length"));
  for (const InputSpec& in : manifest.inputs) {
    if (&in == text) {
      roles_.push_back({in.name, 0});
      continue;
    }
    int kind = in.name == "attention_mask" ? 1 : in.name == "token_type_ids" ? 2 : -1;
    if (kind < 0)
      throw std::invalid_argument(where(manifest, "input '" + in.name +
                                                      "' of a text model: only attention_mask and token_type_ids "
                                                      "are made from the text (docs/tasks.md)"));
    if (!integer_type(in.element_type))
      throw std::invalid_argument(where(manifest, "input '" + in.name +
                                                      "': expected an integer element_type "
                                                      "(int64, int32, bool), got " +
                                                      in.element_type));
    if (in.dimensions.size() != 1 || in.dimensions.front() != length_)
      throw std::invalid_argument(where(manifest, "input '" + in.name + "': expected dimensions [" +
                                                      std::to_string(length_) + "] (the text's token length)"));
    roles_.push_back({in.name, kind});
  }
}

std::vector<Tensor> TextBatcher::run(const std::vector<std::string>& texts) const {
  if (texts.empty()) throw std::invalid_argument("text batch: no text");
  const auto n = static_cast<std::int64_t>(texts.size());
  const auto len = static_cast<std::size_t>(length_);
  std::vector<std::int64_t> ids(texts.size() * len, pad_id_), mask(texts.size() * len, 0);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    std::vector<std::int64_t> t = tokenizer_.encode(texts[i], add_bos_, add_eos_);
    const std::size_t kept = std::min(t.size(), len);
    const std::size_t from = pad_left_ ? t.size() - kept : 0;  // cut where the padding would go
    const std::size_t at = pad_left_ ? len - kept : 0;
    std::copy_n(t.begin() + static_cast<std::ptrdiff_t>(from), kept,
                ids.begin() + static_cast<std::ptrdiff_t>(i * len + at));
    std::fill_n(mask.begin() + static_cast<std::ptrdiff_t>(i * len + at), kept, 1);
  }
  std::vector<Tensor> out;
  for (const Role& r : roles_) {
    Tensor t;
    t.shape = {n, length_};
    t.integer = true;
    t.name = r.name;
    if (r.kind == 0)
      t.int_data = ids;
    else if (r.kind == 1)
      t.int_data = mask;
    else
      t.int_data.assign(ids.size(), 0);
    out.push_back(std::move(t));
  }
  return out;
}

// ---- detection ----------------------------------------------------------------------------------------------------

std::vector<Detection> non_max_suppression(const float* boxes, const float* scores, std::size_t anchors,
                                           std::size_t classes, const NmsOptions& o) {
  auto iou = [&](std::size_t a, std::size_t b) {
    const float* p = boxes + 4 * a;
    const float* q = boxes + 4 * b;
    const double w = std::max(0.0, static_cast<double>(std::min(p[2], q[2])) - std::max(p[0], q[0]));
    const double h = std::max(0.0, static_cast<double>(std::min(p[3], q[3])) - std::max(p[1], q[1]));
    const double inter = w * h;
    const double uni =
        static_cast<double>(p[2] - p[0]) * (p[3] - p[1]) + static_cast<double>(q[2] - q[0]) * (q[3] - q[1]) - inter;
    return uni > 0 ? inter / uni : 0.0;
  };
  std::vector<Detection> kept;
  std::vector<std::size_t> cand, keep;
  for (std::size_t c = 1; c < classes; ++c) {
    cand.clear();
    for (std::size_t a = 0; a < anchors; ++a)
      if (static_cast<double>(scores[a * classes + c]) > o.score_threshold) cand.push_back(a);
    auto better = [&](std::size_t a, std::size_t b) {
      const float sa = scores[a * classes + c], sb = scores[b * classes + c];
      return sa > sb || (sa == sb && a < b);
    };
    const std::size_t top = std::min(cand.size(), o.candidates_per_class);
    std::partial_sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(top), cand.end(), better);
    cand.resize(top);
    keep.clear();
    for (std::size_t a : cand) {
      bool suppressed = false;
      for (std::size_t k : keep)
        if (iou(a, k) > o.iou_threshold) {
          suppressed = true;
          break;
        }
      if (!suppressed) keep.push_back(a);
    }
    for (std::size_t a : keep) {
      const float* b = boxes + 4 * a;
      kept.push_back({b[0], b[1], b[2], b[3], scores[a * classes + c], static_cast<int>(c)});
    }
  }
  // Classes were visited in order and anchors by score, so a stable sort by score keeps the documented tie order
  // (lower class, then lower anchor... within a class ties are by anchor already).
  std::stable_sort(kept.begin(), kept.end(), [](const Detection& a, const Detection& b) { return a.score > b.score; });
  if (kept.size() > o.max_detections) kept.resize(o.max_detections);
  return kept;
}

// ---- segmentation -------------------------------------------------------------------------------------------------

SegmentationMask argmax_mask(const float* logits, std::size_t classes, std::size_t height, std::size_t width) {
  SegmentationMask m;
  m.height = static_cast<int>(height);
  m.width = static_cast<int>(width);
  const std::size_t plane = height * width;
  std::int32_t run_class = -1, run_count = 0;
  for (std::size_t p = 0; p < plane; ++p) {
    std::int32_t best = 0;
    float best_v = classes ? logits[p] : 0;
    for (std::size_t c = 1; c < classes; ++c) {
      const float v = logits[c * plane + p];
      if (v > best_v) best_v = v, best = static_cast<std::int32_t>(c);
    }
    if (best == run_class) {
      ++run_count;
    } else {
      if (run_count > 0) m.runs.insert(m.runs.end(), {run_class, run_count});
      run_class = best;
      run_count = 1;
    }
  }
  if (run_count > 0) m.runs.insert(m.runs.end(), {run_class, run_count});
  return m;
}

std::vector<std::int64_t> mask_class_pixels(const SegmentationMask& mask, std::size_t classes) {
  if (mask.runs.size() % 2 != 0)
    throw std::invalid_argument("segmentation mask: " + std::to_string(mask.runs.size()) +
                                " run values, expected (class, count) pairs");
  std::vector<std::int64_t> pixels(classes, 0);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < mask.runs.size(); i += 2) {
    const std::int32_t c = mask.runs[i], n = mask.runs[i + 1];
    if (c < 0 || n < 1)
      throw std::invalid_argument("segmentation mask: run " + std::to_string(i / 2) + " has class " +
                                  std::to_string(c) + " and count " + std::to_string(n) +
                                  ", expected class >= 0 and count >= 1");
    if (static_cast<std::size_t>(c) >= pixels.size()) pixels.resize(static_cast<std::size_t>(c) + 1, 0);
    pixels[static_cast<std::size_t>(c)] += n;
    total += n;
  }
  if (total != static_cast<std::int64_t>(mask.height) * mask.width)
    throw std::invalid_argument("segmentation mask: runs cover " + std::to_string(total) + " pixels, the mask has " +
                                std::to_string(mask.height) + "x" + std::to_string(mask.width));
  return pixels;
}

// ---- classification-like rows -------------------------------------------------------------------------------------

InputPrediction classify_row(std::string input_id, const float* row, std::size_t classes, bool softmax, std::size_t k) {
  InputPrediction p;
  p.input_id = std::move(input_id);
  p.probabilities.assign(row, row + classes);
  if (softmax && classes > 0) {
    const float max = *std::max_element(row, row + classes);
    double sum = 0;
    std::vector<double> e(classes);
    for (std::size_t c = 0; c < classes; ++c) sum += e[c] = std::exp(static_cast<double>(row[c]) - max);
    for (std::size_t c = 0; c < classes; ++c) p.probabilities[c] = static_cast<float>(e[c] / sum);
  }
  std::vector<int> idx(classes);
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, classes);
  const auto& v = p.probabilities;
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](int a, int b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  idx.resize(k);
  p.top_classes = std::move(idx);
  return p;
}

// ---- post-processing ------------------------------------------------------------------------------------------------

TaskPostprocessor::TaskPostprocessor(const OutputSpec& spec) : spec_(spec) {
  const std::string& t = spec.type;
  if (t != "detection" && t != "segmentation" && t != "text_classification" && t != "classification")
    throw std::invalid_argument("output '" + spec.name + "': type '" + t +
                                "' is not post-processed as a task (detection, segmentation, text_classification)");
  for (const ProcessingStep& s : spec.steps) {
    if (s.op == "softmax") softmax_ = true;
    if (s.op == "top_k") top_k_ = std::stoul(s.param("k", "5"));
    if (s.op == "nms") {
      nms_.iou_threshold = std::stod(s.param("iou_threshold", "0.5"));
      nms_.score_threshold = std::stod(s.param("score_threshold", "0.05"));
      nms_.max_detections = std::stoul(s.param("max_detections", "100"));
    }
    if (s.op == "argmax" && s.param("axis", "0") != "0")
      throw std::invalid_argument("output '" + spec.name + "': argmax.axis " + s.param("axis") +
                                  " is not run; only axis 0, the class axis of a [classes, H, W] output");
  }
}

namespace {

const Tensor& float_output(const std::vector<Tensor>& outputs, std::size_t i, const std::string& who) {
  if (i >= outputs.size())
    throw std::invalid_argument(who + ": the model returned " + std::to_string(outputs.size()) +
                                " output(s), expected at least " + std::to_string(i + 1));
  if (outputs[i].is_int())
    throw std::invalid_argument(who + ": output " + std::to_string(i) + " holds integers, expected scores");
  return outputs[i];
}

std::size_t named_or(const std::vector<Tensor>& outputs, std::string_view name, std::size_t fallback) {
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].name == name) return i;
  return fallback;
}

}  // namespace

std::vector<InputPrediction> TaskPostprocessor::run(const std::vector<Tensor>& outputs,
                                                    const std::vector<std::string>& ids) const {
  const std::string who = "output '" + spec_.name + "' (" + spec_.type + ")";
  auto id = [&](std::size_t i) { return i < ids.size() ? ids[i] : std::string(); };
  std::vector<InputPrediction> out;
  if (spec_.type == "text_classification" || spec_.type == "classification") {
    const Tensor& y = float_output(outputs, 0, who);
    if (y.shape.size() != 2)
      throw std::invalid_argument(who + ": expected scores {N, classes}, got " + shape_string(y.shape));
    const auto n = static_cast<std::size_t>(y.shape[0]), classes = static_cast<std::size_t>(y.shape[1]);
    for (std::size_t i = 0; i < n; ++i)
      out.push_back(classify_row(id(i), y.data.data() + i * classes, classes, softmax_, top_k_));
    return out;
  }
  if (spec_.type == "detection") {
    const Tensor& boxes = float_output(outputs, named_or(outputs, "boxes", 0), who);
    const Tensor& scores = float_output(outputs, named_or(outputs, "scores", 1), who);
    if (boxes.shape.size() != 3 || boxes.shape[2] != 4 || scores.shape.size() != 3 ||
        scores.shape[0] != boxes.shape[0] || scores.shape[1] != boxes.shape[1])
      throw std::invalid_argument(who + ": expected boxes {N, A, 4} and scores {N, A, classes}, got " +
                                  shape_string(boxes.shape) + " and " + shape_string(scores.shape));
    const auto n = static_cast<std::size_t>(boxes.shape[0]), anchors = static_cast<std::size_t>(boxes.shape[1]),
               classes = static_cast<std::size_t>(scores.shape[2]);
    for (std::size_t i = 0; i < n; ++i) {
      InputPrediction p;
      p.input_id = id(i);
      p.detections = non_max_suppression(boxes.data.data() + i * anchors * 4,
                                         scores.data.data() + i * anchors * classes, anchors, classes, nms_);
      p.probabilities.assign(classes, 0.f);
      for (const Detection& d : p.detections) {
        float& best = p.probabilities[static_cast<std::size_t>(d.label)];
        if (d.score > best) best = d.score;
        if (std::find(p.top_classes.begin(), p.top_classes.end(), d.label) == p.top_classes.end())
          p.top_classes.push_back(d.label);  // detections are by score, so first seen = best score
      }
      out.push_back(std::move(p));
    }
    return out;
  }
  // segmentation
  const Tensor& y = float_output(outputs, named_or(outputs, spec_.name, 0), who);
  if (y.shape.size() != 4)
    throw std::invalid_argument(who + ": expected class scores {N, classes, H, W}, got " + shape_string(y.shape));
  const auto n = static_cast<std::size_t>(y.shape[0]), classes = static_cast<std::size_t>(y.shape[1]),
             h = static_cast<std::size_t>(y.shape[2]), w = static_cast<std::size_t>(y.shape[3]);
  for (std::size_t i = 0; i < n; ++i) {
    InputPrediction p;
    p.input_id = id(i);
    p.mask = argmax_mask(y.data.data() + i * classes * h * w, classes, h, w);
    const auto pixels = mask_class_pixels(p.mask, classes);
    p.probabilities.resize(classes);
    for (std::size_t c = 0; c < classes; ++c)
      p.probabilities[c] = static_cast<float>(static_cast<double>(pixels[c]) / static_cast<double>(h * w));
    for (std::size_t c = 0; c < classes; ++c)
      if (pixels[c] > 0) p.top_classes.push_back(static_cast<int>(c));
    std::stable_sort(p.top_classes.begin(), p.top_classes.end(), [&](int a, int b) {
      return pixels[static_cast<std::size_t>(a)] > pixels[static_cast<std::size_t>(b)];
    });
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace xsp
