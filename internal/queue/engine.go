// Package queue is baton's message queue engine: inserting messages (unique keys,
// one statement where the backend can, or in the caller's transaction),
// claiming them by the mode's rule (internal/claimrule) and waiting for
// them, settling and recovering claims, the control calls (Caller in the
// caller's transaction), dead letters, stats and listings, the wake-ups of
// consumers in this process and others and their poll, the periodic
// schedules (Scheduler), the history pruner and the throughput counts.
// It also holds the rules of messages: the checks of names, payloads and
// options (NewMessage), the meta column, attempt records, the backoff and
// the monitoring view (Info). It works on the driver's rows and on
// generic copies of the root's types (Options, Info), which the root
// converts; the root traces and turns rows into Messages.
package queue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/claimrule"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/jobevents"
	"github.com/batonhq/baton/internal/txn"
)

// Config is what the engine needs of its client.
type Config struct {
	Driver driver.Driver
	// Lease bounds the notifications sent in the background.
	Lease time.Duration
	// Waits are this process's consumers waiting for messages.
	Waits *bus.Queues
	// KeepCompleted: completed messages go to the history (else they are
	// deleted).
	KeepCompleted bool
	// Retention is how long the history pruner keeps finished messages.
	Retention Retention
	// Log logs a failure of background work (nil: none is logged).
	Log func(what string, err error)

	// What a waiting claim needs of its client: Tries counts the claims
	// of ClaimWaiting; Rescue recovers dead workers' claims and says
	// whether it did; Listening starts the wake-up listener; Notifying
	// says a consumer starts (true) or stops waiting for notifications.
	Tries     *atomic.Int64
	Rescue    func(ctx context.Context) bool
	Listening func(ctx context.Context) error
	Notifying func(on bool)
	// JobEvents takes the job events of changes the engine committed on
	// its own (recoveries, bulk cancels, dependants cancelled), to send
	// if anyone subscribes (nil: none); Subscribed says whether anyone
	// does, for events that cost reads.
	JobEvents  func(evs []jobevents.Event)
	Subscribed func() bool
}

// Engine is one client's queue engine.
type Engine struct {
	cfg    Config
	drv    driver.Driver
	queue  driver.Queue    // drv.Queue()
	notif  driver.Notifier // drv.Notifier()
	known  sync.Map        // queue name -> true once registered by this process
	notify *bus.Coalescer
	wg     sync.WaitGroup
	// notifyFailing: the wake-up notifications fail (notified).
	notifyFailing errs.Streak
	// dropReplies: how many claims' replies to drop (DropClaimReplies).
	dropReplies atomic.Int32

	mu       sync.Mutex
	finished map[string]*driver.Throughput // per queue: the roll-up's counts since the last flush (rollup.go)

	// poll is PollWaiting's state, polls counts its runs.
	poll  queuePoll
	polls atomic.Int64
	// sched enqueues the ticks of the periodic schedules.
	sched *Scheduler
	// deps: dependencies (deps.go).
	deps depState
	// limited: queue name -> *limitState, what this process saw of the
	// queue's limits (a speed-up only: limits.go).
	limited sync.Map
}

// New makes the engine.
func New(cfg Config) *Engine {
	e := &Engine{cfg: cfg, drv: cfg.Driver, queue: cfg.Driver.Queue(), notif: cfg.Driver.Notifier(), notify: bus.NewCoalescer(),
		finished: map[string]*driver.Throughput{}}
	e.deps.flight = bus.NewCoalescer()
	e.deps.active.Store(true) // unknown: the first settlement probes
	e.sched = NewScheduler(e)
	return e
}

// Scheduler is the engine's scheduler of periodic schedules.
func (e *Engine) Scheduler() *Scheduler { return e.sched }

// Wake wakes this process's consumers of the queue at once and sends one
// notification for other processes, never more than one in flight per
// queue (NOTIFY is kept out of the enqueuing transaction).
func (e *Engine) Wake(queue string) {
	e.cfg.Waits.Wake(queue)
	if !e.notify.Start(queue) {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for again := true; again; again = e.notify.Done(queue) {
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Lease)
			e.notified(e.notif.Notify(ctx, bus.QueueChannel(queue), ""))
			cancel()
		}
	}()
}

// notified logs the failure of a queue's wake-up notification when it is
// the first since they last worked (a wake-up is a hint: the consumers'
// polls still find the message, and an outage does not flood the log).
func (e *Engine) notified(err error) {
	if e.notifyFailing.First(err) && e.cfg.Log != nil {
		e.cfg.Log("send a queue's wake-up to other processes (their polls find the message all the same)", err)
	}
}

// Wait waits for the notifications in flight.
func (e *Engine) Wait() { e.wg.Wait() }

// Known reports whether this process registered the queue already.
func (e *Engine) Known(queue string) bool {
	_, ok := e.known.Load(queue)
	return ok
}

// Register records the queue in tx once per process.
func (e *Engine) Register(ctx context.Context, tx driver.Tx, queue string) error {
	if e.Known(queue) {
		return nil
	}
	if err := tx.QueueRegister(ctx, queue); err != nil {
		return err
	}
	tx.(interface{ AfterCommit(func()) }).AfterCommit(func() { e.known.Store(queue, true) })
	return nil
}

// Insert inserts the messages in one transaction (one statement for a
// single message of a known queue, without a unique key or with a new one
// where the backend can) and reports, per message, its id and whether it
// was a duplicate of a unique key's holder.
func (e *Engine) Insert(ctx context.Context, queue string, rows []driver.NewMessage) ([]int64, []bool, error) {
	ids := make([]int64, len(rows))
	dups := make([]bool, len(rows))
	if id, ok, err := e.insertOne(ctx, queue, rows); err != nil || ok {
		return []int64{id}, dups, err
	}
	added := false
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		if err := e.Register(ctx, tx, queue); err != nil {
			return err
		}
		if !slices.ContainsFunc(rows, func(r driver.NewMessage) bool { return r.UniqueKey != "" }) {
			// Many messages in one statement where the backend can.
			got, err := tx.MessageInsertMany(ctx, queue, rows)
			copy(ids, got)
			clear(dups)
			added = err == nil
			return err
		}
		var err error
		added, err = insertUnique(ctx, tx, queue, rows, ids, dups)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("baton: enqueue: %w", err)
	}
	if added {
		e.Wake(queue)
	}
	return ids, dups, nil
}

// insertUnique inserts the messages one by one in tx, each with a unique
// key only if it reserves the key, and fills in ids and dups; added says
// whether any message was inserted.
func insertUnique(ctx context.Context, tx driver.Tx, queue string, rows []driver.NewMessage, ids []int64, dups []bool) (added bool, err error) {
	for i, r := range rows {
		dups[i] = false
		if r.UniqueKey != "" {
			holder, reserved, err := tx.UniqueReserve(ctx, queue, r.UniqueKey, r.UniqueExpires, r.UniqueStates)
			if err != nil {
				return false, err
			}
			if !reserved {
				ids[i], dups[i] = holder, true
				continue
			}
		}
		if ids[i], err = insertKeyed(ctx, tx, queue, r); err != nil {
			return false, err
		}
		added = true
	}
	return added, nil
}

// insertKeyed inserts one message and, if it has a unique key it
// reserved, gives the key its id.
func insertKeyed(ctx context.Context, tx driver.Tx, queue string, r driver.NewMessage) (int64, error) {
	id, err := tx.MessageInsert(ctx, r)
	if err != nil || r.UniqueKey == "" {
		return id, err
	}
	return id, tx.UniqueSet(ctx, queue, r.UniqueKey, id, r.UniqueExpires)
}

// insertOne enqueues a single message of a known queue in one statement:
// without a unique key, or with a new one where the backend can
// (insertUniqueOne). ok is false when a transaction must do it.
func (e *Engine) insertOne(ctx context.Context, queue string, rows []driver.NewMessage) (int64, bool, error) {
	if !e.Known(queue) || len(rows) != 1 {
		return 0, false, nil
	}
	if rows[0].UniqueKey != "" {
		return e.insertUniqueOne(ctx, queue, rows[0])
	}
	id, err := e.drv.NoTx().MessageInsert(ctx, rows[0])
	if err != nil {
		return 0, false, fmt.Errorf("baton: enqueue: %w", err)
	}
	e.Wake(queue)
	return id, true, nil
}

// insertUniqueOne enqueues a single message with a new unique key in one
// statement (driver.Queue.MessageInsertUnique); ok is false when the key
// exists, and a transaction decides.
func (e *Engine) insertUniqueOne(ctx context.Context, queue string, row driver.NewMessage) (int64, bool, error) {
	ui := e.queue
	var id int64
	var ok bool
	err := txn.Retrying(ctx, e.drv, func() (err error) {
		id, ok, err = ui.MessageInsertUnique(ctx, row)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("baton: enqueue: %w", err)
	}
	if ok {
		e.Wake(queue)
	}
	return id, ok, nil
}

// Complete finishes claims of one session as completed and says how many
// were still the session's.
func (e *Engine) Complete(ctx context.Context, sessionID string, claims []driver.Claim) (int, error) {
	var n int
	var err error
	if e.cfg.KeepCompleted {
		n, err = e.drv.Relaxed().MessageFinishMany(ctx, sessionID, claims)
	} else {
		n, err = e.drv.Relaxed().MessageAckMany(ctx, sessionID, claims)
	}
	if n > 0 && e.deps.active.Load() {
		e.DepsKick(claimIDs(claims)...) // their dependants
	}
	return n, err
}

// ServingOrder returns pointers to the messages in serving order (priority,
// then time, then id); a message is a large value to swap.
func ServingOrder(ms []driver.Message) []*driver.Message {
	order := make([]*driver.Message, len(ms))
	for i := range ms {
		order[i] = &ms[i]
	}
	slices.SortFunc(order, func(a, b *driver.Message) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.OrderAt.Compare(b.OrderAt), cmp.Compare(a.ID, b.ID))
	})
	return order
}

// claimAny claims what the mode allows now, limits aside (Claim); with
// nothing, dueIn is how long until the next message is due (0: unknown).
func (e *Engine) claimAny(ctx context.Context, c claim) (_ []*driver.Message, dueIn time.Duration, err error) {
	mode := c.mode
	if mode == claimrule.Parallel {
		ms, dueIn, done, err := c.parallel(ctx)
		if done || err != nil {
			return ServingOrder(ms), dueIn, err
		}
	}
	var out []driver.Message
	err = txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		out, dueIn, err = c.in(ctx, tx)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return ServingOrder(out), dueIn, nil
}

// claim is one claim's arguments.
type claim struct {
	e              *Engine
	session, queue string
	mode           claimrule.Mode
	kind           string
	visibility     time.Duration
	limit          int
}

// parallel is the one-statement parallel claim, where the backend has
// one; done is false when it has not.
func (c claim) parallel(ctx context.Context) ([]driver.Message, time.Duration, bool, error) {
	d := c.e.drv
	ms, ok, err := d.Relaxed().ClaimParallel(ctx, c.queue, c.kind, c.session, c.visibility, c.limit)
	switch {
	case err != nil || !ok:
		return nil, 0, ok, err
	case len(ms) > 0:
		return ms, 0, true, nil
	}
	due, _, err := d.NoTx().QueueNextDue(ctx, c.queue)
	return nil, due, true, err
}

// in claims in a transaction: the mode's candidates, then the claim of
// those. With none, it says how long until one is due.
func (c claim) in(ctx context.Context, tx driver.Tx) ([]driver.Message, time.Duration, error) {
	ids, dueIn, err := c.candidates(ctx, tx)
	if err != nil || len(ids) == 0 {
		return nil, dueIn, err
	}
	// An in-order batch (Ordered, a worker's): only its head starts now;
	// the others are held (driver.ClaimHeld) until the worker starts each.
	head := ids
	if c.mode == claimrule.Ordered {
		head = ids[:1]
		if _, err := tx.ClaimIDs(ctx, c.session, driver.ClaimHeld, c.visibility, ids[1:]); err != nil {
			return nil, 0, err
		}
	}
	if _, err := tx.ClaimIDs(ctx, c.session, int(c.mode), c.visibility, head); err != nil {
		return nil, 0, err
	}
	ms, err := c.held(ctx, tx, ids)
	return ms, 0, err
}

// held reads the messages of ids that the session holds now (a claim by
// ids takes only those still ready).
func (c claim) held(ctx context.Context, tx driver.Tx, ids []int64) ([]driver.Message, error) {
	ms, err := tx.MessageByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(ms, func(m driver.Message) bool {
		return m.State != driver.MessageClaimed || m.ClaimedBy != c.session
	}), nil
}

// candidates lists the messages the mode allows to claim now; with none,
// how long until one is due.
func (c claim) candidates(ctx context.Context, tx driver.Tx) ([]int64, time.Duration, error) {
	var ids []int64
	var err error
	switch c.mode {
	case claimrule.Ordered:
		return c.ordered(ctx, tx)
	case claimrule.PerKey:
		if err = tx.QueueLock(ctx, c.queue); err == nil {
			ids, err = tx.ClaimCandidatesPerKey(ctx, c.queue, c.limit)
		}
	default:
		ids, err = tx.ClaimCandidates(ctx, c.queue, c.kind, c.limit)
	}
	if err != nil || len(ids) > 0 {
		return ids, 0, err
	}
	d, _, err := tx.QueueNextDue(ctx, c.queue)
	return nil, d, err
}

// ordered is the due prefix of an ordered queue's heads, in order (a
// message that is not due yet holds back the ones after it), when nothing
// of the queue is in flight.
func (c claim) ordered(ctx context.Context, tx driver.Tx) ([]int64, time.Duration, error) {
	if err := tx.QueueLock(ctx, c.queue); err != nil {
		return nil, 0, err
	}
	if n, err := tx.ClaimInFlight(ctx, c.queue); err != nil || n > 0 {
		return nil, 0, err
	}
	heads, due, err := tx.ClaimHeads(ctx, c.queue, c.limit)
	if err != nil {
		return nil, 0, err
	}
	ids, wait := claimrule.DuePrefix(heads, due)
	return ids, wait, nil
}

// Recovered is what a recovery did to one claim: State is the job event
// of it (baton.JobEventState: "failed" when it goes back to its queue,
// "dead", "cancelled"; "" for a held claim given back, which never
// started), Error the error recorded.
type Recovered struct {
	ID      int64
	Attempt int
	State   string
	Error   string
}

// RecoverClaims gives claims back to their queues (attempt already
// counted), or to the dead letters at their attempt limit; a recovered
// message keeps its place. It returns what it recovered.
func RecoverClaims(ctx context.Context, tx driver.Tx, refs []driver.ClaimRef, why string) ([]Recovered, error) {
	var out []Recovered
	for _, r := range refs {
		rec, ok, err := recoverClaim(ctx, tx, r, why)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rec)
		}
	}
	return out, nil
}

// recoverClaim gives one claim back, or buries it at its attempt limit, or
// cancels it when it was cancelled while it ran. A held claim, which never
// started, goes back untouched: its provisional attempt taken back, no
// error recorded.
func recoverClaim(ctx context.Context, tx driver.Tx, r driver.ClaimRef, why string) (Recovered, bool, error) {
	cl := driver.Claim{ID: r.ID, SessionID: r.SessionID, Attempt: r.Attempt}
	e := driver.AttemptError{At: time.Now().UTC(), Attempt: r.Attempt, Error: why}
	rec := Recovered{ID: r.ID, Attempt: r.Attempt}
	finish := func(state driver.MessageState, ev string) (Recovered, bool, error) {
		ok, err := tx.MessageFinish(ctx, cl, state, &e)
		rec.State, rec.Error = ev, e.Error
		return rec, ok, err
	}
	if r.Mode == driver.ClaimHeld {
		ok, err := tx.MessageRelease(ctx, cl)
		if err != nil || ok {
			return rec, ok, err
		}
		e.Error = "cancelled before it started"
		return finish(driver.MessageCancelled, "cancelled")
	}
	if r.Attempt >= r.MaxAttempts {
		e.Error = fmt.Sprintf("attempt limit %d reached: %s", r.MaxAttempts, why)
		return finish(driver.MessageDead, "dead")
	}
	ok, err := tx.MessageRetry(ctx, cl, 0, false, e)
	if err != nil || ok {
		rec.State, rec.Error = "failed", e.Error
		return rec, ok, err
	}
	return finish(driver.MessageCancelled, "cancelled")
}

// RecoverSession gives a session's claims back (it is ending) in tx, and
// returns what to do once tx commits: wake their queues, send their job
// events.
func (e *Engine) RecoverSession(ctx context.Context, tx driver.Tx, sessionID string) (func(), error) {
	refs, err := tx.ClaimsBySession(ctx, sessionID)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	queues, evs, err := recovered(ctx, tx, refs, "session ended")
	return func() { e.recoveredDone(queues, evs) }, err
}

// recovered recovers refs and returns the queue of each message recovered
// and the job events of the recoveries. The messages are read first: the
// dead and cancelled ones leave the table.
func recovered(ctx context.Context, tx driver.Tx, refs []driver.ClaimRef, why string) ([]string, []jobevents.Event, error) {
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	ms, err := tx.MessageByIDs(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[int64]driver.Message, len(ms))
	for _, m := range ms {
		byID[m.ID] = m
	}
	rs, err := RecoverClaims(ctx, tx, refs, why)
	if err != nil || len(rs) == 0 {
		return nil, nil, err
	}
	queues := make([]string, 0, len(rs))
	var evs []jobevents.Event
	for _, r := range rs {
		m := byID[r.ID]
		queues = append(queues, m.Queue)
		if r.State != "" {
			evs = append(evs, jobevents.New(r.ID, m.Queue, m.Kind, r.State, r.Attempt, r.Error))
		}
	}
	return queues, evs, nil
}

// recoveredDone wakes the queues of recovered messages and hands their
// job events over, once the recovery committed.
func (e *Engine) recoveredDone(queues []string, evs []jobevents.Event) {
	for _, q := range queues {
		e.Wake(q)
	}
	if len(evs) > 0 && e.cfg.JobEvents != nil {
		e.cfg.JobEvents(evs)
	}
}

// RecoverStale returns to their queues the claims whose lease ran out or
// whose session is gone, and says how many.
func (e *Engine) RecoverStale(ctx context.Context) (int, error) {
	// Look first without a transaction: there is nearly always nothing.
	if refs, err := e.drv.NoTx().ClaimsStale(ctx, 1); err != nil || len(refs) == 0 {
		return 0, err
	}
	var queues []string
	var evs []jobevents.Event
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		refs, err := tx.ClaimsStale(ctx, 100)
		if err != nil || len(refs) == 0 {
			queues, evs = nil, nil
			return err
		}
		queues, evs, err = recovered(ctx, tx, refs, "claim lease expired")
		return err
	})
	if err != nil {
		evs = nil
	}
	e.recoveredDone(queues, evs)
	return len(queues), err
}
