// Labeled dataset reader and accuracy counting; format in include/xsp/pipeline/dataset.h.
#include "xsp/pipeline/dataset.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "xsp/manifest/files.h"

namespace xsp {
namespace {

constexpr char kMagic[8] = {'X', 'S', 'P', 'D', 'S', '1', '\0', '\0'};
// Bounds that catch a corrupt header before a huge allocation: no sane dataset here comes near them.
constexpr std::uint32_t kMaxRank = 8;
constexpr std::uint64_t kMaxFeatures = std::uint64_t{1} << 32;

std::uint32_t read_u32(RegularFile& in, const std::filesystem::path& file, const std::string& field) {
  unsigned char b[4];
  if (in.read(b, 4) != 4) throw std::runtime_error(file.string() + ": truncated header (reading " + field + ")");
  return std::uint32_t{b[0]} | std::uint32_t{b[1]} << 8 | std::uint32_t{b[2]} << 16 | std::uint32_t{b[3]} << 24;
}

}  // namespace

std::size_t LabeledDataset::sample_size() const {
  std::size_t n = 1;
  for (auto d : sample_shape) n *= static_cast<std::size_t>(d);
  return n;
}

Tensor LabeledDataset::batch(std::size_t first, std::size_t n) const {
  if (first + n > size())
    throw std::out_of_range("dataset batch [" + std::to_string(first) + ", " + std::to_string(first + n) +
                            ") past the end (" + std::to_string(size()) + " samples)");
  Tensor t;
  t.shape = {static_cast<std::int64_t>(n)};
  t.shape.insert(t.shape.end(), sample_shape.begin(), sample_shape.end());
  const std::size_t s = sample_size();
  t.data.assign(features.begin() + static_cast<std::ptrdiff_t>(first * s),
                features.begin() + static_cast<std::ptrdiff_t>((first + n) * s));
  return t;
}

LabeledDataset read_labeled_dataset(const std::filesystem::path& file) {
  // A regular file only, read no further than the size it had when opened (a manifest may name /dev/zero or a FIFO).
  RegularFile in(file, "dataset file " + file.string());
  char magic[8];
  if (in.read(magic, 8) != 8 || std::memcmp(magic, kMagic, 8) != 0)
    throw std::runtime_error(file.string() + ": not an XSP dataset file (magic is not \"XSPDS1\")");
  const std::uint32_t count = read_u32(in, file, "count");
  const std::uint32_t rank = read_u32(in, file, "rank");
  if (rank == 0 || rank > kMaxRank)
    throw std::runtime_error(file.string() + ": field rank = " + std::to_string(rank) + ", expected 1.." +
                             std::to_string(kMaxRank));
  LabeledDataset ds;
  std::uint64_t per_sample = 1;
  for (std::uint32_t i = 0; i < rank; ++i) {
    const std::uint32_t d = read_u32(in, file, "dims[" + std::to_string(i) + "]");
    if (d == 0) throw std::runtime_error(file.string() + ": field dims[" + std::to_string(i) + "] = 0");
    per_sample *= d;
    if (per_sample * count > kMaxFeatures)
      throw std::runtime_error(file.string() + ": header too large (count x dims)");
    ds.sample_shape.push_back(d);
  }
  // The header's count against the file's size, before allocating: a header claiming more samples than the file
  // holds is truncated, one with bytes after the last sample has trailing bytes.
  const std::uint64_t record_bytes = per_sample * sizeof(float) + sizeof(std::int32_t);
  const std::uint64_t body = in.size() - in.position();
  if (body / record_bytes < count)
    throw std::runtime_error(file.string() + ": truncated at sample " + std::to_string(body / record_bytes) + " of " +
                             std::to_string(count) + " (the header says " + std::to_string(count) + " samples of " +
                             std::to_string(record_bytes) + " bytes, the file has " + std::to_string(body) +
                             " bytes after the header)");
  if (body > record_bytes * count)
    throw std::runtime_error(file.string() + ": trailing bytes after " + std::to_string(count) + " samples (" +
                             std::to_string(body - record_bytes * count) + " bytes)");
  ds.features.resize(per_sample * count);
  ds.labels.resize(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    // Features then the label, both little-endian 4-byte values (the hosts XSP targets are little-endian).
    in.read_exactly(ds.features.data() + i * per_sample, static_cast<std::size_t>(per_sample * sizeof(float)),
                    "sample " + std::to_string(i) + " of " + std::to_string(count));
    in.read_exactly(&ds.labels[i], sizeof(std::int32_t), "the label of sample " + std::to_string(i));
  }
  return ds;
}

void score_batch(AccuracyCounts& counts, const Tensor& scores, const std::vector<int>& labels) {
  if (scores.shape.size() != 2)
    throw std::invalid_argument("accuracy: scores must be 2-D {N, classes}, got rank " +
                                std::to_string(scores.shape.size()));
  const auto n = static_cast<std::size_t>(scores.shape[0]);
  const auto classes = static_cast<std::size_t>(scores.shape[1]);
  if (n != labels.size())
    throw std::invalid_argument("accuracy: " + std::to_string(n) + " rows of scores for " +
                                std::to_string(labels.size()) + " labels");
  // Check every label first, so that a bad batch leaves the counts as they were.
  for (std::size_t i = 0; i < n; ++i)
    if (labels[i] < 0 || static_cast<std::size_t>(labels[i]) >= classes)
      throw std::invalid_argument("accuracy: label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
                                  " outside [0, " + std::to_string(classes) + ")");
  for (std::size_t i = 0; i < n; ++i) {
    const int label = labels[i];
    const float* row = scores.data.data() + i * classes;
    std::size_t higher = 0;
    for (std::size_t c = 0; c < classes; ++c)
      if (row[c] > row[label]) ++higher;
    ++counts.samples;
    if (higher == 0) ++counts.top1;
    if (higher < static_cast<std::size_t>(counts.k)) ++counts.topk;
  }
}

}  // namespace xsp
