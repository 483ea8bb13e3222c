package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/txn"
)

// Config is what a Keeper needs of its client.
type Config struct {
	Driver   driver.Driver
	ClientID string
	// Lease is how long the database keeps a session nobody renews;
	// Heartbeat how often the keeper renews.
	Lease, Heartbeat time.Duration
	// EndSession deletes a session and everything it holds (locks,
	// requests, claims), granting what that frees.
	EndSession func(ctx context.Context, id string) error
	// Ended runs when a session of this client ends, however (its lock
	// waiters must fail at once).
	Ended func(id string)
	// SessionLost runs each time one of the client's sessions is lost.
	SessionLost func()
	// Log reports a failure that is not returned to anyone.
	Log func(what string, err error)
	// Now is the clock of the local deadlines (nil: time.Now; tests set
	// their own).
	Now func() time.Time
}

// Keeper keeps a client's sessions: it starts them, renews them, deletes
// the ones it gave up on, and reaps dead sessions of other processes.
type Keeper struct {
	cfg    Config
	host   string
	hostID string // boot and PID namespace; see hostIdentity
	pid    int
	margin time.Duration
	lease  time.Duration

	mu        sync.Mutex
	sessions  map[string]*Session
	abandoned map[string]bool // lost sessions whose rows must still be deleted
	closed    bool

	lostCount atomic.Int64
	// renewalsOff stops renewals (tests: a process that cannot reach the
	// database, whatever the network does).
	renewalsOff atomic.Bool
}

// NewKeeper makes the keeper of one client.
func NewKeeper(cfg Config) *Keeper {
	host, _ := os.Hostname()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Keeper{cfg: cfg, host: host, hostID: HostIdentity(), pid: os.Getpid(), lease: cfg.Lease,
		margin: Margin(cfg.Lease, cfg.Heartbeat), sessions: map[string]*Session{}, abandoned: map[string]bool{}}
}

// Margin is how long before the database could reap a session its owner
// counts it lost: it covers the time a renewal spends in flight before the
// database stamps it, and bounded differences in clock rate.
func Margin(lease, heartbeat time.Duration) time.Duration {
	return min(lease/5, (lease-heartbeat)/2)
}

// Host and PID identify this process in session rows (with its host
// identity, which only the keeper uses).
func (k *Keeper) Host() string { return k.host }
func (k *Keeper) PID() int     { return k.pid }

// LostCount is how many sessions the keeper has reported lost, ever.
func (k *Keeper) LostCount() int64 { return k.lostCount.Load() }

// SwitchRenewals stops (off) or restarts renewals.
func (k *Keeper) SwitchRenewals(off bool) { k.renewalsOff.Store(off) }

// Begin starts a session: its row inserted with the lease, its local
// deadline set from the moment the insert began. name is the owner shown
// in monitoring.
func (k *Keeper) Begin(ctx context.Context, id, name string) (*Session, error) {
	s := &Session{id: id, keeper: k, done: make(chan struct{})}
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil, errs.ErrClosed
	}
	k.sessions[id] = s
	k.mu.Unlock()
	start := k.cfg.Now()
	if err := k.insert(ctx, s, name, start); err != nil {
		k.forget(id)
		return nil, fmt.Errorf("baton: start session: %w", err)
	}
	s.mu.Lock()
	s.registered = true
	s.mu.Unlock()
	s.Renewed(start)
	if err := s.Check(); err != nil {
		// The insert took longer than the lease allows: never use it.
		return nil, fmt.Errorf("baton: start session: %w", err)
	}
	return s, nil
}

// insert reads the lock state's incarnation (0 where it survives a crash),
// then inserts the session's row.
func (k *Keeper) insert(ctx context.Context, s *Session, name string, start time.Time) error {
	d := k.cfg.Driver
	id, wait, err := d.Sessions().Incarnation(ctx, k.lease)
	if err != nil {
		return err
	}
	s.Incarnation, s.Lockable = id, start.Add(wait)
	row := driver.Session{ID: s.id, ClientID: k.cfg.ClientID, Host: k.host, PID: k.pid, Name: name, HostID: k.hostID}
	return txn.InTx(ctx, d, func(tx driver.Tx) error { return tx.SessionInsert(ctx, row, k.lease) })
}

// Close refuses new sessions and returns the ones that live, for their
// owner to close.
func (k *Keeper) Close() []*Session {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	ss := make([]*Session, 0, len(k.sessions))
	for _, s := range k.sessions {
		ss = append(ss, s)
	}
	return ss
}

// forget drops an ended session.
func (k *Keeper) forget(id string) {
	k.mu.Lock()
	delete(k.sessions, id)
	k.mu.Unlock()
	if k.cfg.Ended != nil {
		k.cfg.Ended(id)
	}
}

// abandon records a lost session whose row and locks must be deleted as
// soon as the database answers.
func (k *Keeper) abandon(id string) {
	k.mu.Lock()
	k.abandoned[id] = true
	k.mu.Unlock()
	k.lostCount.Add(1)
	k.cfg.SessionLost()
}

// EndAbandoned deletes the sessions this client gave up on, freeing their
// locks and requests and returning their claims. It stops at the first
// failure (the database is still away) and tries again next time.
func (k *Keeper) EndAbandoned(ctx context.Context) error {
	k.mu.Lock()
	ids := make([]string, 0, len(k.abandoned))
	for id := range k.abandoned {
		ids = append(ids, id)
	}
	k.mu.Unlock()
	for _, id := range ids {
		if err := k.cfg.EndSession(ctx, id); err != nil {
			return fmt.Errorf("delete lost session %s: %w", id, err)
		}
		k.mu.Lock()
		delete(k.abandoned, id)
		k.mu.Unlock()
	}
	return nil
}

// renewable lists the sessions the keeper renews.
func (k *Keeper) renewable() []*Session {
	k.mu.Lock()
	defer k.mu.Unlock()
	ss := make([]*Session, 0, len(k.sessions))
	for _, s := range k.sessions {
		if s.renewable() {
			ss = append(ss, s)
		}
	}
	return ss
}

// Renew renews this client's live sessions by id (a session given up on
// is never renewed, so never revived) and ends reapable sessions of
// others, in one statement where the backend allows.
func (k *Keeper) Renew(ctx context.Context) error {
	if k.renewalsOff.Load() {
		return errors.New("renewals switched off")
	}
	ss := k.renewable()
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.id
	}
	start := k.cfg.Now()
	n, refs, err := k.cfg.Driver.Sessions().SessionHeartbeat(ctx, driver.HeartbeatParams{
		ClientID: k.cfg.ClientID, HostID: k.hostID, SessionIDs: ids, Lease: k.lease, Limit: 100})
	if err != nil {
		return err
	}
	if n == len(ss) {
		for _, s := range ss {
			s.Renewed(start)
		}
	} else if err := k.checkLost(ctx, ss, start); err != nil {
		return err
	}
	k.Reap(ctx, refs)
	return nil
}

// checkLost runs when a renewal renewed fewer sessions than it named: the
// sessions still live in the database were renewed at start; the others
// are gone (reaped by another process) or expired, and are lost.
func (k *Keeper) checkLost(ctx context.Context, ss []*Session, start time.Time) error {
	live, err := k.cfg.Driver.NoTx().SessionListByClient(ctx, k.cfg.ClientID)
	if err != nil {
		return err
	}
	alive := map[string]bool{}
	for _, id := range live {
		alive[id] = true
	}
	for _, s := range ss {
		if alive[s.id] {
			s.Renewed(start)
			continue
		}
		s.Lose(fmt.Errorf("%w: its lease expired and another process freed its locks", errs.ErrSessionLost))
	}
	return nil
}

// ListReapable asks the database for sessions that may be dead.
func (k *Keeper) ListReapable(ctx context.Context) ([]driver.SessionRef, error) {
	return k.cfg.Driver.NoTx().SessionListReapable(ctx, k.cfg.ClientID, k.hostID, 100)
}

// Reap ends the sessions among refs that are dead: lease run out, or a
// process of this host that no longer runs. It returns how many it ended.
func (k *Keeper) Reap(ctx context.Context, refs []driver.SessionRef) int {
	n := 0
	for _, r := range refs {
		if !r.Expired && (r.PID == k.pid || processAlive(r.PID)) {
			continue
		}
		if err := k.cfg.EndSession(ctx, r.ID); err != nil {
			k.cfg.Log("reap session "+r.ID, err)
			continue
		}
		n++
	}
	return n
}
