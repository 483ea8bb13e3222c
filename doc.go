// Package baton turns the SQL database an application already runs (SQLite,
// PostgreSQL, MySQL/MariaDB) into its coordination layer: locks, queues,
// table-change events and notifications, with no other server to run.
//
// # Clients and sessions
//
// A Client is opened from a DSN (sqlite:PATH, postgres://..., mysql://...)
// and shared by the whole process; Open applies baton's migrations to its
// own tables. Each backend is a package that registers its DSN schemes when
// imported, as database/sql drivers do, so a program imports the ones it
// uses:
//
//	import _ "github.com/batonhq/baton/driver/sqlite"   // sqlite:
//	import _ "github.com/batonhq/baton/driver/postgres" // postgres://, postgresql://
//	import _ "github.com/batonhq/baton/driver/mysql"    // mysql://, mariadb://
//
// Everything builds without cgo; driver/sqlite/cgo is an opt-in SQLite
// backend on mattn/go-sqlite3.
//
// Work that must be coordinated happens in a Session: a live participant
// with a lease that the client's heartbeat renews. Every lock
// and every claimed message belongs to a session; when the session ends
// (Close) or dies (its process is killed, or it loses the database for
// longer than its lease), everything it held is released or handed back,
// and a session that is lost is told so through Done and Err, never
// silently.
//
// # Locks
//
// Locks follow MySQL's locking service: identifiers are (namespace, name),
// modes are Read and Write, one Session.Lock call takes several names all or
// none, waits are first come first served, deadlocks are detected and one
// request is aborted with ErrDeadlock. The GET_LOCK family (GetLock,
// ReleaseLock, IsFreeLock, IsUsedLock, ReleaseAllLocks) has MySQL's
// results. Every grant carries a fencing token that strictly increases per
// identifier, so a resource can refuse a holder whose lock has moved on.
// See Example and ExampleSession_GetLock.
//
// # Queues
//
// Client.Enqueue (or EnqueueTx, inside the caller's transaction: the message
// exists if and only if the transaction commits) adds a message with a
// delay, priority, key and attempt limit. Session.Claim takes messages,
// waiting for work without busy polling; Ack, Retry (with backoff), Fail
// and Extend settle them; a message past its attempt limit becomes a dead
// letter, listed by DeadLetters, re-driven by Redrive and purged by
// PurgeDead. A killed consumer's messages come back to the queue. Client.Work
// runs a handler with a concurrency limit, graceful shutdown and panics
// turned into retries, in parallel, ordered or per-key mode. See
// ExampleClient_Work.
//
// # Table-change events
//
// Client.Subscribe installs triggers on an application table; every insert,
// update or delete that matches a subscription writes one event (table,
// action, primary key, new and old row as JSON) in the writer's own
// transaction, whatever client or language wrote it. Each subscription is a
// queue: Client.WorkEvents consumes it in order, per primary key or in
// parallel, with the retries and dead letters of any queue. See
// ExampleClient_Subscribe.
//
// # Notifications
//
// Client.Notify (or NotifyTx, in the caller's transaction) reaches every
// Listener of the channel in any process once the transaction commits, and
// nothing is delivered on rollback. The same mechanism wakes lock waiters
// and queue consumers; a lost wake-up is caught by polling within a bounded
// interval. See ExampleClient_Listen.
//
// # One semantics on every backend
//
// A program behaves the same on SQLite, PostgreSQL and MySQL/MariaDB: one
// conformance suite runs against all of them. The guarantees are listed in
// docs/guarantees.md in the repository, the DSN parameters in docs/dsn.md.
package baton
