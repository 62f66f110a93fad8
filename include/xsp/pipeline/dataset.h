// Labeled held-out datasets for accuracy measurement (`xsp evaluate MODEL --dataset NAME --accuracy`).
//
// File format (written by scripts/export_zoo.py write_split(); little-endian, readable without numpy):
//   8 bytes magic "XSPDS1\0\0", uint32 count, uint32 rank, uint32 dims[rank],
//   then `count` records of prod(dims) float32 features followed by one int32 label.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "xsp/predictor/tensor.h"

namespace xsp {

/// Samples with their class labels, features row-major (sample i at features[i * sample_size()]).
struct LabeledDataset {
  std::vector<std::int64_t> sample_shape;  ///< per-sample dims, e.g. {1, 8, 8}
  std::vector<float> features;
  std::vector<int> labels;
  std::size_t size() const { return labels.size(); }
  std::size_t sample_size() const;  ///< product of sample_shape
  /// Samples [first, first + n) as a tensor {n, sample_shape...}. Throws std::out_of_range past the end.
  Tensor batch(std::size_t first, std::size_t n) const;
};

/// Reads a dataset file (format above), a regular file read no further than its size at open (RegularFile,
/// xsp/manifest/files.h). Throws std::runtime_error naming the file when it is missing or not a regular file (a
/// folder, /dev/zero, a FIFO), and naming the bad field (magic, rank, dims, count) or a truncated file or trailing
/// bytes (checked against the file's size before the samples are allocated).
LabeledDataset read_labeled_dataset(const std::filesystem::path& file);

/// Top-1/top-k counts over scored samples.
struct AccuracyCounts {
  std::size_t samples = 0;
  std::size_t top1 = 0;  ///< samples whose highest score is the label
  std::size_t topk = 0;  ///< samples whose label is among the k highest scores
  int k = 5;
  double top1_percent() const { return samples ? 100.0 * static_cast<double>(top1) / static_cast<double>(samples) : 0; }
  double topk_percent() const { return samples ? 100.0 * static_cast<double>(topk) / static_cast<double>(samples) : 0; }
};

/// Adds one batch: `scores` {N, classes} (logits or probabilities: only the order matters), `labels` N class
/// indices. A label is in the top k when fewer than k classes score strictly higher than it (ties count in the
/// label's favour, so a constant output is "right" for everything; real models do not tie). Throws
/// std::invalid_argument when scores are not 2-D, N differs from labels.size(), or a label is outside
/// [0, classes); the counts are then unchanged.
void score_batch(AccuracyCounts& counts, const Tensor& scores, const std::vector<int>& labels);

}  // namespace xsp
