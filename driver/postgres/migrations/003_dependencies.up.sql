-- Dependencies, workflows and batches (see the SQLite migration for the
-- model). A waiting child is a message in state 'W', which no claim reads.
CREATE TABLE {p}message_deps (
    parent  bigint   NOT NULL,
    child   bigint   NOT NULL,
    done    smallint NOT NULL DEFAULT 0,
    on_fail smallint NOT NULL DEFAULT 0,
    PRIMARY KEY (child, parent)
);
CREATE INDEX {p}message_deps_parent ON {p}message_deps (parent, child);
CREATE INDEX {p}message_deps_pending ON {p}message_deps (child) WHERE done = 0;

CREATE TABLE {p}workflow_steps (
    workflow bigint NOT NULL,
    id       bigint NOT NULL,
    name     text   NOT NULL,
    PRIMARY KEY (workflow, id)
);
CREATE INDEX {p}workflow_steps_id ON {p}workflow_steps (id);

INSERT INTO {p}meta (k, v) VALUES ('deps', '') ON CONFLICT (k) DO NOTHING;
