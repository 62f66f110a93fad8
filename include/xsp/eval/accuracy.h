// Accuracy of a loaded classifier on a labeled held-out dataset (`xsp evaluate --dataset NAME --accuracy`).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "xsp/manifest/manifest.h"
#include "xsp/pipeline/dataset.h"
#include "xsp/predictor/predictor.h"

namespace xsp {

/// The dataset file a manifest names for `dataset` (attributes `dataset`, `dataset_path`, `dataset_checksum`),
/// resolved against the manifest's directory and verified by SHA-256. Throws std::runtime_error naming the
/// manifest and the missing attribute, a dataset name that differs (listing the one it has), or a checksum
/// mismatch (expected and actual digests).
std::filesystem::path manifest_dataset_path(const Manifest& manifest, const std::string& dataset);

/// Feeds every sample of `data` through `predictor` (loaded) in batches of `batch_size` (the last one may be
/// smaller) and counts top-1 and top-k (k = 5) hits on the first output {N, classes}. Throws
/// std::invalid_argument when batch_size < 1 or the samples' shape differs from `sample_dims` (the manifest's
/// input dimensions).
AccuracyCounts measure_accuracy(Predictor& predictor, const LabeledDataset& data, int batch_size,
                                const std::vector<long>& sample_dims);

/// {top1, top5 (percent), top1_correct, top5_correct, samples, dataset, split, batch_size}: what an evaluation
/// stores in settings["accuracy"].
nlohmann::json accuracy_json(const AccuracyCounts& counts, const std::string& dataset, const std::string& split,
                             int batch_size);

}  // namespace xsp

namespace xsp {

/// The whole `--dataset NAME --accuracy` pass: reads and verifies the manifest's dataset, measures accuracy at
/// every batch size (the figures must not depend on it; each is kept under "top1_by_batch_size") and returns
/// accuracy_json() of the first batch size plus that map. Errors as manifest_dataset_path(),
/// read_labeled_dataset() and measure_accuracy().
nlohmann::json run_accuracy(const Manifest& manifest, Predictor& predictor, const std::string& dataset,
                            const std::vector<int>& batch_sizes);

/// One line for the terminal, e.g. "accuracy on digits (test 20%...): top-1 97.22% (350/360), top-5 ...", from
/// an evaluation's settings; "" when settings holds no "accuracy".
std::string describe_accuracy(const nlohmann::json& settings);

}  // namespace xsp
