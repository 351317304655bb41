-- sparsetune schedule database, schema version 1.
-- Migrations run in order inside one write transaction each; the code sets PRAGMA user_version
-- to the migration's number afterwards. Timestamps are ISO-8601 UTC text with milliseconds,
-- so they compare correctly as strings.

-- A machine is the hardware and compiler a time was measured with. machine_key is a stable
-- hash of every other identifying column, so identical machines share a row across hosts.
CREATE TABLE machines (
  id INTEGER PRIMARY KEY,
  machine_key TEXT NOT NULL UNIQUE,
  cpu_model TEXT NOT NULL,
  cores INTEGER NOT NULL,
  threads INTEGER NOT NULL,
  l1d_bytes INTEGER NOT NULL,
  l2_bytes INTEGER NOT NULL,
  l3_bytes INTEGER NOT NULL,
  isa TEXT NOT NULL,
  compiler TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  flags TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- A sparsity pattern, identified by its fingerprint (values do not matter).
CREATE TABLE matrices (
  id INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  dims TEXT NOT NULL,                       -- JSON list of extents
  nnz INTEGER NOT NULL,
  stats TEXT NOT NULL DEFAULT '{}',         -- JSON object of pattern statistics
  source_path TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- A schedule (format + loop schedule) as canonical JSON; hash is the hash of that text.
CREATE TABLE schedules (
  id INTEGER PRIMARY KEY,
  kernel TEXT NOT NULL,
  expression TEXT NOT NULL,
  hash TEXT NOT NULL,
  canonical_json TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (kernel, hash)
);

-- One timing of one schedule on one matrix and machine. dense is canonical JSON of the dense
-- index sizes (e.g. {"j":256}); the unique key makes a re-measurement replace the old row.
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  matrix_id INTEGER NOT NULL REFERENCES matrices (id),
  schedule_id INTEGER NOT NULL REFERENCES schedules (id),
  machine_id INTEGER NOT NULL REFERENCES machines (id),
  dense TEXT NOT NULL,
  dtype TEXT NOT NULL CHECK (dtype IN ('f32', 'f64')),
  median_ms REAL NOT NULL,
  min_ms REAL NOT NULL,
  max_ms REAL NOT NULL,
  reps INTEGER NOT NULL,
  pack_ms REAL NOT NULL DEFAULT 0,
  compile_ms REAL NOT NULL DEFAULT 0,
  verified INTEGER NOT NULL CHECK (verified IN (0, 1)),
  source TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (matrix_id, schedule_id, machine_id, dense, dtype)
);
-- Top-k: the fastest rows of one matrix/machine/dense/dtype.
CREATE INDEX measurements_by_time
  ON measurements (matrix_id, machine_id, dense, dtype, verified, median_ms);
CREATE INDEX measurements_by_schedule ON measurements (schedule_id);
CREATE INDEX measurements_by_machine ON measurements (machine_id);

-- Schedules that failed to compile, pack or verify, so collection does not retry them.
CREATE TABLE failures (
  id INTEGER PRIMARY KEY,
  matrix_id INTEGER NOT NULL REFERENCES matrices (id),
  schedule_id INTEGER NOT NULL REFERENCES schedules (id),
  machine_id INTEGER NOT NULL REFERENCES machines (id),
  dense TEXT NOT NULL,
  dtype TEXT NOT NULL CHECK (dtype IN ('f32', 'f64')),
  reason TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (matrix_id, schedule_id, machine_id, dense, dtype)
);
CREATE INDEX failures_by_schedule ON failures (schedule_id);
CREATE INDEX failures_by_machine ON failures (machine_id);

-- The chosen schedule per tuning key; what `sparsetune query` answers with.
CREATE TABLE winners (
  id INTEGER PRIMARY KEY,
  matrix_id INTEGER NOT NULL REFERENCES matrices (id),
  kernel TEXT NOT NULL,
  machine_id INTEGER NOT NULL REFERENCES machines (id),
  dense TEXT NOT NULL,
  dtype TEXT NOT NULL CHECK (dtype IN ('f32', 'f64')),
  schedule_id INTEGER NOT NULL REFERENCES schedules (id),
  time_ms REAL NOT NULL,
  fixed_csr_ms REAL,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (matrix_id, kernel, machine_id, dense, dtype)
);
CREATE INDEX winners_by_schedule ON winners (schedule_id);
CREATE INDEX winners_by_machine ON winners (machine_id);
