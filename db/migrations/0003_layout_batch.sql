-- Problems gain a layout (op(A), op(B) over row-major storage: nn, nt, tn, tt), a batch count and
-- batch strides (elements between consecutive matrices; 0 when the batch is 1, or for a broadcast
-- A or B). Rows written before this migration were row-major NN with a batch of 1. Their kernels
-- took the 11 arguments of an unbatched GEMM.
ALTER TABLE binaries ADD COLUMN batched INTEGER NOT NULL DEFAULT 0 CHECK (batched IN (0, 1));
ALTER TABLE trials ADD COLUMN layout TEXT NOT NULL DEFAULT 'nn' CHECK (layout IN ('nn', 'nt', 'tn', 'tt'));
ALTER TABLE trials ADD COLUMN batch INTEGER NOT NULL DEFAULT 1 CHECK (batch >= 1);
ALTER TABLE trials ADD COLUMN stride_a INTEGER NOT NULL DEFAULT 0 CHECK (stride_a >= 0);
ALTER TABLE trials ADD COLUMN stride_b INTEGER NOT NULL DEFAULT 0 CHECK (stride_b >= 0);
ALTER TABLE trials ADD COLUMN stride_c INTEGER NOT NULL DEFAULT 0 CHECK (stride_c >= 0);
DROP INDEX trials_device_problem;
CREATE INDEX trials_device_problem ON trials (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c);

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
  PRIMARY KEY (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c)
);
INSERT INTO baselines_new (device_id, m, n, k, lda, ldb, ldc, median_ms, min_ms, cv, samples, gflops, run_id,
                           created_at)
  SELECT device_id, m, n, k, lda, ldb, ldc, median_ms, min_ms, cv, samples, gflops, run_id, created_at
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
  PRIMARY KEY (device_id, m, n, k, layout, batch, stride_a, stride_b, stride_c, scope)
);
INSERT INTO winners_new (device_id, m, n, k, scope, trial_id, template_name, params, name_expression, median_ms,
                         gflops, ratio_to_cublas, align_bytes, ld_multiple, threads, tile_m, tile_n, dynamic_smem,
                         binary_key, grid_z)
  SELECT device_id, m, n, k, scope, trial_id, template_name, params, name_expression, median_ms, gflops,
         ratio_to_cublas, align_bytes, ld_multiple, threads, tile_m, tile_n, dynamic_smem, binary_key, grid_z
  FROM winners;
DROP TABLE winners;
ALTER TABLE winners_new RENAME TO winners;
CREATE INDEX winners_trial ON winners (trial_id);
