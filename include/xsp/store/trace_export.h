// One stored run's trace in the formats users' own tools read (docs/exports.md): Chrome Trace Event JSON
// (Perfetto, chrome://tracing, DevTools, HTA), OTLP/JSON (Jaeger, Tempo) and a relational SQLite file (SQL, pandas).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "xsp/record/record.h"
#include "xsp/trace/export.h"

namespace xsp {

enum class TraceFormat { kChrome, kOtlp, kSqlite, kPerfetto };
/// "chrome" | "otlp" | "sqlite" | "perfetto" (the .pftrace protobuf, xsp/trace/perfetto.h); std::nullopt for anything
/// else.
std::optional<TraceFormat> parse_trace_format(std::string_view name);
std::string_view to_string(TraceFormat format);

/// Which run of an evaluation to export. `run` (1-based, in stored order, as `xsp show` numbers runs) wins; else
/// the run of `batch_size` (default: the evaluation's first) and `trace_level` (default: the deepest of it).
struct RunChoice {
  std::optional<int> run;
  std::optional<int> batch_size;
  std::optional<TraceLevel> trace_level;
};

/// The chosen run. Throws std::invalid_argument naming the option (--run, --batch-size, --trace-level) and the
/// values the evaluation has when none matches.
const RunRecord& choose_run(const EvaluationRecord& record, const RunChoice& choice);

/// The resource of a stored run's trace: service.version = the XSP version that recorded it (system.software),
/// host.name = system.host.hostname, service.instance.id = the evaluation's UUID, GPU names from system.gpu, and
/// attributes xsp.evaluation_id, xsp.run_id, model, framework, device, batch_size, trace_level.
TraceResource trace_resource(const EvaluationRecord& record, const RunRecord& run);

/// Writes `run`'s trace to `path` in `format`, through a temporary file renamed into place, so a failure leaves no
/// partial file and an existing file is replaced only by a complete one. The JSON formats are streamed event by
/// event (write_chrome_trace, write_otlp_json): memory beyond the trace is O(spans) indices, not the document
/// (BENCHMARKS.md "Export memory"). OTLP uses the run's stored trace id
/// (std::invalid_argument if the run has none, i.e. it was never saved). Throws std::runtime_error naming the path
/// when it cannot be written.
void export_run_trace(const EvaluationRecord& record, const RunRecord& run, TraceFormat format,
                      const std::filesystem::path& path);

/// `run`'s trace in `format` as bytes, without touching the file system (the server's downloads: no temporary file
/// for anyone to race). The SQLite export is built in an in-memory database and serialized (sqlite3_serialize).
/// Throws as export_run_trace() does (std::invalid_argument for an OTLP export of a run without a trace id).
std::string export_run_trace_to_string(const EvaluationRecord& record, const RunRecord& run, TraceFormat format);
/// Writes `content` to `path` through a temporary file beside it (PATH.tmp-XXXXXX, created exclusively under an
/// unpredictable name, so that a link planted in a shared folder is never followed) renamed into place: a failure
/// (cannot create, a write or close that fails, e.g. on a full disk, a failed rename) leaves neither a partial
/// `path` nor the temporary file, and throws xsp::IoError (xsp/store/store.h) naming `path` and the reason. A `path`
/// that exists and is not a regular file (/dev/null, /dev/stdout, a named pipe) is written in place instead, since a
/// rename would replace it; a folder is an IoError.
void write_file_atomically(const std::filesystem::path& path, const std::string& content);

/// As above, with the content written by `writer` to a stream on the temporary file, so a large file need never be
/// held in memory. The stream's state is checked after `writer` returns and after the close: a write that failed
/// (a full disk, EFBIG) throws xsp::IoError naming `path` and the reason. An exception from `writer` propagates
/// unchanged; in every failure the temporary file is removed and `path` is left as it was.
void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& writer);

/// The relational export (format kSqlite, docs/exports.md "SQL"): a new SQLite file with tables
///   meta(key, value)                         evaluation/run ids, model, framework, device, trace id, clock...
///   tracks(id, device, stream, thread, name) one row per host thread or GPU stream
///   spans(id, parent_id, level, level_index, parent_rule, name, start_ns, end_ns, duration_ns, track_id,
///         correlation_id, op_id, batch)     every span; op_id = the nearest FRAMEWORK span (the op it belongs to),
///                                           batch = the "batch" tag of the nearest MODEL span at or above it (the
///                                           measured batch, ProfilerStep#N; NULL for warm-up and outside batches)
///   tags(span_id, key, value)                every tag, value typed (INTEGER, REAL or TEXT)
///   ops(span_id, name, start_ns, end_ns, duration_ns, thread, module, parent_op_id, self_ns, top_op_id,
///       layer_op_id)                         self_ns = duration minus the union of its direct child ops on the same
///                                           thread (the op table's self time, op_table.h); top_op_id = the
///                                           outermost op above it (itself when top-level); layer_op_id = top_op_id
///                                           when that op's parent is a predict span (a layer of A2), else NULL
///   launches(span_id, name, start_ns, end_ns, duration_ns, thread, correlation_id, cbid, op_id, top_op_id,
///            layer_op_id)
///   kernels(span_id, kind, name, start_ns, end_ns, duration_ns, device, stream, correlation_id, grid_x..z,
///           block_x..z, registers_per_thread, shared_bytes, bytes, launch_id, op_id, top_op_id, layer_op_id)
/// (top_op_id and layer_op_id of launches and kernels are those of their op_id) with foreign keys
/// launches.op_id → ops, kernels.launch_id → launches, kernels.op_id → ops, *.top_op_id and *.layer_op_id → ops;
/// one transaction.
void export_run_sqlite(const EvaluationRecord& record, const RunRecord& run, const std::filesystem::path& path);

/// Exports a trace file outside any store: an xsp-trace blob as encode_trace writes it (`.xspt`, e.g. from
/// `xsp_cupti_selftest 1 t.xspt` or tests/fixtures/gpu/two_streams_h100.xspt) to `out` in `format`, as
/// export_run_trace does. The resource names the file (service.instance.id = a fresh UUID, model = the file's stem)
/// and OTLP gets a fresh random trace id, so two conversions of one file are two traces. Throws
/// std::runtime_error naming `blob` when it cannot be read or decoded, or `out` when it cannot be written.
void export_trace_file(const std::filesystem::path& blob, TraceFormat format, const std::filesystem::path& out);

// ---------------------------------------------------------------------------------------------------------
// Traces of any size (docs/exports.md "Streaming export", "Sharding", "A window of batches")
// ---------------------------------------------------------------------------------------------------------

class Store;

/// A closed interval of the host clock, [start_ns, end_ns].
struct TimeWindow {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool operator==(const TimeWindow&) const = default;
};

/// Measured batches `first` to `last` (inclusive), as `--batches A:B` names them: the "batch" tags of the run's MODEL
/// spans, the N of Chrome's ProfilerStep#N.
struct BatchRange {
  std::int64_t first = 0;
  std::int64_t last = 0;
};

/// A --batches value that is malformed or names a batch the trace does not have; what() names the option and the
/// value. The CLI exits 2 (a usage error) on it.
class BatchRangeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Parses "A:B" (integers, 0 <= A <= B). Throws BatchRangeError "--batches 'TEXT': ..." otherwise.
BatchRange parse_batch_range(std::string_view text);

/// Each measured batch's window: from the earliest start to the latest end of the MODEL spans tagged "batch"=N.
/// Feed it spans one at a time (add()), in any order.
class BatchWindows {
 public:
  /// Keeps every batch's window (memory O(batches)).
  BatchWindows() = default;
  /// Keeps only the windows of batches `only.first` and `only.last` (memory O(1): a streamed trace of millions of
  /// batches), and the smallest and largest batch seen, for the error message.
  explicit BatchWindows(const BatchRange& only) : only_(only) {}
  void add(const Span& span);
  /// From the start of batch range.first to the end of batch range.last. Throws BatchRangeError naming --batches,
  /// the value and the batches the trace has ("none" when it has none) when either batch is missing.
  TimeWindow window(const BatchRange& range) const;

 private:
  std::optional<BatchRange> only_;
  std::map<std::int64_t, TimeWindow> windows_;
  std::optional<std::int64_t> min_batch_, max_batch_;
};

/// True when `span` overlaps `window` (start_ns <= window.end_ns and end_ns >= window.start_ns): a span that
/// touches the window's edge is in it.
bool overlaps(const Span& span, const TimeWindow& window);

/// `trace` less the spans that do not overlap the window of `batches` (BatchWindows::window; throws BatchRangeError).
/// Parent ids of kept spans may name removed spans; exporters treat those as roots.
void keep_batches(Trace& trace, const BatchRange& batches);

/// Options of a streamed or windowed export of a stored run (export_stored_trace()).
struct TraceExportOptions {
  /// Keep only the spans overlapping the window of these measured batches (every format).
  std::optional<BatchRange> batches;
  /// Perfetto only: split the export into files of about this many bytes (sharding; > 0). A new file starts, at a
  /// span's start, once the current one has passed max_bytes; a span and its end go whole to the file it starts in.
  /// Files are named after the output: run.pftrace -> run-001.pftrace, run-002.pftrace, ...
  std::optional<std::uint64_t> max_bytes;
};

/// What export_stored_trace() wrote.
struct TraceExportResult {
  std::vector<std::filesystem::path> files;  ///< in time order; one unless sharded
  std::uint64_t spans = 0;                   ///< spans written, over all files
  bool streamed = false;                     ///< false: the trace was decoded whole (non-Perfetto formats, an
                                             ///< unsorted old trace)
};

/// The file name of shard `index` (1-based) of `path`: "run.pftrace", 2 -> "run-002.pftrace" (at least 3 digits).
std::filesystem::path shard_path(const std::filesystem::path& path, std::size_t index);

/// Exports run `run` of `record` (as Store::load_without_traces gives it: the trace is read from `store`) to `path`.
/// Perfetto is streamed: the stored blob is read in pieces (Store::open_trace_blob, TraceBlobReader) and fed span by
/// span to a PerfettoWriter, so memory stays bounded by the blob's string table, the writer's open slices and interning
/// tables and fixed buffers, whatever the span count. A v3 blob (processes after the spans) or a --batches window is
/// read twice: a first pass collects the processes and the batch windows and checks the span order. A trace whose
/// spans are not in start order (none written by this build) is decoded whole and sorted. Chrome, OTLP and SQLite
/// decode the run's trace whole (their writers keep O(spans) indices) and export it as export_run_trace().
///
/// Every file goes through a temporary file; all are renamed into place only when the last is complete, so a failure
/// leaves no partial file and no temporary. Throws std::invalid_argument when max_bytes is given for another format
/// than Perfetto or is 0, BatchRangeError (batches), StoreError, std::runtime_error for a corrupt blob, IoError
/// naming the file that cannot be written.
TraceExportResult export_stored_trace(Store& store, const EvaluationRecord& record, const RunRecord& run,
                                      TraceFormat format, const std::filesystem::path& path,
                                      const TraceExportOptions& options = {});

/// Run `run`'s stored trace as one .pftrace stream (same bytes as export_stored_trace()'s unsharded file), prepared
/// and validated before anything is written, so that a server can still answer with an error status: the constructor
/// reads the blob once through (the processes, the batch window, the span order, the zstd checksum), write() a second
/// time into `out`. Holds `store` (and `record`) by reference: both must outlive it.
class StoredPerfettoStream {
 public:
  /// Throws BatchRangeError (batches), StoreError, std::runtime_error naming the run for a corrupt blob.
  StoredPerfettoStream(Store& store, const EvaluationRecord& record, const RunRecord& run,
                       const std::optional<BatchRange>& batches = std::nullopt);
  ~StoredPerfettoStream();
  StoredPerfettoStream(const StoredPerfettoStream&) = delete;
  StoredPerfettoStream& operator=(const StoredPerfettoStream&) = delete;

  /// Writes the stream to `out`; returns the spans written. Call once. Stops once `out` fails (a client gone).
  /// Throws StoreError (the run deleted meanwhile), std::runtime_error.
  std::uint64_t write(std::ostream& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The trace of run `run_id` decoded whole from `store` (the other runs' traces are not read). Throws StoreError
/// (no such run, or the database fails), std::runtime_error naming the run for a corrupt blob.
Trace read_stored_trace(Store& store, std::int64_t run_id);

}  // namespace xsp
