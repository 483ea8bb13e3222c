package baton

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/jobevents"
)

// JobEventState is what happened to a job, as a JobEvent reports it.
type JobEventState string

// The job events.
const (
	JobCompleted JobEventState = "completed" // it ran to success (Ack, CompleteTx)
	JobFailed    JobEventState = "failed"    // an attempt failed, or its worker was lost (recovered claim); it will be retried
	JobDead      JobEventState = "dead"      // it failed for good: a dead letter
	JobCancelled JobEventState = "cancelled" // it ended cancelled
	JobSnoozed   JobEventState = "snoozed"   // its run was put off, no attempt used
)

// JobEventStates lists every JobEventState.
var JobEventStates = []JobEventState{JobCompleted, JobFailed, JobDead, JobCancelled, JobSnoozed}

// ParseJobEventState checks the name of a job event's state.
func ParseJobEventState(s string) (JobEventState, error) {
	if st := JobEventState(s); slices.Contains(JobEventStates, st) {
		return st, nil
	}
	return "", fmt.Errorf("%w: job event state %q: use completed, failed, dead, cancelled or snoozed", ErrInvalid, s)
}

// JobEvent is a state change of one job (any message), in any process.
type JobEvent struct {
	ID    int64         `json:"id"`
	Queue string        `json:"queue"`
	Kind  string        `json:"kind,omitempty"`
	State JobEventState `json:"state"`
	// Attempt is the attempt that ran (for a snooze: the one put off).
	Attempt int `json:"attempt"`
	// At is when the process that settled the job saw it settled.
	At time.Time `json:"at"`
	// Error is the failed attempt's error (failed, dead, cancelled),
	// at most 256 bytes of it.
	Error string `json:"error,omitempty"`
}

// JobFilter selects the events of SubscribeJobs: an empty list selects
// every value.
type JobFilter struct {
	Queues []string
	Kinds  []string
	States []JobEventState
	// Buffer is how many events may wait for the receiver (default
	// 1024); while it is full, new events are not kept but counted
	// (JobSubscription.Missed).
	Buffer int
}

func (f JobFilter) check() error {
	for _, q := range f.Queues {
		if err := ValidateQueue(q); err != nil {
			return err
		}
	}
	for _, st := range f.States {
		if _, err := ParseJobEventState(string(st)); err != nil {
			return err
		}
	}
	if f.Buffer < 0 {
		return fmt.Errorf("%w: negative job event buffer %d", ErrInvalid, f.Buffer)
	}
	return nil
}

func (f JobFilter) match(ev *jobevents.Event) bool {
	return (len(f.Queues) == 0 || slices.Contains(f.Queues, ev.Queue)) &&
		(len(f.Kinds) == 0 || slices.Contains(f.Kinds, ev.Kind)) &&
		(len(f.States) == 0 || slices.Contains(f.States, JobEventState(ev.State)))
}

// JobSubscription receives job events until Close.
type JobSubscription struct {
	c      *Client
	filter JobFilter
	ch     chan JobEvent
	missed atomic.Int64
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// subscriberName is the name of a subscriber's session, whose presence
// tells every process to send job events.
const subscriberName = "baton job events"

// SubscribeJobs delivers the state changes of jobs (every message)
// settled by any process on any host from the moment it returns:
// completed, failed (to be retried), dead, cancelled and snoozed, chosen
// by f. Events are notifications, not a log: they go out after the change
// commits (with the caller's transaction for CompleteTx), never for a
// change that rolled back, at most once, and may be missed (a process
// that dies before sending them, a subscriber disconnected meanwhile, a
// full buffer); a job's own record is the truth (Message). A receiver
// that does not keep up never slows anyone down: what does not fit its
// buffer is counted in Missed. Changes made in the caller's transaction
// (CompleteTx, FailTx, RetryTx, CancelMessageTx) send theirs with its
// commit; recoveries of claims (a worker's session ended, a lease ran
// out) send failed, or dead at the attempt limit; bulk cancels and the
// dependants a failed parent cancels send cancelled. Deletes, and jobs
// made to wait again (RetryNow, Redrive, a bulk retry), send none:
// docs/guarantees.md, "Job events", says exactly what is reported.
//
// A subscriber holds a session (named "baton job events") for as long
// as it lives: every process sends events only while some subscriber's
// session is live, and checks that every few poll intervals, so that
// nobody pays for events nobody receives.
func (c *Client) SubscribeJobs(ctx context.Context, f JobFilter) (*JobSubscription, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.Buffer == 0 {
		f.Buffer = 1024
	}
	if err := c.bus.Listening(ctx); err != nil {
		return nil, err
	}
	s := &JobSubscription{c: c, filter: f, ch: make(chan JobEvent, f.Buffer), quit: make(chan struct{}), done: make(chan struct{})}
	if !c.jobs.add(s) {
		return nil, ErrClosed
	}
	c.notifyUsers.In()
	sess, err := c.NewSession(ctx, SessionOptions{Name: subscriberName})
	if err != nil {
		s.close()
		return nil, err
	}
	c.jobs.presence.Heard(true)
	c.announce(bus.Subscribers, "1", "baton: announcing a job-event subscriber")
	go s.keep(sess)
	return s, nil
}

// C delivers the events; it is closed by Close.
func (s *JobSubscription) C() <-chan JobEvent { return s.ch }

// Missed is how many events this subscription received but dropped
// because its buffer was full.
func (s *JobSubscription) Missed() int64 { return s.missed.Load() }

// Close stops the subscription and closes C.
func (s *JobSubscription) Close() {
	if s.close() {
		<-s.done
	}
}

// close removes the subscription and closes C; false when it was closed
// already.
func (s *JobSubscription) close() bool {
	first := false
	s.once.Do(func() {
		first = true
		s.c.jobs.remove(s)
		s.c.notifyUsers.Out()
		close(s.quit)
	})
	return first
}

// keep holds the subscriber's session until Close, opening another one
// when it is lost, and ends it then.
func (s *JobSubscription) keep(sess *Session) {
	defer close(s.done)
	c := s.c
	for {
		select {
		case <-s.quit:
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.Lease)
			c.log.Err("close a job-event subscriber's session", sess.Close(ctx))
			cancel()
			c.announce(bus.Subscribers, "0", "baton: announcing a job-event subscriber's end")
			return
		case <-sess.Done():
		}
		for sess.Err() != nil {
			select {
			case <-s.quit:
				return
			case <-time.After(c.opts.PollInterval):
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.Lease)
			next, err := c.NewSession(ctx, SessionOptions{Name: subscriberName})
			cancel()
			if err == nil {
				sess = next
				c.announce(bus.Subscribers, "1", "baton: announcing a job-event subscriber")
			}
		}
	}
}

// jobHub is a client's side of job events: the subscribers' presence, the
// emitter of its own events, and its subscriptions.
type jobHub struct {
	presence jobevents.Presence
	emit     jobevents.Emitter
	mu       sync.Mutex
	subs     map[*JobSubscription]bool
	closed   bool
}

// newJobHub makes the client's job-event hub.
func newJobHub(c *Client) *jobHub {
	goFn := func(f func()) bool {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed { // a check or a sender after Close would only fail
			return false
		}
		go f()
		return true
	}
	logFn := func(what string, err error) { c.log.Err(what, err) }
	h := &jobHub{subs: map[*JobSubscription]bool{}}
	h.presence = jobevents.Presence{Every: 5 * c.opts.PollInterval, Timeout: c.opts.Lease, Go: goFn, Log: logFn,
		Check: func(ctx context.Context) (bool, error) {
			return c.drv.Sessions().SessionNamedLive(ctx, subscriberName)
		}}
	h.emit = jobevents.Emitter{Timeout: c.opts.Lease, Go: goFn, Log: logFn,
		Send: func(ctx context.Context, payload string) error {
			return c.drv.Notifier().Notify(ctx, bus.JobEvents, payload)
		}}
	return h
}

func (h *jobHub) add(s *JobSubscription) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.subs[s] = true
	return true
}

func (h *jobHub) remove(s *JobSubscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[s] {
		delete(h.subs, s)
		close(s.ch)
	}
}

// deliver hands the events of a payload to the matching subscriptions;
// it never blocks.
func (h *jobHub) deliver(payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		return
	}
	evs, err := jobevents.Decode(payload)
	if err != nil {
		return // not baton's
	}
	for s := range h.subs {
		for i := range evs {
			ev := &evs[i]
			if !s.filter.match(ev) {
				continue
			}
			select {
			case s.ch <- JobEvent{ID: ev.ID, Queue: ev.Queue, Kind: ev.Kind, State: JobEventState(ev.State), Attempt: ev.Attempt,
				At: time.UnixMicro(ev.At).UTC(), Error: ev.Error}:
			default:
				s.missed.Add(1)
			}
		}
	}
}

// heard takes a subscriber's signal.
func (h *jobHub) heard(payload string) { h.presence.Heard(payload == "1") }

// close sends what the client's processes settled, then closes every
// subscription.
func (h *jobHub) close(ctx context.Context) {
	h.emit.Flush(ctx)
	h.mu.Lock()
	h.closed = true
	subs := make([]*JobSubscription, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
}

// jobEvent sends the event of a settled message, if anyone subscribes.
func (c *Client) jobEvent(m *Message, st JobEventState, errText string) {
	if c.jobs.presence.On() {
		c.jobs.emit.Add(jobevents.New(m.ID, m.Queue, m.Kind, string(st), m.Attempt, errText))
	}
}

// sent sends events of changes that committed, if anyone subscribes.
func (h *jobHub) sent(evs []jobevents.Event) {
	if h.presence.On() {
		h.emit.Add(evs...)
	}
}

// jobsCompleted sends the events of messages of which an acknowledgement
// completed n, if anyone subscribes: all of them, or all but those that
// CompleteTx completed already (which sent their own). Any other count
// is a cancellation that raced the batch, which the worker settles again
// one by one: which ones this batch completed is not known, and they send
// no event.
func (c *Client) jobsCompleted(ms []*Message, n int) {
	if n == 0 || !c.jobs.presence.On() {
		return
	}
	inTx := 0
	for _, m := range ms {
		if m.completedTx {
			inTx++
		}
	}
	if n != len(ms) && n != len(ms)-inTx {
		return
	}
	evs := make([]jobevents.Event, 0, n)
	for _, m := range ms {
		if n == len(ms) || !m.completedTx {
			evs = append(evs, jobevents.New(m.ID, m.Queue, m.Kind, string(JobCompleted), m.Attempt, ""))
		}
	}
	c.jobs.emit.Add(evs...)
}

// jobCancelledWaiting sends the event of a waiting message cancelled by
// id, if anyone subscribes: the message is read again for its queue, kind
// and attempt (a running one sends its event when its worker settles it).
func (c *Client) jobCancelledWaiting(ctx context.Context, id int64) {
	if !c.jobs.presence.On() {
		return
	}
	if m, err := c.mq.Get(ctx, id); err == nil {
		c.jobs.emit.Add(jobevents.New(m.ID, m.Queue, m.Kind, string(JobCancelled), m.Attempt, ""))
	}
}

// jobEventIn sends the event of a message settled in the caller's
// transaction tx, with its commit, if anyone subscribes (as far as the
// client knows without waiting: tx may hold the database's write lock).
func (c *Client) jobEventIn(ctx context.Context, tx Execer, m *Message, st JobEventState, errText string) error {
	if !c.jobs.presence.Cached() {
		return nil
	}
	for _, p := range jobevents.Encode([]jobevents.Event{jobevents.New(m.ID, m.Queue, m.Kind, string(st), m.Attempt, errText)}) {
		if err := c.mq.NotifyIn(ctx, tx, bus.JobEvents, p); err != nil {
			return err
		}
	}
	return nil
}

// finishedEvent is the event of a message finished in state.
func finishedEvent(state driver.MessageState) JobEventState {
	if state == driver.MessageCancelled {
		return JobCancelled
	}
	return JobDead
}
