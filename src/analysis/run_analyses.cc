// run_analyses(), the entry point the CLI, the server and the report use: it looks every id up in the registry of
// analyses (registry.h) and calls the entry's function on one AnalysisContext. No analysis is named here; the id
// lists are views of the registry.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "internal.h"
#include "xsp/analysis/analyses.h"
#include "xsp/analysis/generation_analyses.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/analysis/serving_join.h"

namespace xsp {
namespace {

// The ids of the registry's analyses whose family passes `keep`, in registry order.
template <typename Keep>
std::vector<std::string> ids_where(Keep keep) {
  std::vector<std::string> ids;
  for (const AnalysisSpec& s : analysis_registry())
    if (keep(s)) ids.push_back(s.id);
  return ids;
}

std::vector<int> covered_batch_sizes(const EvaluationRecord& record, const std::optional<int>& batch_size) {
  std::vector<int> measured = detail::measured_batch_sizes(record);
  if (!batch_size) return measured;
  if (std::find(measured.begin(), measured.end(), *batch_size) == measured.end()) {
    std::string msg = "batch size ";  // appended piecewise: GCC 12 warns (-Wrestrict) on "literal" + to_string()
    msg += std::to_string(*batch_size);
    msg += " was not measured in this evaluation; measured:";
    for (int b : measured) msg += " " + std::to_string(b);
    throw std::invalid_argument(msg);
  }
  return {*batch_size};
}

}  // namespace

const std::vector<std::string>& analysis_ids() {
  static const std::vector<std::string> ids = ids_where([](const AnalysisSpec&) { return true; });
  return ids;
}

const std::vector<std::string>& gpu_analysis_ids() {
  static const std::vector<std::string> ids =
      ids_where([](const AnalysisSpec& s) { return s.family == AnalysisFamily::kGpu; });
  return ids;
}

const std::vector<std::string>& generation_analysis_ids() {
  static const std::vector<std::string> ids =
      ids_where([](const AnalysisSpec& s) { return s.family == AnalysisFamily::kGeneration; });
  return ids;
}

std::vector<std::string> default_analysis_ids(const EvaluationRecord& record) {
  const bool generation = is_generation_evaluation(record);
  const bool serving = is_serving_evaluation(record);
  return ids_where([generation, serving](const AnalysisSpec& s) {
    switch (s.default_for) {
      case DefaultFor::kNone:
        return false;
      case DefaultFor::kEvery:
        return true;
      case DefaultFor::kInference:
        return !generation && !serving;
      case DefaultFor::kGeneration:
        return generation;
      case DefaultFor::kServing:
        return serving;
    }
    return false;
  });
}

AnalysisContext::AnalysisContext(const EvaluationRecord& record, AnalysisOptions options)
    : record_(record), options_(std::move(options)), batch_sizes_(covered_batch_sizes(record, options_.batch_size)) {}

AnalysisContext::~AnalysisContext() = default;

const FrameworkLayers& AnalysisContext::layers(int batch_size) {
  auto it = layers_.find(batch_size);
  if (it == layers_.end()) it = layers_.emplace(batch_size, framework_layers(record_, batch_size)).first;
  return it->second;
}

GpuRunsCache& AnalysisContext::gpu() {
  if (!gpu_) {
    gpu_ = std::make_unique<GpuRunsCache>(record_);
    if (options_.ceilings || !options_.ceilings_note.empty())
      gpu_->set_ceilings(options_.ceilings, options_.ceilings_note);
  }
  return *gpu_;
}

std::vector<Table> run_analysis(const AnalysisSpec& spec, AnalysisContext& context) {
  if (spec.function.per_batch) {
    std::vector<Table> out;
    out.reserve(context.batch_sizes().size());
    for (int b : context.batch_sizes()) out.push_back(spec.function.per_batch(context, b));
    return out;
  }
  if (spec.function.over_batches) return spec.function.over_batches(context);
  throw std::invalid_argument("table '" + spec.key + "' is not an analysis: it has no function to run");
}

std::vector<Table> run_analyses(const EvaluationRecord& record, const std::vector<std::string>& ids,
                                std::optional<int> batch_size, std::optional<double> latency_bound_ms) {
  AnalysisOptions options;
  options.batch_size = batch_size;
  options.latency_bound_ms = latency_bound_ms;
  return run_analyses(record, ids, options);
}

std::vector<Table> run_analyses(const EvaluationRecord& record, const std::vector<std::string>& ids,
                                const AnalysisOptions& options) {
  // Every id is looked up before anything runs, so a typo fails fast (analysis_spec() names the valid ids).
  std::vector<const AnalysisSpec*> specs;
  specs.reserve(ids.size());
  for (const std::string& id : ids) specs.push_back(&analysis_spec(id));
  AnalysisContext context(record, options);  // one aggregation per run, shared by the analyses
  std::vector<Table> out;
  for (const AnalysisSpec* spec : specs)
    for (Table& t : run_analysis(*spec, context)) out.push_back(std::move(t));
  return out;
}

}  // namespace xsp
