-- Dependencies, workflows and batches. A message enqueued after others
-- (its parents) waits in state 'W', which no claim reads, until the
-- dependency sweep (sqlbase DepsSweep) finds every parent done: one edge
-- per (parent, child), done = 0 while the parent has not finished,
-- on_fail = 1 when the child runs whatever became of that parent (0: a
-- parent that did not complete cancels the child). Edges are kept after
-- they are done (a message's parents and dependants, a workflow's graph)
-- and purged once their child has left the history.
CREATE TABLE {p}message_deps (
    parent  INTEGER NOT NULL,
    child   INTEGER NOT NULL,
    done    INTEGER NOT NULL DEFAULT 0,
    on_fail INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (child, parent)
) WITHOUT ROWID;
CREATE INDEX {p}message_deps_parent ON {p}message_deps (parent, child);
CREATE INDEX {p}message_deps_pending ON {p}message_deps (child) WHERE done = 0;

-- The steps of each workflow (its id: its first step's), by name.
CREATE TABLE {p}workflow_steps (
    workflow INTEGER NOT NULL,
    id       INTEGER NOT NULL,
    name     TEXT    NOT NULL,
    PRIMARY KEY (workflow, id)
) WITHOUT ROWID;
CREATE INDEX {p}workflow_steps_id ON {p}workflow_steps (id);
