-- Schema version 3: winners for a known number of calls on one prepared operand (tune --calls),
-- chosen by preparation plus that many calls, beside the winners per call.
-- compatible-reads: a database of version 2 reads as version 3 (it has no winners for a call
-- count; every other table is unchanged).

CREATE TABLE call_count_winners (
  id INTEGER PRIMARY KEY,
  matrix_id INTEGER NOT NULL REFERENCES matrices (id),
  kernel TEXT NOT NULL,
  machine_id INTEGER NOT NULL REFERENCES machines (id),
  dense TEXT NOT NULL,
  dtype TEXT NOT NULL CHECK (dtype IN ('f32', 'f64', 'c64', 'c128')),
  calls INTEGER NOT NULL CHECK (calls > 0),
  schedule_id INTEGER NOT NULL REFERENCES schedules (id),
  time_ms REAL NOT NULL,
  prepare_ms REAL NOT NULL CHECK (prepare_ms >= 0),
  fixed_csr_ms REAL,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (matrix_id, kernel, machine_id, dense, dtype, calls)
);

CREATE INDEX call_count_winners_by_schedule ON call_count_winners (schedule_id);
CREATE INDEX call_count_winners_by_machine ON call_count_winners (machine_id);
