package baton

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/locks"
	"github.com/batonhq/baton/internal/txn"
)

// Mode is a lock mode.
type Mode int

const (
	// Read locks are shared.
	Read Mode = iota
	// Write locks are exclusive.
	Write
)

func (m Mode) String() string {
	if m == Write {
		return "write"
	}
	return "read"
}

func (m Mode) db() driver.LockMode {
	if m == Write {
		return driver.ModeWrite
	}
	return driver.ModeRead
}

// Forever, as a timeout, waits until the context ends.
const Forever time.Duration = -1

// MaxNameLen is the longest namespace or lock name, in characters (a byte
// that is not part of valid UTF-8 counts as one).
const MaxNameLen = locks.MaxNameLen

// Grant is one granted lock instance.
type Grant struct {
	Namespace string
	Name      string
	Mode      Mode
	// Token strictly increases for each grant of the same identifier, in
	// grant order, across sessions, processes and database restarts: a
	// resource that remembers the highest token it has seen can refuse a
	// holder whose lock has since passed to someone else.
	Token int64
}

// ValidateName checks a locking-service namespace or name: non-empty and at
// most 64 characters, as MySQL's locking service (a byte that is not part
// of valid UTF-8 counts as one; names are compared byte for byte).
func ValidateName(what, s string) error { return locks.ValidateName(what, s) }

// Lock takes locks on every name in the namespace, in one mode, all or none.
//
// The names are taken in byte order. timeout 0 tries once and fails at
// once; a positive timeout bounds the whole call; a negative timeout
// (Forever) waits until ctx ends. On failure (ErrTimeout, ErrDeadlock,
// ErrWrongName, ErrSessionLost, a context error) the call holds nothing it
// took; locks from earlier calls are kept. The timeout and ctx bound the
// call's waits, not a statement already sent to a database server, which
// runs to its end (at most the lease): a call whose statement the server
// held up past the deadline returns a lock that statement granted, and
// otherwise fails having stored nothing.
//
// A session never conflicts with itself: it may hold read and write
// instances of one name; each successful request is a separate instance
// until the namespace is released.
func (s *Session) Lock(ctx context.Context, ns string, mode Mode, timeout time.Duration, names ...string) ([]Grant, error) {
	ids, err := lockIdents(ns, mode, names)
	if err != nil {
		return nil, err
	}
	rs, err := s.c.locks.Acquire(ctx, s.ls, ids, mode.db(), timeout)
	if err != nil {
		return nil, err
	}
	out := make([]Grant, len(rs))
	for i, r := range rs {
		out[i] = Grant{Namespace: r.NS, Name: r.Name, Mode: mode, Token: r.Token}
	}
	return out, nil
}

// Release releases every instance the session holds in the namespace, and
// only those. It returns how many instances it released.
func (s *Session) Release(ctx context.Context, ns string) (int, error) {
	if err := ValidateName("namespace", ns); err != nil {
		return 0, err
	}
	if err := s.ls.Check(); err != nil {
		return 0, err
	}
	return s.release(ctx, driver.FastReleaseParams{Kind: driver.KindService, NS: ns})
}

func (s *Session) release(ctx context.Context, p driver.FastReleaseParams) (int, error) {
	return s.c.locks.Release(ctx, s.ls, p)
}

// ---- user-level locks (the GET_LOCK family) ----

// ReleaseResult is the outcome of ReleaseLock, as MySQL's RELEASE_LOCK
// reports it.
type ReleaseResult int

const (
	// Released: the session held the lock and released one instance (1).
	Released ReleaseResult = iota
	// NotOwner: another session holds the lock (0).
	NotOwner
	// NotHeld: nobody holds the lock (NULL).
	NotHeld
)

func (r ReleaseResult) String() string {
	return [...]string{"released", "held by another session", "not held"}[r]
}

// userIdent validates and folds a user-level lock name: valid UTF-8, 1 to 64
// characters, compared case-insensitively as MySQL and MariaDB do.
func userIdent(name string) (driver.Ident, error) { return locks.UserIdent(name) }

// GetLock takes the user-level lock name (MySQL's GET_LOCK): exclusive and
// re-entrant, each success one more instance to release. It returns true
// when acquired, false when the timeout passed (0 tries once, negative waits
// until ctx ends), and an error otherwise (ErrDeadlock, ErrWrongName, ...).
func (s *Session) GetLock(ctx context.Context, name string, timeout time.Duration) (bool, error) {
	id, err := userIdent(name)
	if err != nil {
		return false, err
	}
	_, err = s.c.locks.Acquire(ctx, s.ls, []driver.Ident{id}, driver.ModeWrite, timeout)
	if errors.Is(err, ErrTimeout) {
		return false, nil
	}
	return err == nil, err
}

// ReleaseLock releases one instance of the user-level lock (RELEASE_LOCK).
func (s *Session) ReleaseLock(ctx context.Context, name string) (ReleaseResult, error) {
	id, err := userIdent(name)
	if err != nil {
		return NotHeld, err
	}
	if err := s.ls.Check(); err != nil {
		return NotHeld, err
	}
	n, err := s.release(ctx, driver.FastReleaseParams{Kind: driver.KindUser, NS: "", Name: id.Name, Limit: 1})
	if err != nil {
		return NotHeld, err
	}
	if n == 1 {
		return Released, nil
	}
	return s.notReleased(ctx, name)
}

// notReleased says why the session released no instance of the lock:
// another session holds it, or nobody does.
func (s *Session) notReleased(ctx context.Context, name string) (ReleaseResult, error) {
	holder, used, err := s.c.IsUsedLock(ctx, name)
	switch {
	case err != nil:
		return NotHeld, err
	case used && holder != s.id:
		return NotOwner, nil
	}
	return NotHeld, nil
}

// ReleaseAllLocks releases every user-level lock instance of the session
// (RELEASE_ALL_LOCKS) and returns how many, every re-entry counted.
func (s *Session) ReleaseAllLocks(ctx context.Context) (int, error) {
	if err := s.ls.Check(); err != nil {
		return 0, err
	}
	return s.release(ctx, driver.FastReleaseParams{Kind: driver.KindUser, NS: ""})
}

// IsFreeLock reports whether nobody holds the user-level lock (IS_FREE_LOCK).
func (c *Client) IsFreeLock(ctx context.Context, name string) (bool, error) {
	_, used, err := c.IsUsedLock(ctx, name)
	return !used && err == nil, err
}

// IsUsedLock returns the id of the session holding the user-level lock
// (IS_USED_LOCK); used is false when nobody holds it.
func (c *Client) IsUsedLock(ctx context.Context, name string) (sessionID string, used bool, err error) {
	id, err := userIdent(name)
	if err != nil {
		return "", false, err
	}
	err = txn.InTx(ctx, c.drv, func(tx driver.Tx) error {
		sessionID, used, err = tx.LockUserHolder(ctx, id.Name)
		return err
	})
	return sessionID, used, err
}

// ---- monitoring ----

// LockInfo is one row of the monitoring view: a granted instance or a
// waiting request.
type LockInfo struct {
	// Type is "LOCKING SERVICE" or "USER LEVEL LOCK".
	Type      string    `json:"type"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Mode      string    `json:"mode"`   // SHARED or EXCLUSIVE
	Status    string    `json:"status"` // GRANTED or PENDING
	Session   string    `json:"session"`
	Owner     string    `json:"owner"` // host:pid/name
	Since     time.Time `json:"since"`
	Token     int64     `json:"token,omitempty"`
	// Transaction is set on a lock a transaction holds (Client.LockTx);
	// Session then names the transaction.
	Transaction bool `json:"transaction,omitempty"`
}

// Locks lists every granted instance and waiting request, of every session
// of every process.
func (c *Client) Locks(ctx context.Context) ([]LockInfo, error) {
	rows, err := c.locks.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]LockInfo, len(rows))
	for i, r := range rows {
		out[i] = LockInfo(r)
	}
	return out, nil
}
