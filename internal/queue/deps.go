package queue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/jobevents"
	"github.com/batonhq/baton/internal/maintain"
	"github.com/batonhq/baton/internal/txn"
)

// Dependencies, workflows and batches. A message enqueued after others
// waits (driver.MessageWaiting) until the dependency sweep finds its
// parents done. The claim and ack statements never read dependencies:
// after an ack, a finish, a cancellation or a deletion, a process that
// knows edges wait settles the edges of those messages in the background
// (DepsKick: coalesced, one sweep in flight and the next queued), and
// every client's sweeper service probes every five poll intervals for
// edges whose parent is done that no process settled.

// depState is the engine's record of dependencies.
type depState struct {
	// active: edges waited at the last look (a sweep, a probe, or this
	// process's enqueue; true before the first look); only then does a
	// settlement kick a sweep (which probes first, in one statement).
	active atomic.Bool
	// released counts the sweeps that made messages ready; mu serializes
	// this process's sweeps (they wait for each other in the database
	// anyway), so that one that returns has seen the one before it end.
	released atomic.Int64
	mu       sync.Mutex
	// queued are the parents DepsKick was given that no sweep read yet.
	qmu    sync.Mutex
	queued []int64
	flight *bus.Coalescer
}

// DepRow is a message to insert with its dependencies.
type DepRow struct {
	Row driver.NewMessage
	// After are existing messages, AfterRows earlier rows of the same
	// insert (their indexes), that the message comes after.
	After     []int64
	AfterRows []int
	// RunOnFail: the message runs once its parents finished, whatever
	// became of them (a batch's callback), and is told their outcomes.
	RunOnFail bool
	// Step names the row in its workflow ("" when not a workflow).
	Step string
}

// InsertDeps inserts rows with their dependencies in one transaction, all
// or none: an unknown parent is ErrInvalid. Rows whose parents all
// completed already are ready at once; the others wait. When workflow is
// set, the rows are the steps of a workflow whose id is the first's.
func (e *Engine) InsertDeps(ctx context.Context, rows []DepRow, workflow bool) ([]int64, error) {
	var ids []int64
	var ready []string
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		for _, q := range rowQueues(rows) {
			if err := e.Register(ctx, tx, q); err != nil {
				return err
			}
		}
		var err error
		ids, ready, err = insertDeps(ctx, tx, func(ms []driver.NewMessage) ([]int64, error) {
			return insertRuns(ms, func(q string, run []driver.NewMessage) ([]int64, error) { return tx.MessageInsertMany(ctx, q, run) })
		}, rows, workflow)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("baton: enqueue: %w", err)
	}
	for _, q := range ready {
		e.Wake(q)
	}
	e.deps.active.Store(true)
	// Parents that died or were cancelled before: their new dependants.
	var parents []int64
	for _, r := range rows {
		parents = append(parents, r.After...)
	}
	e.DepsKick(parents...)
	return ids, nil
}

// InsertDepsTx is InsertDeps in the caller's transaction ct: the rows are
// there if and only if it commits. The sweeper service settles what they
// wait for (a parent that failed before they were enqueued) within its
// interval.
func (e *Engine) InsertDepsTx(ctx context.Context, ct driver.CallerStatements, rows []DepRow, workflow bool) ([]int64, error) {
	for _, q := range rowQueues(rows) {
		if !e.Known(q) {
			rq, rargs := e.queue.QueueRegisterStatement(q)
			if _, err := ct.ExecContext(ctx, rq, rargs...); err != nil {
				return nil, fmt.Errorf("baton: enqueue: register queue: %w", err)
			}
		}
	}
	ids, ready, err := insertDeps(ctx, e.queue.CallerQueueTx(ct), func(ms []driver.NewMessage) ([]int64, error) {
		ids := make([]int64, len(ms))
		for i, m := range ms {
			id, err := e.insertTx(ctx, ct, m)
			if err == nil && id == 0 {
				err = fmt.Errorf("%w: dependencies in the caller's transaction need the new ids: give a *sql.Tx or postgres.PgxTx", errs.ErrInvalid)
			}
			if err != nil {
				return nil, err
			}
			ids[i] = id
		}
		return ids, nil
	}, rows, workflow)
	if err != nil {
		return nil, fmt.Errorf("baton: enqueue: %w", err)
	}
	for _, q := range ready {
		if err := e.NotifyIn(ctx, ct, bus.QueueChannel(q), ""); err != nil {
			return nil, err
		}
	}
	e.deps.active.Store(true)
	return ids, nil
}

// rowQueues lists the queues of rows, each once.
func rowQueues(rows []DepRow) []string {
	var qs []string
	for _, r := range rows {
		if !slices.Contains(qs, r.Row.Queue) {
			qs = append(qs, r.Row.Queue)
		}
	}
	return qs
}

// insertDeps inserts the rows by insert (all of them, in order) and
// records their dependencies by d, in a few statements for any number of
// rows; it returns the ids and the queues of the rows inserted ready.
func insertDeps(ctx context.Context, d driver.DepsTx, insert func([]driver.NewMessage) ([]int64, error), rows []DepRow, workflow bool) ([]int64, []string, error) {
	var after []int64
	for _, r := range rows {
		after = append(after, r.After...)
	}
	slices.Sort(after)
	after = slices.Compact(after)
	known, err := d.DepParentStates(ctx, after)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range after {
		if known[p] == "" {
			return nil, nil, fmt.Errorf("%w: parent %d: no such message (waiting, running or in the history)", errs.ErrInvalid, p)
		}
	}
	ms := make([]driver.NewMessage, len(rows))
	for i, r := range rows {
		ms[i] = r.Row
	}
	ids, err := insert(ms)
	if err != nil {
		return nil, nil, err
	}
	var edges []driver.DepNew
	var held []int64
	var ready []string
	for i, r := range rows {
		parents := slices.Clone(r.After)
		for _, j := range r.AfterRows {
			parents = append(parents, ids[j])
		}
		slices.Sort(parents)
		parents = slices.Compact(parents)
		wait := false
		for _, p := range parents {
			done := known[p] == driver.MessageCompleted // a row of this insert: not known, not done
			wait = wait || !done
			edges = append(edges, driver.DepNew{Parent: p, Child: ids[i], Done: done, OnFail: r.RunOnFail})
		}
		switch {
		case wait:
			held = append(held, ids[i])
		case !slices.Contains(ready, r.Row.Queue):
			ready = append(ready, r.Row.Queue)
		}
	}
	if err := d.DepAdd(ctx, edges, held); err != nil {
		return nil, nil, err
	}
	if workflow {
		names := make([]string, len(rows))
		for i, r := range rows {
			names[i] = r.Step
		}
		if err := d.WorkflowAdd(ctx, ids[0], ids, names); err != nil {
			return nil, nil, err
		}
	}
	return ids, ready, nil
}

// insertRuns inserts ms in order, each run of messages of one queue by
// many (one statement where the backend can).
func insertRuns(ms []driver.NewMessage, many func(queue string, run []driver.NewMessage) ([]int64, error)) ([]int64, error) {
	ids := make([]int64, 0, len(ms))
	for len(ms) > 0 {
		n := 1
		for n < len(ms) && ms[n].Queue == ms[0].Queue {
			n++
		}
		got, err := many(ms[0].Queue, ms[:n])
		if err != nil {
			return nil, err
		}
		ids, ms = append(ids, got...), ms[n:]
	}
	return ids, nil
}

// depsGather is the pause between two sweeps of one process while
// kicks keep coming.
const depsGather = 10 * time.Millisecond

// DepsKick settles, in the background, the edges of parents (messages
// this process just finished, cancelled or deleted) when edges wait:
// coalesced, one sweep in flight and the ids of the next queued; each
// first probes, in one statement on the parents' index, whether an edge of
// theirs waits.
func (e *Engine) DepsKick(parents ...int64) {
	if len(parents) == 0 || !e.deps.active.Load() {
		return
	}
	e.deps.qmu.Lock()
	e.deps.queued = append(e.deps.queued, parents...)
	e.deps.qmu.Unlock()
	if !e.deps.flight.Start("") {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for again, first := true, true; again; again, first = e.deps.flight.Done(""), false {
			if !first {
				// Kicks came during the last sweep: let more parents
				// gather, so that a drain pays one sweep for many
				// acknowledgements rather than one each.
				time.Sleep(depsGather)
			}
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Lease)
			err := e.flushDeps(ctx)
			cancel()
			if err != nil && e.cfg.Log != nil {
				e.cfg.Log("settle dependencies (the sweeper service tries again)", err)
			}
		}
	}()
}

// flushDeps settles the edges of the parents queued by DepsKick. It takes
// them while it holds mu, so that a flush that finds none queued returns
// after the one that took them.
func (e *Engine) flushDeps(ctx context.Context) error {
	e.deps.mu.Lock()
	defer e.deps.mu.Unlock()
	e.deps.qmu.Lock()
	parents := e.deps.queued
	e.deps.queued = nil
	e.deps.qmu.Unlock()
	for len(parents) > 0 {
		batch := parents[:min(len(parents), 500)]
		parents = parents[len(batch):]
		if _, err := e.sweepLocked(ctx, batch, false); err != nil {
			return err
		}
	}
	return nil
}

// Releases returns a drain's check (worker.Config.Released): it settles
// the edges of the parents this process queued (after any sweep in
// flight: this process's sweeps are serialized) and says whether any
// sweep of this process made messages ready since the check last ran (or
// since it was made), so that a drain claims again instead of ending
// before the dependants of what it completed.
func (e *Engine) Releases() func(ctx context.Context) bool {
	last := e.deps.released.Load()
	return func(ctx context.Context) bool {
		if err := e.flushDeps(ctx); err != nil && e.cfg.Log != nil {
			e.cfg.Log("settle dependencies (the sweeper service tries again)", err)
		}
		now := e.deps.released.Load()
		changed := now != last
		last = now
		return changed
	}
}

// SweepDeps settles every edge whose parent is done (see
// driver.DepsRead.DepsSweep) and wakes the queues of the messages it made
// ready. Unless force is set, it first probes, in one statement, whether
// any edge may be settled, and stops there when none may.
func (e *Engine) SweepDeps(ctx context.Context, force bool) error {
	_, err := e.sweepDeps(ctx, nil, force)
	return err
}

// sweepDeps is SweepDeps over the edges of parents (nil: every edge); it
// returns the queues it woke.
func (e *Engine) sweepDeps(ctx context.Context, parents []int64, force bool) ([]string, error) {
	e.deps.mu.Lock()
	defer e.deps.mu.Unlock()
	return e.sweepLocked(ctx, parents, force)
}

// sweepLocked is sweepDeps with mu held.
func (e *Engine) sweepLocked(ctx context.Context, parents []int64, force bool) ([]string, error) {
	if !force {
		if parents != nil {
			waits, err := e.drv.NoTx().DepsProbeParents(ctx, parents)
			if err != nil || !waits {
				return nil, err
			}
		} else {
			pending, settleable, err := e.drv.NoTx().DepsProbe(ctx)
			if err != nil {
				return nil, err
			}
			e.deps.active.Store(pending)
			if !settleable {
				return nil, nil
			}
		}
	}
	res, err := txn.InTxV(ctx, e.drv, func(tx driver.Tx) (driver.DepSwept, error) { return tx.DepsSweep(ctx, parents, Outcome) })
	if err != nil {
		return nil, err
	}
	e.deps.active.Store(res.Pending)
	e.dependantsCancelled(ctx, res.Cancelled)
	if len(res.Released) > 0 {
		e.deps.released.Add(1)
	}
	var woken []string
	for _, r := range res.Released {
		if !slices.Contains(woken, r.Queue) {
			woken = append(woken, r.Queue)
			e.Wake(r.Queue)
		}
	}
	return woken, nil
}

// DepsService is the dependency sweeper: every interval (five poll
// intervals) it probes, in one statement, for edges whose parent is done
// that no process settled (their parent finished in a process that did
// not know edges waited, or was deleted from another client) and settles
// them; once a minute it purges the edges and workflow steps of messages
// that left the history.
func (e *Engine) DepsService(interval, timeout time.Duration) maintain.Service {
	var lastPurge atomic.Int64
	return maintain.Service{Name: "dependency sweeper", Interval: interval, Timeout: timeout, Run: func(ctx context.Context) error {
		if _, err := e.sweepDeps(ctx, nil, false); err != nil {
			return err
		}
		if now := time.Now().Unix(); now-lastPurge.Load() >= 60 {
			lastPurge.Store(now)
			return e.PurgeDeps(ctx)
		}
		return nil
	}}
}

// BatchOutcome is what a message that runs once its parents finished,
// whatever became of them (a batch's callback), finds in its metadata:
// how many of its parents completed, died, were cancelled or are gone, and
// the ids of those that did not complete (at most MaxFailedIDs).
type BatchOutcome struct {
	Parents   int     `json:"parents"`
	Completed int     `json:"completed"`
	Dead      int     `json:"dead"`
	Cancelled int     `json:"cancelled"`
	Deleted   int     `json:"deleted"`
	Failed    []int64 `json:"failed,omitempty"`
}

// MaxFailedIDs bounds BatchOutcome.Failed.
const MaxFailedIDs = 100

// Outcome writes the parents' outcomes into a released message's meta
// (driver.DepOutcome).
func Outcome(meta string, parents []driver.DepEdge) string {
	m := DecodeMeta(meta)
	o := &BatchOutcome{Parents: len(parents)}
	for _, p := range parents {
		switch p.State {
		case driver.MessageCompleted:
			o.Completed++
			continue
		case driver.MessageDead:
			o.Dead++
		case driver.MessageCancelled:
			o.Cancelled++
		default:
			o.Deleted++
		}
		if len(o.Failed) < MaxFailedIDs {
			o.Failed = append(o.Failed, p.ID)
		}
	}
	m.Batch = o
	return EncodeMeta(m)
}

// PurgeDeps deletes the edges and workflow steps of messages that left
// the tables.
func (e *Engine) PurgeDeps(ctx context.Context) error {
	if err := e.drv.NoTx().DepsPurge(ctx); err != nil {
		return fmt.Errorf("baton: purge dependencies: %w", err)
	}
	return nil
}

// DepsOf reads a message's parents and dependants.
func (e *Engine) DepsOf(ctx context.Context, id int64) (parents, children []driver.DepEdge, err error) {
	parents, children, err = e.drv.NoTx().DepsOf(ctx, id)
	if err != nil {
		err = fmt.Errorf("baton: dependencies of %d: %w", id, err)
	}
	return parents, children, err
}

// WorkflowOf names the workflow a message is a step of.
func (e *Engine) WorkflowOf(ctx context.Context, id int64) (workflow int64, step string, found bool, err error) {
	workflow, step, found, err = e.drv.NoTx().WorkflowOf(ctx, id)
	if err != nil {
		err = fmt.Errorf("baton: workflow of %d: %w", id, err)
	}
	return workflow, step, found, err
}

// Workflow reads a workflow's steps and edges; ErrNotFound when it has
// none (never was, or every step left the history).
func (e *Engine) Workflow(ctx context.Context, id int64) ([]driver.WorkflowStep, [][2]int64, error) {
	steps, edges, err := e.drv.NoTx().WorkflowGet(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("baton: workflow %d: %w", id, err)
	}
	if len(steps) == 0 {
		return nil, nil, fmt.Errorf("%w: workflow %d", errs.ErrNotFound, id)
	}
	return steps, edges, nil
}

// DecodeBatch reads the batch outcome of a message's meta (nil: none).
func DecodeBatch(meta string) *BatchOutcome { return DecodeMeta(meta).Batch }

// MaxParents bounds a message's parents.
const MaxParents = 1000

// CheckAfter validates a message's parents.
func CheckAfter(after []int64, anyOutcome bool, uniqueKey string) error {
	switch {
	case len(after) > MaxParents:
		return fmt.Errorf("%w: %d parents (After): at most %d", errs.ErrInvalid, len(after), MaxParents)
	case len(after) > 0 && uniqueKey != "":
		return fmt.Errorf("%w: a message with parents (After) cannot have a unique key", errs.ErrInvalid)
	}
	for _, p := range after {
		if p <= 0 {
			return fmt.Errorf("%w: parent id %d (After): ids are positive", errs.ErrInvalid, p)
		}
	}
	return nil
}

// statsLimit bounds the count of pending messages in Stats, as the
// driver bounds the others.
const statsLimit = 10000

// claimIDs lists the messages of claims.
func claimIDs(claims []driver.Claim) []int64 {
	ids := make([]int64, len(claims))
	for i, c := range claims {
		ids[i] = c.ID
	}
	return ids
}

// dependantsCancelled sends the job events of messages a sweep cancelled
// (a parent did not complete), if anyone subscribes: each is read from
// the history for its queue, kind and attempt.
func (e *Engine) dependantsCancelled(ctx context.Context, ids []int64) {
	if len(ids) == 0 || e.cfg.JobEvents == nil || !e.cfg.Subscribed() {
		return
	}
	evs := make([]jobevents.Event, 0, len(ids))
	for _, id := range ids {
		m, err := e.Get(ctx, id)
		if err != nil {
			if e.cfg.Log != nil {
				e.cfg.Log("read a cancelled dependant for its job event", err)
			}
			continue
		}
		evs = append(evs, jobevents.New(id, m.Queue, m.Kind, "cancelled", m.Attempt, m.LastError))
	}
	e.cfg.JobEvents(evs)
}
