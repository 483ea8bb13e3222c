// Package claimrule holds the queue's claim rules as one pure function:
// which messages a claim may take, given the queue's waiting and in-flight
// messages and its mode. The dialects implement the rules in SQL (a claim
// is one or two statements); the driver conformance suite checks every
// dialect's statements against Claimable on random queues, as it checks
// the lock service against internal/lockcore.
package claimrule

import (
	"cmp"
	"slices"
	"time"
)

// Mode says how a queue's messages are handed out (baton.QueueMode).
type Mode int

const (
	// Parallel: any ready messages, many in flight at once.
	Parallel Mode = iota
	// Ordered: one at a time in serving order; nothing is handed out
	// while a message is in flight, and a message not yet due holds back
	// the ones after it.
	Ordered
	// PerKey: never two messages of one key in flight, each key served
	// in order; keyless messages and different keys run in parallel.
	PerKey
)

// String is the mode's name as the CLI and the docs spell it.
func (m Mode) String() string {
	switch m {
	case Parallel:
		return "parallel"
	case Ordered:
		return "ordered"
	case PerKey:
		return "per-key"
	}
	return "unknown"
}

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool { return m >= Parallel && m <= PerKey }

// Message is what the rules read of one message of the queue: waiting
// (ready or scheduled) or in flight (claimed).
type Message struct {
	ID       int64
	Priority int
	OrderAt  time.Time // with Priority and ID, the serving order
	Key      string
	HasKey   bool
	Kind     string
	Claimed  bool // in flight
	Due      bool // run_at has come (waiting messages)
}

// compare orders messages as they are served: lower priority value first,
// then earlier OrderAt, then lower id.
func compare(a, b Message) int {
	return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.OrderAt.Compare(b.OrderAt), cmp.Compare(a.ID, b.ID))
}

// Claimable returns the ids a claim of up to limit messages takes now, in
// serving order. kind ("" for any) filters parallel claims only: ordered
// and per-key queues are served in their order whatever the kind. A paused
// queue hands out nothing.
func Claimable(mode Mode, paused bool, msgs []Message, kind string, limit int) []int64 {
	if paused || limit <= 0 {
		return nil
	}
	waiting := slices.DeleteFunc(slices.Clone(msgs), func(m Message) bool { return m.Claimed })
	slices.SortFunc(waiting, compare)
	var out []int64
	for i, m := range waiting {
		take, stop := rule(mode, m, msgs, waiting[:i], kind)
		if stop || len(out) == limit {
			break
		}
		if take {
			out = append(out, m.ID)
		}
	}
	return out
}

// rule decides one waiting message m, given every message of the queue
// (all) and the waiting ones served before it (earlier): take it, and
// whether the claim stops before it.
func rule(mode Mode, m Message, all, earlier []Message, kind string) (take, stop bool) {
	switch mode {
	case Ordered:
		// Nothing while one is in flight; a message not due holds back
		// the ones after it.
		stop = !m.Due || slices.ContainsFunc(all, func(o Message) bool { return o.Claimed })
		return !stop, stop
	case PerKey:
		return m.Due && keyFree(m, all, earlier), false
	}
	return m.Due && (kind == "" || m.Kind == kind), false
}

// keyFree reports whether m is the head of its key with nothing of the key
// in flight: no claimed message has its key, and no waiting message of the
// key (due or not) comes before it. Keyless messages are always free.
func keyFree(m Message, all, earlier []Message) bool {
	if !m.HasKey {
		return true
	}
	sameKey := func(o Message) bool { return o.HasKey && o.Key == m.Key }
	inFlight := slices.ContainsFunc(all, func(o Message) bool { return o.Claimed && sameKey(o) })
	return !inFlight && !slices.ContainsFunc(earlier, sameKey)
}

// DuePrefix is the ordered rule applied to a queue's next messages in
// serving order (heads) and how long until each is due (zero or less:
// due): the due messages before the first one that is not. With none due,
// wait is how long until the first head is.
func DuePrefix(heads []int64, dueIn []time.Duration) (ids []int64, wait time.Duration) {
	n := slices.IndexFunc(dueIn, func(d time.Duration) bool { return d > 0 })
	if n < 0 {
		n = len(heads)
	}
	if n == 0 && len(heads) > 0 {
		return nil, dueIn[0]
	}
	return heads[:n], 0
}
