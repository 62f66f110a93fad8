// Pre- and post-processing of the tasks beyond image classification (docs/tasks.md): text inputs made into token id
// and attention mask tensors, and the outputs of detection (NMS), segmentation (argmax masks) and text
// classification made into InputPredictions. The evaluation runner times them as the MODEL spans preprocess and
// postprocess, like the classification pipeline of xsp/pipeline/pipeline.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/tokenizer.h"
#include "xsp/predictor/tensor.h"
#include "xsp/record/record.h"

namespace xsp {

/// Whether run_batch_sweep() feeds this manifest through the task pipeline of this header (several inputs, a text
/// input, or an output type other than classification) rather than the classification one. Never throws.
bool uses_task_pipeline(const Manifest& manifest);

/// The token tensors of a batch of texts, for a model whose inputs are one `text` input (tokenize, optional
/// pad_truncate) and optionally `tensor` inputs named attention_mask (1 for a token, 0 for padding) and
/// token_type_ids (all 0), as Hugging Face tokenizers name them. Every tensor is integer, {N, L}, L the text input's
/// pad_truncate.length (else its dimensions[0]).
class TextBatcher {
 public:
  /// `tokenizer` must outlive the batcher. Throws std::invalid_argument naming the manifest file and the input when
  /// there is not exactly one text input, another input is not one of the two named above, is not integer, or
  /// its dimensions are not [L].
  TextBatcher(const Manifest& manifest, const Tokenizer& tokenizer);
  /// One tensor per manifest input, in manifest order, each {texts.size(), L}, Tensor::name the input's name.
  /// A text of more than L tokens is cut and one of fewer padded with pad_truncate.pad_id, both at the end
  /// (pad_truncate.side right, Hugging Face's default) or at the start (left). Throws std::invalid_argument when
  /// `texts` is empty, std::runtime_error when SentencePiece fails.
  std::vector<Tensor> run(const std::vector<std::string>& texts) const;
  /// L: the token count of every row.
  std::int64_t length() const { return length_; }

 private:
  struct Role {
    std::string name;
    int kind = 0;  // 0 ids, 1 attention mask, 2 token type ids
  };
  const Tokenizer& tokenizer_;
  std::vector<Role> roles_;
  std::int64_t length_ = 0;
  std::int64_t pad_id_ = 0;
  bool pad_left_ = false, add_bos_ = false, add_eos_ = false;
};

/// What the manifest's nms step asks for, in torchvision's terms (torchvision.models.detection.SSD: score_thresh,
/// nms_thresh, detections_per_img, topk_candidates).
struct NmsOptions {
  double iou_threshold = 0.5;              ///< a box whose IoU with a kept box of its class is above this is dropped
  double score_threshold = 0.05;           ///< only scores strictly above this are candidates
  std::size_t max_detections = 100;        ///< kept per input, best scores first
  std::size_t candidates_per_class = 300;  ///< best-scoring candidates per class that enter NMS
};

/// Greedy non-maximum suppression per class over one input's anchors, as torchvision's SSD.postprocess_detections
/// (torchvision 0.14, models/detection/ssd.py) with torchvision.ops.batched_nms: for each class c >= 1 (0 is the
/// background), the scores above score_threshold, at most candidates_per_class of them by score; then, per class,
/// boxes in decreasing score order are kept unless their IoU (box_iou: intersection over union of the areas) with
/// a kept box of the same class exceeds iou_threshold; the kept ones of all classes by decreasing score (ties:
/// lower class, then lower anchor), cut to max_detections. `boxes` are {anchors, 4} as x1, y1, x2, y2, `scores`
/// {anchors, classes}, both row-major. Never throws (but std::bad_alloc).
std::vector<Detection> non_max_suppression(const float* boxes, const float* scores, std::size_t anchors,
                                           std::size_t classes, const NmsOptions& options);

/// Per-pixel argmax over the classes of one segmentation output {classes, height, width} (row-major), run-length
/// encoded (SegmentationMask::runs); ties go to the lower class, as torch.argmax. Never throws (but bad_alloc).
SegmentationMask argmax_mask(const float* logits, std::size_t classes, std::size_t height, std::size_t width);

/// Pixels per class of a mask, indexed by class (size: the largest class + 1, at least `classes`). Throws
/// std::invalid_argument when the runs are malformed (odd length, negative class or count, or counts not summing
/// to height * width).
std::vector<std::int64_t> mask_class_pixels(const SegmentationMask& mask, std::size_t classes = 0);

/// Softmax (when `softmax`) and the top `k` classes of one row of `classes` scores, as an InputPrediction.
/// The softmax runs in double after subtracting the row's maximum (no overflow for large logits). Never throws (but
/// bad_alloc).
InputPrediction classify_row(std::string input_id, const float* row, std::size_t classes, bool softmax, std::size_t k);

/// The post-processing of an output of type detection, segmentation or text_classification, from its manifest
/// steps. What a model must return for each (the contract of the zoo's exports, docs/tasks.md):
///  - detection: boxes {N, A, 4} (x1, y1, x2, y2 in input pixels) and scores {N, A, classes} (class 0 the
///    background), the outputs named "boxes" and "scores" (dict keys) or else the first two, in that order;
///  - segmentation: {N, classes, H, W}, the output whose name is the manifest output's name (a dict key such as
///    "out") or else the first;
///  - text_classification: {N, classes}, the first output.
class TaskPostprocessor {
 public:
  /// Throws std::invalid_argument naming the manifest output when its type is none of the three, or a segmentation
  /// argmax.axis is not 0 (the class axis of {classes, H, W}, the only one run).
  explicit TaskPostprocessor(const OutputSpec& spec);
  /// One InputPrediction per row of the batch, `ids[i]` its input id ("" past the end of ids). Throws
  /// std::invalid_argument naming the output and the shape when the model's outputs do not have the shapes above.
  std::vector<InputPrediction> run(const std::vector<Tensor>& outputs, const std::vector<std::string>& ids) const;
  /// Whether the class scores are softmax probabilities (classification-like outputs with a softmax step).
  bool softmax() const { return softmax_; }
  std::size_t top_k() const { return top_k_; }

 private:
  OutputSpec spec_;
  NmsOptions nms_;
  bool softmax_ = false;
  std::size_t top_k_ = 5;
};

}  // namespace xsp
