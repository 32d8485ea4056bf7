-- Problems gain a precision class beside the element types: tf32x3 (FP32 data multiplied on the
-- tensor cores as three TF32 products, validated against FP64). The dtype CHECKs of trials,
-- baselines and winners admit it, so the three tables are rebuilt (SQLite cannot change a CHECK in
-- place); every row and id is kept. Trials gain simt_error_ratio: for a class validated against
-- FP64, the FP32 SIMT reference's largest error ratio on the same data, next to the trial's own
-- max_error_ratio (NULL for the other types and for rows written before).

CREATE TABLE trials_new (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  trial_key          TEXT NOT NULL UNIQUE,
  run_id             INTEGER NOT NULL REFERENCES runs(id),
  device_id          INTEGER NOT NULL REFERENCES devices(id),
  template_name      TEXT NOT NULL,
  params             TEXT NOT NULL,
  name_expression    TEXT NOT NULL,
  -- No foreign key to binaries: the compile cache may be pruned without losing measurements.
  binary_key         TEXT NOT NULL,
  m                  INTEGER NOT NULL,
  n                  INTEGER NOT NULL,
  k                  INTEGER NOT NULL,
  layout             TEXT NOT NULL DEFAULT 'nn' CHECK (layout IN ('nn', 'nt', 'tn', 'tt')),
  batch              INTEGER NOT NULL DEFAULT 1 CHECK (batch >= 1),
  stride_a           INTEGER NOT NULL DEFAULT 0 CHECK (stride_a >= 0),
  stride_b           INTEGER NOT NULL DEFAULT 0 CHECK (stride_b >= 0),
  stride_c           INTEGER NOT NULL DEFAULT 0 CHECK (stride_c >= 0),
  dtype              TEXT NOT NULL DEFAULT 'f32' CHECK (dtype IN ('f32', 'f64', 'i32', 'tf32x3')),
  lda                INTEGER NOT NULL,
  ldb                INTEGER NOT NULL,
  ldc                INTEGER NOT NULL,
  outcome            TEXT NOT NULL CHECK (outcome IN ('ok', 'compile_error', 'launch_error', 'wrong',
                                                      'abandoned', 'skipped', 'crashed', 'timeout')),
  reason             TEXT NOT NULL,
  log                TEXT NOT NULL,
  max_abs_error      REAL,
  max_error_ratio    REAL,
  simt_error_ratio   REAL,
  median_ms          REAL,
  min_ms             REAL,
  cv                 REAL,
  samples            INTEGER,
  gflops             REAL,
  ratio_to_cublas    REAL,
  retime_median_ms   REAL,
  registers          INTEGER NOT NULL,       -- -1: unknown
  smem_bytes         INTEGER NOT NULL,       -- -1: unknown
  threads            INTEGER NOT NULL,
  tile_m             INTEGER NOT NULL,
  tile_n             INTEGER NOT NULL,
  dynamic_smem       INTEGER NOT NULL,
  grid_z             INTEGER NOT NULL DEFAULT 1 CHECK (grid_z >= 1),
  problems_per_block INTEGER NOT NULL DEFAULT 1 CHECK (problems_per_block >= 1),
  align_bytes        INTEGER NOT NULL,
  ld_multiple        INTEGER NOT NULL,
  created_at         TEXT NOT NULL
);
INSERT INTO trials_new (id, trial_key, run_id, device_id, template_name, params, name_expression, binary_key, m, n,
                        k, layout, batch, stride_a, stride_b, stride_c, dtype, lda, ldb, ldc, outcome, reason, log,
                        max_abs_error, max_error_ratio, median_ms, min_ms, cv, samples, gflops, ratio_to_cublas,
                        retime_median_ms, registers, smem_bytes, threads, tile_m, tile_n, dynamic_smem, grid_z,
                        problems_per_block, align_bytes, ld_multiple, created_at)
  SELECT id, trial_key, run_id, device_id, template_name, params, name_expression, binary_key, m, n,
         k, layout, batch, stride_a, stride_b, stride_c, dtype, lda, ldb, ldc, outcome, reason, log,
         max_abs_error, max_error_ratio, median_ms, min_ms, cv, samples, gflops, ratio_to_cublas,
         retime_median_ms, registers, smem_bytes, threads, tile_m, tile_n, dynamic_smem, grid_z,
         problems_per_block, align_bytes, ld_multiple, created_at
  FROM trials;
-- Ids past the last one kept are not handed out again.
UPDATE sqlite_sequence SET seq = max(seq, (SELECT seq FROM sqlite_sequence WHERE name = 'trials'))
  WHERE name = 'trials_new';
DROP TABLE trials;
ALTER TABLE trials_new RENAME TO trials;
CREATE INDEX trials_run ON trials (run_id);
CREATE INDEX trials_device_problem ON trials (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype);

CREATE TABLE baselines_new (
  device_id  INTEGER NOT NULL REFERENCES devices(id),
  m          INTEGER NOT NULL,
  n          INTEGER NOT NULL,
  k          INTEGER NOT NULL,
  layout     TEXT NOT NULL DEFAULT 'nn' CHECK (layout IN ('nn', 'nt', 'tn', 'tt')),
  batch      INTEGER NOT NULL DEFAULT 1 CHECK (batch >= 1),
  stride_a   INTEGER NOT NULL DEFAULT 0 CHECK (stride_a >= 0),
  stride_b   INTEGER NOT NULL DEFAULT 0 CHECK (stride_b >= 0),
  stride_c   INTEGER NOT NULL DEFAULT 0 CHECK (stride_c >= 0),
  dtype      TEXT NOT NULL DEFAULT 'f32' CHECK (dtype IN ('f32', 'f64', 'i32', 'tf32x3')),
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
  PRIMARY KEY (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype)
);
INSERT INTO baselines_new (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype, lda, ldb, ldc,
                           median_ms, min_ms, cv, samples, gflops, run_id, created_at)
  SELECT device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype, lda, ldb, ldc,
         median_ms, min_ms, cv, samples, gflops, run_id, created_at
  FROM baselines;
DROP TABLE baselines;
ALTER TABLE baselines_new RENAME TO baselines;

CREATE TABLE winners_new (
  device_id          INTEGER NOT NULL REFERENCES devices(id),
  m                  INTEGER NOT NULL,
  n                  INTEGER NOT NULL,
  k                  INTEGER NOT NULL,
  layout             TEXT NOT NULL DEFAULT 'nn' CHECK (layout IN ('nn', 'nt', 'tn', 'tt')),
  batch              INTEGER NOT NULL DEFAULT 1 CHECK (batch >= 1),
  stride_a           INTEGER NOT NULL DEFAULT 0 CHECK (stride_a >= 0),
  stride_b           INTEGER NOT NULL DEFAULT 0 CHECK (stride_b >= 0),
  stride_c           INTEGER NOT NULL DEFAULT 0 CHECK (stride_c >= 0),
  dtype              TEXT NOT NULL DEFAULT 'f32' CHECK (dtype IN ('f32', 'f64', 'i32', 'tf32x3')),
  scope              TEXT NOT NULL CHECK (scope <> ''),
  trial_id           INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  template_name      TEXT NOT NULL,
  params             TEXT NOT NULL,
  name_expression    TEXT NOT NULL,
  median_ms          REAL NOT NULL,
  gflops             REAL NOT NULL,
  ratio_to_cublas    REAL NOT NULL,
  align_bytes        INTEGER NOT NULL,
  ld_multiple        INTEGER NOT NULL,
  threads            INTEGER NOT NULL,
  tile_m             INTEGER NOT NULL,
  tile_n             INTEGER NOT NULL,
  dynamic_smem       INTEGER NOT NULL,
  binary_key         TEXT NOT NULL,
  grid_z             INTEGER NOT NULL DEFAULT 1 CHECK (grid_z >= 1),
  problems_per_block INTEGER NOT NULL DEFAULT 1 CHECK (problems_per_block >= 1),
  PRIMARY KEY (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype, scope)
);
INSERT INTO winners_new (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype, scope, trial_id,
                         template_name, params, name_expression, median_ms, gflops, ratio_to_cublas, align_bytes,
                         ld_multiple, threads, tile_m, tile_n, dynamic_smem, binary_key, grid_z, problems_per_block)
  SELECT device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype, scope, trial_id,
         template_name, params, name_expression, median_ms, gflops, ratio_to_cublas, align_bytes,
         ld_multiple, threads, tile_m, tile_n, dynamic_smem, binary_key, grid_z, problems_per_block
  FROM winners;
DROP TABLE winners;
ALTER TABLE winners_new RENAME TO winners;
CREATE INDEX winners_trial ON winners (trial_id);
