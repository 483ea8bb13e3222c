-- Jobs: see the SQLite migration of the same name for the model.
RENAME TABLE {p}dead TO {p}finished;
ALTER TABLE {p}finished RENAME COLUMN failed_at TO finished_at,
    ADD COLUMN state CHAR(1) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'D',
    ADD COLUMN kind VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin,
    ADD COLUMN errors LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    DROP INDEX dead_queue,
    ADD INDEX finished_queue (queue, state, id),
    ADD INDEX finished_state (state, finished_at),
    ADD INDEX finished_kind (kind, state, id);
ALTER TABLE {p}messages ADD COLUMN kind VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin,
    ADD COLUMN errors LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    ADD COLUMN cancel TINYINT NOT NULL DEFAULT 0;
