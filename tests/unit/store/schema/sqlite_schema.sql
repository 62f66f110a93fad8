CREATE TABLE schema_version (version INTEGER NOT NULL);
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
, uuid TEXT CHECK (uuid IS NULL OR length(uuid) = 36), name TEXT NOT NULL DEFAULT '' CHECK (length(name) <= 120), tags TEXT NOT NULL DEFAULT '[]', note TEXT NOT NULL DEFAULT '' CHECK (length(note) <= 4000), kind TEXT CHECK (kind IS NULL OR kind IN ('batch-sweep', 'scenario', 'generation', 'external', 'serving')));
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
, stability TEXT NOT NULL DEFAULT 'not_assessed'
  CHECK (stability IN ('stable', 'unstable', 'not_assessed')), latency_median_ns REAL, latency_ci95_low_ns REAL, latency_ci95_high_ns REAL, latency_cv REAL, drift_fraction REAL, warmup_ns INTEGER NOT NULL DEFAULT 0 CHECK (warmup_ns >= 0), measurement TEXT NOT NULL DEFAULT '{}', machine_state TEXT NOT NULL DEFAULT '{}', warnings TEXT NOT NULL DEFAULT '[]', trace_id TEXT CHECK (trace_id IS NULL OR (length(trace_id) = 32 AND trace_id NOT GLOB '*[^0-9a-f]*')), generation TEXT NOT NULL DEFAULT '{}', scenario_result TEXT, qps REAL, latency_p99_ns REAL, meets_bound INTEGER CHECK (meets_bound IS NULL OR meets_bound IN (0, 1)), ttft_p50_ns REAL, ttft_p99_ns REAL, tpot_p50_ns REAL, tpot_p99_ns REAL, output_tokens_per_s REAL);
CREATE INDEX runs_evaluation_id ON runs (evaluation_id);
CREATE TABLE predictions (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  position INTEGER NOT NULL CHECK (position >= 0),
  input_id TEXT NOT NULL,
  top_classes TEXT NOT NULL,
  probabilities BLOB NOT NULL, outputs TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (run_id, position),
  UNIQUE (run_id, input_id)
);
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
CREATE UNIQUE INDEX runs_trace_id ON runs (trace_id);
