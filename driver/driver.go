// Package driver defines the interface between baton's engine and one
// database backend. Each backend lives in its own package below this one
// (driver/sqlite, driver/postgres, driver/mysql) and asserts at compile
// time that it satisfies Driver and each slice's interface: Sessions,
// Locks, Queue, Events and Notifier, one file each here (sessions.go,
// locks.go, queue.go, events.go, notify.go).
//
// The engine owns the semantics (who gets a lock, who is a deadlock victim);
// a driver owns the SQL. Methods are verb-first and grouped by noun
// (SessionInsert, LockRequestList, ...) so that a reviewer can compare one
// backend's query with another's by name. Differences between dialects are
// expressed as driver methods with the same meaning, never as a switch on the
// dialect in feature code.
package driver

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// ErrNoRows is returned by single-row lookups that found nothing.
var ErrNoRows = errors.New("baton/driver: no rows")

// ErrBadDSN is wrapped by a backend's Open for a DSN (or a file it names)
// it cannot use: the fix is in the DSN, not in the database.
var ErrBadDSN = errors.New("baton: bad DSN")

// ErrNoSchema is returned by Migrate when the schema that is to hold
// baton's tables (PostgreSQL's search_path) does not exist.
var ErrNoSchema = errors.New("baton: schema does not exist")

// Driver is one backend: the database-level methods, what the backend
// can do (capabilities, each a method the engine asks once), and one
// accessor per slice. A backend implements every slice; what it cannot
// do it says so through a capability or a handled result, never by
// leaving a method out.
type Driver interface {
	// Name is the backend's short name: "sqlite", "postgres" or "mysql".
	Name() string

	// Close releases the driver's connections.
	Close() error

	// Migrate applies pending migrations; safe when several processes call
	// it at the same moment.
	Migrate(ctx context.Context) ([]MigrationStatus, error)

	// MigrationStatus lists every known migration and whether it is applied.
	MigrationStatus(ctx context.Context) ([]MigrationStatus, error)

	// IsRetryable reports whether err is a transient conflict inside the
	// database (deadlock between baton's own statements, serialization
	// failure, busy file) after which the whole transaction can run again.
	IsRetryable(err error) bool

	// Prepare readies the driver's statements once the schema exists; the
	// client calls it after migrating.
	Prepare(ctx context.Context) error

	// NoTx returns a Tx whose methods each run as a statement of its own,
	// outside any transaction: for operations that are one statement.
	NoTx() Tx

	// Relaxed is NoTx for statements whose loss in a database crash can
	// only cause a message to be delivered again (claims, acknowledgements,
	// retries, lease extensions): a backend may commit them without
	// waiting for the disk. Never used for enqueueing.
	Relaxed() Tx

	// Begin starts a transaction in which baton's lock rows can be locked.
	// On SQLite it takes the write lock at once (BEGIN IMMEDIATE).
	Begin(ctx context.Context) (Tx, error)

	// Uninstall lists baton's objects in the database, from its catalog,
	// and removes them when p.Remove is set (see UninstallReport), in one
	// transaction where the backend's DDL is transactional; it refuses
	// with ErrSessionsAlive while sessions hold a live lease, unless
	// p.Force. Objects that merely carry the prefix are kept.
	Uninstall(ctx context.Context, p UninstallParams) (UninstallReport, error)

	// SetStatementTimeout bounds each statement whose context has no
	// deadline, on a backend with a database server, so that a server that
	// stops answering once connected fails the statement instead of
	// hanging it (internal/stmtbound; 30s until set; 0 restores it, a
	// negative timeout bounds nothing). Waits in the server by design are
	// bounded by their wait plus a margin, migrations not at all. SQLite
	// has no server: a no-op there.
	SetStatementTimeout(d time.Duration)

	// Maintain does periodic housekeeping of every slice (old
	// notifications, idle lock state); every client calls it about once a
	// minute.
	Maintain(ctx context.Context) error

	// LimitConns bounds the backend's pools of server connections to n
	// (Options.MaxConns), before the client runs statements; the
	// listener's connection is not counted. SQLite: a no-op.
	LimitConns(n int)

	// SetLogger hands the backend the client's Options.Logger, for what
	// it logs (a lost LISTEN connection, a transaction pooler found).
	SetLogger(l *slog.Logger)

	// Embedded reports whether the database runs in the process (SQLite):
	// false for a backend whose statements run in a database server
	// (PostgreSQL, MySQL/MariaDB). A statement whose client stops waiting
	// for it (its context ended, which closes the connection) may still
	// commit in the server afterwards: a lock request or holder so written
	// would outlive the withdrawal of the call that wrote it. The engine
	// therefore runs the statements that change the lock state to their
	// end, bounded by the lease (or the caller's deadline, when later) and
	// not by the caller's context, whose deadline it keeps by bounding the
	// waits in the server (the turnstile's) and by checking it between
	// statements. An embedded database (SQLite) ends a cut statement
	// before it returns, so its statements keep the caller's context.
	Embedded() bool

	// The slices: each accessor returns the backend's part for one slice
	// (no allocation: the backend or a field of it).
	Sessions() Sessions
	Locks() Locks
	Queue() Queue
	Events() Events
	Notifier() Notifier
}

// MigrationStatus describes one migration.
type MigrationStatus struct {
	Version   int
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// Tx is a transaction on baton's tables. Every method is one statement.
type Tx interface {
	Commit() error
	Rollback() error
	SessionsTx
	LocksTx
	QueueTx
	EventsTx
}

// Statement is a statement with its arguments, for the caller's
// transaction.
type Statement struct {
	Query string
	Args  []any
}
