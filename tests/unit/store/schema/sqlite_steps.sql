-- The SQLite schema steps as XSP wrote them by hand in src/store/sqlite_store.cc before the schema was
-- declared once (src/store/schema.cc): what stores of versions 1..7 in the field ran. Frozen: never edit. The tests
-- build stores of each old version from them (schema_test.cc, postgres_schema_test.cc). A step starts at its
-- "-- version N" line.
-- version 1
CREATE TABLE evaluations (
  id INTEGER PRIMARY KEY,
  created_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('complete', 'incomplete')),
  model_name TEXT NOT NULL,
  model_version TEXT NOT NULL,
  manifest_yaml TEXT NOT NULL,
  framework_name TEXT NOT NULL,
  framework_version TEXT NOT NULL,
  device TEXT NOT NULL,
  scenario TEXT NOT NULL,
  batch_sizes TEXT NOT NULL,
  trace_level TEXT NOT NULL,
  leveled INTEGER NOT NULL CHECK (leveled IN (0, 1)),
  settings TEXT NOT NULL,
  system TEXT NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  evaluation_id INTEGER NOT NULL REFERENCES evaluations (id) ON DELETE CASCADE,
  batch_size INTEGER NOT NULL CHECK (batch_size > 0),
  trace_level TEXT NOT NULL,
  warmup_iterations INTEGER NOT NULL CHECK (warmup_iterations >= 0),
  iterations INTEGER NOT NULL CHECK (iterations >= 0),
  throughput_samples_per_s REAL,
  stage_latency_ns TEXT NOT NULL,
  predict_latency_ns BLOB NOT NULL,
  span_count INTEGER NOT NULL,
  unparented_spans INTEGER NOT NULL,
  counters TEXT NOT NULL,
  trace BLOB NOT NULL
);
CREATE INDEX runs_evaluation_id ON runs (evaluation_id);
-- version 2
CREATE TABLE predictions (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  position INTEGER NOT NULL CHECK (position >= 0),
  input_id TEXT NOT NULL,
  top_classes TEXT NOT NULL,
  probabilities BLOB NOT NULL,
  PRIMARY KEY (run_id, position),
  UNIQUE (run_id, input_id)
);
-- version 3
CREATE TABLE machine_ceilings (
  id INTEGER PRIMARY KEY,
  hostname TEXT NOT NULL CHECK (length(hostname) > 0),
  gpu_name TEXT NOT NULL CHECK (length(gpu_name) > 0),
  gpu_uuid TEXT NOT NULL,
  measured_at TEXT NOT NULL CHECK (length(measured_at) > 0),
  clocks_note TEXT NOT NULL
);
CREATE INDEX machine_ceilings_machine ON machine_ceilings (hostname, gpu_name, measured_at);
CREATE TABLE ceilings (
  machine_ceilings_id INTEGER NOT NULL REFERENCES machine_ceilings (id) ON DELETE CASCADE,
  position INTEGER NOT NULL CHECK (position >= 0),
  name TEXT NOT NULL CHECK (length(name) > 0),
  value REAL NOT NULL CHECK (value > 0),
  unit TEXT NOT NULL CHECK (unit IN ('flop/s', 'op/s', 'bytes/s')),
  method TEXT NOT NULL,
  PRIMARY KEY (machine_ceilings_id, position),
  UNIQUE (machine_ceilings_id, name)
);
-- version 4
ALTER TABLE runs ADD COLUMN stability TEXT NOT NULL DEFAULT 'not_assessed'
  CHECK (stability IN ('stable', 'unstable', 'not_assessed'));
ALTER TABLE runs ADD COLUMN latency_median_ns REAL;
ALTER TABLE runs ADD COLUMN latency_ci95_low_ns REAL;
ALTER TABLE runs ADD COLUMN latency_ci95_high_ns REAL;
ALTER TABLE runs ADD COLUMN latency_cv REAL;
ALTER TABLE runs ADD COLUMN drift_fraction REAL;
ALTER TABLE runs ADD COLUMN warmup_ns INTEGER NOT NULL DEFAULT 0 CHECK (warmup_ns >= 0);
ALTER TABLE runs ADD COLUMN measurement TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN machine_state TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]';
CREATE TABLE level_overheads (
  evaluation_id INTEGER NOT NULL REFERENCES evaluations (id) ON DELETE CASCADE,
  position INTEGER NOT NULL CHECK (position >= 0),
  batch_size INTEGER NOT NULL CHECK (batch_size > 0),
  trace_level TEXT NOT NULL,
  baseline_trace_level TEXT NOT NULL,
  design TEXT NOT NULL CHECK (design IN ('interleaved', 'sequential', 'residual')),
  rounds INTEGER NOT NULL CHECK (rounds >= 0),
  latency_ns REAL,
  baseline_latency_ns REAL,
  overhead_fraction REAL,
  ci95_low_fraction REAL,
  ci95_high_fraction REAL,
  significant INTEGER NOT NULL CHECK (significant IN (0, 1)),
  note TEXT NOT NULL,
  PRIMARY KEY (evaluation_id, position)
);
-- version 5
ALTER TABLE runs ADD COLUMN trace_id TEXT CHECK (trace_id IS NULL OR (length(trace_id) = 32 AND trace_id NOT GLOB '*[^0-9a-f]*'));
UPDATE runs SET trace_id = lower(hex(randomblob(16))) WHERE trace_id IS NULL;
CREATE UNIQUE INDEX runs_trace_id ON runs (trace_id);
ALTER TABLE evaluations ADD COLUMN uuid TEXT CHECK (uuid IS NULL OR length(uuid) = 36);
UPDATE evaluations SET uuid = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||
  substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + abs(random()) % 4, 1) || substr(hex(randomblob(2)), 2) ||
  '-' || hex(randomblob(6))) WHERE uuid IS NULL;
-- version 6
ALTER TABLE runs ADD COLUMN generation TEXT NOT NULL DEFAULT '{}';
-- version 7
ALTER TABLE predictions ADD COLUMN outputs TEXT NOT NULL DEFAULT '{}';
-- version 8
ALTER TABLE evaluations ADD COLUMN kind TEXT CHECK (kind IS NULL OR kind IN ('batch-sweep', 'scenario', 'generation'));
UPDATE evaluations SET kind = CASE WHEN scenario IN ('single-stream', 'multi-stream', 'server', 'offline') THEN
  'scenario' WHEN scenario = 'generation' OR scenario LIKE 'generation-%' THEN 'generation' ELSE 'batch-sweep' END
  WHERE kind IS NULL;
-- version 9
ALTER TABLE runs ADD COLUMN scenario_result TEXT;
ALTER TABLE runs ADD COLUMN qps REAL;
ALTER TABLE runs ADD COLUMN latency_p99_ns REAL;
ALTER TABLE runs ADD COLUMN meets_bound INTEGER CHECK (meets_bound IS NULL OR meets_bound IN (0, 1));
ALTER TABLE runs ADD COLUMN ttft_p50_ns REAL;
ALTER TABLE runs ADD COLUMN ttft_p99_ns REAL;
ALTER TABLE runs ADD COLUMN tpot_p50_ns REAL;
ALTER TABLE runs ADD COLUMN tpot_p99_ns REAL;
ALTER TABLE runs ADD COLUMN output_tokens_per_s REAL;
UPDATE runs SET scenario_result = (SELECT json_extract(e.settings, '$.results[' || (SELECT count(*) FROM runs AS
  earlier WHERE earlier.evaluation_id = runs.evaluation_id AND earlier.id < runs.id) || ']') FROM evaluations AS e
  WHERE e.id = runs.evaluation_id AND e.kind = 'scenario') WHERE scenario_result IS NULL;
UPDATE runs SET qps = json_extract(scenario_result, '$.qps_with_overhead') WHERE qps IS NULL;
UPDATE runs SET latency_p99_ns = json_extract(scenario_result, '$.p99_ns') WHERE latency_p99_ns IS NULL;
UPDATE runs SET meets_bound = CASE WHEN json_extract(scenario_result, '$.scenario') = 'server' AND
  json_extract(scenario_result, '$.latency_bound_ns') > 0 THEN json_extract(scenario_result, '$.meets_bound') ELSE
  json_extract(generation, '$.valid') END WHERE meets_bound IS NULL;
UPDATE runs SET ttft_p50_ns = json_extract(generation, '$.ttft_ns.p50') WHERE ttft_p50_ns IS NULL;
UPDATE runs SET ttft_p99_ns = json_extract(generation, '$.ttft_ns.p99') WHERE ttft_p99_ns IS NULL;
UPDATE runs SET tpot_p50_ns = json_extract(generation, '$.tpot_ns.p50') WHERE tpot_p50_ns IS NULL;
UPDATE runs SET tpot_p99_ns = json_extract(generation, '$.tpot_ns.p99') WHERE tpot_p99_ns IS NULL;
UPDATE runs SET output_tokens_per_s = json_extract(generation, '$.output_tokens_per_s') WHERE output_tokens_per_s IS
  NULL;
-- version 10
ALTER TABLE evaluations RENAME COLUMN kind TO kind_before_v10;
ALTER TABLE evaluations ADD COLUMN kind TEXT CHECK (kind IS NULL OR kind IN ('batch-sweep', 'scenario', 'generation', 'external'));
UPDATE evaluations SET kind = kind_before_v10;
ALTER TABLE evaluations DROP COLUMN kind_before_v10;
-- version 11
ALTER TABLE evaluations ADD COLUMN name TEXT NOT NULL DEFAULT '' CHECK (length(name) <= 120);
ALTER TABLE evaluations ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
ALTER TABLE evaluations ADD COLUMN note TEXT NOT NULL DEFAULT '' CHECK (length(note) <= 4000);
-- version 12
ALTER TABLE evaluations RENAME COLUMN kind TO kind_before_v12;
ALTER TABLE evaluations ADD COLUMN kind TEXT CHECK (kind IS NULL OR kind IN ('batch-sweep', 'scenario', 'generation', 'external', 'serving'));
UPDATE evaluations SET kind = COALESCE(kind_before_v12, CASE WHEN scenario = 'serving' THEN 'serving' END);
ALTER TABLE evaluations DROP COLUMN kind_before_v12;
