// The results store's schema, declared once (include/xsp/store/schema.h), and the DDL of each dialect generated from
// it. The declaration is the only place the schema is written; src/store/sqlite_store.cc and
// src/store/postgres/pg_schema.cc run results_migrations() of their dialect.
#include "xsp/store/schema.h"

#include <map>
#include <set>
#include <stdexcept>

#include "xsp/record/record.h"
#include "xsp/util/strings.h"

namespace xsp::store_schema {
namespace {

using enum Type;

// ---- The declaration --------------------------------------------------------------------------------------------
// Checks make the database itself refuse records no writer should produce, so a bug in a writer fails loudly (and,
// inside save()'s transaction, leaves nothing behind) instead of storing garbage.

std::vector<Version> versions() {
  return {
      {1, "Evaluations and their runs."},
      {2, "Per-input outputs of a run (xsp evaluate --store-predictions), for framework comparison."},
      {3, "Measured machine ceilings (`xsp machine ceilings`, SPEC §4: rooflines use measured peaks)."},
      {4,
       "Is a latency a result (SPEC §3 \"Stability\")? Per run the stability verdict and the figures users query "
       "as typed columns, the windows, blocks and machine state as JSON, its warnings; per evaluation the level "
       "overheads with their intervals. Runs of older stores read as 'not_assessed'."},
      {5,
       "Ids that outlive the store (issue 11): a random OTLP trace id per run and a random UUID per evaluation, so "
       "exports of \"evaluation 1, run 1\" from two stores never merge; rows of older stores get theirs here."},
      {6, "Token generation (issue 15): the token-latency figures of a run as JSON ('{}' for other tasks)."},
      {7, "The detections and masks of detection and segmentation predictions (prediction_outputs())."},
      {8,
       "The workload that made an evaluation (issue 30, RecordKind): 'batch-sweep', 'scenario' or 'generation', "
       "read from the scenario of older rows."},
      {9,
       "Typed outcomes (issue 30): a scenario run's result in its own column (before, in its evaluation's "
       "settings.results), and the figures users query as typed columns: QPS, p99, whether a bound was met, TTFT and "
       "TPOT p50/p99, output tokens/s. Rows of older stores get theirs from the JSON they already hold."},
      {10,
       "Programs profiled from outside (issue 23, `xsp profile`): evaluations.kind admits 'external'; the column is "
       "re-created with the wider CHECK, its values kept."},
      {11,
       "What a person writes on an evaluation to find it again (`xsp label`, PATCH /api/v1/evaluations/{id}): a "
       "name, tags (a JSON array of strings) and a note; older rows get none ('', '[]', '')."},
      {12,
       "Serving engines measured from outside (issue 27, `xsp bench-serve`): evaluations.kind admits 'serving'; the "
       "column is re-created with the wider CHECK (and so moves after the labels), its values kept, and the serving "
       "evaluations stored before, whose kind was NULL, get 'serving' from their scenario."},
  };
}

// 32 lowercase hex digits, and a version-4 UUID (gen_random_uuid(): PostgreSQL 13 or newer), for rows of stores older
// than version 5.
const PerDialect kRandomTraceId{"lower(hex(randomblob(16)))",
                                "md5(random()::text || clock_timestamp()::text || id::text)"};
// RecordKind of an older row, from its scenario as record_kind() reads it (xsp/record/record.h).
const std::string kKindOfScenario =
    "CASE WHEN scenario IN ('single-stream', 'multi-stream', 'server', 'offline') THEN 'scenario' WHEN scenario = "
    "'generation' OR scenario LIKE 'generation-%' THEN 'generation' ELSE 'batch-sweep' END";
const PerDialect kKindFromScenario{kKindOfScenario, kKindOfScenario};
// Version 12: the serving evaluations saved before it, with a NULL kind (record_kind("serving") is
// RecordKind::kServing).
const std::string kServingOfScenario = "CASE WHEN scenario = 'serving' THEN 'serving' END";
const PerDialect kServingFromScenario{kServingOfScenario, kServingOfScenario};
const PerDialect kRandomUuid{
    "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || "
    "substr('89ab', 1 + abs(random()) % 4, 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))",
    "gen_random_uuid()::text"};

// Version 9's backfills: a scenario run's result is entry N of its evaluation's settings.results, N its position
// among the evaluation's runs (runs are inserted in the record's order); typed figures come out of the JSON columns.
const std::string kRunPosition =
    "(SELECT count(*) FROM runs AS earlier WHERE earlier.evaluation_id = runs.evaluation_id AND earlier.id < runs.id)";
const PerDialect kScenarioResultFromSettings{
    "(SELECT json_extract(e.settings, '$.results[' || " + kRunPosition +
        " || ']') FROM evaluations AS e WHERE e.id = runs.evaluation_id AND e.kind = 'scenario')",
    "(SELECT (e.settings::jsonb -> 'results' -> " + kRunPosition +
        "::int)::text FROM evaluations AS e WHERE e.id = runs.evaluation_id AND e.kind = 'scenario')"};
// A number at `path` (SQLite JSON path; PostgreSQL path elements) of JSON column `column`; NULL when absent or null.
PerDialect json_real(const std::string& column, const std::string& sqlite_path, const std::string& pg_path) {
  return {"json_extract(" + column + ", '" + sqlite_path + "')",
          "(" + column + "::jsonb #>> '" + pg_path + "')::double precision"};
}
// A JSON boolean as 1 or 0 (NULL when absent).
std::string pg_bool(const std::string& column, const std::string& key) {
  return "CASE (" + column + "::jsonb ->> '" + key + "') WHEN 'true' THEN 1 WHEN 'false' THEN 0 END";
}
const PerDialect kMeetsBound{
    "CASE WHEN json_extract(scenario_result, '$.scenario') = 'server' AND json_extract(scenario_result, "
    "'$.latency_bound_ns') > 0 THEN json_extract(scenario_result, '$.meets_bound') ELSE json_extract(generation, "
    "'$.valid') END",
    "CASE WHEN (scenario_result::jsonb ->> 'scenario') = 'server' AND (scenario_result::jsonb ->> "
    "'latency_bound_ns')::double precision > 0 THEN " +
        pg_bool("scenario_result", "meets_bound") + " ELSE " + pg_bool("generation", "valid") + " END"};

Table evaluations() {
  return {
      "evaluations",
      1,
      "One `xsp evaluate` (or imported) evaluation: what ran where, with its settings.",
      {
          col("id", kId),
          col("created_at", kTimestamp).required(),
          col("status", kText).required().check("status IN ('complete', 'incomplete')"),
          col("model_name", kText).required(),
          col("model_version", kText).required(),
          col("manifest_yaml", kText).required(),
          col("framework_name", kText).required(),
          col("framework_version", kText).required(),
          col("device", kText).required().described("\"cpu\" or \"cuda:N\""),
          col("scenario", kText).required(),
          col("batch_sizes", kJson).required(),
          col("trace_level", kText).required(),
          col("leveled", kInteger).required().check("leveled IN (0, 1)"),
          col("settings", kJson).required(),
          col("system", kJson).required().described("the machine's description; system.host.hostname is filtered on"),
          col("uuid", kText)
              .check("uuid IS NULL OR length(uuid) = 36")
              .since(5)
              .backfilled(kRandomUuid)
              .described("OTLP service.instance.id"),
          // The limits are service::validate_labels()'s; the CHECKs make a writer that skipped it fail loudly.
          col("name", kText)
              .required()
              .default_to("''")
              .check("length(name) <= 120")
              .since(11)
              .described("a person's short name for the evaluation; '' for none"),
          col("tags", kJson)
              .required()
              .default_to("'[]'")
              .since(11)
              .described("a JSON array of distinct tags, sorted; the tag filter reads it"),
          col("note", kText)
              .required()
              .default_to("''")
              .check("length(note) <= 4000")
              .since(11)
              .described("a person's note; '' for none"),
          // Declared last: version 12 re-created it, and ADD COLUMN put it after the labels.
          col("kind", kText)
              .check("kind IS NULL OR kind IN ('batch-sweep', 'scenario', 'generation', 'external', 'serving')")
              .since(8)
              .backfilled(kKindFromScenario)
              .recreated(10, "kind IS NULL OR kind IN ('batch-sweep', 'scenario', 'generation')")
              .recreated(12, "kind IS NULL OR kind IN ('batch-sweep', 'scenario', 'generation', 'external')",
                         kServingFromScenario)
              .described("the workload that made the evaluation (RecordKind): batch-sweep, scenario, generation, "
                         "external or serving"),
      },
      {},
      {},
      {}};
}

Table runs() {
  return {"runs",
          1,
          "One batch size at one trace level. span_count, unparented_spans and counters duplicate what is inside the "
          "trace blob so that listings and queries (\"runs that lost spans\") need not decompress traces.",
          {
              col("id", kId),
              col("evaluation_id", kInteger).required().references("evaluations"),
              col("batch_size", kInteger).required().check("batch_size > 0"),
              col("trace_level", kText).required(),
              col("warmup_iterations", kInteger).required().check("warmup_iterations >= 0"),
              col("iterations", kInteger).required().check("iterations >= 0"),
              col("throughput_samples_per_s", kReal),
              col("stage_latency_ns", kJson).required(),
              col("predict_latency_ns", kBlob).required().described("little-endian doubles (record_columns.h)"),
              col("span_count", kInteger).required(),
              col("unparented_spans", kInteger).required(),
              col("counters", kJson).required(),
              col("trace", kBlob).required().described("the compressed trace (xsp/trace/serialize.h)"),
              col("stability", kText)
                  .required()
                  .default_to("'not_assessed'")
                  .check("stability IN ('stable', 'unstable', 'not_assessed')")
                  .wrap_check()
                  .since(4),
              col("latency_median_ns", kReal).since(4),
              col("latency_ci95_low_ns", kReal).since(4),
              col("latency_ci95_high_ns", kReal).since(4),
              col("latency_cv", kReal).since(4),
              col("drift_fraction", kReal).since(4),
              col("warmup_ns", kInteger).required().default_to("0").check("warmup_ns >= 0").since(4),
              col("measurement", kJson).required().default_to("'{}'").since(4),
              col("machine_state", kJson).required().default_to("'{}'").since(4),
              col("warnings", kJson).required().default_to("'[]'").since(4),
              col("trace_id", kText)
                  .check("trace_id IS NULL OR (length(trace_id) = 32 AND @only_chars(trace_id, 0-9a-f))")
                  .since(5)
                  .backfilled(kRandomTraceId)
                  .described("OTLP trace id, 32 lowercase hex digits"),
              col("generation", kJson).required().default_to("'{}'").since(6),
              col("scenario_result", kJson)
                  .since(9)
                  .backfilled(kScenarioResultFromSettings)
                  .described("a LoadGen scenario run's ScenarioOutcome (xsp/record/outcome.h); NULL for other runs"),
              col("qps", kReal)
                  .since(9)
                  .backfilled(json_real("scenario_result", "$.qps_with_overhead", "{qps_with_overhead}"))
                  .described("scenario runs: queries/s with LoadGen's overhead (Offline: samples/s)"),
              col("latency_p99_ns", kReal)
                  .since(9)
                  .backfilled(json_real("scenario_result", "$.p99_ns", "{p99_ns}"))
                  .described("scenario runs: p99 query latency"),
              col("meets_bound", kInteger)
                  .check("meets_bound IS NULL OR meets_bound IN (0, 1)")
                  .since(9)
                  .backfilled(kMeetsBound)
                  .described("1/0: a Server run's p-th latency, or a generation run's TTFT and TPOT, met the bound; "
                             "NULL without a bound"),
              col("ttft_p50_ns", kReal)
                  .since(9)
                  .backfilled(json_real("generation", "$.ttft_ns.p50", "{ttft_ns,p50}"))
                  .described("generation runs"),
              col("ttft_p99_ns", kReal)
                  .since(9)
                  .backfilled(json_real("generation", "$.ttft_ns.p99", "{ttft_ns,p99}"))
                  .described("generation runs"),
              col("tpot_p50_ns", kReal)
                  .since(9)
                  .backfilled(json_real("generation", "$.tpot_ns.p50", "{tpot_ns,p50}"))
                  .described("generation runs"),
              col("tpot_p99_ns", kReal)
                  .since(9)
                  .backfilled(json_real("generation", "$.tpot_ns.p99", "{tpot_ns,p99}"))
                  .described("generation runs"),
              col("output_tokens_per_s", kReal)
                  .since(9)
                  .backfilled(json_real("generation", "$.output_tokens_per_s", "{output_tokens_per_s}"))
                  .described("generation runs"),
          },
          {},
          {},
          {{"runs_evaluation_id", {"evaluation_id"}}, {"runs_trace_id", {"trace_id"}, true, 5}}};
}

Table predictions() {
  return {"predictions",
          2,
          "The per-input outputs of a run; `position` restores the run's order exactly.",
          {
              col("run_id", kInteger).required().references("runs"),
              col("position", kInteger).required().check("position >= 0"),
              col("input_id", kText).required(),
              col("top_classes", kJson).required(),
              col("probabilities", kBlob).required().described("little-endian IEEE-754 float32"),
              col("outputs", kJson).required().default_to("'{}'").since(7),
          },
          {"run_id", "position"},
          {{"run_id", "input_id"}},
          {}};
}

Table machine_ceilings() {
  return {"machine_ceilings",
          3,
          "One measurement of one GPU's peaks; never edited: a new one is added and the latest wins.",
          {
              col("id", kId),
              col("hostname", kText).required().check("length(hostname) > 0"),
              col("gpu_name", kText).required().check("length(gpu_name) > 0"),
              col("gpu_uuid", kText).required(),
              col("measured_at", kTimestamp).required().check("length(measured_at) > 0"),
              col("clocks_note", kText).required(),
          },
          {},
          {},
          {{"machine_ceilings_machine", {"hostname", "gpu_name", "measured_at"}}}};
}

Table ceilings() {
  return {"ceilings",
          3,
          "One peak of a machine_ceilings measurement.",
          {
              col("machine_ceilings_id", kInteger).required().references("machine_ceilings"),
              col("position", kInteger).required().check("position >= 0"),
              col("name", kText).required().check("length(name) > 0"),
              col("value", kReal).required().check("value > 0"),
              col("unit", kText).required().check("unit IN ('flop/s', 'op/s', 'bytes/s')"),
              col("method", kText).required(),
          },
          {"machine_ceilings_id", "position"},
          {{"machine_ceilings_id", "name"}},
          {}};
}

Table level_overheads() {
  return {"level_overheads",
          4,
          "The overhead of each trace level over its baseline, with its 95% interval.",
          {
              col("evaluation_id", kInteger).required().references("evaluations"),
              col("position", kInteger).required().check("position >= 0"),
              col("batch_size", kInteger).required().check("batch_size > 0"),
              col("trace_level", kText).required(),
              col("baseline_trace_level", kText).required(),
              col("design", kText).required().check("design IN ('interleaved', 'sequential', 'residual')"),
              col("rounds", kInteger).required().check("rounds >= 0"),
              col("latency_ns", kReal),
              col("baseline_latency_ns", kReal),
              col("overhead_fraction", kReal),
              col("ci95_low_fraction", kReal),
              col("ci95_high_fraction", kReal),
              col("significant", kInteger).required().check("significant IN (0, 1)"),
              col("note", kText).required(),
          },
          {"evaluation_id", "position"},
          {},
          {}};
}

// ---- Generating the DDL -----------------------------------------------------------------------------------------

struct DialectFunction {
  std::string_view name;
  std::size_t arguments;
  std::string_view sqlite, postgres;  // $1, $2: the arguments
};
constexpr DialectFunction kFunctions[] = {
    {"only_chars", 2, "$1 NOT GLOB '*[^$2]*'", "$1 !~ '[^$2]'"},
};

std::string substitute(std::string_view pattern, const std::vector<std::string>& args) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '$' && i + 1 < pattern.size() && pattern[i + 1] >= '1' && pattern[i + 1] <= '9') {
      out += args.at(static_cast<std::size_t>(pattern[i + 1] - '1'));
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

void add_statement(std::string& out, const std::string& statement) { out += statement + ";\n"; }

// `table` as version `version` declared it: every column's CHECK of that time.
Table table_as_of(const Table& table, int version) {
  Table t = table;
  for (Column& c : t.columns) c = c.as_of(version);
  return t;
}

// Version `version`'s statements for `table` (nothing when it touches the table not).
void table_step(Dialect dialect, const Table& declared, int version, std::string& out) {
  const Table table = table_as_of(declared, version);
  if (table.since == version) {
    add_statement(out, create_table_sql(dialect, table));
  } else if (table.since < version) {
    for (const Column& c : table.columns) {
      if (c.added_in == version)
        add_statement(out, "ALTER TABLE " + table.name + " ADD COLUMN " + column_sql(dialect, c));
    }
    for (const Column& c : table.columns) {
      if (c.added_in == version && c.backfill)
        add_statement(out, "UPDATE " + table.name + " SET " + c.name + " = " + c.backfill->in(dialect) + " WHERE " +
                               c.name + " IS NULL");
    }
    for (const Column& c : table.columns) {
      const Column::Recreation* r = c.recreated_by(version);
      if (r == nullptr) continue;
      const std::string before = c.name + "_before_v" + std::to_string(version);
      add_statement(out, "ALTER TABLE " + table.name + " RENAME COLUMN " + c.name + " TO " + before);
      add_statement(out, "ALTER TABLE " + table.name + " ADD COLUMN " + column_sql(dialect, c));
      add_statement(out, "UPDATE " + table.name + " SET " + c.name + " = " +
                             (r->fill ? "COALESCE(" + before + ", " + r->fill->in(dialect) + ")" : before));
      add_statement(out, "ALTER TABLE " + table.name + " DROP COLUMN " + before);
    }
  } else {
    return;
  }
  for (const Index& index : table.indexes) {
    const int added = index.added_in == 0 ? table.since : index.added_in;
    if (added == version) add_statement(out, create_index_sql(table, index));
  }
}

// ---- Validation -------------------------------------------------------------------------------------------------

[[noreturn]] void invalid(const std::string& what) { throw std::logic_error("store schema: " + what); }

// `names` are columns of `table` that exist by `version`.
void check_columns(const Table& table, const std::vector<std::string>& names, int version, const std::string& what) {
  if (names.empty()) invalid(what + " of table " + table.name + " names no column");
  for (const std::string& n : names) {
    const Column* c = table.column(n);
    if (c == nullptr) invalid(what + " of table " + table.name + " names no column of it: " + n);
    if (c->added_in > version) invalid(what + " of table " + table.name + " names " + n + ", added later");
  }
}

void validate_column(const Schema& schema, const Table& table, std::size_t position, const Column& c) {
  const std::string where = "column " + table.name + "." + c.name;
  const int latest = schema.version();
  if (c.name.empty()) invalid("a column of table " + table.name + " has no name");
  if (c.added_in != 0 && (c.added_in <= table.since || c.added_in > latest))
    invalid(where + ": added in version " + std::to_string(c.added_in) + ", not after its table's " +
            std::to_string(table.since) + " and up to " + std::to_string(latest));
  if (c.type == kId && (position != 0 || c.added_in != 0 || !table.primary_key.empty()))
    invalid(where + ": an id is the first column, created with its table, and the table's only key");
  if (c.added_in != 0 && c.not_null && c.default_sql.empty())
    invalid(where + ": a NOT NULL column added to an existing table needs a DEFAULT");
  if (c.backfill && (c.added_in == 0 || c.not_null))
    invalid(where + ": only a nullable column added to an existing table is backfilled");
  if (c.foreign_key) {
    const Table* target = schema.table(c.foreign_key->table);
    const int version = c.added_in == 0 ? table.since : c.added_in;
    if (target == nullptr || target == &table || target->since > version || target > &table)
      invalid(where + ": references " + c.foreign_key->table + ", which is not a table declared before it");
    const Column* key = target->column(c.foreign_key->column);
    if (key == nullptr || key->added_in > version)
      invalid(where + ": references " + c.foreign_key->table + "." + c.foreign_key->column + ", which is no column");
  }
  for (Dialect d : kDialects) (void)expand_dialect_functions(d, c.check_sql);
  int previous = c.added_in == 0 ? table.since : c.added_in;
  for (const Column::Recreation& r : c.recreations) {
    // Re-created by RENAME, ADD COLUMN (appended last), DROP: validate_table() asks the column to be declared where
    // that puts it, and SQLite drops no column that a key or an index names.
    if (r.version <= previous || r.version > latest)
      invalid(where + ": re-created in version " + std::to_string(r.version) + ", not after version " +
              std::to_string(previous) + " that made or last re-created it and up to " + std::to_string(latest));
    previous = r.version;
    for (Dialect d : kDialects) {
      (void)expand_dialect_functions(d, r.earlier_check);
      if (r.fill) (void)expand_dialect_functions(d, r.fill->in(d));
    }
  }
  if (!c.recreations.empty()) {
    if (c.type == kId || c.foreign_key || (c.not_null && c.default_sql.empty()))
      invalid(where + ": a re-created column is no id, no foreign key, and nullable or with a DEFAULT");
    for (const auto& key : table.unique)
      for (const std::string& n : key)
        if (n == c.name) invalid(where + ": a re-created column is in no key or index");
    for (const std::string& n : table.primary_key)
      if (n == c.name) invalid(where + ": a re-created column is in no key or index");
    for (const Index& index : table.indexes)
      for (const std::string& n : index.columns)
        if (n == c.name) invalid(where + ": a re-created column is in no key or index");
  }
}

// Where ALTER TABLE left a column: (the version that last added or re-created it, 0 for an add, 1 for a re-creation,
// since a version adds its columns before it re-creates any). Declared in this order, a table's columns are in the
// order every store, new or migrated, has them.
std::pair<int, int> placement(const Column& c) {
  return {c.placed_in(), c.recreations.empty() ? 0 : 1};  // validate_column(): re-created after it was added
}

void validate_table(const Schema& schema, const Table& table) {
  if (table.name.empty() || table.columns.empty()) invalid("a table without a name or columns");
  if (table.since < 1 || table.since > schema.version())
    invalid("table " + table.name + ": created in version " + std::to_string(table.since) + ", which is not declared");
  std::set<std::string> names;
  for (std::size_t i = 0; i < table.columns.size(); ++i) {
    const Column& c = table.columns[i];
    if (!names.insert(c.name).second) invalid("table " + table.name + " declares column " + c.name + " twice");
    if (i > 0 && placement(table.columns[i - 1]) > placement(c))
      invalid("column " + table.name + "." + c.name +
              ": declared after a column added or re-created by a later version (columns are declared in the "
              "table's order, and ALTER TABLE adds a column last)");
    validate_column(schema, table, i, c);
  }
  if (!table.primary_key.empty()) check_columns(table, table.primary_key, table.since, "the primary key");
  for (const auto& u : table.unique) check_columns(table, u, table.since, "a UNIQUE constraint");
  for (const Index& index : table.indexes) {
    const int version = index.added_in == 0 ? table.since : index.added_in;
    if (index.name.empty() || version < table.since || version > schema.version())
      invalid("an index of table " + table.name + " has no name or an undeclared version");
    check_columns(table, index.columns, version, "index " + index.name);
  }
}

}  // namespace

std::string_view dialect_name(Dialect dialect) { return dialect == Dialect::kSqlite ? "SQLite" : "PostgreSQL"; }

std::string_view sql_type(Dialect dialect, Type type) {
  const bool lite = dialect == Dialect::kSqlite;
  switch (type) {
    case kId:
      return lite ? "INTEGER PRIMARY KEY" : "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY";
    case kInteger:
      return lite ? "INTEGER" : "BIGINT";
    case kInt32:
      return "INTEGER";
    case kReal:
      return lite ? "REAL" : "DOUBLE PRECISION";
    case kText:
    case kJson:
    case kTimestamp:
      return "TEXT";
    case kBlob:
      return lite ? "BLOB" : "BYTEA";
  }
  throw std::logic_error("store schema: unknown column type");
}

const Column* Table::column(std::string_view name) const {
  for (const Column& c : columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const Table* Schema::table(std::string_view name) const {
  for (const Table& t : tables) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const Schema& results_schema() {
  static const Schema schema = [] {
    Schema s{"schema_version",
             versions(),
             {evaluations(), runs(), predictions(), machine_ceilings(), ceilings(), level_overheads()}};
    validate(s);
    return s;
  }();
  return schema;
}

void validate(const Schema& schema) {
  if (schema.version_table.empty()) invalid("no version table");
  for (std::size_t i = 0; i < schema.versions.size(); ++i) {
    if (schema.versions[i].number != static_cast<int>(i) + 1)
      invalid("versions must be numbered 1, 2, ...; found " + std::to_string(schema.versions[i].number) +
              " at position " + std::to_string(i + 1));
  }
  std::set<std::string> names{schema.version_table};
  for (const Table& t : schema.tables) {
    if (!names.insert(t.name).second) invalid("table " + t.name + " is declared twice");
    validate_table(schema, t);
    for (const Index& index : t.indexes) {
      if (!names.insert(index.name).second) invalid("the name " + index.name + " is declared twice");
    }
  }
  const std::vector<MigrationStep> steps = migration_steps(Dialect::kSqlite, schema);
  for (const MigrationStep& step : steps) {
    if (step.sql.empty()) invalid("version " + std::to_string(step.version) + " changes nothing");
  }
}

std::string expand_dialect_functions(Dialect dialect, std::string_view text) {
  std::string out;
  std::size_t at = 0;
  for (std::size_t call = text.find('@'); call != std::string_view::npos; call = text.find('@', at)) {
    out += text.substr(at, call - at);
    const std::size_t open = text.find('(', call);
    const std::size_t close = text.find(')', call);
    if (open == std::string_view::npos || close == std::string_view::npos || close < open)
      throw std::logic_error("store schema: malformed dialect function call in: " + std::string(text));
    const std::string_view name = text.substr(call + 1, open - call - 1);
    std::vector<std::string> args;
    const std::string_view inside = text.substr(open + 1, close - open - 1);
    for (std::size_t b = 0;;) {
      const std::size_t comma = inside.find(',', b);
      args.emplace_back(
          util::trim(inside.substr(b, comma == std::string_view::npos ? std::string_view::npos : comma - b), " "));
      if (comma == std::string_view::npos) break;
      b = comma + 1;
    }
    const DialectFunction* f = nullptr;
    for (const DialectFunction& known : kFunctions) {
      if (known.name == name) f = &known;
    }
    if (f == nullptr || f->arguments != args.size())
      throw std::logic_error("store schema: unknown dialect function or wrong number of arguments: @" +
                             std::string(name) + " in: " + std::string(text));
    out += substitute(dialect == Dialect::kSqlite ? f->sqlite : f->postgres, args);
    at = close + 1;
  }
  out += text.substr(at);
  return out;
}

std::string column_sql(Dialect dialect, const Column& c) {
  std::string out = c.name + " " + std::string(sql_type(dialect, c.type));
  if (c.not_null) out += " NOT NULL";
  if (!c.default_sql.empty()) out += " DEFAULT " + c.default_sql;
  if (c.foreign_key) {
    out += " REFERENCES " + c.foreign_key->table + " (" + c.foreign_key->column + ")";
    if (!c.foreign_key->on_delete.empty()) out += " ON DELETE " + c.foreign_key->on_delete;
  }
  if (!c.check_sql.empty())
    out += std::string(c.check_on_new_line ? "\n  " : " ") + "CHECK (" +
           expand_dialect_functions(dialect, c.check_sql) + ")";
  return out;
}

std::string create_table_sql(Dialect dialect, const Table& table, bool if_not_exists) {
  std::vector<std::string> lines;
  for (const Column& c : table.columns) {
    if (c.added_in == 0) lines.push_back(column_sql(dialect, c));
  }
  if (!table.primary_key.empty()) lines.push_back("PRIMARY KEY (" + util::join(table.primary_key, ", ") + ")");
  for (const auto& u : table.unique) lines.push_back("UNIQUE (" + util::join(u, ", ") + ")");
  const std::string head = std::string("CREATE TABLE ") + (if_not_exists ? "IF NOT EXISTS " : "") + table.name + " (";
  if (lines.size() == 1) return head + lines.front() + ")";
  return head + "\n  " + util::join(lines, ",\n  ") + "\n)";
}

std::string create_index_sql(const Table& table, const Index& index) {
  return std::string(index.unique ? "CREATE UNIQUE INDEX " : "CREATE INDEX ") + index.name + " ON " + table.name +
         " (" + util::join(index.columns, ", ") + ")";
}

std::string version_table_sql(Dialect dialect, std::string_view name) {
  Table t{std::string(name), 1, "", {col("version", kInt32).required()}, {}, {}, {}};
  return create_table_sql(dialect, t, true);
}

std::vector<MigrationStep> migration_steps(Dialect dialect, const Schema& schema) {
  std::vector<MigrationStep> steps;
  for (const Version& v : schema.versions) {
    MigrationStep step{v.number, {}};
    for (const Table& table : schema.tables) table_step(dialect, table, v.number, step.sql);
    steps.push_back(std::move(step));
  }
  return steps;
}

const std::vector<MigrationStep>& results_migrations(Dialect dialect) {
  static const std::vector<MigrationStep> sqlite = migration_steps(Dialect::kSqlite, results_schema());
  static const std::vector<MigrationStep> postgres = migration_steps(Dialect::kPostgres, results_schema());
  return dialect == Dialect::kSqlite ? sqlite : postgres;
}

std::optional<std::string> evaluation_kind(std::string_view scenario) {
  try {
    return std::string(to_string(record_kind(scenario)));
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

}  // namespace xsp::store_schema
