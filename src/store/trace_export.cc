// Run trace exports (include/xsp/store/trace_export.h).
#include "xsp/store/trace_export.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "xsp/store/store.h"
#include "xsp/trace/perfetto.h"
#include "xsp/trace/serialize.h"

namespace xsp {

namespace fs = std::filesystem;

std::optional<TraceFormat> parse_trace_format(std::string_view name) {
  if (name == "chrome") return TraceFormat::kChrome;
  if (name == "otlp") return TraceFormat::kOtlp;
  if (name == "sqlite") return TraceFormat::kSqlite;
  if (name == "perfetto") return TraceFormat::kPerfetto;
  return std::nullopt;
}

std::string_view to_string(TraceFormat format) {
  switch (format) {
    case TraceFormat::kChrome:
      return "chrome";
    case TraceFormat::kOtlp:
      return "otlp";
    case TraceFormat::kSqlite:
      return "sqlite";
    case TraceFormat::kPerfetto:
      return "perfetto";
  }
  return "unknown";
}

const RunRecord& choose_run(const EvaluationRecord& record, const RunChoice& choice) {
  const std::string eval = "evaluation " + std::to_string(record.id);
  if (record.runs.empty()) throw std::invalid_argument(eval + " has no runs");
  if (choice.run) {
    if (*choice.run < 1 || static_cast<std::size_t>(*choice.run) > record.runs.size()) {
      throw std::invalid_argument("--run: expected a run number from 1 to " + std::to_string(record.runs.size()) +
                                  " (" + eval + "), got " + std::to_string(*choice.run));
    }
    return record.runs[static_cast<std::size_t>(*choice.run - 1)];
  }
  const int batch = choice.batch_size.value_or(record.batch_sizes.empty() ? record.runs.front().batch_size
                                                                          : record.batch_sizes.front());
  const RunRecord* chosen = nullptr;
  std::string sizes, levels;
  for (const RunRecord& run : record.runs) {
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(run.batch_size);
    if (run.batch_size != batch) continue;
    levels += (levels.empty() ? "" : ", ") + std::string(to_string(run.trace_level));
    if (choice.trace_level && run.trace_level != *choice.trace_level) continue;
    if (chosen == nullptr || run.trace_level > chosen->trace_level) chosen = &run;
  }
  if (chosen != nullptr) return *chosen;
  if (levels.empty()) {
    throw std::invalid_argument("--batch-size: " + eval + " has no run with batch size " + std::to_string(batch) +
                                " (its runs have batch sizes " + sizes + ")");
  }
  throw std::invalid_argument("--trace-level: " + eval + " has no run of batch size " + std::to_string(batch) +
                              " at trace level " + std::string(to_string(*choice.trace_level)) +
                              " (that batch size has " + levels + ")");
}

TraceResource trace_resource(const EvaluationRecord& record, const RunRecord& run) {
  TraceResource r;
  const nlohmann::json& sys = record.system;
  if (sys.is_object()) {
    if (const auto sw = sys.find("software"); sw != sys.end() && sw->is_object()) {
      r.service_version = sw->value("xsp_version", "");
    }
    if (const auto host = sys.find("host"); host != sys.end() && host->is_object()) {
      r.host_name = host->value("hostname", "");
    }
    if (const auto gpus = sys.find("gpu"); gpus != sys.end() && gpus->is_array()) {
      for (const auto& g : *gpus) {
        if (g.is_object() && g.contains("index") && g["index"].is_number_unsigned() && g.contains("name")) {
          r.device_names[g["index"].get<std::uint32_t>()] = g["name"].is_string() ? g["name"].get<std::string>() : "";
        }
      }
    }
  }
  r.instance_id = record.uuid;
  r.attributes = {{"xsp.evaluation_id", record.id},
                  {"xsp.run_id", run.id},
                  {"model", record.model_name + " " + record.model_version},
                  {"framework", record.framework_name + " " + record.framework_version},
                  {"device", record.device},
                  {"batch_size", run.batch_size},
                  {"trace_level", std::string(to_string(run.trace_level))}};
  return r;
}

namespace {

/// The temporary file an export writes beside its target before renaming it into place. Every path that does not
/// publish it removes it, with the -journal SQLite may leave next to it: an export that fails (a full disk, a
/// failed close, a failed rename, an exception) leaves nothing behind.
/// A target that exists and is not a regular file (/dev/null, /dev/stdout, a named pipe) is written in place:
/// renaming a file over it would replace the device node or pipe (as root, /dev/null itself) with a regular file.
/// `in_place_ok` false (an SQLite database, which must be a file) refuses such a target instead.
class TempOutput {
 public:
  // The name is made unpredictable and the file created exclusively (mkstemp: O_CREAT|O_EXCL, mode 0600), so that
  // a link planted under a guessable name in a shared folder (/tmp) is never followed. Then given the mode a file
  // created by the user would have.
  explicit TempOutput(fs::path target, bool in_place_ok = true) : target_(std::move(target)) {
    std::error_code ec;
    const fs::file_status st = fs::status(target_, ec);  // follows links: /dev/stdout is one
    if (!ec && fs::is_directory(st)) throw IoError("cannot write " + target_.string() + ": it is a folder");
    if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
      if (!in_place_ok)
        throw IoError("cannot write " + target_.string() +
                      ": not a regular file (a device, pipe or socket); this output must be a file");
      tmp_ = target_;
      in_place_ = true;
      return;
    }
    std::string pattern = target_.string() + ".tmp-XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0)
      throw IoError("cannot write " + target_.string() +
                    ": cannot create a temporary file beside it: " + std::strerror(errno));
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    ::close(fd);
    tmp_ = pattern;
  }
  ~TempOutput() {
    if (!published_) remove();
  }
  TempOutput(const TempOutput&) = delete;
  TempOutput& operator=(const TempOutput&) = delete;
  const fs::path& path() const { return tmp_; }

  /// Renames the temporary file over the target; throws IoError naming the target (the destructor then
  /// removes the temporary file).
  void publish() {
    if (in_place_) {
      published_ = true;
      return;
    }
    std::error_code ec;
    fs::rename(tmp_, target_, ec);
    if (ec) throw IoError("cannot write " + target_.string() + ": " + ec.message());
    published_ = true;
  }

 private:
  void remove() const noexcept {
    if (in_place_) return;
    std::error_code ec;
    fs::remove(tmp_, ec);
    fs::remove(tmp_.string() + "-journal", ec);
  }
  fs::path target_, tmp_;
  bool published_ = false;
  bool in_place_ = false;
};

}  // namespace

void write_file_atomically(const fs::path& path, const std::function<void(std::ostream&)>& writer) {
  TempOutput tmp(path);  // declared first, so the stream is closed before the destructor removes the file
  // A larger buffer than the default few KB: a streamed export makes millions of small writes.
  std::vector<char> buffer(1 << 20);
  std::ofstream out;
  out.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  out.open(tmp.path(), std::ios::binary);
  if (!out) {
    throw IoError("cannot write " + path.string() + ": cannot create " + tmp.path().string() + ": " +
                  std::strerror(errno));
  }
  writer(out);
  // errno as the failing write left it: the close below may make further calls that change it.
  if (!out) throw IoError("cannot write " + path.string() + ": " + std::strerror(errno));
  out.close();  // flushes: a write that fails now (a full disk) or a failing close sets failbit too
  if (!out) throw IoError("cannot write " + path.string() + ": " + std::strerror(errno));
  tmp.publish();
}

void write_file_atomically(const fs::path& path, const std::string& content) {
  write_file_atomically(path, [&](std::ostream& out) { out << content; });
}

namespace {

/// The relational export's connection: every failure names the file and the statement. An empty path opens an
/// in-memory database (serialize() then gives its bytes).
class Db {
 public:
  explicit Db(const fs::path& file) : file_(file.empty() ? fs::path("(in memory)") : file) {
    const std::string name = file.empty() ? ":memory:" : file.string();
    if (sqlite3_open_v2(name.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw IoError("cannot create " + file_.string() + ": " + msg);
    }
  }

  /// The database as the bytes of an SQLite file (sqlite3_serialize).
  std::string serialize() {
    sqlite3_int64 size = 0;
    unsigned char* bytes = sqlite3_serialize(db_, "main", &size, 0);
    if (bytes == nullptr) throw IoError("writing " + file_.string() + ": sqlite3_serialize failed (out of memory)");
    std::string out(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(size));
    sqlite3_free(bytes);
    return out;
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      throw IoError("writing " + file_.string() + ": " + msg);
    }
  }

  /// A prepared statement bound by position and stepped once per row.
  class Insert {
   public:
    Insert(Db& db, const char* sql) : db_(db) {
      if (sqlite3_prepare_v2(db.db_, sql, -1, &st_, nullptr) != SQLITE_OK) db.fail("prepare");
    }
    ~Insert() { sqlite3_finalize(st_); }
    Insert& null(int i) { return check(sqlite3_bind_null(st_, i)); }
    Insert& i64(int i, std::int64_t v) { return check(sqlite3_bind_int64(st_, i, v)); }
    Insert& opt(int i, std::optional<std::int64_t> v) { return v ? i64(i, *v) : null(i); }
    Insert& id(int i, SpanId v) { return v == kNoSpan ? null(i) : i64(i, static_cast<std::int64_t>(v)); }
    Insert& real(int i, double v) { return check(sqlite3_bind_double(st_, i, v)); }
    Insert& text(int i, std::string_view v) {
      return check(sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    }
    void row() {
      if (sqlite3_step(st_) != SQLITE_DONE) db_.fail("insert");
      sqlite3_reset(st_);
      sqlite3_clear_bindings(st_);
    }

   private:
    Insert& check(int rc) {
      if (rc != SQLITE_OK) db_.fail("bind");
      return *this;
    }
    Db& db_;
    sqlite3_stmt* st_ = nullptr;
  };

 private:
  [[noreturn]] void fail(const char* what) {
    throw IoError("writing " + file_.string() + ": " + what + ": " + sqlite3_errmsg(db_));
  }
  fs::path file_;
  sqlite3* db_ = nullptr;
};

constexpr const char* kSchema = R"sql(
PRAGMA foreign_keys = ON;
CREATE TABLE meta (key TEXT PRIMARY KEY, value);
CREATE TABLE tracks (
  id INTEGER PRIMARY KEY,
  device INTEGER,            -- CUDA device ordinal; NULL for a host thread
  stream INTEGER,            -- CUDA stream id; NULL for a host thread
  thread INTEGER,            -- OS thread id; NULL for a GPU stream
  name TEXT NOT NULL
);
CREATE TABLE spans (
  id INTEGER PRIMARY KEY,
  parent_id INTEGER REFERENCES spans (id),
  level TEXT NOT NULL,       -- application | model | framework | library | system | kernel | hardware
  level_index INTEGER NOT NULL,
  parent_rule TEXT NOT NULL, -- none | context | correlation | containment
  name TEXT NOT NULL,
  start_ns INTEGER NOT NULL, -- host clock (meta.host_clock)
  end_ns INTEGER NOT NULL,
  duration_ns INTEGER NOT NULL,
  track_id INTEGER NOT NULL REFERENCES tracks (id),
  correlation_id INTEGER,    -- CUPTI correlation id of a call and the device work it launched
  op_id INTEGER REFERENCES spans (id), -- nearest FRAMEWORK span: the op this span belongs to
  batch INTEGER              -- measured batch (ProfilerStep#N) it falls in: the "batch" tag of the nearest MODEL
                             -- span at or above it; NULL for warm-up and work outside the batches
);
CREATE TABLE tags (span_id INTEGER NOT NULL REFERENCES spans (id), key TEXT NOT NULL, value);
CREATE TABLE ops (
  span_id INTEGER PRIMARY KEY REFERENCES spans (id),
  name TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  thread INTEGER, module TEXT, parent_op_id INTEGER REFERENCES ops (span_id),
  self_ns INTEGER NOT NULL,  -- duration_ns minus the union of its direct child ops on the same thread, >= 0
  top_op_id INTEGER REFERENCES ops (span_id),   -- outermost op above it (itself for a top-level op)
  layer_op_id INTEGER REFERENCES ops (span_id)  -- top_op_id when that op runs directly in a predict span (a layer)
);
CREATE TABLE launches (
  span_id INTEGER PRIMARY KEY REFERENCES spans (id),
  name TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  thread INTEGER, correlation_id INTEGER, cbid INTEGER, op_id INTEGER REFERENCES ops (span_id),
  top_op_id INTEGER REFERENCES ops (span_id), layer_op_id INTEGER REFERENCES ops (span_id)
);
CREATE TABLE kernels (
  span_id INTEGER PRIMARY KEY REFERENCES spans (id),
  kind TEXT NOT NULL,        -- kernel | memcpy | memset
  name TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  device INTEGER, stream INTEGER, correlation_id INTEGER,
  grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER,
  registers_per_thread INTEGER, shared_bytes INTEGER, bytes INTEGER,
  launch_id INTEGER REFERENCES launches (span_id),
  op_id INTEGER REFERENCES ops (span_id),
  top_op_id INTEGER REFERENCES ops (span_id), layer_op_id INTEGER REFERENCES ops (span_id)
);
CREATE INDEX spans_parent ON spans (parent_id);
CREATE INDEX spans_op ON spans (op_id);
CREATE INDEX tags_span ON tags (span_id);
CREATE INDEX kernels_op ON kernels (op_id);
CREATE INDEX kernels_launch ON kernels (launch_id);
CREATE INDEX spans_batch ON spans (batch);
CREATE INDEX ops_layer ON ops (layer_op_id);
)sql";

// The run's metadata rows (format, ids, model, framework, device, clocks).
void insert_meta(Db& db, const EvaluationRecord& record, const RunRecord& run) {
  const Trace& trace = run.trace;
  Db::Insert meta(db, "INSERT INTO meta (key, value) VALUES (?1, ?2)");
  auto put = [&](const char* key, const std::string& value) { meta.text(1, key).text(2, value).row(); };
  auto put_int = [&](const char* key, std::int64_t value) { meta.text(1, key).i64(2, value).row(); };
  put("format", "xsp-trace-sqlite-1");
  put_int("evaluation_id", record.id);
  put("evaluation_uuid", record.uuid);
  put_int("run_id", run.id);
  put("trace_id", run.trace_id);
  put("model", record.model_name + " " + record.model_version);
  put("framework", record.framework_name + " " + record.framework_version);
  put("device", record.device);
  put_int("batch_size", run.batch_size);
  put("trace_level", std::string(to_string(run.trace_level)));
  put("host_clock", trace.clock.host_clock);
  put_int("unix_offset_ns", trace.clock.unix_offset_ns);
  put("device_clock_mapping", trace.clock.device_clock_mapping);
}

// One row per track the spans use; returns each track's row id.
std::map<Track, std::int64_t> insert_tracks(Db& db, const Trace& trace) {
  std::map<Track, std::int64_t> track_ids;
  for (const Span& s : trace.spans) track_ids.emplace(s.track, 0);
  {
    Db::Insert ins(db, "INSERT INTO tracks (id, device, stream, thread, name) VALUES (?1, ?2, ?3, ?4, ?5)");
    std::int64_t next = 1;
    for (auto& [track, id] : track_ids) {
      id = next++;
      ins.i64(1, id);
      if (track.is_device()) {
        ins.i64(2, track.device).i64(3, static_cast<std::int64_t>(track.id)).null(4);
      } else {
        ins.null(2).null(3).i64(4, static_cast<std::int64_t>(track.id));
      }
      ins.text(5, to_string(track)).row();
    }
  }
  return track_ids;
}

// A KERNEL span's row (also memcpy and memset: kind), with its launch and op ids.
void insert_kernel(Db::Insert& kernel_ins, const Span& s, SpanId launch, SpanId op, SpanId top_op, SpanId layer_op) {
  const auto id = static_cast<std::int64_t>(s.id);
  kernel_ins.i64(1, id)
      .text(2, s.tag("kind").value_or("kernel"))
      .text(3, s.name)
      .i64(4, s.start_ns)
      .i64(5, s.end_ns)
      .i64(6, s.duration_ns());
  if (s.track.is_device()) {
    kernel_ins.i64(7, s.track.device).i64(8, static_cast<std::int64_t>(s.track.id));
  } else {
    kernel_ins.opt(7, s.tag_int("device")).opt(8, s.tag_int("stream"));
  }
  kernel_ins.opt(9, s.correlation_id != 0 ? std::optional<std::int64_t>(static_cast<std::int64_t>(s.correlation_id))
                                          : std::nullopt);
  for (int k = 0; k < 2; ++k) {
    const Tag* t = s.find_tag(k == 0 ? "grid" : "block");
    const std::vector<std::int64_t> xyz = t != nullptr ? t->as_int_list() : std::vector<std::int64_t>{};
    for (int c = 0; c < 3; ++c) {
      kernel_ins.opt(10 + 3 * k + c,
                     xyz.size() == 3 ? std::optional<std::int64_t>(xyz[static_cast<std::size_t>(c)]) : std::nullopt);
    }
  }
  const auto st = s.tag_int("static_shared_bytes"), dyn = s.tag_int("dynamic_shared_bytes");
  kernel_ins.opt(16, s.tag_int("registers_per_thread"))
      .opt(17, st || dyn ? std::optional<std::int64_t>(st.value_or(0) + dyn.value_or(0)) : std::nullopt)
      .opt(18, s.tag_int("bytes"))
      .id(19, launch)
      .id(20, op)
      .id(21, top_op)
      .id(22, layer_op)
      .row();
}

// What the relational export derives per span beyond its own fields (docs/exports.md "SQLite"), by span position.
struct SpanLinks {
  std::vector<std::optional<std::int64_t>> batch;  // the "batch" tag of the nearest MODEL span at or above it
  std::vector<SpanId> top_op, layer_op;            // FRAMEWORK spans: outermost op above, and it when a layer
  std::vector<std::int64_t> self_ns;               // FRAMEWORK spans: duration minus direct same-thread child ops
};

// A span whose children are the layers: a MODEL "predict" span, or a profiled program's sample range (as
// is_sample_span() of the analyses, which A2 reads).
bool is_sample(const Span& s) {
  if (s.level != Level::kModel) return false;
  if (s.name == kStagePredict) return true;
  const auto t = s.tag("sample");
  return t && *t == "true";
}

// Per FRAMEWORK span: its duration minus the union of its direct FRAMEWORK children on the same track, clipped to
// it (the op table's self time, op_table.h).
void self_times(const Trace& trace, const std::vector<std::size_t>& parent, SpanLinks& links) {
  struct Child {
    std::size_t parent;
    std::int64_t start, end;
  };
  const std::vector<Span>& spans = trace.spans;
  std::vector<Child> children;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const std::size_t p = parent[i];
    if (spans[i].level != Level::kFramework || p == SIZE_MAX || spans[p].level != Level::kFramework ||
        spans[p].track != spans[i].track)
      continue;
    const std::int64_t start = std::max(spans[i].start_ns, spans[p].start_ns);
    const std::int64_t end = std::min(spans[i].end_ns, spans[p].end_ns);
    if (end > start) children.push_back({p, start, end});
  }
  std::sort(children.begin(), children.end(), [](const Child& a, const Child& b) {
    return a.parent != b.parent ? a.parent < b.parent : a.start < b.start;
  });
  links.self_ns.assign(spans.size(), 0);
  for (std::size_t i = 0; i < spans.size(); ++i) links.self_ns[i] = spans[i].duration_ns();
  for (std::size_t k = 0; k < children.size();) {
    const std::size_t p = children[k].parent;
    std::int64_t run_start = children[k].start, run_end = children[k].end, covered = 0;
    for (++k; k < children.size() && children[k].parent == p; ++k) {
      if (children[k].start > run_end) {
        covered += run_end - run_start;
        run_start = children[k].start;
      }
      run_end = std::max(run_end, children[k].end);
    }
    covered += run_end - run_start;
    links.self_ns[p] = std::max<std::int64_t>(0, links.self_ns[p] - covered);
  }
}

// Resolves `value` for every span from its parent's, memoised; `own` gives a span's value when it has one of its own
// (ending the walk up), `inherit` derives a span's value from its parent's. A parent cycle ends the walk: the spans
// on it get `none`.
template <typename T, typename Own, typename Inherit>
std::vector<T> resolve_up(const std::vector<std::size_t>& parent, std::size_t n, T none, Own own, Inherit inherit) {
  std::vector<T> value(n, none);
  std::vector<std::uint8_t> state(n, 0);  // 0 unresolved, 1 on the current path, 2 resolved
  std::vector<std::size_t> path;
  for (std::size_t i = 0; i < n; ++i) {
    path.clear();
    std::size_t cur = i;
    while (cur != SIZE_MAX && state[cur] == 0) {
      state[cur] = 1;
      path.push_back(cur);
      if (own(cur, value[cur])) break;
      cur = parent[cur];
    }
    // Resolve the path from its top down; a top that is on the path itself (a cycle) or has no value keeps `none`.
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const std::size_t k = *it;
      const std::size_t p = parent[k];
      T own_value = none;
      if (own(k, own_value)) {
        value[k] = own_value;
      } else if (p != SIZE_MAX && state[p] == 2) {
        value[k] = inherit(k, value[p]);
      }
      state[k] = 2;
    }
  }
  return value;
}

SpanLinks link_spans(const Trace& trace, const std::unordered_map<SpanId, const Span*>& by_id) {
  const std::vector<Span>& spans = trace.spans;
  const std::size_t n = spans.size();
  std::vector<std::size_t> parent(n, SIZE_MAX);
  for (std::size_t i = 0; i < n; ++i) {
    const auto it = by_id.find(spans[i].parent_id);
    if (spans[i].parent_id != kNoSpan && it != by_id.end())
      parent[i] = static_cast<std::size_t>(it->second - &spans[0]);
  }
  SpanLinks links;
  links.batch = resolve_up<std::optional<std::int64_t>>(
      parent, n, std::nullopt,
      [&](std::size_t i, std::optional<std::int64_t>& v) {
        if (spans[i].level != Level::kModel) return false;
        v = spans[i].tag_int("batch");
        return v.has_value();
      },
      [](std::size_t, const std::optional<std::int64_t>& p) { return p; });
  // The outermost op: a FRAMEWORK span whose parent is no FRAMEWORK span is its own.
  const auto top = resolve_up<std::size_t>(
      parent, n, SIZE_MAX,
      [&](std::size_t i, std::size_t& v) {
        if (spans[i].level != Level::kFramework) return true;  // v stays SIZE_MAX: nothing above counts
        if (parent[i] == SIZE_MAX || spans[parent[i]].level != Level::kFramework) v = i;
        return v != SIZE_MAX;
      },
      [](std::size_t, std::size_t p) { return p; });
  links.top_op.assign(n, kNoSpan);
  links.layer_op.assign(n, kNoSpan);
  for (std::size_t i = 0; i < n; ++i) {
    if (spans[i].level != Level::kFramework || top[i] == SIZE_MAX) continue;
    links.top_op[i] = spans[top[i]].id;
    const std::size_t above = parent[top[i]];
    if (above != SIZE_MAX && is_sample(spans[above])) links.layer_op[i] = spans[top[i]].id;
  }
  self_times(trace, parent, links);
  return links;
}

// Fills `db` with the relational export of `run`.
void fill_sqlite(Db& db, const EvaluationRecord& record, const RunRecord& run) {
  const Trace& trace = run.trace;
  std::unordered_map<SpanId, const Span*> by_id;
  by_id.reserve(trace.spans.size());
  for (const Span& s : trace.spans) by_id.emplace(s.id, &s);
  auto parent = [&](const Span& s) -> const Span* {
    const auto it = by_id.find(s.parent_id);
    return it == by_id.end() ? nullptr : it->second;
  };
  // The op of a span: itself when FRAMEWORK, else its nearest FRAMEWORK ancestor below the MODEL level.
  const std::unordered_map<SpanId, SpanId> ops = op_of_spans(trace);
  auto op_of = [&](const Span& s) -> SpanId {
    const auto it = ops.find(s.id);
    return it == ops.end() ? kNoSpan : it->second;
  };
  const SpanLinks links = link_spans(trace, by_id);
  // The outermost and the layer op of the op `op` (kNoSpan: none).
  auto op_links = [&](SpanId op) -> std::pair<SpanId, SpanId> {
    const auto it = by_id.find(op);
    if (op == kNoSpan || it == by_id.end()) return {kNoSpan, kNoSpan};
    const auto i = static_cast<std::size_t>(it->second - trace.spans.data());
    return {links.top_op[i], links.layer_op[i]};
  };

  // The rollback journal stays in memory: no second file beside the export for anyone to plant a link at.
  db.exec("PRAGMA journal_mode = MEMORY");
  db.exec(kSchema);
  db.exec("BEGIN");

  insert_meta(db, record, run);
  const std::map<Track, std::int64_t> track_ids = insert_tracks(db, trace);

  // Parents may come after children in span order: spans are inserted first, foreign keys checked at COMMIT.
  db.exec("PRAGMA defer_foreign_keys = ON");
  Db::Insert span_ins(
      db,
      "INSERT INTO spans (id, parent_id, level, level_index, parent_rule, name, start_ns, end_ns, "
      "duration_ns, track_id, correlation_id, op_id, batch) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
      "?10, ?11, ?12, ?13)");
  Db::Insert tag_ins(db, "INSERT INTO tags (span_id, key, value) VALUES (?1, ?2, ?3)");
  Db::Insert op_ins(db,
                    "INSERT INTO ops (span_id, name, start_ns, end_ns, duration_ns, thread, module, parent_op_id, "
                    "self_ns, top_op_id, layer_op_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  Db::Insert launch_ins(db,
                        "INSERT INTO launches (span_id, name, start_ns, end_ns, duration_ns, thread, correlation_id, "
                        "cbid, op_id, top_op_id, layer_op_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  Db::Insert kernel_ins(
      db,
      "INSERT INTO kernels (span_id, kind, name, start_ns, end_ns, duration_ns, device, stream, "
      "correlation_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread, "
      "shared_bytes, bytes, launch_id, op_id, top_op_id, layer_op_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
      "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)");

  for (std::size_t pos = 0; pos < trace.spans.size(); ++pos) {
    const Span& s = trace.spans[pos];
    const auto id = static_cast<std::int64_t>(s.id);
    const bool has_parent = s.parent_id != kNoSpan && by_id.contains(s.parent_id);
    const SpanId op = s.level >= Level::kFramework ? op_of(s) : kNoSpan;
    span_ins.i64(1, id);
    if (has_parent) {
      span_ins.id(2, s.parent_id);
    } else {
      span_ins.null(2);
    }
    span_ins.text(3, to_string(s.level))
        .i64(4, static_cast<std::int64_t>(s.level))
        .text(5, to_string(s.parent_rule))
        .text(6, s.name)
        .i64(7, s.start_ns)
        .i64(8, s.end_ns)
        .i64(9, s.duration_ns())
        .i64(10, track_ids.at(s.track));
    if (s.correlation_id != 0) {
      span_ins.i64(11, static_cast<std::int64_t>(s.correlation_id));
    } else {
      span_ins.null(11);
    }
    span_ins.id(12, op).opt(13, links.batch[pos]).row();

    for (const Tag& t : s.tags) {
      tag_ins.i64(1, id).text(2, t.key);
      const auto i = t.type == TagType::kInt ? t.as_int() : std::nullopt;
      const auto r = t.type == TagType::kReal ? t.as_real() : std::nullopt;
      if (i) {
        tag_ins.i64(3, *i);
      } else if (r) {
        tag_ins.real(3, *r);
      } else {
        tag_ins.text(3, t.value);
      }
      tag_ins.row();
    }

    std::optional<std::int64_t> thread;  // a host span's OS thread; none for a device activity
    if (!s.track.is_device()) thread = static_cast<std::int64_t>(s.track.id);
    if (s.level == Level::kFramework) {
      const Span* p = parent(s);
      const SpanId parent_op = p != nullptr ? op_of(*p) : kNoSpan;
      op_ins.i64(1, id).text(2, s.name).i64(3, s.start_ns).i64(4, s.end_ns).i64(5, s.duration_ns()).opt(6, thread);
      if (const auto m = s.tag("module")) {
        op_ins.text(7, *m);
      } else {
        op_ins.null(7);
      }
      op_ins.id(8, parent_op).i64(9, links.self_ns[pos]).id(10, links.top_op[pos]).id(11, links.layer_op[pos]).row();
    } else if (s.level == Level::kSystem) {
      launch_ins.i64(1, id).text(2, s.name).i64(3, s.start_ns).i64(4, s.end_ns).i64(5, s.duration_ns()).opt(6, thread);
      launch_ins.opt(7, s.correlation_id != 0 ? std::optional<std::int64_t>(static_cast<std::int64_t>(s.correlation_id))
                                              : std::nullopt);
      const auto [top_op, layer_op] = op_links(op);
      launch_ins.opt(8, s.tag_int("cbid")).id(9, op).id(10, top_op).id(11, layer_op).row();
    } else if (s.level == Level::kKernel) {
      const Span* p = parent(s);
      const SpanId launch = p != nullptr && p->level == Level::kSystem ? p->id : kNoSpan;
      const auto [top_op, layer_op] = op_links(op);
      insert_kernel(kernel_ins, s, launch, op, top_op, layer_op);
    }
  }
  db.exec("COMMIT");
}

void write_sqlite(const EvaluationRecord& record, const RunRecord& run, const fs::path& file) {
  Db db(file);
  fill_sqlite(db, record, run);
}

}  // namespace

void export_run_trace(const EvaluationRecord& record, const RunRecord& run, TraceFormat format, const fs::path& path) {
  switch (format) {
    case TraceFormat::kChrome: {
      const TraceResource resource = trace_resource(record, run);
      write_file_atomically(path, [&](std::ostream& out) { write_chrome_trace(out, run.trace, resource); });
      return;
    }
    case TraceFormat::kOtlp: {
      if (run.trace_id.empty()) {
        throw std::invalid_argument("run " + std::to_string(run.id) + " has no trace id (it was never stored)");
      }
      const TraceResource resource = trace_resource(record, run);
      write_file_atomically(path, [&](std::ostream& out) { write_otlp_json(out, run.trace, resource, run.trace_id); });
      return;
    }
    case TraceFormat::kSqlite:
      export_run_sqlite(record, run, path);
      return;
    case TraceFormat::kPerfetto: {
      const TraceResource resource = trace_resource(record, run);
      write_file_atomically(path, [&](std::ostream& out) { write_perfetto_trace(out, run.trace, resource); });
      return;
    }
  }
}

std::string export_run_trace_to_string(const EvaluationRecord& record, const RunRecord& run, TraceFormat format) {
  switch (format) {
    case TraceFormat::kChrome: {
      std::ostringstream out;
      write_chrome_trace(out, run.trace, trace_resource(record, run));
      return std::move(out).str();
    }
    case TraceFormat::kOtlp: {
      if (run.trace_id.empty()) {
        throw std::invalid_argument("run " + std::to_string(run.id) + " has no trace id (it was never stored)");
      }
      std::ostringstream out;
      write_otlp_json(out, run.trace, trace_resource(record, run), run.trace_id);
      return std::move(out).str();
    }
    case TraceFormat::kSqlite: {
      Db db({});
      fill_sqlite(db, record, run);
      return db.serialize();
    }
    case TraceFormat::kPerfetto: {
      std::ostringstream out;
      write_perfetto_trace(out, run.trace, trace_resource(record, run));
      return std::move(out).str();
    }
  }
  throw std::invalid_argument("unknown trace format");
}

void export_run_sqlite(const EvaluationRecord& record, const RunRecord& run, const fs::path& path) {
  TempOutput tmp(path, false);
  write_sqlite(record, run, tmp.path());  // closes its connection before returning or throwing
  tmp.publish();
}

void export_trace_file(const fs::path& blob, TraceFormat format, const fs::path& out) {
  RunRecord run;
  {  // the encoded blob is freed before the export: only the decoded trace stays in memory
    std::ifstream in(blob, std::ios::binary);
    if (!in) throw IoError("cannot read " + blob.string());
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      run.trace = decode_trace(bytes);
    } catch (const std::exception& e) {
      throw std::runtime_error(blob.string() + ": not an xsp-trace file: " + e.what());
    }
  }
  EvaluationRecord record;
  record.model_name = blob.stem().string();
  record.uuid = random_uuid();
  run.trace_id = random_trace_id();
  // The shallowest setting that enables every span the file holds.
  for (const Span& s : run.trace.spans) {
    while (!enables(run.trace_level, s.level) && run.trace_level != TraceLevel::kHardware) {
      run.trace_level = static_cast<TraceLevel>(static_cast<int>(run.trace_level) + 1);
    }
  }
  export_run_trace(record, run, format, out);
}

}  // namespace xsp

// ---- Traces of any size: streamed, sharded and windowed exports of a stored run ----------------------------------

namespace xsp {

BatchRange parse_batch_range(std::string_view text) {
  auto bad = [&](const std::string& why) { return BatchRangeError("--batches '" + std::string(text) + "': " + why); };
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) throw bad("expected A:B, the first and last measured batch (e.g. 3:5)");
  auto number = [&](std::string_view part, const char* which) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || v < 0)
      throw bad(std::string("the ") + which + " batch '" + std::string(part) +
                "' is not a batch number (an integer >= 0)");
    return v;
  };
  BatchRange r{number(text.substr(0, colon), "first"), number(text.substr(colon + 1), "last")};
  if (r.first > r.last)
    throw bad("the first batch " + std::to_string(r.first) + " comes after the last " + std::to_string(r.last));
  return r;
}

void BatchWindows::add(const Span& span) {
  if (span.level != Level::kModel) return;
  const auto batch = span.tag_int("batch");
  if (!batch) return;
  min_batch_ = std::min(min_batch_.value_or(*batch), *batch);
  max_batch_ = std::max(max_batch_.value_or(*batch), *batch);
  if (only_ && *batch != only_->first && *batch != only_->last) return;
  auto [it, inserted] = windows_.emplace(*batch, TimeWindow{span.start_ns, span.end_ns});
  if (!inserted) {
    it->second.start_ns = std::min(it->second.start_ns, span.start_ns);
    it->second.end_ns = std::max(it->second.end_ns, span.end_ns);
  }
}

TimeWindow BatchWindows::window(const BatchRange& range) const {
  const std::string value = std::to_string(range.first) + ":" + std::to_string(range.last);
  for (const std::int64_t b : {range.first, range.last}) {
    if (windows_.contains(b)) continue;
    std::string have;
    if (!min_batch_) {
      have = "none (no MODEL span carries a \"batch\" tag)";
    } else if (only_ || static_cast<std::int64_t>(windows_.size()) == *max_batch_ - *min_batch_ + 1) {
      have = std::to_string(*min_batch_) + " to " + std::to_string(*max_batch_);
    } else {
      std::size_t shown = 0;
      for (const auto& [n, w] : windows_) {
        if (shown++ == 20) {
          have += ", ...";
          break;
        }
        have += (have.empty() ? "" : ", ") + std::to_string(n);
      }
    }
    throw BatchRangeError("--batches '" + value + "': the trace has no measured batch " + std::to_string(b) +
                          " (its batches: " + have + ")");
  }
  return {windows_.at(range.first).start_ns, windows_.at(range.last).end_ns};
}

bool overlaps(const Span& span, const TimeWindow& window) {
  return span.start_ns <= window.end_ns && span.end_ns >= window.start_ns;
}

void keep_batches(Trace& trace, const BatchRange& batches) {
  BatchWindows windows;
  for (const Span& s : trace.spans) windows.add(s);
  const TimeWindow w = windows.window(batches);
  std::erase_if(trace.spans, [&](const Span& s) { return !overlaps(s, w); });
}

fs::path shard_path(const fs::path& path, std::size_t index) {
  std::string number = std::to_string(index);
  if (number.size() < 3) number.insert(0, 3 - number.size(), '0');
  fs::path out = path;
  out.replace_filename(path.stem().string() + "-" + number + path.extension().string());
  return out;
}

namespace {

std::unique_ptr<BlobReader> open_blob(Store& store, std::int64_t run_id) {
  auto blob = store.open_trace_blob(run_id);
  if (!blob) {
    throw StoreError("xsp store " + store.file().string() + ": run " + std::to_string(run_id) +
                     " has no stored trace (was it deleted?)");
  }
  return blob;
}

ByteSource source_of(BlobReader& blob) {
  return [&blob](std::uint8_t* out, std::size_t max_bytes) { return blob.read(out, max_bytes); };
}

std::runtime_error corrupt_trace(std::int64_t run_id, const std::exception& e) {
  return std::runtime_error("run " + std::to_string(run_id) + ": stored trace: " + e.what());
}

// Trace::counters plus the assembly report, as write_perfetto_trace() writes them in its "xsp.counters" instant.
std::map<std::string, std::uint64_t> loss_counters(std::map<std::string, std::uint64_t> counters,
                                                   const AssemblyReport& a) {
  for (const auto& [name, value] : PerfettoWriter::assembly_counters(a)) counters.insert_or_assign(name, value);
  return counters;
}

// A stored trace whose spans are not in start order (PerfettoWriter::add needs them so): decoded whole instead.
struct UnsortedTrace {};

// Spans of a stored run in start order, within an optional window, with what a PerfettoWriter needs before the
// first span (clock, processes).
class SpanFeed {
 public:
  // `whole`: decode the trace into memory and sort it (the fallback for an unsorted trace). `scan`: make the first
  // pass even when neither the version nor the window needs it, so that disorder is found before anything is written.
  SpanFeed(Store& store, std::int64_t run_id, const std::optional<BatchRange>& batches, bool whole, bool scan = false)
      : store_(store), run_id_(run_id) {
    if (whole) {
      trace_ = read_stored_trace(store, run_id);
      clock_ = trace_.clock;
      counters_ = loss_counters(trace_.counters, trace_.assembly);
      processes_ = trace_.processes;
      // The assembler's order (put_in_order): start, then level (outer first), then longer first.
      std::stable_sort(trace_.spans.begin(), trace_.spans.end(), [](const Span& a, const Span& b) {
        if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
        if (a.level != b.level) return a.level < b.level;
        return a.end_ns > b.end_ns;
      });
      if (batches) keep_batches(trace_, *batches);
      whole_ = true;
      return;
    }
    open_reader();
    clock_ = reader_->clock();
    counters_ = loss_counters(reader_->counters(), reader_->assembly());
    if (reader_->version() >= 3 || batches || scan) {
      // First pass: processes (after the spans in v3), the window of `batches` (only its two batches are kept:
      // memory stays O(1) in the span and batch count), and the order check.
      BatchWindows windows = batches ? BatchWindows(*batches) : BatchWindows();
      std::int64_t prev = std::numeric_limits<std::int64_t>::min();
      Span s;
      try {
        while (reader_->next(s)) {
          if (s.start_ns < prev) throw UnsortedTrace{};
          prev = s.start_ns;
          if (batches) windows.add(s);
        }
      } catch (const StoreError&) {
        throw;
      } catch (const std::runtime_error& e) {
        throw corrupt_trace(run_id_, e);
      }
      processes_ = reader_->processes();
      if (batches) window_ = windows.window(*batches);
      open_reader();
    }
  }

  const ClockInfo& clock() const { return clock_; }
  const std::vector<TraceProcess>& processes() const { return processes_; }
  /// The trace's counters and assembly report, as write_perfetto_trace() gives them to the writer.
  const std::map<std::string, std::uint64_t>& counters() const { return counters_; }

  /// The next span in the window; false at the end. Throws UnsortedTrace (single pass only), or a corrupt trace.
  bool next(Span& s) {
    if (whole_) {
      if (pos_ == trace_.spans.size()) return false;
      s = trace_.spans[pos_++];
      return true;
    }
    try {
      while (reader_->next(s)) {
        if (s.start_ns < prev_) throw UnsortedTrace{};
        prev_ = s.start_ns;
        if (!window_) return true;
        // Spans come in start order: none after this one starts in the window.
        if (s.start_ns > window_->end_ns) return false;
        if (overlaps(s, *window_)) return true;
      }
    } catch (const StoreError&) {
      throw;
    } catch (const std::runtime_error& e) {
      throw corrupt_trace(run_id_, e);
    }
    return false;
  }

 private:
  void open_reader() {
    reader_.reset();
    blob_ = open_blob(store_, run_id_);
    try {
      reader_ = std::make_unique<TraceBlobReader>(source_of(*blob_));
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const StoreError*>(&e) != nullptr) throw;
      throw corrupt_trace(run_id_, e);
    }
  }

  Store& store_;
  std::int64_t run_id_;
  std::unique_ptr<BlobReader> blob_;
  std::unique_ptr<TraceBlobReader> reader_;
  ClockInfo clock_;
  std::vector<TraceProcess> processes_;
  std::map<std::string, std::uint64_t> counters_;
  std::optional<TimeWindow> window_;
  std::int64_t prev_ = std::numeric_limits<std::int64_t>::min();
  bool whole_ = false;
  Trace trace_;
  std::size_t pos_ = 0;
};

// One output file of a (possibly sharded) Perfetto export: a temporary file with a large stream buffer.
class ShardFile {
 public:
  ShardFile(fs::path target) : target_(std::move(target)), tmp_(target_), buffer_(1 << 20) {
    out_.rdbuf()->pubsetbuf(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    out_.open(tmp_.path(), std::ios::binary);
    if (!out_) {
      throw IoError("cannot write " + target_.string() + ": cannot create " + tmp_.path().string() + ": " +
                    std::strerror(errno));
    }
  }
  std::ostream& out() { return out_; }
  /// Flushes and closes; throws IoError naming the file when a write failed.
  void close() {
    if (!out_) throw IoError("cannot write " + target_.string() + ": " + std::strerror(errno));
    out_.close();
    if (!out_) throw IoError("cannot write " + target_.string() + ": " + std::strerror(errno));
  }
  void publish() { tmp_.publish(); }
  const fs::path& target() const { return target_; }

 private:
  fs::path target_;
  TempOutput tmp_;
  std::vector<char> buffer_;
  std::ofstream out_;
};

// Feeds `feed` to PerfettoWriters: one on `first_out`, or, with max_bytes, a new one on next_out() each time the
// current one has passed max_bytes. Unsharded and sorted, the bytes are write_perfetto_trace()'s for the same trace.
// Returns the spans written. Stops when an output stream fails.
std::uint64_t write_perfetto_feed(SpanFeed& feed, const TraceResource& resource, std::ostream& first_out,
                                  const std::optional<std::uint64_t>& max_bytes,
                                  const std::function<std::ostream&()>& next_out) {
  std::ostream* out = &first_out;
  auto writer = std::make_unique<PerfettoWriter>(*out, resource, feed.clock(), feed.processes());
  std::uint64_t spans = 0;
  Span s;
  while (*out && feed.next(s)) {
    if (max_bytes && writer->spans_written() > 0 && writer->bytes_written() >= *max_bytes) {
      writer->finish();
      out = &next_out();
      writer = std::make_unique<PerfettoWriter>(*out, resource, feed.clock(), feed.processes());
    }
    writer->add(s);
    ++spans;
  }
  // The trace-wide counters once, in the last file: tools that sum them over the shards count each loss once.
  writer->add_counters(feed.counters());
  writer->finish();
  return spans;
}

TraceExportResult export_perfetto_stream(Store& store, const EvaluationRecord& record, const RunRecord& run,
                                         const fs::path& path, const TraceExportOptions& options, bool whole) {
  SpanFeed feed(store, run.id, options.batches, whole);
  const TraceResource resource = trace_resource(record, run);
  std::vector<std::unique_ptr<ShardFile>> files;
  auto next_file = [&]() -> std::ostream& {
    if (!files.empty()) files.back()->close();
    files.push_back(std::make_unique<ShardFile>(options.max_bytes ? shard_path(path, files.size() + 1) : path));
    return files.back()->out();
  };
  TraceExportResult result;
  result.streamed = !whole;
  std::ostream& first = next_file();
  result.spans = write_perfetto_feed(feed, resource, first, options.max_bytes, next_file);
  files.back()->close();
  // Published only once every file is complete: a failure before leaves none of them.
  for (auto& f : files) {
    f->publish();
    result.files.push_back(f->target());
  }
  return result;
}

}  // namespace

Trace read_stored_trace(Store& store, std::int64_t run_id) {
  auto blob = open_blob(store, run_id);
  try {
    TraceBlobReader reader(source_of(*blob));
    Trace trace = reader.header();
    trace.spans.reserve(static_cast<std::size_t>(reader.span_count()));
    Span s;
    while (reader.next(s)) trace.spans.push_back(std::move(s));
    trace.processes = reader.processes();
    return trace;
  } catch (const StoreError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw corrupt_trace(run_id, e);
  }
}

TraceExportResult export_stored_trace(Store& store, const EvaluationRecord& record, const RunRecord& run,
                                      TraceFormat format, const fs::path& path, const TraceExportOptions& options) {
  if (options.max_bytes && format != TraceFormat::kPerfetto) {
    throw std::invalid_argument("--max-bytes: sharding applies to --format perfetto only, not " +
                                std::string(to_string(format)));
  }
  if (options.max_bytes && *options.max_bytes == 0) throw std::invalid_argument("--max-bytes: expected > 0, got 0");
  if (std::error_code ec; options.max_bytes && fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    throw std::invalid_argument("--max-bytes: the shards' names come from the output's, which must be a file, not " +
                                path.string());
  if (format == TraceFormat::kPerfetto) {
    try {
      return export_perfetto_stream(store, record, run, path, options, false);
    } catch (const UnsortedTrace&) {
      // Its temporary files are gone already (ShardFile): written again from the sorted trace.
      return export_perfetto_stream(store, record, run, path, options, true);
    }
  }
  RunRecord whole = run;
  whole.trace = read_stored_trace(store, run.id);
  if (options.batches) keep_batches(whole.trace, *options.batches);
  export_run_trace(record, whole, format, path);
  TraceExportResult result;
  result.files = {path};
  result.spans = whole.trace.spans.size();
  return result;
}

struct StoredPerfettoStream::Impl {
  TraceResource resource;
  std::unique_ptr<SpanFeed> feed;
};

StoredPerfettoStream::StoredPerfettoStream(Store& store, const EvaluationRecord& record, const RunRecord& run,
                                           const std::optional<BatchRange>& batches)
    : impl_(std::make_unique<Impl>()) {
  impl_->resource = trace_resource(record, run);
  try {
    // Always the first pass: disorder must be found before the first byte goes out, as `out` cannot be taken back.
    impl_->feed = std::make_unique<SpanFeed>(store, run.id, batches, false, true);
  } catch (const UnsortedTrace&) {
    impl_->feed = std::make_unique<SpanFeed>(store, run.id, batches, true);
  }
}

StoredPerfettoStream::~StoredPerfettoStream() = default;

std::uint64_t StoredPerfettoStream::write(std::ostream& out) {
  if (!impl_->feed) throw std::logic_error("StoredPerfettoStream::write called twice");
  auto no_shards = [&]() -> std::ostream& { return out; };
  const std::uint64_t spans = write_perfetto_feed(*impl_->feed, impl_->resource, out, std::nullopt, no_shards);
  impl_->feed.reset();
  return spans;
}

}  // namespace xsp
