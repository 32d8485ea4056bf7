-- Launch grids may now have a z extent: the blocks of one tile that split K across a thread-block
-- cluster (the clusterk family). Rows written before this migration launched with z = 1.
ALTER TABLE trials ADD COLUMN grid_z INTEGER NOT NULL DEFAULT 1 CHECK (grid_z >= 1);
ALTER TABLE winners ADD COLUMN grid_z INTEGER NOT NULL DEFAULT 1 CHECK (grid_z >= 1);
