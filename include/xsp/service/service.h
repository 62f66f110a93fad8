// One service for both front ends (docs/architecture.md "Service"): what `xsp serve` and the `xsp` commands both do
// over the results store and the model zoo, as typed calls with typed results, the way Perfetto's trace_processor
// Rpc serves its HTTP, stdio and wasm fronts. The front ends only parse their input (query parameters, flags) into
// these requests and render the results (JSON, terminal tables); the rules (which ceilings an evaluation's analyses
// use, which run a trace export takes, what a zoo listing holds) live here once.
//
// Nothing here knows HTTP or the command line. Failures the caller can act on are ServiceError subclasses carrying
// the input at fault (field()); the server maps them to 404/400/503 answers and the CLI to its exit codes
// (README "Exit codes"). StoreError (xsp/store/store.h) passes through unchanged: 503 / exit 3.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/table.h"
#include "xsp/record/record.h"
#include "xsp/store/store.h"
#include "xsp/store/trace_export.h"

namespace xsp::service {

// ---------------------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------------------

/// A request the service cannot answer. what() is a whole sentence for a person; field() names the input at fault
/// ("id", "ids", "run", "batch_size", "trace_level", "analysis") or, for Unavailable, the missing resource ("zoo",
/// "report assets").
class ServiceError : public std::runtime_error {
 public:
  ServiceError(const std::string& message, std::string field);
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

/// Something the request names does not exist (server: 404; CLI: exit 1).
class NotFound : public ServiceError {
 public:
  using ServiceError::ServiceError;
};

/// No evaluation `id()` in the store. what(): "no evaluation ID in store LOCATION" (Store::file(), a PostgreSQL
/// location without its password); field "id". The server answers without the location.
class EvaluationNotFound final : public NotFound {
 public:
  EvaluationNotFound(std::int64_t id, const std::string& store_location);
  std::int64_t id() const noexcept { return id_; }

 private:
  std::int64_t id_;
};

/// No run of the evaluation matches a RunChoice. what() is choose_run()'s message, which lists the runs, batch
/// sizes or trace levels there are; field "run", "batch_size" or "trace_level" (the first one the choice set).
/// The CLI treats it as a usage error (exit 2).
class RunNotFound final : public NotFound {
 public:
  using NotFound::NotFound;
};

/// An analysis id that is none of analysis_ids(): "no analysis 'X'; expected one of A1, A2, ..."; field "analysis".
class AnalysisNotFound final : public NotFound {
 public:
  using NotFound::NotFound;
};

/// The request names existing things but they cannot answer it: a batch size an evaluation did not measure, fewer
/// than two evaluations to compare (server: 400; CLI: exit 1). what() is the library's message.
class InvalidArgument final : public ServiceError {
 public:
  using ServiceError::ServiceError;
};

/// Something the service needs is not there: the zoo folder (field "zoo"), the report's inlined Vega assets
/// (field "report assets") (server: 503; CLI: exit 1).
class Unavailable final : public ServiceError {
 public:
  using ServiceError::ServiceError;
};

// ---------------------------------------------------------------------------------------------------------
// Stored evaluations
// ---------------------------------------------------------------------------------------------------------

/// Evaluation `id` with its runs and traces. Throws EvaluationNotFound, or StoreError as Store::load.
EvaluationRecord load_evaluation(Store& store, std::int64_t id);

/// One page of a listing: the evaluations of the filter's page, newest first, and how many match in all.
struct EvaluationPage {
  std::size_t total = 0;                       ///< every match (the filter's limit and offset ignored)
  std::vector<EvaluationListing> evaluations;  ///< after filter.offset, at most filter.limit
};

/// The stored evaluations matching `filter` (Store::list, Store::count: bound parameters, exact matches), newest
/// first. No traces are read. Throws StoreError.
EvaluationPage list_evaluations(Store& store, const EvaluationFilter& filter = {});

/// As list_evaluations(), with `model_text` matching the model loosely: case-insensitively, as a substring, '_' and
/// '-' ignored ("resnet" finds ResNet18 and ResNet50, "mobilenet-v2" finds MobileNet_v2); "" matches any. The
/// filter's own model (an exact match) applies too; its limit and offset count the loose matches. Throws StoreError.
EvaluationPage list_evaluations_matching(Store& store, const EvaluationFilter& filter, const std::string& model_text);

/// The listing of evaluation `id` (batch sizes, runs, host...) without loading its traces. Throws
/// EvaluationNotFound, StoreError.
EvaluationListing find_evaluation(Store& store, std::int64_t id);

/// Deletes evaluation `id` with its runs, predictions and overheads (Store::remove, one transaction). Throws
/// EvaluationNotFound when there is none, StoreError when the store refuses.
void delete_evaluation(Store& store, std::int64_t id);

/// The figures a listing shows per evaluation (listing_metrics()). Runs at the shallowest trace level of their batch
/// size are read (the M run of a leveled evaluation: no tracing overhead); NaN / nullopt where no run has the figure.
struct ListingMetrics {
  std::optional<int> p50_batch_size;                         ///< the smallest batch size with a predict p50
  double p50_ns = std::numeric_limits<double>::quiet_NaN();  ///< its predict-stage p50 latency
  std::optional<int> throughput_batch_size;                  ///< the largest batch size with a throughput
  double throughput_samples_per_s = std::numeric_limits<double>::quiet_NaN();
  /// "unstable" when any of those runs is, "stable" when all are, "not_assessed" otherwise; "" without runs.
  std::string stability;
};

/// The metrics of one listing, from EvaluationListing::runs (stored figures: nothing is recomputed, no blob read).
ListingMetrics listing_metrics(const EvaluationListing& listing);

// ---------------------------------------------------------------------------------------------------------
// Labels: names, tags, notes (EvaluationLabels, xsp/record/record.h)
// ---------------------------------------------------------------------------------------------------------

inline constexpr std::size_t kMaxLabelNameChars = 120;  ///< characters (code points) of a name
inline constexpr std::size_t kMaxTagChars = 40;         ///< characters of one tag
inline constexpr std::size_t kMaxTags = 32;             ///< tags on one evaluation
inline constexpr std::size_t kMaxNoteChars = 4000;      ///< characters of a note

/// A change to an evaluation's labels (label_evaluation()); what is not set stays as it is.
struct LabelChange {
  std::optional<std::string> name;               ///< replaces the name ("" removes it); surrounding spaces trimmed
  std::optional<std::vector<std::string>> tags;  ///< replaces the whole set (before add_tags and remove_tags)
  std::vector<std::string> add_tags;             ///< added to the set (one already there stays once)
  std::vector<std::string> remove_tags;          ///< taken out of the set (one not there is ignored)
  std::optional<std::string> note;               ///< replaces the note ("" removes it)
  /// True when the change sets nothing.
  bool empty() const { return !name && !tags && add_tags.empty() && remove_tags.empty() && !note; }
};

/// Checks every value of `change` on its own: a name is valid UTF-8, one line (no control character), at most
/// kMaxLabelNameChars; a tag is 1 to kMaxTagChars of ASCII letters, digits and . _ : / + = @ -; a note is valid
/// UTF-8 of at most kMaxNoteChars, control characters other than newline, tab and carriage return refused. Throws
/// InvalidArgument with field "name", "tags" or "note" and a message naming the value and what was expected; an empty
/// change is refused with field "labels".
void validate_label_change(const LabelChange& change);

/// Applies `change` to evaluation `id`'s labels in one store transaction (Store::update_labels) and returns the
/// labels stored: tags sorted, each once. Throws InvalidArgument (validate_label_change(), or field "tags" when the
/// set would hold more than kMaxTags), EvaluationNotFound, StoreError.
EvaluationLabels label_evaluation(Store& store, std::int64_t id, const LabelChange& change);

// ---------------------------------------------------------------------------------------------------------
// Analyses, comparisons, reports
// ---------------------------------------------------------------------------------------------------------

/// The options an evaluation's analyses run with: the measured ceilings of the machine it ran on, selected by
/// select_ceilings() (xsp/analysis/roofline.h) from Store::list_ceilings() by its host and GPU, and the note saying
/// which ones or why there are none. batch_size and latency_bound_ms are left unset. Throws StoreError.
AnalysisOptions analysis_options(Store& store, const EvaluationRecord& record);

/// `text` as the id of analysis_ids() it names, compared case-insensitively ("a2" -> "A2"). Throws AnalysisNotFound
/// listing the ids.
const std::string& analysis_id(std::string_view text);

/// What analyze() runs.
struct AnalysisRequest {
  std::int64_t evaluation_id = 0;
  /// Analysis ids (case-insensitive, in the order to run); empty = default_analysis_ids() of the evaluation (A1-A7,
  /// and G1-G5 for a generation evaluation).
  std::vector<std::string> analyses;
  std::optional<int> batch_size;             ///< only this batch size in the per-batch-size analyses
  std::optional<double> latency_bound_ms;    ///< A1's optimal batch under this p99 bound
  OpGroupBy op_group_by = OpGroupBy::kName;  ///< the op table's grouping (AnalysisOptions::op_group_by)
  std::size_t op_top = 0;                    ///< the op table's row limit (AnalysisOptions::op_top)
  OpSort op_sort = OpSort::kSelf;            ///< the op table's order (AnalysisOptions::op_sort)
};

/// What analyze() returns: the tables, and what they were computed from (for charts drawn from them).
struct AnalysisResult {
  EvaluationRecord record;
  AnalysisOptions options;            ///< analysis_options() with the request's batch size and latency bound
  std::vector<std::string> analyses;  ///< the ids run, as analysis_ids() spells them
  std::vector<Table> tables;          ///< as run_analyses() returns them (one per batch size where it applies)
};

/// Checks the ids (AnalysisNotFound, before the store is read), loads the evaluation (EvaluationNotFound) and runs
/// the analyses with analysis_options(). Throws InvalidArgument (field "batch_size") for a batch size the
/// evaluation did not measure; StoreError.
AnalysisResult analyze(Store& store, const AnalysisRequest& request);

/// What compare() and report() take.
struct CompareRequest {
  std::vector<std::int64_t> ids;  ///< evaluation ids, in the order to show them
  std::optional<int> batch_size;  ///< only this batch size in the per-batch-size tables
};

/// compare_evaluations() (xsp/analysis/compare.h) of the evaluations `ids`: summary, A1 side by side with its
/// significance test, A6, predictions. Throws InvalidArgument with fewer than two ids (field "ids") or for a batch
/// size not measured by every evaluation (field "batch_size"); EvaluationNotFound for the first id not stored;
/// StoreError.
std::vector<Table> compare(Store& store, const CompareRequest& request);

/// What report() renders.
struct ReportRequest {
  std::vector<std::int64_t> ids;  ///< one or more evaluation ids; two or more add the comparison section
  std::optional<int> batch_size;  ///< only this batch size in the per-batch-size analyses and tables
  std::string title;              ///< "" = "XSP report:" and the evaluations' labels
  /// Links for the report's navigation bar (ReportOptions::links), as (text, href): the web UI's way back.
  std::vector<std::pair<std::string, std::string>> links;
};

/// The self-contained HTML page.
struct ReportResult {
  std::string html;
  std::size_t charts = 0;       ///< Vega-Lite charts in the page
  std::size_t evaluations = 0;  ///< evaluations reported
};

/// render_report() (xsp/report/report.h) of the evaluations `ids`, each with its analysis_options() and the batch
/// size. Throws Unavailable (field "report assets") when this build has no Vega assets (checked first),
/// InvalidArgument with no ids (field "ids") or for a batch size not measured (field "batch_size"),
/// EvaluationNotFound, StoreError.
ReportResult report(Store& store, const ReportRequest& request);

// ---------------------------------------------------------------------------------------------------------
// Trace exports
// ---------------------------------------------------------------------------------------------------------

/// Which stored run to export, and how.
struct TraceRequest {
  std::int64_t evaluation_id = 0;
  TraceFormat format = TraceFormat::kChrome;
  RunChoice run;  ///< choose_run(): `run` (1-based) wins, else batch size (default the first) and trace level
                  ///< (default the deepest)
  /// Keep the spans overlapping measured batches first..last (TraceExportOptions::batches); every format.
  std::optional<BatchRange> batches;
  /// Perfetto only, export_trace_to_file() only: shard into files of about this many bytes
  /// (TraceExportOptions::max_bytes).
  std::optional<std::uint64_t> max_bytes;
};

/// The exported run.
struct RunTrace {
  std::int64_t evaluation_id = 0;
  std::size_t run_number = 0;  ///< 1-based position among the evaluation's runs (RunChoice::run)
  std::int64_t run_id = 0;     ///< RunRecord::id
  std::size_t span_count = 0;
  /// "xsp-evaluation-ID-run-N" with ".json" (chrome), ".otlp.json" or ".sqlite": a download's file name.
  std::string file_name;
  std::string content;  ///< export_trace()'s bytes; empty after export_trace_to_file()
  /// export_trace_to_file(): the files written, in time order (several when sharded).
  std::vector<std::filesystem::path> files;
};

/// The chosen run's trace in memory (export_run_trace_to_string: no file is touched, the SQLite export is built in
/// an in-memory database). Throws EvaluationNotFound, RunNotFound, StoreError; std::invalid_argument for an OTLP
/// export of a run without a trace id.
RunTrace export_trace(Store& store, const TraceRequest& request);

/// The chosen run's trace written to `file` (export_run_trace: streamed, through a temporary file renamed into
/// place). Throws as export_trace(), and std::runtime_error / IoError naming `file` when it cannot be written.
/// Only the chosen run's trace is read (Store::load_without_traces, then its blob); Perfetto is streamed with bounded
/// memory and sharded by request.max_bytes (export_stored_trace()). Also throws BatchRangeError (request.batches: a
/// batch the trace does not have) and std::invalid_argument (max_bytes with another format).
RunTrace export_trace_to_file(Store& store, const TraceRequest& request, const std::filesystem::path& file);

/// A stored run chosen for a streamed download (open_trace_stream()): validated and its trace read through once
/// (StoredPerfettoStream), nothing written yet. Holds the Store it was opened on by reference.
struct TraceStream {
  RunTrace info;            ///< span_count: 0 until write_trace_stream()
  EvaluationRecord record;  ///< without traces
  std::unique_ptr<StoredPerfettoStream> perfetto;
};

/// Chooses the run of `request` (format kPerfetto) and prepares its stream (the first pass over the stored blob:
/// processes, request.batches' window, span order, checksum), so that a server can answer 404/400/500 before it
/// starts a streamed response. Throws EvaluationNotFound, RunNotFound, StoreError, BatchRangeError (request.batches),
/// InvalidArgument (field "format") for another format than Perfetto, std::runtime_error for a corrupt trace.
std::unique_ptr<TraceStream> open_trace_stream(Store& store, const TraceRequest& request);

/// Writes the prepared stream's .pftrace to `out` with bounded memory: the same bytes as export_trace_to_file()
/// writes unsharded. Returns the spans written. Stops once `out` fails. Throws StoreError, std::runtime_error.
std::uint64_t write_trace_stream(TraceStream& stream, std::ostream& out);

// ---------------------------------------------------------------------------------------------------------
// The model zoo
// ---------------------------------------------------------------------------------------------------------

/// One framework graph of a model.
struct ModelFramework {
  std::string name;            ///< predictor name ("libtorch")
  std::string constraint;      ///< semver constraint on its version (">=1.13")
  std::string graph;           ///< graph path as the manifest writes it
  bool exported = false;       ///< the resolved graph path is a regular file
  bool in_this_build = false;  ///< a predictor of that name is registered (registered_predictors())
};

/// One usable manifest.
struct ModelEntry {
  std::filesystem::path manifest;  ///< the file it was read from
  std::string name, version, description;
  std::vector<ModelFramework> frameworks;           ///< in manifest order; the first is the default
  std::vector<std::vector<long>> input_dimensions;  ///< per input, its per-sample shape
  std::map<std::string, std::string> attributes;    ///< task, source, training_dataset...
};

/// A manifest file that could not be used, or a model that could not be listed.
struct ModelProblem {
  std::filesystem::path file;
  std::string message;  ///< names the file (and line and field when known)
};

/// The zoo as both front ends list it.
struct ModelListing {
  std::vector<ModelEntry> models;      ///< by name (case-insensitive), then version (scan_zoo())
  std::vector<ModelProblem> problems;  ///< models that could not be listed, then the zoo's bad files by file
  std::vector<std::string> predictors_in_this_build;
};

/// The models of the zoo folder `zoo` (scan_zoo(): a bad manifest is a problem, never the end of the listing; so
/// is a model whose graph cannot be looked at). Throws Unavailable (field "zoo", the message naming the folder)
/// when `zoo` is not a folder or cannot be listed.
ModelListing list_models(const std::filesystem::path& zoo);

}  // namespace xsp::service
