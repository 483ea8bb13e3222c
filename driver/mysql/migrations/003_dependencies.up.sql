-- Dependencies, workflows and batches (see the SQLite migration for the
-- model). A waiting child is a message in state 'W', which no claim reads.
CREATE TABLE IF NOT EXISTS {p}message_deps (
    parent  BIGINT   NOT NULL,
    child   BIGINT   NOT NULL,
    done    SMALLINT NOT NULL DEFAULT 0,
    on_fail SMALLINT NOT NULL DEFAULT 0,
    PRIMARY KEY (child, parent),
    KEY {p}message_deps_parent (parent, child),
    KEY {p}message_deps_pending (done, child)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS {p}workflow_steps (
    workflow BIGINT       NOT NULL,
    id       BIGINT       NOT NULL,
    name     VARCHAR(255) NOT NULL,
    PRIMARY KEY (workflow, id),
    KEY {p}workflow_steps_id (id)
) ENGINE=InnoDB;

INSERT IGNORE INTO {p}meta (k, v) VALUES ('deps', 0);
