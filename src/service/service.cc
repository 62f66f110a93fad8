// The service both front ends call (include/xsp/service/service.h): the store, the analyses, the report, the trace
// exports and the zoo, with library exceptions turned into the service's typed ones where the caller acts on them.
#include "xsp/service/service.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "xsp/analysis/compare.h"
#include "xsp/analysis/roofline.h"
#include "xsp/manifest/manifest.h"
#include "xsp/predictor/predictor.h"
#include "xsp/report/report.h"

namespace xsp::service {
namespace {

namespace fs = std::filesystem;

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The library says "batch size not measured" and "too few evaluations" with std::invalid_argument; which input was
// at fault follows from the request.
template <typename F>
auto refusing_invalid_arguments(const std::string& field, F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const std::invalid_argument& e) {
    throw InvalidArgument(e.what(), field);
  }
}

std::vector<EvaluationRecord> load_all(Store& store, const std::vector<std::int64_t>& ids) {
  std::vector<EvaluationRecord> records;
  records.reserve(ids.size());
  for (std::int64_t id : ids) records.push_back(load_evaluation(store, id));
  return records;
}

const char* file_extension(TraceFormat format) {
  switch (format) {
    case TraceFormat::kSqlite:
      return ".sqlite";
    case TraceFormat::kOtlp:
      return ".otlp.json";
    case TraceFormat::kChrome:
      break;
  }
  return ".json";
}

// The run a TraceRequest names, as a RunTrace without content; `run` is set to it.
RunTrace choose(const EvaluationRecord& record, const TraceRequest& request, const RunRecord*& run) {
  try {
    run = &choose_run(record, request.run);
  } catch (const std::invalid_argument& e) {
    const RunChoice& c = request.run;
    throw RunNotFound(e.what(), c.run ? "run" : c.batch_size ? "batch_size" : "trace_level");
  }
  RunTrace t;
  t.evaluation_id = request.evaluation_id;
  t.run_number = static_cast<std::size_t>(run - record.runs.data()) + 1;
  t.run_id = run->id;
  t.span_count = run->trace.spans.size();
  t.file_name = "xsp-evaluation-" + std::to_string(request.evaluation_id) + "-run-" + std::to_string(t.run_number) +
                file_extension(request.format);
  return t;
}

ModelEntry model_entry(const Manifest& m, const std::vector<std::string>& built) {
  ModelEntry e;
  e.manifest = m.path;
  e.name = m.name;
  e.version = m.version;
  e.description = m.description;
  for (const GraphSpec& g : m.graphs) {
    std::error_code ec;  // a graph the file system refuses to look at is not exported
    const bool exported = fs::is_regular_file(m.resolved_graph_path(g.framework), ec);
    const bool in_build = std::find(built.begin(), built.end(), g.framework) != built.end();
    e.frameworks.push_back({g.framework, g.constraint, g.graph_path, exported, in_build});
  }
  for (const InputSpec& in : m.inputs) e.input_dimensions.push_back(in.dimensions);
  e.attributes = m.attributes;
  return e;
}

}  // namespace

ServiceError::ServiceError(const std::string& message, std::string field)
    : std::runtime_error(message), field_(std::move(field)) {}

EvaluationNotFound::EvaluationNotFound(std::int64_t id, const std::string& store_location)
    : NotFound("no evaluation " + std::to_string(id) + " in store " + store_location, "id"), id_(id) {}

EvaluationRecord load_evaluation(Store& store, std::int64_t id) {
  auto record = store.load(id);
  if (!record) throw EvaluationNotFound(id, store.file().string());
  return std::move(*record);
}

EvaluationPage list_evaluations(Store& store, const EvaluationFilter& filter) {
  EvaluationPage page;
  page.evaluations = store.list(filter);
  page.total = store.count(filter);
  return page;
}

EvaluationListing find_evaluation(Store& store, std::int64_t id) {
  // The listing has batch sizes and runs; a linear pass over it reads no trace.
  for (EvaluationListing& e : store.list(EvaluationFilter{}))
    if (e.id == id) return std::move(e);
  throw EvaluationNotFound(id, store.file().string());
}

void delete_evaluation(Store& store, std::int64_t id) {
  if (!store.remove(id)) throw EvaluationNotFound(id, store.file().string());
}

AnalysisOptions analysis_options(Store& store, const EvaluationRecord& record) {
  AnalysisOptions options;
  const std::vector<MachineCeilings> stored = store.list_ceilings();
  std::string note;
  if (const MachineCeilings* c = select_ceilings(stored, evaluation_machine(record), &note)) options.ceilings = *c;
  options.ceilings_note = note;
  return options;
}

const std::string& analysis_id(std::string_view text) {
  const std::vector<std::string>& ids = analysis_ids();
  const auto known =
      std::find_if(ids.begin(), ids.end(), [&](const std::string& k) { return same_ignoring_case(k, text); });
  if (known != ids.end()) return *known;
  std::string list;
  for (const auto& k : ids) list += (list.empty() ? "" : ", ") + k;
  throw AnalysisNotFound("no analysis '" + std::string(text) + "'; expected one of " + list, "analysis");
}

AnalysisResult analyze(Store& store, const AnalysisRequest& request) {
  AnalysisResult result;
  for (const std::string& id : request.analyses) result.analyses.push_back(analysis_id(id));
  result.record = load_evaluation(store, request.evaluation_id);
  if (request.analyses.empty()) result.analyses = default_analysis_ids(result.record);
  result.options = analysis_options(store, result.record);
  result.options.batch_size = request.batch_size;
  result.options.latency_bound_ms = request.latency_bound_ms;
  result.tables = refusing_invalid_arguments(
      "batch_size", [&] { return run_analyses(result.record, result.analyses, result.options); });
  return result;
}

std::vector<Table> compare(Store& store, const CompareRequest& request) {
  const std::vector<EvaluationRecord> records = load_all(store, request.ids);
  CompareOptions options;
  options.batch_size = request.batch_size;
  return refusing_invalid_arguments(request.ids.size() < 2 ? "ids" : "batch_size",
                                    [&] { return compare_evaluations(records, options); });
}

ReportResult report(Store& store, const ReportRequest& request) {
  if (!report_assets_available())
    throw Unavailable(
        "this build has no report assets: Vega, Vega-Lite and vega-embed were not found in "
        "tools/vega/node_modules at configure time (run scripts/install-deps.sh, then rebuild)",
        "report assets");
  std::vector<ReportEvaluation> evaluations;
  for (std::int64_t id : request.ids) {
    ReportEvaluation e;
    e.record = load_evaluation(store, id);
    e.options = analysis_options(store, e.record);
    e.options.batch_size = request.batch_size;
    evaluations.push_back(std::move(e));
  }
  ReportOptions options;
  options.title = request.title;
  options.compare.batch_size = request.batch_size;
  ReportResult result;
  result.evaluations = evaluations.size();
  result.html = refusing_invalid_arguments(request.ids.empty() ? "ids" : "batch_size",
                                           [&] { return render_report(evaluations, options, &result.charts); });
  return result;
}

RunTrace export_trace(Store& store, const TraceRequest& request) {
  const EvaluationRecord record = load_evaluation(store, request.evaluation_id);
  const RunRecord* run = nullptr;
  RunTrace trace = choose(record, request, run);
  trace.content = export_run_trace_to_string(record, *run, request.format);
  return trace;
}

RunTrace export_trace_to_file(Store& store, const TraceRequest& request, const fs::path& file) {
  const EvaluationRecord record = load_evaluation(store, request.evaluation_id);
  const RunRecord* run = nullptr;
  RunTrace trace = choose(record, request, run);
  export_run_trace(record, *run, request.format, file);
  return trace;
}

ModelListing list_models(const fs::path& zoo) {
  Zoo scanned;
  try {
    scanned = scan_zoo(zoo);
  } catch (const ManifestError& e) {  // the folder itself: missing, not a folder, cannot be listed
    throw Unavailable(e.what(), "zoo");
  }
  ModelListing listing;
  listing.predictors_in_this_build = registered_predictors();
  for (const Manifest& m : scanned.models) {
    // One manifest that cannot be listed is a problem of its own, not the end of the listing.
    try {
      listing.models.push_back(model_entry(m, listing.predictors_in_this_build));
    } catch (const std::exception& e) {
      listing.problems.push_back({m.path, m.path.string() + ": " + e.what()});
    }
  }
  for (const ZooProblem& p : scanned.problems) listing.problems.push_back({p.file, p.message});
  return listing;
}

}  // namespace xsp::service
