package jobtest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// waiting are the states of a message that waits to run.
var waiting = []baton.MessageState{baton.StateReady, baton.StateScheduled, baton.StateRetrying}

// Opts are what RequireEnqueuedWith checks of a message besides its
// arguments. A zero field checks nothing.
type Opts struct {
	// State the message is in (default: any waiting state, scheduled,
	// ready or retrying). Any state may be given: StateCompleted checks
	// a job that ran, while the history keeps it.
	State baton.MessageState
	// Priority, when not nil (new(3) points at 3).
	Priority *int
	// Key the message was enqueued with (EnqueueOptions.Key).
	Key string
	// MaxAttempts the message was enqueued with.
	MaxAttempts int
	// RunAfter and RunBefore bound the message's run-at (when it becomes
	// or became claimable, by the database's clock), both included: a
	// job enqueued with a Delay of an hour runs after time.Now().Add(59 *
	// time.Minute).
	RunAfter, RunBefore time.Time
	// Tags the message must carry (it may carry others).
	Tags []string
	// Metadata the message's metadata must hold: each key with a value
	// equal to the given one once both are read as JSON (a number 3 and
	// 3.0 are equal); other keys are not checked.
	Metadata map[string]any
}

// differences names what of m differs from o.
func (o Opts) differences(m baton.MessageInfo) []string {
	var d []string
	if o.State != "" && m.State != o.State {
		d = append(d, fmt.Sprintf("it is %s, want %s", m.State, o.State))
	}
	if o.Priority != nil && m.Priority != *o.Priority {
		d = append(d, fmt.Sprintf("priority %d, want %d", m.Priority, *o.Priority))
	}
	if o.Key != "" && m.Key != o.Key {
		d = append(d, fmt.Sprintf("key %q, want %q", m.Key, o.Key))
	}
	if o.MaxAttempts != 0 && m.MaxAttempts != o.MaxAttempts {
		d = append(d, fmt.Sprintf("max attempts %d, want %d", m.MaxAttempts, o.MaxAttempts))
	}
	if !o.RunAfter.IsZero() && m.RunAt.Before(o.RunAfter) {
		d = append(d, fmt.Sprintf("run-at %s, before %s", stamp(m.RunAt), stamp(o.RunAfter)))
	}
	if !o.RunBefore.IsZero() && m.RunAt.After(o.RunBefore) {
		d = append(d, fmt.Sprintf("run-at %s, after %s", stamp(m.RunAt), stamp(o.RunBefore)))
	}
	for _, tag := range o.Tags {
		if !slices.Contains(m.Tags, tag) {
			d = append(d, fmt.Sprintf("tags %v, want %q among them", m.Tags, tag))
		}
	}
	return append(d, o.metadataDifferences(m)...)
}

// metadataDifferences names the keys of o.Metadata whose values m's
// metadata does not hold.
func (o Opts) metadataDifferences(m baton.MessageInfo) []string {
	if len(o.Metadata) == 0 {
		return nil
	}
	var have map[string]any
	if len(m.Metadata) > 0 {
		if err := json.Unmarshal(m.Metadata, &have); err != nil {
			return []string{fmt.Sprintf("metadata %s does not decode: %v", m.Metadata, err)}
		}
	}
	var d []string
	for _, k := range slices.Sorted(maps.Keys(o.Metadata)) {
		want, err := json.Marshal(o.Metadata[k])
		if err != nil {
			return []string{fmt.Sprintf("jobtest: Opts.Metadata[%q] does not encode: %v", k, err)}
		}
		var w any
		_ = json.Unmarshal(want, &w)
		got, ok := have[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("metadata has no %q, want %s", k, want))
		case !reflect.DeepEqual(got, w):
			g, _ := json.Marshal(got)
			d = append(d, fmt.Sprintf("metadata %q is %s, want %s", k, g, want))
		}
	}
	return d
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// RequireEnqueuedWith is RequireEnqueued that also checks the message's
// state, priority, key, attempt limit, run-at, tags and metadata (see
// Opts); it returns
// the id of the first message that matches, in the order of
// Client.ListMessages (waiting ones in claim order). The failure
// names, for each message with the arguments, what differed.
//
//	jobtest.RequireEnqueuedWith(t, c, "mail", Welcome{To: "ann@example.com"}, jobtest.Opts{
//		State: baton.StateScheduled, Priority: new(1), RunAfter: time.Now().Add(59 * time.Minute)})
func RequireEnqueuedWith[T baton.JobArgs](tb testing.TB, c *baton.Client, queue string, want T, o Opts) int64 {
	tb.Helper()
	states := waiting
	if o.State != "" {
		states = baton.MessageStates // the failure says which state it is in
	}
	ms := list(tb, c, queue, want.Kind(), states)
	norm := roundTrip(tb, want)
	var near, others []string
	for _, m := range ms {
		a := decode[T](tb, m)
		if !reflect.DeepEqual(a, norm) {
			others = append(others, fmt.Sprintf("%+v", a))
			continue
		}
		d := o.differences(m)
		if len(d) == 0 {
			return m.ID
		}
		near = append(near, fmt.Sprintf("message %d has the arguments but %s", m.ID, strings.Join(d, ", ")))
	}
	if len(near) > 0 {
		tb.Fatalf("jobtest: no message of kind %q in %s matches %+v:\n\t%s", want.Kind(), queue, want, strings.Join(near, "\n\t"))
		return 0
	}
	tb.Fatalf("jobtest: no message of kind %q in %s has the arguments %+v (%s: %v)", want.Kind(), queue, want, statesName(states), others)
	return 0
}

func statesName(states []baton.MessageState) string {
	if len(states) == len(waiting) {
		return "waiting"
	}
	return "any state"
}

// RequireManyEnqueued fails the test unless the waiting messages of T's
// kind in queue have exactly the arguments wants, in that order (the
// order of Enqueued: ready ones in claim order, then scheduled and
// retrying ones by due time), and returns their ids. The failure names
// each position that differs, and the messages missing or extra.
func RequireManyEnqueued[T baton.JobArgs](tb testing.TB, c *baton.Client, queue string, wants ...T) []int64 {
	tb.Helper()
	args, ids := Enqueued[T](tb, c, queue)
	var d []string
	for i := range max(len(args), len(wants)) {
		switch {
		case i >= len(args):
			d = append(d, fmt.Sprintf("#%d: missing %+v", i, wants[i]))
		case i >= len(wants):
			d = append(d, fmt.Sprintf("#%d: message %d %+v is extra", i, ids[i], args[i]))
		case !reflect.DeepEqual(args[i], roundTrip(tb, wants[i])):
			d = append(d, fmt.Sprintf("#%d: message %d has %+v, want %+v", i, ids[i], args[i], wants[i]))
		}
	}
	if len(d) > 0 {
		var zero T
		tb.Fatalf("jobtest: the waiting messages of kind %q in %s are not the %d wanted, in order:\n\t%s", zero.Kind(), queue, len(wants), strings.Join(d, "\n\t"))
		return nil
	}
	return ids
}

// list returns the messages of kind in queue in states, in the order of
// ListMessages.
func list(tb testing.TB, c *baton.Client, queue, kind string, states []baton.MessageState) []baton.MessageInfo {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []baton.MessageInfo
	for _, st := range states {
		after := ""
		for {
			ms, next, err := c.ListMessages(ctx, baton.ListOptions{Queue: queue, State: st, Kind: kind, After: after, Limit: 1000})
			if err != nil {
				tb.Fatalf("jobtest: list %s messages of kind %q in %s: %v", st, kind, queue, err)
				return nil
			}
			out = append(out, ms...)
			if after = next; next == "" {
				break
			}
		}
	}
	return out
}

// decode returns m's arguments, failing the test when they do not decode.
func decode[T baton.JobArgs](tb testing.TB, m baton.MessageInfo) T {
	tb.Helper()
	var a T
	if err := json.Unmarshal(m.Payload, &a); err != nil {
		tb.Fatalf("jobtest: message %d of kind %q: the arguments do not decode: %v", m.ID, m.Kind, err)
	}
	return a
}
