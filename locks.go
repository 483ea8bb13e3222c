package baton

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/lockcore"
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

func (m Mode) db() string {
	if m == Write {
		return driver.ModeWrite
	}
	return driver.ModeRead
}

// Forever, as a timeout, waits until the context ends.
const Forever time.Duration = -1

// MaxNameLen is the longest namespace or lock name, in bytes for the locking
// service and in characters for user-level locks.
const MaxNameLen = 64

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
// most 64 bytes (names are binary strings, compared byte for byte).
func ValidateName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", ErrWrongName, what)
	case len(s) > MaxNameLen:
		return fmt.Errorf("%w: %s %q is %d bytes long, more than %d", ErrWrongName, what, s, len(s), MaxNameLen)
	}
	return nil
}

// Lock takes locks on every name in the namespace, in one mode, all or none.
//
// The names are taken in byte order. timeout 0 tries once and fails at
// once; a positive timeout bounds the whole call; a negative timeout
// (Forever) waits until ctx ends. On failure (ErrTimeout, ErrDeadlock,
// ErrWrongName, ErrSessionLost, a context error) the call holds nothing it
// took; locks from earlier calls are kept.
//
// A session never conflicts with itself: it may hold read and write
// instances of one name; each successful request is a separate instance
// until the namespace is released.
func (s *Session) Lock(ctx context.Context, ns string, mode Mode, timeout time.Duration, names ...string) ([]Grant, error) {
	ids, err := lockIdents(ns, mode, names)
	if err != nil {
		return nil, err
	}
	rs, err := s.acquire(ctx, ids, mode.db(), timeout)
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
	if err := s.check(); err != nil {
		return 0, err
	}
	return s.release(ctx, driver.FastReleaseParams{SessionID: s.id, Kind: driver.KindService, NS: ns})
}

func (s *Session) release(ctx context.Context, p driver.FastReleaseParams) (int, error) {
	c := s.c
	p.InlineOnly = !s.rows.Load()
	var n int
	var waiting []driver.Ident
	err := c.retrying(ctx, func() (err error) {
		n, waiting, err = c.drv.LockFastRelease(ctx, p)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("baton: release: %w", err)
	}
	if len(waiting) > 0 {
		if err := c.regrantNow(ctx, waiting); err != nil {
			return n, fmt.Errorf("baton: release: %w", err)
		}
	}
	return n, nil
}

// acquire takes the identifiers (sorted) one after the other; on failure it
// undoes the whole call.
func (s *Session) acquire(ctx context.Context, ids []driver.Ident, mode string, timeout time.Duration) ([]driver.Request, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	began := time.Now()
	rs, err := s.acquireAll(ctx, ids, mode, timeout)
	ns := ""
	if ids[0].Kind == driver.KindService {
		ns = ids[0].NS
	}
	s.c.opts.Observer.LockWaited(ns, time.Since(began), err == nil)
	if errors.Is(err, ErrDeadlock) {
		s.c.opts.Observer.Deadlock()
	}
	return rs, err
}

func (s *Session) acquireAll(ctx context.Context, ids []driver.Ident, mode string, timeout time.Duration) ([]driver.Request, error) {
	tryOnce := timeout == 0
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, ErrTimeout)
		defer cancel()
	}
	if err := s.awaitLockable(ctx, tryOnce); err != nil {
		return nil, err
	}
	call := randomInt63()
	if rs, ok, err := s.acquireMany(ctx, call, ids, mode); err != nil || ok {
		if err == nil {
			err = s.check()
		}
		if err != nil {
			return nil, s.undo(call, err)
		}
		return rs, nil
	}
	out := make([]driver.Request, 0, len(ids))
	for _, id := range ids {
		r, err := s.acquireOne(ctx, call, id, mode, tryOnce)
		if err != nil {
			return nil, s.undo(call, err)
		}
		out = append(out, r)
	}
	// Every grant above was made before this moment; while the session is
	// live here, the database cannot have reaped it before then.
	if err := s.check(); err != nil {
		return nil, s.undo(call, err)
	}
	return out, nil
}

// undo withdraws a failed call (undoCall) and returns the error its caller
// sees: the session's end when the withdrawal gave the session up (the
// outcome of a statement cut off by a lost connection is unknown, so the
// call's requests may exist), err otherwise.
func (s *Session) undo(call int64, err error) error {
	s.undoCall(call)
	if serr := s.Err(); serr != nil && !errors.Is(err, serr) {
		return serr
	}
	return err
}

// awaitLockable waits until the session may be granted locks: after a
// restart of a server whose lock state a crash empties, not before holders
// of the previous incarnation have stopped counting themselves holders.
func (s *Session) awaitLockable(ctx context.Context, tryOnce bool) error {
	wait := time.Until(s.lockable)
	if wait <= 0 {
		return nil
	}
	if tryOnce {
		return fmt.Errorf("%w: a database server crash emptied the lock state; locks are granted again in %v, once the longest lease in use has passed", ErrTimeout, wait.Round(time.Millisecond))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return s.check()
	case <-s.done:
		return s.Err()
	case <-ctx.Done():
		return s.failure(ctx, ctx.Err())
	}
}

// acquireMany takes several free names of one namespace in one round trip
// where the backend can (driver.ManyAcquirer); ok false sends the call
// down the name-by-name path (nothing was taken).
func (s *Session) acquireMany(ctx context.Context, call int64, ids []driver.Ident, mode string) ([]driver.Request, bool, error) {
	ma, can := s.c.drv.(driver.ManyAcquirer)
	if !can || len(ids) < 2 {
		return nil, false, nil
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		if id.Kind != ids[0].Kind || id.NS != ids[0].NS || (i > 0 && id.Name == ids[i-1].Name) {
			return nil, false, nil // sorted: a repeated name is next to itself
		}
		names[i] = id.Name
	}
	rs, ok, err := ma.LockFastAcquireMany(ctx, driver.FastAcquireParams{SessionID: s.id, ClientID: s.c.id,
		Ident: ids[0], Mode: mode, CallID: call, Incarnation: s.incarnation}, names)
	if err != nil || slices.ContainsFunc(rs, func(r driver.Request) bool { return !r.Inline }) {
		s.rows.Store(true) // on an error, rows may have been stored all the same
	}
	if errors.Is(err, driver.ErrServerRestarted) {
		return nil, false, s.lost("%w", err)
	}
	if err != nil {
		if s.c.drv.IsRetryable(err) {
			return nil, false, nil // the slow path retries name by name
		}
		return nil, false, s.failure(ctx, err)
	}
	return rs, ok, nil
}

// acquireOne takes one lock: by the fast path when nobody holds a
// conflicting lock or waits, otherwise by a request decided under the
// identifier's row lock, and then, unless tryOnce, by waiting for its grant.
func (s *Session) acquireOne(ctx context.Context, call int64, id driver.Ident, mode string, tryOnce bool) (driver.Request, error) {
	c := s.c
	var r driver.Request
	var ok bool
	err := c.retrying(ctx, func() (err error) {
		r, ok, err = c.drv.LockFastAcquire(ctx, driver.FastAcquireParams{
			SessionID: s.id, ClientID: c.id, Ident: id, Mode: mode, CallID: call, Incarnation: s.incarnation})
		return err
	})
	switch {
	case errors.Is(err, driver.ErrServerRestarted):
		return driver.Request{}, s.lost("%w", err)
	case err != nil:
		return driver.Request{}, s.failure(ctx, err)
	case ok:
		if !r.Inline {
			s.rows.Store(true)
		}
		return r, nil
	}
	s.rows.Store(true) // before the request row exists
	req, err := s.requestSlow(ctx, call, id, mode, tryOnce)
	if errors.Is(err, errSessionGone) {
		return driver.Request{}, s.lost("the database no longer has the session (its lease ran out, or a crash emptied the lock state)")
	}
	if err != nil {
		return driver.Request{}, s.failure(ctx, err)
	}
	if req.Status == driver.StatusGranted {
		return req, nil
	}
	return s.awaitGrant(ctx, req)
}

// requestSlow stores a request decided under the identifier's row lock:
// in one call where the backend can (driver.Requester), otherwise in a
// transaction of the engine's own (request).
func (s *Session) requestSlow(ctx context.Context, call int64, id driver.Ident, mode string, tryOnce bool) (driver.Request, error) {
	c := s.c
	var req driver.Request
	if rq, ok := c.drv.(driver.Requester); ok {
		err := c.retrying(ctx, func() (err error) {
			req, err = rq.LockRequest(ctx, driver.RequestParams{SessionID: s.id, ClientID: c.id, Ident: id, Mode: mode,
				CallID: call, TryOnce: tryOnce})
			return err
		})
		switch {
		case errors.Is(err, driver.ErrNoSession):
			return req, errSessionGone
		case errors.Is(err, driver.ErrWouldWait):
			return req, ErrTimeout
		}
		return req, err
	}
	err := c.inTx(ctx, func(tx driver.Tx) error {
		// Anew on each try: a retried transaction starts from scratch.
		req = driver.Request{SessionID: s.id, ClientID: c.id, Ident: id, Mode: mode,
			Status: driver.StatusPending, CallID: call, ID: math.MaxInt64}
		return s.request(ctx, tx, &req, tryOnce)
	})
	return req, err
}

// request is the slow path: under the identifier's row lock, grant req
// (status and token set) or queue it, and store it with the identifier's
// counts. With tryOnce a request that would wait is ErrTimeout instead.
func (s *Session) request(ctx context.Context, tx driver.Tx, req *driver.Request, tryOnce bool) error {
	st, err := tx.LockIdentLock(ctx, []driver.Ident{req.Ident})
	if err != nil {
		return err
	}
	// Only a session the database still has may queue or be granted: one
	// whose row a crash emptied (PostgreSQL's UNLOGGED lock state) would
	// hold a request nobody renews, swept as an orphan while its owner
	// still counts itself the holder.
	live, err := tx.SessionListByClient(ctx, s.c.id)
	if err != nil {
		return err
	}
	if !slices.Contains(live, s.id) {
		return errSessionGone
	}
	rows, err := tx.LockRequestList(ctx, []driver.Ident{req.Ident})
	if err != nil {
		return err
	}
	gate, err := s.c.gateRows(ctx, tx, st[0])
	if err != nil {
		return err
	}
	grants := lockcore.Grants(slices.Concat(gate, rows, []driver.Request{*req}))
	state := st[0]
	if len(grants) > 0 && grants[len(grants)-1] == req.ID {
		req.Status = driver.StatusGranted
		state.Fence++
		req.Token = state.Fence
	} else if tryOnce {
		return ErrTimeout
	}
	if req.ID, err = tx.LockRequestInsert(ctx, *req); err != nil {
		return err
	}
	rows = append(rows, *req)
	state.Readers, state.Writers, state.Waiting = lockcore.Counts(rows)
	return tx.LockIdentUpdate(ctx, state)
}

// awaitGrant waits for a queued request's grant, its choice as a deadlock
// victim, the session's end or ctx.
func (s *Session) awaitGrant(ctx context.Context, req driver.Request) (driver.Request, error) {
	c := s.c
	// The waiter is registered only now that the request is committed (a
	// status check on another connection must find it); a grant that came
	// in between is caught by the check this wake runs.
	if err := c.listening(ctx); err != nil {
		if errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return driver.Request{}, s.failure(ctx, err)
		}
		// The listener could not start (the database may be away): wait
		// all the same, until the timeout or the session's end; the
		// heartbeat starts the listener again and its start wakes every
		// waiter.
		c.logf("lock waiter: %v; waiting on", err)
	}
	answer := c.lockWaits.Add(req.ID, s.id)
	c.wake()
	// This request may have closed a cycle: look once it has waited
	// deadlockDelay. Most waits end sooner and cost no graph walk.
	detect := time.AfterFunc(deadlockDelay, func() { c.detectIfWaiting(req.ID) })
	defer detect.Stop()
	defer c.pollGated(req)()
	select {
	case r := <-answer:
		return s.answered(r, req)
	case <-ctx.Done():
		c.lockWaits.Remove(req.ID)
		return driver.Request{}, s.failure(ctx, ctx.Err())
	}
}

// answered turns the answer to a waiting request into Lock's result.
func (s *Session) answered(r, req driver.Request) (driver.Request, error) {
	switch r.Status {
	case driver.StatusGranted:
		r.Ident, r.Mode, r.SessionID = req.Ident, req.Mode, s.id // a hint carries only id and token
		return r, nil
	case driver.StatusDeadlock:
		return driver.Request{}, fmt.Errorf("%w: %s lock on %s was chosen as the victim", ErrDeadlock, modeWord(req.Mode), describe(req.Ident))
	}
	if err := s.check(); err != nil {
		return driver.Request{}, err
	}
	// Reaped, or emptied by a crash: the session is gone too.
	return driver.Request{}, s.lost("lock request vanished (session ended)")
}

func modeWord(m string) string {
	if m == driver.ModeWrite {
		return "write"
	}
	return "read"
}

func describe(id driver.Ident) string {
	if id.Kind == driver.KindUser {
		return fmt.Sprintf("user lock %q", id.Name)
	}
	return fmt.Sprintf("%q in namespace %q", id.Name, id.NS)
}

// settleDeadline waits for ctx to be done when its deadline has passed: a
// statement (or a connection's dial) can fail on the deadline a moment
// before the context's own timer marks it done, and the caller must see
// the context's cause (ErrTimeout, ErrEmpty), not the network's "i/o
// timeout".
func settleDeadline(ctx context.Context) {
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		<-ctx.Done()
	}
}

// failure maps an error during acquisition to what the caller sees.
func (s *Session) failure(ctx context.Context, err error) error {
	settleDeadline(ctx)
	if errors.Is(err, ErrTimeout) || errors.Is(context.Cause(ctx), ErrTimeout) {
		return fmt.Errorf("%w", ErrTimeout)
	}
	if serr := s.check(); serr != nil {
		return serr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("baton: lock: %w", err)
}

// undoCall removes every request of a failed call, granted or waiting, and
// grants what that frees. When that cannot be done (the database is away),
// the session is given up: a request left behind could later be granted to
// an owner who no longer waits, so the client deletes the whole session as
// soon as the database answers.
func (s *Session) undoCall(call int64) {
	c := s.c
	if s.Err() != nil {
		return // ended: the client deletes everything it had
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Lease)
	defer cancel()
	err := c.inTx(ctx, func(tx driver.Tx) error {
		rs, err := tx.LockRequestListCall(ctx, s.id, call)
		if err != nil {
			return err
		}
		return c.removeRequests(ctx, tx, rs)
	})
	if err != nil {
		s.lose(fmt.Errorf("%w: a failed lock call could not be withdrawn: %v", ErrSessionLost, err))
	}
}

// removeRequests deletes requests and re-examines their identifiers.
func (c *Client) removeRequests(ctx context.Context, tx driver.Tx, rs []driver.Request) error {
	if len(rs) == 0 {
		return nil
	}
	states, err := tx.LockIdentLock(ctx, uniqueIdents(rs))
	if err != nil {
		return err
	}
	ids := make([]int64, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	if err := tx.LockRequestDelete(ctx, ids); err != nil {
		return err
	}
	return c.regrantLocked(ctx, tx, states)
}

func uniqueIdents(rs []driver.Request) []driver.Ident {
	seen := map[driver.Ident]bool{}
	var out []driver.Ident
	for _, r := range rs {
		if !seen[r.Ident] {
			seen[r.Ident] = true
			out = append(out, r.Ident)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// regrantNow re-examines identifiers after a release, through the backend's
// shortcut when it has one.
func (c *Client) regrantNow(ctx context.Context, idents []driver.Ident) error {
	handled := true
	err := c.retrying(ctx, func() (err error) {
		if handled, err = c.drv.LockRegrant(ctx, idents); !handled {
			return nil
		}
		return err
	})
	if !handled {
		return c.inTx(ctx, func(tx driver.Tx) error { return c.regrant(ctx, tx, idents) })
	}
	return err
}

// regrant locks the identifiers and grants every waiting request that can
// now be granted.
func (c *Client) regrant(ctx context.Context, tx driver.Tx, idents []driver.Ident) error {
	states, err := tx.LockIdentLock(ctx, idents)
	if err != nil {
		return err
	}
	return c.regrantLocked(ctx, tx, states)
}

// regrantLocked is regrant for identifiers already locked in tx.
func (c *Client) regrantLocked(ctx context.Context, tx driver.Tx, states []driver.IdentState) error {
	var wake []string
	seen := map[string]bool{}
	for _, st := range states {
		rows, err := tx.LockRequestList(ctx, []driver.Ident{st.Ident})
		if err != nil {
			return err
		}
		gate, err := c.gateRows(ctx, tx, st)
		if err != nil {
			return err
		}
		grants := lockcore.Grants(append(gate, rows...))
		byID := map[int64]int{}
		for j, r := range rows {
			byID[r.ID] = j
		}
		for _, gid := range grants {
			st.Fence++
			ok, err := tx.LockRequestSetStatus(ctx, gid, driver.StatusPending, driver.StatusGranted, st.Fence)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			r := &rows[byID[gid]]
			r.Status = driver.StatusGranted
			if !seen[r.ClientID] {
				seen[r.ClientID] = true
				wake = append(wake, r.ClientID)
			}
		}
		st.Readers, st.Writers, st.Waiting = lockcore.Counts(rows)
		if err := tx.LockIdentUpdate(ctx, st); err != nil {
			return err
		}
	}
	return tx.WakeClients(ctx, wake)
}

// errSessionGone: the session's row is not in the database.
var errSessionGone = errors.New("baton: session not in the database")

// deadlockDelay is how long a waiting request waits before its client
// looks for a cycle it may have closed: well under the 100 ms within which
// a deadlock is reported, and longer than most waits of a busy lock.
const deadlockDelay = 20 * time.Millisecond

// detectIfWaiting runs deadlock detection if the request still waits.
func (c *Client) detectIfWaiting(id int64) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed || !c.lockWaits.Waits(id) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Lease)
	defer cancel()
	c.logErr("deadlock detection", c.detectDeadlocks(ctx))
}

// detectDeadlocks looks for cycles among all waiting requests and aborts one
// request per cycle (see lockcore.Victims).
func (c *Client) detectDeadlocks(ctx context.Context) error {
	c.mu.Lock()
	c.lastDetect = time.Now()
	c.mu.Unlock()
	return c.inTx(ctx, func(tx driver.Tx) error {
		if err := tx.LockDetectorLock(ctx); err != nil {
			return err
		}
		graph, err := tx.LockWaitGraph(ctx)
		if err != nil {
			return err
		}
		victims := lockcore.Victims(graph)
		var wake []string
		for _, v := range victims {
			ok, err := tx.LockRequestSetStatus(ctx, v.ID, driver.StatusPending, driver.StatusDeadlock, v.Token)
			if err != nil {
				return err
			}
			if ok {
				wake = append(wake, v.ClientID)
			}
		}
		return tx.WakeClients(ctx, wake)
	})
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
func userIdent(name string) (driver.Ident, error) {
	switch {
	case name == "":
		return driver.Ident{}, fmt.Errorf("%w: user lock name is empty", ErrWrongName)
	case !utf8.ValidString(name):
		return driver.Ident{}, fmt.Errorf("%w: user lock name %q is not valid UTF-8", ErrWrongName, name)
	case utf8.RuneCountInString(name) > MaxNameLen:
		return driver.Ident{}, fmt.Errorf("%w: user lock name %q is longer than %d characters", ErrWrongName, name, MaxNameLen)
	}
	return driver.Ident{Kind: driver.KindUser, NS: "", Name: strings.ToLower(name)}, nil
}

// GetLock takes the user-level lock name (MySQL's GET_LOCK): exclusive and
// re-entrant, each success one more instance to release. It returns true
// when acquired, false when the timeout passed (0 tries once, negative waits
// until ctx ends), and an error otherwise (ErrDeadlock, ErrWrongName, ...).
func (s *Session) GetLock(ctx context.Context, name string, timeout time.Duration) (bool, error) {
	id, err := userIdent(name)
	if err != nil {
		return false, err
	}
	_, err = s.acquire(ctx, []driver.Ident{id}, driver.ModeWrite, timeout)
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
	if err := s.check(); err != nil {
		return NotHeld, err
	}
	n, err := s.release(ctx, driver.FastReleaseParams{SessionID: s.id, Kind: driver.KindUser, NS: "", Name: id.Name, Limit: 1})
	if err != nil {
		return NotHeld, err
	}
	if n == 1 {
		return Released, nil
	}
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
	if err := s.check(); err != nil {
		return 0, err
	}
	return s.release(ctx, driver.FastReleaseParams{SessionID: s.id, Kind: driver.KindUser, NS: ""})
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
	err = c.inTx(ctx, func(tx driver.Tx) error {
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
	// One statement, outside any transaction: on SQLite a transaction
	// would wait for any program's open write transaction.
	rows, err := c.drv.NoTx().LockInfoList(ctx)
	if err != nil {
		return nil, err
	}
	if tl, ok := c.drv.(driver.TxLocker); ok {
		holds, err := tl.TxHolds(ctx)
		if err != nil {
			return nil, err
		}
		rows = append(rows, holds...)
		slices.SortStableFunc(rows, func(a, b driver.LockInfo) int {
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.NS, b.NS), cmp.Compare(a.Name, b.Name))
		})
	}
	out := make([]LockInfo, 0, len(rows))
	for _, r := range rows {
		li := LockInfo{Type: "LOCKING SERVICE", Namespace: r.NS, Name: r.Name, Mode: "SHARED", Status: "PENDING",
			Session: r.SessionID, Owner: fmt.Sprintf("%s:%d/%s", r.Host, r.PID, r.Owner), Since: r.CreatedAt}
		if r.Kind == driver.KindUser {
			li.Type, li.Namespace = "USER LEVEL LOCK", ""
		}
		if r.Mode == driver.ModeWrite {
			li.Mode = "EXCLUSIVE"
		}
		if r.Status == driver.StatusGranted {
			li.Status, li.Since, li.Token = "GRANTED", r.GrantedAt, r.Token
		}
		li.Transaction = r.ClientID == "" && strings.HasPrefix(r.SessionID, "tx ")
		out = append(out, li)
	}
	return out, nil
}
