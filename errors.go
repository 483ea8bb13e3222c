package baton

import (
	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/stmtbound"
)

// Errors that callers test with errors.Is. Returned errors wrap these with
// details (which name, which session, why).
var (
	// ErrWrongName is returned when a namespace or lock name is empty,
	// longer than 64 characters (locking service) or not valid UTF-8 of at
	// most 64 characters (user-level locks). The call takes nothing. It is
	// MySQL's ER_LOCKING_SERVICE_WRONG_NAME / ER_USER_LOCK_WRONG_NAME.
	ErrWrongName = errs.ErrWrongName
	// ErrTimeout is returned when locks could not be taken before the
	// call's timeout. The call takes nothing.
	ErrTimeout = errs.ErrTimeout
	// ErrDeadlock is returned to the request chosen as the victim of a
	// deadlock. The call takes nothing; locks taken by earlier calls are
	// kept.
	ErrDeadlock = errs.ErrDeadlock
	// ErrSessionLost is returned by every call on a session whose lease
	// could not be kept: its locks may already belong to others.
	ErrSessionLost = errs.ErrSessionLost
	// ErrClosed is returned by calls on a closed session or client.
	ErrClosed = errs.ErrClosed
	// ErrInvalid is returned for a bad argument: a channel name, a
	// payload, an option. Nothing was done.
	ErrInvalid = errs.ErrInvalid
	// ErrNoSchema is returned by Open (and Migrate) when the PostgreSQL
	// schema the DSN's search_path names does not exist; `baton migrate`
	// creates it.
	ErrNoSchema = driver.ErrNoSchema
	// ErrBadDSN is returned by Open for a DSN it cannot use.
	ErrBadDSN = driver.ErrBadDSN
	// ErrSessionsAlive is returned by Uninstall while sessions hold a
	// live lease: nothing was removed.
	ErrSessionsAlive = driver.ErrSessionsAlive
	// ErrNoAnswer is returned when the database server did not answer a
	// statement within Options.StatementTimeout: it is stopped, out of
	// reach (a network that drops packets) or stuck. The statement's
	// outcome is unknown, as for any statement cut off by a context.
	ErrNoAnswer = stmtbound.ErrNoAnswer
)

// Subscription errors.
var (
	// ErrUnknownSubscription is returned for a subscription name that does
	// not exist.
	ErrUnknownSubscription = errs.ErrUnknownSubscription
	// ErrSubscriptionExists is returned by Subscribe for a name in use.
	ErrSubscriptionExists = errs.ErrSubscriptionExists
)
