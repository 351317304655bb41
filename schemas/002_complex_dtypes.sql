-- Schema version 2: complex value types (c64, c128) beside f32 and f64.
-- compatible-reads: a database of version 1 reads as version 2 (only the accepted dtypes grow).
-- SQLite cannot change a CHECK constraint in place: each table with a dtype column is rebuilt
-- under its own name, rows, ids and indexes unchanged. No table references these three.

CREATE TABLE measurements_v2 (
  id INTEGER PRIMARY KEY,
  matrix_id INTEGER NOT NULL REFERENCES matrices (id),
  schedule_id INTEGER NOT NULL REFERENCES schedules (id),
  machine_id INTEGER NOT NULL REFERENCES machines (id),
  dense TEXT NOT NULL,
  dtype TEXT NOT NULL CHECK (dtype IN ('f32', 'f64', 'c64', 'c128')),
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

INSERT INTO measurements_v2 SELECT * FROM measurements;
DROP TABLE measurements;
ALTER TABLE measurements_v2 RENAME TO measurements;

CREATE INDEX measurements_by_time
  ON measurements (matrix_id, machine_id, dense, dtype, verified, median_ms);
CREATE INDEX measurements_by_schedule ON measurements (schedule_id);
CREATE INDEX measurements_by_machine ON measurements (machine_id);


CREATE TABLE failures_v2 (
  id INTEGER PRIMARY KEY,
  matrix_id INTEGER NOT NULL REFERENCES matrices (id),
  schedule_id INTEGER NOT NULL REFERENCES schedules (id),
  machine_id INTEGER NOT NULL REFERENCES machines (id),
  dense TEXT NOT NULL,
  dtype TEXT NOT NULL CHECK (dtype IN ('f32', 'f64', 'c64', 'c128')),
  reason TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (matrix_id, schedule_id, machine_id, dense, dtype)
);

INSERT INTO failures_v2 SELECT * FROM failures;
DROP TABLE failures;
ALTER TABLE failures_v2 RENAME TO failures;

CREATE INDEX failures_by_schedule ON failures (schedule_id);
CREATE INDEX failures_by_machine ON failures (machine_id);


CREATE TABLE winners_v2 (
  id INTEGER PRIMARY KEY,
  matrix_id INTEGER NOT NULL REFERENCES matrices (id),
  kernel TEXT NOT NULL,
  machine_id INTEGER NOT NULL REFERENCES machines (id),
  dense TEXT NOT NULL,
  dtype TEXT NOT NULL CHECK (dtype IN ('f32', 'f64', 'c64', 'c128')),
  schedule_id INTEGER NOT NULL REFERENCES schedules (id),
  time_ms REAL NOT NULL,
  fixed_csr_ms REAL,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (matrix_id, kernel, machine_id, dense, dtype)
);

INSERT INTO winners_v2 SELECT * FROM winners;
DROP TABLE winners;
ALTER TABLE winners_v2 RENAME TO winners;

CREATE INDEX winners_by_schedule ON winners (schedule_id);
CREATE INDEX winners_by_machine ON winners (machine_id);
