-- A trial's threads per block was stored twice, in `threads` and in the launch shape's
-- `shape_threads`, which were always equal. One column stays, named as in the winners table:
-- `threads`, the launch shape's.
ALTER TABLE trials DROP COLUMN threads;
ALTER TABLE trials RENAME COLUMN shape_threads TO threads;
