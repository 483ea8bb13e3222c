// Package jobevents carries job state changes between processes: the
// events' wire form (JSON arrays split to fit a notification), the
// emitter that sends a process's events after the changes committed,
// off the workers' path, and the cached presence of subscribers, without
// which nothing is built or sent.
package jobevents

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Event is one job state change as it travels on the bus.
type Event struct {
	ID      int64  `json:"i"`
	Queue   string `json:"q"`
	Kind    string `json:"k,omitempty"`
	State   string `json:"s"`
	Attempt int    `json:"a"`
	At      int64  `json:"t"` // unix microseconds
	Error   string `json:"e,omitempty"`
}

// MaxError bounds the error text an event carries, in bytes.
const MaxError = 256

// MaxPayload bounds a notification's payload, in bytes: PostgreSQL's
// NOTIFY takes less than 8000, and baton's own notifications stay within
// 4000 on every backend.
const MaxPayload = 3900

// New is an event of a job's state change now, its error text bounded.
func New(id int64, queue, kind, state string, attempt int, errText string) Event {
	return Event{ID: id, Queue: queue, Kind: kind, State: state, Attempt: attempt, At: time.Now().UnixMicro(), Error: Bound(errText)}
}

// Bound cuts s to at most MaxError bytes, on a rune boundary, marking the
// cut with "…".
func Bound(s string) string {
	if len(s) <= MaxError {
		return s
	}
	cut := MaxError - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Encode writes events as JSON arrays of at most MaxPayload bytes each,
// in order.
func Encode(evs []Event) []string {
	var out []string
	buf := []byte{'['}
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			continue // not possible: plain fields
		}
		if len(buf) > 1 && len(buf)+1+len(b)+1 > MaxPayload {
			out = append(out, string(append(buf, ']')))
			buf = []byte{'['}
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, b...)
	}
	if len(buf) > 1 {
		out = append(out, string(append(buf, ']')))
	}
	return out
}

// Decode reads a payload that Encode wrote.
func Decode(payload string) ([]Event, error) {
	var evs []Event
	err := json.Unmarshal([]byte(payload), &evs)
	return evs, err
}

// Presence is this process's cached answer to "does anyone subscribe to
// job events?": checked at the first use, then again at a use after it
// is older than Every (in the background: the caller never waits), and
// set at once by the bus signal a subscriber sends when it comes.
type Presence struct {
	// Check asks the database (a live subscriber session).
	Check func(ctx context.Context) (bool, error)
	// Every is how long an answer holds; Timeout bounds a check.
	Every, Timeout time.Duration
	// Go runs a background check; false when it did not (the client is
	// closed).
	Go func(f func()) bool
	// Log reports a failed check.
	Log func(what string, err error)

	on    atomic.Bool
	next  atomic.Int64  // unix nanoseconds after which to check again; 0: never checked
	seq   atomic.Uint64 // bumped by each signal: a check that raced one keeps it
	busy  atomic.Bool   // a background check runs
	first sync.Mutex    // the first, synchronous check
}

// On reports whether some subscriber is live, as far as this process
// knows: two atomic loads and a clock read when the answer is fresh. The
// first use waits for the database's answer.
func (p *Presence) On() bool {
	if p.next.Load() == 0 {
		p.first.Lock()
		if p.next.Load() == 0 {
			p.check()
		}
		p.first.Unlock()
	}
	return p.Cached()
}

// Cached is On without waiting: before the first answer it is false. A
// caller that holds the database's write lock (the caller's transaction
// on SQLite) must not wait for baton's own connection.
func (p *Presence) Cached() bool {
	if next := p.next.Load(); time.Now().UnixNano() > next && p.busy.CompareAndSwap(false, true) {
		_ = p.Go(func() {
			defer p.busy.Store(false)
			p.check()
		})
	}
	return p.on.Load()
}

// check asks the database and keeps the answer unless a signal came
// meanwhile.
func (p *Presence) check() {
	seq := p.seq.Load()
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout)
	defer cancel()
	on, err := p.Check(ctx)
	if err != nil {
		p.Log("check for job-event subscribers", err)
	} else if p.seq.Load() == seq {
		p.on.Store(on)
	}
	p.next.Store(time.Now().Add(p.Every).UnixNano())
}

// Heard takes a subscriber's signal: one came (on: events are sent from
// now on), or one left (the next use checks again).
func (p *Presence) Heard(on bool) {
	p.seq.Add(1)
	if on {
		p.on.Store(true)
		p.next.Store(time.Now().Add(p.Every).UnixNano())
		return
	}
	p.next.Store(1)
}

// MaxPending bounds the events an Emitter holds: beyond it, events are
// dropped (and counted) rather than slow the workers down.
const MaxPending = 10000

// Gap is the pause of an Emitter after each round of sends: events that
// come meanwhile go out together in the next, so that a busy process
// sends at most 1/Gap rounds a second (each of as many notifications as
// its events fill), whatever its workers' pace; an event that comes while
// the sender is idle goes out at once. A notification is a write
// transaction: at 100 a second, SQLite drains were measurably slower.
const Gap = 100 * time.Millisecond

// Emitter sends a process's events in the background, every event that
// waits at the time in as few notifications as MaxPayload allows, then
// pauses for Gap: the workers hand their settled batches over and go on.
type Emitter struct {
	// Send sends one payload in a transaction of its own.
	Send func(ctx context.Context, payload string) error
	// Timeout bounds each send.
	Timeout time.Duration
	// Go starts the sending goroutine; false when it did not (the client
	// is closed: nothing more is sent).
	Go func(f func()) bool
	// Log reports a failed send and dropped events.
	Log func(what string, err error)

	mu      sync.Mutex
	pending []Event
	running bool          // the sending goroutine runs
	idle    chan struct{} // closed when the sending goroutine has sent everything and ended
	dropped atomic.Int64
}

// Dropped is how many events were dropped because MaxPending were waiting.
func (e *Emitter) Dropped() int64 { return e.dropped.Load() }

// Add hands events over for sending; it never blocks.
func (e *Emitter) Add(evs ...Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.pending) + len(evs) - MaxPending; n > 0 {
		n = min(n, len(evs))
		e.dropped.Add(int64(n))
		evs = evs[:len(evs)-n]
	}
	e.pending = append(e.pending, evs...)
	if !e.running && len(e.pending) > 0 {
		e.running = true
		e.idle = make(chan struct{})
		if !e.Go(e.run) {
			e.running, e.pending = false, nil
			close(e.idle)
		}
	}
}

// run sends what waits until nothing does.
func (e *Emitter) run() {
	for {
		e.mu.Lock()
		evs := e.pending
		e.pending = nil
		if len(evs) == 0 {
			e.running = false
			close(e.idle)
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
		for _, p := range Encode(evs) {
			ctx, cancel := context.WithTimeout(context.Background(), e.Timeout)
			err := e.Send(ctx, p)
			cancel()
			if err != nil {
				e.Log("send job events", err)
			}
		}
		time.Sleep(Gap)
	}
}

// Flush waits until everything handed over is sent, or ctx ends.
func (e *Emitter) Flush(ctx context.Context) {
	e.mu.Lock()
	idle := e.idle
	running := e.running
	e.mu.Unlock()
	if !running {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}
