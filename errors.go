package baton

import (
	"errors"

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

// Message errors.
var (
	// ErrNotFound: no message has the id (it never existed, was deleted,
	// or its history was pruned).
	ErrNotFound = errs.ErrNotFound
	// ErrFinished: the message already finished (completed, cancelled or
	// dead); nothing was changed.
	ErrFinished = errs.ErrFinished
	// ErrCancelled is the cause of a handler context cancelled because its
	// message was cancelled (context.Cause tells it from a shutdown).
	ErrCancelled = errs.ErrCancelled
)

// Queue errors.
var (
	// ErrEmpty is returned by Claim when no message could be claimed
	// before its wait ended.
	ErrEmpty = errs.ErrEmpty
	// ErrNotClaimed is returned by Ack, Retry, Fail and Extend when the
	// session no longer holds the message's claim: its lease ran out or
	// its session ended, and the message went back to the queue (or to the
	// dead letters) and may be processed again.
	ErrNotClaimed = errs.ErrNotClaimed
	// ErrUnknownQueue is returned for a queue nothing was ever enqueued to.
	ErrUnknownQueue = errs.ErrUnknownQueue
	// ErrDuplicate is returned by Enqueue, EnqueueTx and EnqueueJob(Tx)
	// when the message's unique key (EnqueueOptions.UniqueKey) holds:
	// nothing was added, and the id returned with it is the message that
	// holds the key.
	ErrDuplicate = errs.ErrDuplicate
	// ErrNoMessage is ErrNotFound under another name.
	ErrNoMessage = ErrNotFound
	// ErrRunning: the message is being handled; only waiting messages can
	// be retried now or deleted.
	ErrRunning = errs.ErrRunning
	// ErrPermanent, wrapped in a handler's error, sends the message to the
	// dead letters at once instead of retrying it.
	ErrPermanent = errs.ErrPermanent
)

// ErrUnknownKind: a message's kind has no worker in the Workers that ran
// it. The attempt fails (it is retried, and ends in the dead letters at its
// attempt limit): a message is never dropped. An enqueue of a kind that
// Options.Workers does not know fails with it too (and ErrInvalid).
var ErrUnknownKind = errors.New("baton: no worker for the message's kind")

// Subscription errors.
var (
	// ErrUnknownSubscription is returned for a subscription name that does
	// not exist.
	ErrUnknownSubscription = errs.ErrUnknownSubscription
	// ErrSubscriptionExists is returned by Subscribe for a name in use.
	ErrSubscriptionExists = errs.ErrSubscriptionExists
)
