-- Kernels that read their operands through TMA (tf32x3_wgmma, sm_90a) take two tensor maps after
-- the fifteen standard arguments, built by the launcher for each call: the launch shape gains
-- tensor_maps (1: the kernel takes them). Rows written before this migration took none.
ALTER TABLE trials ADD COLUMN tensor_maps INTEGER NOT NULL DEFAULT 0 CHECK (tensor_maps IN (0, 1));
ALTER TABLE winners ADD COLUMN tensor_maps INTEGER NOT NULL DEFAULT 0 CHECK (tensor_maps IN (0, 1));
