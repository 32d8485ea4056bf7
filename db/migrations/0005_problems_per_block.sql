-- Kernels that compute their tile of several consecutive problems of a batch per block (a family
-- that declares [launch] problems_per_block, such as fused_batch): the launch shape gains the
-- problems per block (grid z is grid_z * ceil(batch / problems_per_block)), and such a kernel takes
-- the launch's problem count after the batch strides. Rows written before this migration computed
-- one problem per block and took no problem count.
ALTER TABLE binaries ADD COLUMN takes_batch_count INTEGER NOT NULL DEFAULT 0 CHECK (takes_batch_count IN (0, 1));
ALTER TABLE trials ADD COLUMN problems_per_block INTEGER NOT NULL DEFAULT 1 CHECK (problems_per_block >= 1);
ALTER TABLE winners ADD COLUMN problems_per_block INTEGER NOT NULL DEFAULT 1 CHECK (problems_per_block >= 1);
