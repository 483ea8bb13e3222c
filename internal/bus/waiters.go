package bus

// The waiters of this process: the lock requests its sessions wait on,
// the consumers waiting for a queue's messages, and the count of users of
// notifications. None of it touches the database: the engine reads
// statuses and sends notifications, and the router hands what it learns
// here.

import (
	"maps"
	"slices"
	"sync"

	"github.com/batonhq/baton/driver"
)

// Locks are the waiting lock requests of one client, by request id. Each
// waiter gets exactly one answer: its grant, its abort, or an empty
// request (vanished, or its session ended).
type Locks struct {
	mu      sync.Mutex
	waiters map[int64]lockWaiter
	regs    uint64 // registrations so far
	// changed is told whether any request waits, after every change
	// (the backend polls only while some do).
	changed func(waiting bool)
	// answered are the latest grants handed to waiters: the same grant
	// may come twice (PostgreSQL's release hands it in its process, and
	// its NOTIFY follows, or comes first), and its second coming asks for
	// no look.
	answered recent
}

// grantKey names one grant: request ids are reused, not with the same
// session and call.
type grantKey struct {
	id, call int64
	session  string
}

// recentCap bounds Locks.answered; a grant that comes again after this
// many later ones only costs a status check.
const recentCap = 1024

// recent is a set of the latest recentCap grants, the oldest forgotten
// first.
type recent struct {
	set   map[grantKey]struct{}
	order []grantKey // a ring: next is the slot to fill
	next  int
}

func (r *recent) add(k grantKey) {
	if r.set == nil {
		r.set, r.order = map[grantKey]struct{}{}, make([]grantKey, 0, recentCap)
	}
	if len(r.order) < recentCap {
		r.order = append(r.order, k)
	} else {
		delete(r.set, r.order[r.next])
		r.order[r.next] = k
		r.next = (r.next + 1) % recentCap
	}
	r.set[k] = struct{}{}
}

func (r *recent) has(k grantKey) bool {
	_, ok := r.set[k]
	return ok
}

type lockWaiter struct {
	sessionID string
	callID    int64
	ch        chan driver.Request
	// reg numbers the registration: an id may be registered again, by a
	// later request under a reused id, between a Snapshot and its Settle.
	reg uint64
}

// NewLocks makes an empty registry; changed is called, under its lock,
// with whether any request waits after each change.
func NewLocks(changed func(waiting bool)) *Locks {
	return &Locks{waiters: map[int64]lockWaiter{}, changed: changed}
}

// Add registers a waiter for request id of a session's lock call; the
// channel receives its one answer.
func (l *Locks) Add(id int64, sessionID string, callID int64) <-chan driver.Request {
	ch := make(chan driver.Request, 1)
	l.mu.Lock()
	l.regs++
	l.waiters[id] = lockWaiter{sessionID: sessionID, callID: callID, ch: ch, reg: l.regs}
	l.changed(true)
	l.mu.Unlock()
	return ch
}

// Remove forgets the waiter of request id (its caller gave up).
func (l *Locks) Remove(id int64) {
	l.mu.Lock()
	delete(l.waiters, id)
	l.changed(len(l.waiters) > 0)
	l.mu.Unlock()
}

// Waiting reports whether any request waits.
func (l *Locks) Waiting() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters) > 0
}

// Waits reports whether request id still waits.
func (l *Locks) Waits(id int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.waiters[id]
	return ok
}

// Snapshot is the waiting requests at one moment, whose statuses the
// caller reads for Settle.
type Snapshot struct {
	IDs  []int64
	regs map[int64]uint64
}

// Snapshot lists the waiting requests.
func (l *Locks) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Snapshot{IDs: make([]int64, 0, len(l.waiters)), regs: make(map[int64]uint64, len(l.waiters))}
	for id, w := range l.waiters {
		s.IDs = append(s.IDs, id)
		s.regs[id] = w.reg
	}
	return s
}

// Grant hands requests the backend reported granted to their waiters. A
// grant names its session and lock call where the backend knows them, and
// is taken only by a waiter of that call: request ids are not unique for
// ever (SQLite may give a deleted request's id to the next one; a crash
// restarts PostgreSQL's), sessions and calls are. A grant with no waiter
// may be one whose waiter is about to register (it registers once its
// request is committed, and may be granted in between): Grant then reports
// look, and the caller has the statuses read as for any wake-up, which
// the registering waiter sees (internal/locks counts such wake-ups). A
// grant that was already handed to its waiter (it may come by two paths)
// asks for no look.
func (l *Locks) Grant(granted []driver.Request) (look bool) {
	l.mu.Lock()
	for _, g := range granted {
		w, ok := l.waiters[g.ID]
		switch {
		case !ok:
			look = look || !l.answered.has(grantKey{g.ID, g.CallID, g.SessionID})
		case (g.SessionID == "" || g.SessionID == w.sessionID) && (g.CallID == 0 || g.CallID == w.callID):
			l.answer(g.ID, g)
		}
		// Otherwise another call's request under a reused id: not this one's.
	}
	l.changed(len(l.waiters) > 0)
	l.mu.Unlock()
	return look
}

// Settle hands each waiter of snap its status read from the database
// after the snapshot (st, by request id): requests still pending keep
// waiting; granted or aborted ones get their row; a request missing from
// st, or whose id now belongs to another session's request, gets an
// empty answer. A waiter registered after the snapshot (a later request
// under a reused id: SQLite gives a deleted row's id to the next one) is
// left alone: the status read may be of the earlier request's row.
func (l *Locks) Settle(snap Snapshot, st map[int64]driver.Request) {
	l.mu.Lock()
	for _, id := range snap.IDs {
		if w, ok := l.waiters[id]; ok && w.reg == snap.regs[id] {
			l.settle(id, w.sessionID, st)
		}
	}
	l.changed(len(l.waiters) > 0)
	l.mu.Unlock()
}

// settle answers the waiter of request id, of the session sessionID,
// unless its status in st is pending: with its row, or an empty request
// when st has none of that session's.
func (l *Locks) settle(id int64, sessionID string, st map[int64]driver.Request) {
	r, found := st[id]
	found = found && r.SessionID == sessionID
	if found && r.Status == driver.StatusPending {
		return
	}
	if !found {
		r = driver.Request{ID: id}
	}
	l.answer(id, r)
}

// EndSession answers every waiter of a session with an empty request, so
// that its waits fail at once.
func (l *Locks) EndSession(sessionID string) {
	l.mu.Lock()
	for id, w := range l.waiters {
		if w.sessionID == sessionID {
			l.answer(id, driver.Request{ID: id})
		}
	}
	l.changed(len(l.waiters) > 0)
	l.mu.Unlock()
}

// answer sends r to the waiter of id, if any, and forgets it; l.mu held.
func (l *Locks) answer(id int64, r driver.Request) {
	if w, ok := l.waiters[id]; ok {
		delete(l.waiters, id)
		if r.Status == driver.StatusGranted {
			l.answered.add(grantKey{id, w.callID, w.sessionID})
		}
		w.ch <- r
	}
}

// Queues are the consumers waiting for messages, by queue. A wake-up is a
// hint: a consumer that is woken claims, and waits again if it got nothing.
type Queues struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]bool
	// first is called, under mu, when a consumer registers while none
	// waits (the client's poll of waiting consumers rests while none do).
	first func()
}

// NewQueues makes an empty registry; first (if not nil) is called when a
// consumer registers while none waits.
func NewQueues(first func()) *Queues {
	return &Queues{waiters: map[string]map[chan struct{}]bool{}, first: first}
}

// Add registers a consumer of queue; its channel receives wake-ups.
func (q *Queues) Add(queue string) chan struct{} {
	ch := make(chan struct{}, 1)
	q.mu.Lock()
	if len(q.waiters) == 0 && q.first != nil {
		q.first()
	}
	if q.waiters[queue] == nil {
		q.waiters[queue] = map[chan struct{}]bool{}
	}
	q.waiters[queue][ch] = true
	q.mu.Unlock()
	return ch
}

// Remove forgets a consumer.
func (q *Queues) Remove(queue string, ch chan struct{}) {
	q.mu.Lock()
	delete(q.waiters[queue], ch)
	if len(q.waiters[queue]) == 0 {
		delete(q.waiters, queue)
	}
	q.mu.Unlock()
}

// Wake wakes every consumer of queue.
func (q *Queues) Wake(queue string) {
	q.mu.Lock()
	signal(q.waiters[queue])
	q.mu.Unlock()
}

// WakeAll wakes every consumer (some commit happened, which queue is not
// known).
func (q *Queues) WakeAll() {
	q.mu.Lock()
	for _, ws := range q.waiters {
		signal(ws)
	}
	q.mu.Unlock()
}

// Names lists the queues some consumer waits on, sorted.
func (q *Queues) Names() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Sorted(maps.Keys(q.waiters))
}

// Waiting reports whether any consumer waits.
func (q *Queues) Waiting() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters) > 0
}

// Count is how many consumers wait on queue.
func (q *Queues) Count(queue string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters[queue])
}

func signal(ws map[chan struct{}]bool) {
	for ch := range ws {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Coalescer runs at most one send per key at a time: a request while one
// is in flight makes exactly one more run after it, however many came.
// Queues use it so that a burst of enqueues sends one or two notifications,
// not one each.
type Coalescer struct {
	mu    sync.Mutex
	state map[string]*coalesced
}

type coalesced struct{ inFlight, again bool }

// NewCoalescer makes a coalescer with nothing in flight.
func NewCoalescer() *Coalescer { return &Coalescer{state: map[string]*coalesced{}} }

// Start reports whether the caller must run the send for key now (then it
// calls Done after each run until Done says to stop); false means a run in
// flight will repeat for it.
func (c *Coalescer) Start(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state[key]
	if st == nil {
		st = &coalesced{}
		c.state[key] = st
	}
	if st.inFlight {
		st.again = true
		return false
	}
	st.inFlight = true
	return true
}

// Done ends a run for key; it reports whether to run once more (requests
// came in while it ran).
func (c *Coalescer) Done(key string) (again bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state[key]
	if !st.again {
		st.inFlight = false
		return false
	}
	st.again = false
	return true
}

// Users counts the users of something that is switched on while it has
// any: switched is called with true when the first comes in and with false
// when the last goes out.
type Users struct {
	mu       sync.Mutex
	n        int
	switched func(on bool)
}

// NewUsers makes a counter at zero.
func NewUsers(switched func(on bool)) *Users { return &Users{switched: switched} }

// Count counts a user in (in true) or out.
func (u *Users) Count(in bool) {
	if in {
		u.In()
	} else {
		u.Out()
	}
}

// Nudge is a func that signals ch without blocking: a signal already
// pending stands for it.
func Nudge(ch chan<- struct{}) func() {
	return func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// In counts a user in.
func (u *Users) In() { u.add(1) }

// Out counts a user out.
func (u *Users) Out() { u.add(-1) }

func (u *Users) add(d int) {
	u.mu.Lock()
	u.n += d
	change := (d > 0 && u.n == 1) || (d < 0 && u.n == 0)
	u.mu.Unlock()
	if change {
		u.switched(d > 0)
	}
}
