-- hostid names the boot and PID namespace a session's process runs in, so
-- that a process on the same host can tell that the owner died (its PID is
-- gone) without waiting for the lease to run out.
ALTER TABLE {p}sessions ADD COLUMN hostid VARCHAR(100) NOT NULL DEFAULT '';
CREATE INDEX {p}sessions_hostid ON {p}sessions (hostid);
