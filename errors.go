package baton

import (
	"errors"

	"github.com/batonhq/baton/driver"
)

// Errors that callers test with errors.Is. Returned errors wrap these with
// details (which name, which session, why).
var (
	// ErrWrongName is returned when a namespace or lock name is empty,
	// longer than 64 bytes (locking service) or not valid UTF-8 of at most
	// 64 characters (user-level locks). The call takes nothing. It is
	// MySQL's ER_LOCKING_SERVICE_WRONG_NAME / ER_USER_LOCK_WRONG_NAME.
	ErrWrongName = errors.New("baton: wrong lock name")
	// ErrTimeout is returned when locks could not be taken before the
	// call's timeout. The call takes nothing.
	ErrTimeout = errors.New("baton: lock wait timeout")
	// ErrDeadlock is returned to the request chosen as the victim of a
	// deadlock. The call takes nothing; locks taken by earlier calls are
	// kept.
	ErrDeadlock = errors.New("baton: deadlock found when trying to get lock")
	// ErrSessionLost is returned by every call on a session whose lease
	// could not be kept: its locks may already belong to others.
	ErrSessionLost = errors.New("baton: session lost")
	// ErrClosed is returned by calls on a closed session or client.
	ErrClosed = errors.New("baton: closed")
	// ErrInvalid is returned for a bad argument: a channel name, a
	// payload, an option. Nothing was done.
	ErrInvalid = errors.New("baton: invalid argument")
	// ErrNoSchema is returned by Open (and Migrate) when the PostgreSQL
	// schema the DSN's search_path names does not exist; `baton migrate`
	// creates it.
	ErrNoSchema = driver.ErrNoSchema
	// ErrBadDSN is returned by Open for a DSN it cannot use.
	ErrBadDSN = driver.ErrBadDSN
)
