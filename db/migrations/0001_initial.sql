-- cm-tune schema, version 1.
--
-- Applied by migrate() inside one transaction, which also sets PRAGMA user_version and
-- PRAGMA application_id; this file must not BEGIN or COMMIT itself.
-- Timestamps are ISO 8601 UTC text ("2025-01-31T12:34:56Z"). Optional values are NULL.

-- Compile cache: one row per compiled candidate, keyed by the compile cache key.
CREATE TABLE binaries (
  key             TEXT PRIMARY KEY NOT NULL,
  template_name   TEXT NOT NULL,
  params          TEXT NOT NULL,
  arch            TEXT NOT NULL,
  nvrtc_version   TEXT NOT NULL,
  options         TEXT NOT NULL,
  -- No foreign key to sources: a binary may be cached before its source bundle is stored.
  source_hash     TEXT NOT NULL,
  ok              INTEGER NOT NULL CHECK (ok IN (0, 1)),
  log             TEXT NOT NULL,
  cubin           BLOB NOT NULL,           -- zero-length when ok = 0
  lowered_name    TEXT NOT NULL,
  registers       INTEGER NOT NULL,        -- -1: unknown
  spill_stores    INTEGER NOT NULL,
  spill_loads     INTEGER NOT NULL,
  compile_seconds REAL NOT NULL,
  created_at      TEXT NOT NULL
);

-- Template source bundles, so export can reproduce the exact source a binary came from.
CREATE TABLE sources (
  hash          TEXT PRIMARY KEY NOT NULL,
  template_name TEXT NOT NULL,
  main_name     TEXT NOT NULL,
  main_text     TEXT NOT NULL
);

-- Headers of a bundle; position keeps the bundle's own order so it round-trips exactly.
CREATE TABLE source_headers (
  source_hash TEXT NOT NULL REFERENCES sources(hash) ON DELETE CASCADE,
  position    INTEGER NOT NULL,
  name        TEXT NOT NULL,
  text        TEXT NOT NULL,
  PRIMARY KEY (source_hash, position)
);

-- GPUs seen by runs. uuid is the identity; the other columns are refreshed on every sighting.
CREATE TABLE devices (
  id               INTEGER PRIMARY KEY,
  uuid             TEXT NOT NULL UNIQUE CHECK (uuid <> ''),
  name             TEXT NOT NULL,
  cc_major         INTEGER NOT NULL,
  cc_minor         INTEGER NOT NULL,
  sm_count         INTEGER NOT NULL,
  clock_khz        INTEGER NOT NULL,
  memory_clock_khz INTEGER NOT NULL,
  memory_bus_bits  INTEGER NOT NULL,
  memory_bytes     INTEGER NOT NULL,
  l2_bytes         INTEGER NOT NULL,
  driver_version   INTEGER NOT NULL,
  runtime_version  INTEGER NOT NULL,
  nvrtc_version    TEXT NOT NULL,
  first_seen       TEXT NOT NULL,
  last_seen        TEXT NOT NULL
);

-- One invocation of cm-tune that measured something.
CREATE TABLE runs (
  id           INTEGER PRIMARY KEY,
  command_line TEXT NOT NULL,
  preset_path  TEXT NOT NULL,
  preset_hash  TEXT NOT NULL,
  device_id    INTEGER REFERENCES devices(id),
  started_at   TEXT NOT NULL,
  ended_at     TEXT,                       -- NULL while running
  status       TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'interrupted'))
);

-- One candidate measured on one problem on one device.
-- AUTOINCREMENT: --retune replaces a row (same trial_key) and the replacement must get a fresh id,
-- never the id of the row it replaced, so nothing can silently point at the new measurement.
CREATE TABLE trials (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  trial_key        TEXT NOT NULL UNIQUE,
  run_id           INTEGER NOT NULL REFERENCES runs(id),
  device_id        INTEGER NOT NULL REFERENCES devices(id),
  template_name    TEXT NOT NULL,
  params           TEXT NOT NULL,
  name_expression  TEXT NOT NULL,
  -- No foreign key to binaries: the compile cache may be pruned without losing measurements.
  binary_key       TEXT NOT NULL,
  m                INTEGER NOT NULL,
  n                INTEGER NOT NULL,
  k                INTEGER NOT NULL,
  lda              INTEGER NOT NULL,
  ldb              INTEGER NOT NULL,
  ldc              INTEGER NOT NULL,
  outcome          TEXT NOT NULL CHECK (outcome IN ('ok', 'compile_error', 'launch_error', 'wrong',
                                                    'abandoned', 'skipped', 'crashed', 'timeout')),
  reason           TEXT NOT NULL,
  log              TEXT NOT NULL,
  max_abs_error    REAL,
  max_error_ratio  REAL,
  median_ms        REAL,
  min_ms           REAL,
  cv               REAL,
  samples          INTEGER,
  gflops           REAL,
  ratio_to_cublas  REAL,
  retime_median_ms REAL,
  registers        INTEGER NOT NULL,       -- -1: unknown
  smem_bytes       INTEGER NOT NULL,       -- -1: unknown
  threads          INTEGER NOT NULL,
  -- Launch shape. shape_threads normally equals threads; it is kept in its own column so the
  -- record reads back exactly as it was written.
  shape_threads    INTEGER NOT NULL,
  tile_m           INTEGER NOT NULL,
  tile_n           INTEGER NOT NULL,
  dynamic_smem     INTEGER NOT NULL,
  align_bytes      INTEGER NOT NULL,
  ld_multiple      INTEGER NOT NULL,
  created_at       TEXT NOT NULL
);
CREATE INDEX trials_device_problem ON trials (device_id, m, n, k);
CREATE INDEX trials_run ON trials (run_id);

-- cuBLAS on one problem on one device; re-measuring replaces the row.
CREATE TABLE baselines (
  device_id  INTEGER NOT NULL REFERENCES devices(id),
  m          INTEGER NOT NULL,
  n          INTEGER NOT NULL,
  k          INTEGER NOT NULL,
  lda        INTEGER NOT NULL,
  ldb        INTEGER NOT NULL,
  ldc        INTEGER NOT NULL,
  median_ms  REAL NOT NULL,
  min_ms     REAL NOT NULL,
  cv         REAL NOT NULL,
  samples    INTEGER NOT NULL,
  gflops     REAL NOT NULL,
  run_id     INTEGER NOT NULL REFERENCES runs(id),
  created_at TEXT NOT NULL,
  PRIMARY KEY (device_id, m, n, k)
);

-- Best trial per device x problem x scope ("overall", "portable" or a template name).
-- The row copies everything export needs (name, requirements, launch shape, binary) so export
-- reads winners alone. A winner is derived from exactly one trial: when that trial is replaced
-- (--retune deletes and re-inserts it) or deleted, ON DELETE CASCADE removes the winner too, so
-- no winner ever describes a measurement that is no longer in the database. The tuner recomputes
-- the winners of a problem after measuring it.
CREATE TABLE winners (
  device_id       INTEGER NOT NULL REFERENCES devices(id),
  m               INTEGER NOT NULL,
  n               INTEGER NOT NULL,
  k               INTEGER NOT NULL,
  scope           TEXT NOT NULL CHECK (scope <> ''),
  trial_id        INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  template_name   TEXT NOT NULL,
  params          TEXT NOT NULL,
  name_expression TEXT NOT NULL,
  median_ms       REAL NOT NULL,
  gflops          REAL NOT NULL,
  ratio_to_cublas REAL NOT NULL,
  align_bytes     INTEGER NOT NULL,
  ld_multiple     INTEGER NOT NULL,
  threads         INTEGER NOT NULL,
  tile_m          INTEGER NOT NULL,
  tile_n          INTEGER NOT NULL,
  dynamic_smem    INTEGER NOT NULL,
  binary_key      TEXT NOT NULL,
  PRIMARY KEY (device_id, m, n, k, scope)
);
-- Lets the cascade from trials find its winners without a full scan.
CREATE INDEX winners_trial ON winners (trial_id);
