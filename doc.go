// Package baton turns the SQL database an application already runs (SQLite,
// PostgreSQL, MySQL/MariaDB) into its coordination layer.
//
// A Client is opened from a DSN and shared by the whole process. Work that
// must be coordinated happens in a Session: a live participant with a lease
// that the client's heartbeat renews. Every lock belongs to a session; when
// the session ends (Close) or dies (its process is killed, or it loses the
// database for longer than its lease), everything it held is released, and a
// session that is lost is told so through Done and Err.
//
// Locks follow MySQL's locking service: identifiers are (namespace, name),
// modes are read and write, one call takes several names all or none, waits
// are first come first served, deadlocks are detected and one request is
// aborted with ErrDeadlock. The GET_LOCK family (GetLock, ReleaseLock,
// IsFreeLock, IsUsedLock, ReleaseAllLocks) has MySQL's results. Every grant
// carries a fencing token that strictly increases per identifier.
//
// The same program behaves the same on every backend: one conformance suite
// runs against all three.
package baton
