-- Problems gain an element type: f32 (FP32), f64 (FP64) or i32 (INT32, wrapping). Rows written
-- before this migration were f32. Strides and leading dimensions count elements of that type.
ALTER TABLE trials ADD COLUMN dtype TEXT NOT NULL DEFAULT 'f32' CHECK (dtype IN ('f32', 'f64', 'i32'));
DROP INDEX trials_device_problem;
CREATE INDEX trials_device_problem ON trials (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype);

-- baselines and winners have the problem in their primary keys: rebuilt.
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
  dtype      TEXT NOT NULL DEFAULT 'f32' CHECK (dtype IN ('f32', 'f64', 'i32')),
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
INSERT INTO baselines_new (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, lda, ldb, ldc, median_ms,
                           min_ms, cv, samples, gflops, run_id, created_at)
  SELECT device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, lda, ldb, ldc, median_ms, min_ms, cv, samples,
         gflops, run_id, created_at
  FROM baselines;
DROP TABLE baselines;
ALTER TABLE baselines_new RENAME TO baselines;

CREATE TABLE winners_new (
  device_id       INTEGER NOT NULL REFERENCES devices(id),
  m               INTEGER NOT NULL,
  n               INTEGER NOT NULL,
  k               INTEGER NOT NULL,
  layout          TEXT NOT NULL DEFAULT 'nn' CHECK (layout IN ('nn', 'nt', 'tn', 'tt')),
  batch           INTEGER NOT NULL DEFAULT 1 CHECK (batch >= 1),
  stride_a        INTEGER NOT NULL DEFAULT 0 CHECK (stride_a >= 0),
  stride_b        INTEGER NOT NULL DEFAULT 0 CHECK (stride_b >= 0),
  stride_c        INTEGER NOT NULL DEFAULT 0 CHECK (stride_c >= 0),
  dtype           TEXT NOT NULL DEFAULT 'f32' CHECK (dtype IN ('f32', 'f64', 'i32')),
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
  grid_z          INTEGER NOT NULL DEFAULT 1 CHECK (grid_z >= 1),
  PRIMARY KEY (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, dtype, scope)
);
INSERT INTO winners_new (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, scope, trial_id,
                         template_name, params, name_expression, median_ms, gflops, ratio_to_cublas, align_bytes,
                         ld_multiple, threads, tile_m, tile_n, dynamic_smem, binary_key, grid_z)
  SELECT device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, scope, trial_id, template_name, params,
         name_expression, median_ms, gflops, ratio_to_cublas, align_bytes, ld_multiple, threads, tile_m, tile_n,
         dynamic_smem, binary_key, grid_z
  FROM winners;
DROP TABLE winners;
ALTER TABLE winners_new RENAME TO winners;
CREATE INDEX winners_trial ON winners (trial_id);
