// One stored run's trace in the formats users' own tools read (docs/exports.md): Chrome Trace Event JSON
// (Perfetto, chrome://tracing, DevTools, HTA), OTLP/JSON (Jaeger, Tempo) and a relational SQLite file (SQL, pandas).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "xsp/record/record.h"
#include "xsp/trace/export.h"

namespace xsp {

enum class TraceFormat { kChrome, kOtlp, kSqlite };
/// "chrome" | "otlp" | "sqlite"; std::nullopt for anything else.
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
/// `path` nor the temporary file, and throws xsp::IoError (xsp/store/store.h) naming `path` and the reason.
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

}  // namespace xsp
