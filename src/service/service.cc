// The service both front ends call (include/xsp/service/service.h): the store, the analyses, the report, the trace
// exports and the zoo, with library exceptions turned into the service's typed ones where the caller acts on them.
#include "xsp/service/service.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
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
    case TraceFormat::kPerfetto:
      return ".pftrace";
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

EvaluationPage list_evaluations_matching(Store& store, const EvaluationFilter& filter, const std::string& model_text) {
  if (model_text.empty()) return list_evaluations(store, filter);
  auto folded = [](std::string_view text) {
    std::string out;
    for (char c : text)
      if (c != '_' && c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string wanted = folded(model_text);
  EvaluationFilter all = filter;  // the loose match is not SQL: filter every listing, then page
  all.limit.reset();
  all.offset = 0;
  EvaluationPage page;
  for (EvaluationListing& e : store.list(all)) {
    if (folded(e.model_name).find(wanted) == std::string::npos) continue;
    ++page.total;
    if (page.total <= filter.offset) continue;
    if (filter.limit && page.evaluations.size() >= *filter.limit) continue;
    page.evaluations.push_back(std::move(e));
  }
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

ListingMetrics listing_metrics(const EvaluationListing& listing) {
  // Per batch size, the run at the shallowest trace level: deeper levels add the tracer's overhead to the latency.
  std::map<int, const RunFigures*> shallowest;
  for (const RunFigures& r : listing.runs) {
    const RunFigures*& kept = shallowest[r.batch_size];
    if (kept == nullptr || r.trace_level < kept->trace_level) kept = &r;
  }
  ListingMetrics m;
  bool all_stable = !shallowest.empty();
  bool any_unstable = false;
  for (const auto& [batch_size, run] : shallowest) {  // ascending batch size
    if (!m.p50_batch_size && std::isfinite(run->predict_p50_ns)) {
      m.p50_batch_size = batch_size;
      m.p50_ns = run->predict_p50_ns;
    }
    if (std::isfinite(run->throughput_samples_per_s)) {  // the last one kept is the largest batch size's
      m.throughput_batch_size = batch_size;
      m.throughput_samples_per_s = run->throughput_samples_per_s;
    }
    any_unstable = any_unstable || run->stability == "unstable";
    all_stable = all_stable && run->stability == "stable";
  }
  if (!shallowest.empty()) m.stability = any_unstable ? "unstable" : all_stable ? "stable" : "not_assessed";
  return m;
}

namespace {

// Code points of `text` when it is valid UTF-8 (no overlong forms, surrogates or values past U+10FFFF), else nullopt.
std::optional<std::size_t> utf8_length(std::string_view text) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size(); ++count) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > text.size()) return std::nullopt;
    std::uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (std::size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xC0) != 0x80) return std::nullopt;
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
    i += n;
  }
  return count;
}

// `value` shortened for a message, so that a refused 1 MB note is not echoed whole.
std::string shown_value(std::string_view value) {
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  for (char c : value.substr(0, kShown)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return out + (value.size() > kShown ? "...'" : "'");
}

void check_text(const std::string& field, std::string_view value, std::size_t max_chars, bool lines) {
  const auto length = utf8_length(value);
  if (!length) throw InvalidArgument(field + ": expected UTF-8 text, got bytes that are not UTF-8", field);
  if (*length > max_chars)
    throw InvalidArgument(field + ": at most " + std::to_string(max_chars) + " characters, got " +
                              std::to_string(*length) + " (" + shown_value(value) + ")",
                          field);
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 || c == 0x7F) && !(lines && (c == '\n' || c == '\t' || c == '\r')))
      throw InvalidArgument(field + ": " +
                                (lines ? "control characters other than newline and tab are not allowed"
                                       : "expected one line of text without control characters") +
                                ", got " + shown_value(value),
                            field);
  }
}

void check_tag(const std::string& tag) {
  const bool ok = !tag.empty() && tag.size() <= kMaxTagChars && std::all_of(tag.begin(), tag.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("._:/+=@-").find(c) != std::string_view::npos;
  });
  if (!ok)
    throw InvalidArgument("tags: " + shown_value(tag) + " is not a tag: expected 1 to " + std::to_string(kMaxTagChars) +
                              " of ASCII letters, digits and . _ : / + = @ -",
                          "tags");
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  return first == std::string::npos ? std::string() : text.substr(first, text.find_last_not_of(' ') - first + 1);
}

}  // namespace

void validate_label_change(const LabelChange& change) {
  if (change.empty()) throw InvalidArgument("labels: nothing to change: give a name, tags or a note", "labels");
  if (change.name) check_text("name", *change.name, kMaxLabelNameChars, false);
  if (change.tags)
    for (const std::string& t : *change.tags) check_tag(t);
  for (const std::string& t : change.add_tags) check_tag(t);
  for (const std::string& t : change.remove_tags) check_tag(t);
  if (change.note) check_text("note", *change.note, kMaxNoteChars, true);
}

EvaluationLabels label_evaluation(Store& store, std::int64_t id, const LabelChange& change) {
  validate_label_change(change);
  const auto stored = store.update_labels(id, [&](const EvaluationLabels& now) {
    EvaluationLabels next = now;
    if (change.name) next.name = trimmed(*change.name);
    if (change.note) next.note = *change.note;
    std::set<std::string> tags(now.tags.begin(), now.tags.end());
    if (change.tags) tags = std::set<std::string>(change.tags->begin(), change.tags->end());
    tags.insert(change.add_tags.begin(), change.add_tags.end());
    for (const std::string& t : change.remove_tags) tags.erase(t);
    if (tags.size() > kMaxTags)
      throw InvalidArgument("tags: at most " + std::to_string(kMaxTags) + " tags on an evaluation, this would make " +
                                std::to_string(tags.size()),
                            "tags");
    next.tags.assign(tags.begin(), tags.end());
    return next;
  });
  if (!stored) throw EvaluationNotFound(id, store.file().string());
  return *stored;
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
  result.options.op_group_by = request.op_group_by;
  result.options.op_top = request.op_top;
  result.options.op_sort = request.op_sort;
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
  options.links = request.links;
  options.compare.batch_size = request.batch_size;
  ReportResult result;
  result.evaluations = evaluations.size();
  result.html = refusing_invalid_arguments(request.ids.empty() ? "ids" : "batch_size",
                                           [&] { return render_report(evaluations, options, &result.charts); });
  return result;
}

namespace {

// As load_evaluation(), without the traces (Store::load_without_traces).
EvaluationRecord load_evaluation_without_traces(Store& store, std::int64_t id) {
  auto record = store.load_without_traces(id);
  if (!record) throw EvaluationNotFound(id, store.file().string());
  return std::move(*record);
}

}  // namespace

RunTrace export_trace(Store& store, const TraceRequest& request) {
  // Only the chosen run's trace is decoded, not every run's.
  EvaluationRecord record = load_evaluation_without_traces(store, request.evaluation_id);
  const RunRecord* run = nullptr;
  RunTrace trace = choose(record, request, run);
  RunRecord whole = *run;
  whole.trace = read_stored_trace(store, run->id);
  if (request.batches) keep_batches(whole.trace, *request.batches);
  trace.span_count = whole.trace.spans.size();
  trace.content = export_run_trace_to_string(record, whole, request.format);
  return trace;
}

RunTrace export_trace_to_file(Store& store, const TraceRequest& request, const fs::path& file) {
  const EvaluationRecord record = load_evaluation_without_traces(store, request.evaluation_id);
  const RunRecord* run = nullptr;
  RunTrace trace = choose(record, request, run);
  const TraceExportResult written =
      export_stored_trace(store, record, *run, request.format, file, {request.batches, request.max_bytes});
  trace.span_count = static_cast<std::size_t>(written.spans);
  trace.files = written.files;
  return trace;
}

std::unique_ptr<TraceStream> open_trace_stream(Store& store, const TraceRequest& request) {
  if (request.format != TraceFormat::kPerfetto) {
    throw InvalidArgument("a streamed trace is a Perfetto one, not " + std::string(to_string(request.format)),
                          "format");
  }
  auto stream = std::make_unique<TraceStream>();
  stream->record = load_evaluation_without_traces(store, request.evaluation_id);
  const RunRecord* run = nullptr;
  stream->info = choose(stream->record, request, run);
  stream->perfetto = std::make_unique<StoredPerfettoStream>(store, stream->record, *run, request.batches);
  return stream;
}

std::uint64_t write_trace_stream(TraceStream& stream, std::ostream& out) {
  const std::uint64_t spans = stream.perfetto->write(out);
  stream.info.span_count = static_cast<std::size_t>(spans);
  return spans;
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
