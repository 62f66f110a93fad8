// Accuracy on a labeled dataset; see include/xsp/eval/accuracy.h.
#include "xsp/eval/accuracy.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace xsp {
namespace {

std::string attribute(const Manifest& m, const std::string& key) {
  auto it = m.attributes.find(key);
  if (it == m.attributes.end() || it->second.empty())
    throw std::runtime_error(m.path.string() + ": attributes." + key + " is missing: model " + m.name +
                             " has no labeled dataset");
  return it->second;
}

}  // namespace

std::filesystem::path manifest_dataset_path(const Manifest& manifest, const std::string& dataset) {
  const std::string name = attribute(manifest, "dataset");
  if (name != dataset)
    throw std::runtime_error("model " + manifest.name + " has dataset '" + name + "', not '" + dataset + "' (" +
                             manifest.path.string() + ": attributes.dataset)");
  std::filesystem::path file = attribute(manifest, "dataset_path");
  if (file.is_relative()) file = manifest.path.parent_path() / file;
  const std::string expected = attribute(manifest, "dataset_checksum");
  if (!std::filesystem::is_regular_file(file))
    throw std::runtime_error(file.string() + ": dataset file not found (" + manifest.path.string() +
                             ": attributes.dataset_path; scripts/export_zoo.py writes it)");
  const std::string actual = "sha256:" + sha256_file(file);
  if (actual != expected)
    throw std::runtime_error(file.string() + ": checksum " + actual + " differs from " + manifest.path.string() +
                             ": attributes.dataset_checksum = " + expected);
  return file;
}

AccuracyCounts measure_accuracy(Predictor& predictor, const LabeledDataset& data, int batch_size,
                                const std::vector<long>& sample_dims) {
  if (batch_size < 1)
    throw std::invalid_argument("accuracy: batch size must be >= 1, got " + std::to_string(batch_size));
  if (!std::equal(data.sample_shape.begin(), data.sample_shape.end(), sample_dims.begin(), sample_dims.end()))
    throw std::invalid_argument("accuracy: the dataset's samples do not have the model's input dimensions");
  AccuracyCounts counts;
  for (std::size_t first = 0; first < data.size(); first += static_cast<std::size_t>(batch_size)) {
    const std::size_t n = std::min(static_cast<std::size_t>(batch_size), data.size() - first);
    const Tensor out = predictor.predict(data.batch(first, n));
    score_batch(counts, out,
                std::vector<int>(data.labels.begin() + static_cast<std::ptrdiff_t>(first),
                                 data.labels.begin() + static_cast<std::ptrdiff_t>(first + n)));
  }
  return counts;
}

nlohmann::json accuracy_json(const AccuracyCounts& c, const std::string& dataset, const std::string& split,
                             int batch_size) {
  return {{"top1", c.top1_percent()}, {"top5", c.topk_percent()}, {"top1_correct", c.top1}, {"top5_correct", c.topk},
          {"samples", c.samples},     {"dataset", dataset},       {"split", split},         {"batch_size", batch_size}};
}

}  // namespace xsp

namespace xsp {

nlohmann::json run_accuracy(const Manifest& manifest, Predictor& predictor, const std::string& dataset,
                            const std::vector<int>& batch_sizes) {
  if (batch_sizes.empty()) throw std::invalid_argument("accuracy: no batch sizes");
  const LabeledDataset data = read_labeled_dataset(manifest_dataset_path(manifest, dataset));
  auto split = manifest.attributes.find("dataset_split");
  nlohmann::json out;
  nlohmann::json by_batch = nlohmann::json::object();
  for (int b : batch_sizes) {
    const AccuracyCounts c = measure_accuracy(predictor, data, b, manifest.inputs.front().dimensions);
    if (out.is_null()) out = accuracy_json(c, dataset, split == manifest.attributes.end() ? "" : split->second, b);
    by_batch[std::to_string(b)] = c.top1_percent();
  }
  out["top1_by_batch_size"] = by_batch;
  return out;
}

std::string describe_accuracy(const nlohmann::json& settings) {
  if (!settings.is_object() || !settings.contains("accuracy")) return "";
  const auto& a = settings["accuracy"];
  char buf[256];
  std::snprintf(buf, sizeof buf, "top-1 %.2f%% (%lld/%lld), top-5 %.2f%% (%lld/%lld)", a.value("top1", 0.0),
                static_cast<long long>(a.value("top1_correct", 0)), static_cast<long long>(a.value("samples", 0)),
                a.value("top5", 0.0), static_cast<long long>(a.value("top5_correct", 0)),
                static_cast<long long>(a.value("samples", 0)));
  return "accuracy on " + a.value("dataset", std::string("?")) + " (" + a.value("split", std::string("")) +
         ", batch size " + std::to_string(a.value("batch_size", 0)) + "): " + buf;
}

}  // namespace xsp
