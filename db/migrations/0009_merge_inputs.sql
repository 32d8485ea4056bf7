-- cm-tune db merge: where merged rows came from, and the cuBLAS baselines a merge did not keep.
--
-- merge_inputs: one row per input database a merge took rows from: its path as given and made
-- absolute, its content hash then (Store::content_hash: devices, winners, baselines) and the time.
-- A run copied from an input names it in runs.merge_input_id (NULL for a run measured into this
-- database); trials and baselines name their run, so each row's origin is found through its run.
CREATE TABLE merge_inputs (
  id            INTEGER PRIMARY KEY,
  path          TEXT NOT NULL,
  absolute_path TEXT NOT NULL,
  content_hash  TEXT NOT NULL,
  merged_at     TEXT NOT NULL
);
ALTER TABLE runs ADD COLUMN merge_input_id INTEGER REFERENCES merge_inputs(id);

-- baselines holds one cuBLAS measurement per device and problem, the one tune, query and the
-- winners' ratios read. Where merged databases measured the same device and problem apart, the
-- merge keeps the newest there and every other one here, so no measurement is lost. Columns as
-- baselines'; rows are never read by tune or export.
CREATE TABLE superseded_baselines (
  device_id  INTEGER NOT NULL REFERENCES devices(id),
  m          INTEGER NOT NULL,
  n          INTEGER NOT NULL,
  k          INTEGER NOT NULL,
  layout     TEXT NOT NULL CHECK (layout IN ('nn', 'nt', 'tn', 'tt')),
  batch      INTEGER NOT NULL CHECK (batch >= 1),
  stride_a   INTEGER NOT NULL CHECK (stride_a >= 0),
  stride_b   INTEGER NOT NULL CHECK (stride_b >= 0),
  stride_c   INTEGER NOT NULL CHECK (stride_c >= 0),
  dtype      TEXT NOT NULL CHECK (dtype IN ('f32', 'f64', 'i32', 'tf32x3')),
  lda        INTEGER NOT NULL,
  ldb        INTEGER NOT NULL,
  ldc        INTEGER NOT NULL,
  median_ms  REAL NOT NULL,
  min_ms     REAL NOT NULL,
  cv         REAL NOT NULL,
  samples    INTEGER NOT NULL,
  gflops     REAL NOT NULL,
  run_id     INTEGER NOT NULL REFERENCES runs(id),
  created_at TEXT NOT NULL
);
CREATE INDEX superseded_baselines_problem
  ON superseded_baselines (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype);
