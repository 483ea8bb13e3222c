package baton_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// everyState keeps a unique key whatever becomes of its message.
var everyState = baton.MessageStates

// messageIn enqueues a message on q with unique key key (held in every
// state) and brings it to state; it returns its id.
func messageIn(t *testing.T, c *baton.Client, s *baton.Session, q, key string, state baton.MessageState) int64 {
	t.Helper()
	ctx := ctxT(t)
	o := baton.EnqueueOptions{UniqueKey: key, UniqueStates: everyState}
	if state == baton.StateScheduled {
		o.Delay = time.Hour
	}
	id := enqueue(t, c, q, string(state), o)
	var err error
	switch state {
	case baton.StateRetrying, baton.StateCompleted, baton.StateDead, baton.StateRunning:
		ms := claim(t, s, q, baton.ClaimOptions{})
		if len(ms) != 1 || ms[0].ID != id {
			t.Fatalf("claimed %v, want message %d", ms, id)
		}
		switch state {
		case baton.StateRetrying:
			err = s.RetryAfter(ctx, ms[0], time.Hour, errors.New("later"))
		case baton.StateCompleted:
			err = s.Ack(ctx, ms[0])
		case baton.StateDead:
			err = s.Fail(ctx, ms[0], "broken")
		}
	case baton.StateCancelled:
		err = c.CancelMessage(ctx, id)
	}
	if err != nil {
		t.Fatal(err)
	}
	if m := getMessage(t, c, id); m.State != state {
		t.Fatalf("message %d is %s, want %s", id, m.State, state)
	}
	return id
}

// TestDeleteAnyState: a message that is not running is deleted by id
// whatever its state, waiting or finished (in a transaction too): nothing
// of it is left and its unique key is free. A running message is refused
// with ErrRunning and left as it is.
func TestDeleteAnyState(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openQDB(t, b)
		s := session(t, c)
		for i, st := range []baton.MessageState{baton.StateScheduled, baton.StateReady, baton.StateRetrying,
			baton.StateCompleted, baton.StateCancelled, baton.StateDead} {
			q := "del-" + string(st)
			id := messageIn(t, c, s, q, "k", st)
			var err error
			if i%2 == 0 {
				err = c.DeleteMessage(ctx, q, id)
			} else {
				tx := begin(t, db)
				err = c.DeleteMessageTx(ctx, tx, q, id)
				endTx(t, tx, true)
			}
			if err != nil {
				t.Fatalf("delete %s message %d: %v", st, id, err)
			}
			if _, err := c.Message(ctx, id); !errors.Is(err, baton.ErrNotFound) {
				t.Fatalf("deleted %s message %d: Message says %v, want ErrNotFound", st, id, err)
			}
			if list, _, err := c.ListMessages(ctx, baton.ListOptions{Queue: q}); err != nil || len(list) != 0 {
				t.Fatalf("queue of a deleted %s message lists %+v %v", st, list, err)
			}
			wantErr(t, c.DeleteMessage(ctx, q, id), baton.ErrNoMessage)
			again, err := c.Enqueue(ctx, q, []byte("again"), baton.EnqueueOptions{UniqueKey: "k", UniqueStates: everyState})
			if err != nil || again == id {
				t.Fatalf("unique key of a deleted %s message: %d %v, want a new message", st, again, err)
			}
		}
		id := messageIn(t, c, s, "del-running", "k", baton.StateRunning)
		wantErr(t, c.DeleteMessage(ctx, "del-running", id), baton.ErrRunning)
		if m := getMessage(t, c, id); m.State != baton.StateRunning {
			t.Fatalf("message %d after a refused delete is %s, want running", id, m.State)
		}
		wantErr(t, c.DeleteMessage(ctx, "del-ready", id), baton.ErrNoMessage)
	})
}

// stateOf is the state of message id ("" when it is gone).
func stateOf(t *testing.T, c *baton.Client, id int64) baton.MessageState {
	t.Helper()
	m, err := c.Message(ctxT(t), id)
	if errors.Is(err, baton.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return m.State
}

// wantStates checks the state of each message ("" for gone).
func wantStates(t *testing.T, c *baton.Client, want map[int64]baton.MessageState) {
	t.Helper()
	for id, st := range want {
		if got := stateOf(t, c, id); got != st {
			t.Fatalf("message %d is %q, want %q", id, got, st)
		}
	}
}

// bulk runs a bulk action and checks how many messages it acted on.
func bulk(t *testing.T, c *baton.Client, action baton.BulkAction, f baton.MessageFilter, want int) {
	t.Helper()
	n, err := c.Bulk(ctxT(t), action, f)
	if err != nil || n != want {
		t.Fatalf("bulk %s %+v: %d %v, want %d", action, f, n, err, want)
	}
}

// TestBulkByFilter: bulk cancel, retry and delete act on exactly the
// messages their filter selects, by queue, state, kind, age and limit;
// retried messages keep their ids.
func TestBulkByFilter(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, s := openQS(t, b)
		ctx := ctxT(t)
		x := baton.EnqueueOptions{Kind: "x"}
		ax := []int64{enqueue(t, c, "a", "1", x), enqueue(t, c, "a", "2", x), enqueue(t, c, "a", "3", x)}
		ay := enqueue(t, c, "a", "4", baton.EnqueueOptions{Kind: "y"})
		later := enqueue(t, c, "a", "5", baton.EnqueueOptions{Kind: "x", Delay: time.Hour})
		bx := enqueue(t, c, "b", "6", x)
		ready, cancelled := baton.StateReady, baton.StateCancelled

		// Cancel by queue, state and kind.
		bulk(t, c, baton.BulkCancel, baton.MessageFilter{Queue: "a", States: []baton.MessageState{ready}, Kind: "x"}, 3)
		wantStates(t, c, map[int64]baton.MessageState{ax[0]: cancelled, ax[1]: cancelled, ax[2]: cancelled,
			ay: ready, later: baton.StateScheduled, bx: ready})
		// Retry by state: under the same ids, ready; with a limit, only so many.
		bulk(t, c, baton.BulkRetry, baton.MessageFilter{Queue: "a", States: []baton.MessageState{cancelled}, Limit: 2}, 2)
		bulk(t, c, baton.BulkRetry, baton.MessageFilter{Queue: "a", States: []baton.MessageState{cancelled}}, 1)
		bulk(t, c, baton.BulkRetry, baton.MessageFilter{Queue: "a", States: []baton.MessageState{baton.StateScheduled}}, 1)
		wantStates(t, c, map[int64]baton.MessageState{ax[0]: ready, ax[1]: ready, ax[2]: ready, later: ready})
		// Cancel by kind alone, in every queue.
		bulk(t, c, baton.BulkCancel, baton.MessageFilter{Kind: "y"}, 1)
		wantStates(t, c, map[int64]baton.MessageState{ay: cancelled, bx: ready})

		// By age: only the messages created before the cut.
		time.Sleep(300 * time.Millisecond)
		cut := time.Now()
		time.Sleep(300 * time.Millisecond)
		young := enqueue(t, c, "b", "7", x)
		bulk(t, c, baton.BulkDelete, baton.MessageFilter{Queue: "b", OlderThan: time.Since(cut)}, 1)
		wantStates(t, c, map[int64]baton.MessageState{bx: "", young: ready})
		// And finished ones by when they finished.
		ms := claim(t, s, "b", baton.ClaimOptions{})
		if err := s.Ack(ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
		bulk(t, c, baton.BulkDelete, baton.MessageFilter{States: []baton.MessageState{baton.StateCompleted}, OlderThan: time.Since(cut)}, 0)
		bulk(t, c, baton.BulkDelete, baton.MessageFilter{States: []baton.MessageState{baton.StateCompleted}}, 1)

		// A running message is asked to stop by cancel, left by delete.
		ms = claim(t, s, "a", baton.ClaimOptions{})
		bulk(t, c, baton.BulkDelete, baton.MessageFilter{Queue: "a", States: []baton.MessageState{ready, cancelled}}, 4)
		run := ms[0].ID
		if m := getMessage(t, c, run); m.State != baton.StateRunning || m.CancelRequested {
			t.Fatalf("running message after a bulk delete: %+v", m)
		}
		bulk(t, c, baton.BulkCancel, baton.MessageFilter{Queue: "a"}, 1)
		if m := getMessage(t, c, run); m.State != baton.StateRunning || !m.CancelRequested {
			t.Fatalf("running message after a bulk cancel: %+v", m)
		}
		wantErr(t, s.Ack(ctx, ms[0]), baton.ErrCancelled)
		wantStates(t, c, map[int64]baton.MessageState{run: cancelled})
		// Pending messages (waiting for a parent) are cancelled and
		// deleted in bulk too, never made ready by a retry.
		parent := enqueue(t, c, "p", "parent", baton.EnqueueOptions{Delay: time.Hour})
		kids := []int64{enqueue(t, c, "p", "k1", baton.EnqueueOptions{After: []int64{parent}}),
			enqueue(t, c, "p", "k2", baton.EnqueueOptions{After: []int64{parent}})}
		pending := baton.StatePending
		if _, err := c.Bulk(ctx, baton.BulkRetry, baton.MessageFilter{Queue: "p", States: []baton.MessageState{pending}}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("bulk retry of pending messages: %v, want ErrInvalid", err)
		}
		bulk(t, c, baton.BulkCancel, baton.MessageFilter{Queue: "p", States: []baton.MessageState{pending}, Limit: 1}, 1)
		bulk(t, c, baton.BulkDelete, baton.MessageFilter{Queue: "p", States: []baton.MessageState{pending}}, 1)
		wantStates(t, c, map[int64]baton.MessageState{kids[0]: cancelled, kids[1]: "", parent: baton.StateScheduled})
		// Everything, said so.
		bulk(t, c, baton.BulkDelete, baton.MessageFilter{All: true}, 3)
		if list, _, err := c.ListMessages(ctx, baton.ListOptions{}); err != nil || len(list) != 0 {
			t.Fatalf("after deleting all: %+v %v", list, err)
		}
	})
}

// TestBulkBatchesWithWorker: a bulk delete of more messages than one
// batch, while a worker of another process handles the queue: every
// message is either handled or deleted, never both, and the count says
// how many were deleted. Then a bulk retry of the completed ones brings
// them all back under their ids.
func TestBulkBatchesWithWorker(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, other := openQPair(t, b)
		ctx := ctxT(t)
		ids := enqueueMany(t, c, "big", 1200, func(i int) baton.NewMessage { return baton.NewMessage{Payload: []byte("m")} })
		var mu sync.Mutex
		handled := map[int64]int{}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- other.Work(wctx, "big", func(_ context.Context, m *baton.Message) error {
				mu.Lock()
				handled[m.ID]++
				mu.Unlock()
				time.Sleep(time.Millisecond) // a handler's work: the worker must not drain all before the bulk starts
				return nil
			}, baton.WorkerOptions{Concurrency: 4})
		}()
		waitFor(t, "the worker's first message", func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) > 0 })
		n, err := c.Bulk(ctx, baton.BulkDelete, baton.MessageFilter{Queue: "big", States: []baton.MessageState{baton.StateReady}})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "no message left waiting or running", func() bool {
			st, err := c.Stats(ctx, "big")
			return err == nil && st.Unfinished() == 0
		})
		stop()
		<-done
		gone := 0
		for _, id := range ids {
			st := stateOf(t, c, id)
			switch {
			case st == "" && handled[id] == 0:
				gone++
			case st == baton.StateCompleted && handled[id] == 1:
			default:
				t.Fatalf("message %d is %q, handled %d times", id, st, handled[id])
			}
		}
		if gone != n || n == 0 {
			t.Fatalf("bulk delete said %d, %d messages are gone", n, gone)
		}
		bulk(t, c, baton.BulkRetry, baton.MessageFilter{Queue: "big", States: []baton.MessageState{baton.StateCompleted}}, len(ids)-n)
		list, _, err := c.ListMessages(ctx, baton.ListOptions{Queue: "big", State: baton.StateReady, Limit: 1000})
		if err != nil || len(list) != len(ids)-n {
			t.Fatalf("retried: %d ready, %v; want %d", len(list), err, len(ids)-n)
		}
		for _, m := range list {
			if !slices.Contains(ids, m.ID) {
				t.Fatalf("retried message has a new id %d", m.ID)
			}
		}
	})
}

// TestBulkInvalid: a bulk action without a filter, with an unknown
// action or state, a state it does not apply to, a negative age or limit,
// or an unknown queue is refused and changes nothing.
func TestBulkInvalid(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		id := enqueue(t, c, "v", "x")
		for _, tc := range []struct {
			action baton.BulkAction
			f      baton.MessageFilter
			want   error
		}{
			{baton.BulkDelete, baton.MessageFilter{}, baton.ErrInvalid},
			{baton.BulkCancel, baton.MessageFilter{Limit: 5}, baton.ErrInvalid},
			{"purge", baton.MessageFilter{Queue: "v"}, baton.ErrInvalid},
			{baton.BulkDelete, baton.MessageFilter{Queue: "v", States: []baton.MessageState{"bogus"}}, baton.ErrInvalid},
			{baton.BulkDelete, baton.MessageFilter{Queue: "v", States: []baton.MessageState{baton.StateRunning}}, baton.ErrInvalid},
			{baton.BulkRetry, baton.MessageFilter{Queue: "v", States: []baton.MessageState{baton.StateReady}}, baton.ErrInvalid},
			{baton.BulkCancel, baton.MessageFilter{Queue: "v", States: []baton.MessageState{baton.StateDead}}, baton.ErrInvalid},
			{baton.BulkDelete, baton.MessageFilter{Queue: "v", OlderThan: -time.Second}, baton.ErrInvalid},
			{baton.BulkDelete, baton.MessageFilter{Queue: "v", Limit: -1}, baton.ErrInvalid},
			{baton.BulkDelete, baton.MessageFilter{Queue: "bad name"}, baton.ErrInvalid},
			{baton.BulkDelete, baton.MessageFilter{Queue: "v", Kind: "bad kind"}, baton.ErrInvalid},
			{baton.BulkDelete, baton.MessageFilter{Queue: "none"}, baton.ErrUnknownQueue},
		} {
			n, err := c.Bulk(ctx, tc.action, tc.f)
			if n != 0 || !errors.Is(err, tc.want) {
				t.Fatalf("bulk %s %+v: %d %v, want %v", tc.action, tc.f, n, err, tc.want)
			}
		}
		if st := stateOf(t, c, id); st != baton.StateReady {
			t.Fatalf("message after refused bulk actions is %q", st)
		}
	})
}

// TestRunAt: a message enqueued with a run-at time in the future is
// scheduled, due then (not before), and served in run-at order; one in
// the past is ready now; a run-at time and a delay together are refused.
// Through Enqueue, EnqueueMany, EnqueueTx and EnqueueJob.
func TestRunAt(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openQDB(t, b)
		s := session(t, c)
		now := time.Now()
		at := func(d time.Duration) baton.EnqueueOptions { return baton.EnqueueOptions{RunAt: now.Add(d)} }
		late := enqueue(t, c, "at", "late", at(2*time.Hour))
		msgs := []baton.NewMessage{{Payload: []byte("soon"), EnqueueOptions: at(time.Hour)},
			{Payload: []byte("past"), EnqueueOptions: at(-time.Hour)}}
		ids, err := c.EnqueueMany(ctx, "at", msgs)
		if err != nil {
			t.Fatal(err)
		}
		soon, past := ids[0], ids[1]
		job, err := c.EnqueueJob(ctx, "at", emailArgs{To: "ann@example.com"}, at(3*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		tx := begin(t, db)
		inTx, err := c.EnqueueTx(ctx, tx, "at", []byte("tx"), at(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, true)
		for _, w := range []struct {
			id  int64
			due time.Duration
		}{{late, 2 * time.Hour}, {soon, time.Hour}, {job, 3 * time.Hour}} {
			m := getMessage(t, c, w.id)
			if m.State != baton.StateScheduled || m.RunAt.Sub(now.Add(w.due)).Abs() > time.Minute {
				t.Fatalf("message %d: %s due %v, want scheduled at %v", w.id, m.State, m.RunAt, now.Add(w.due))
			}
		}
		list, _, err := c.ListMessages(ctx, baton.ListOptions{Queue: "at", State: baton.StateScheduled})
		if err != nil || len(list) != 3 || list[0].ID != soon || list[1].ID != late || list[2].ID != job {
			t.Fatalf("scheduled in due order: %+v %v, want %d %d %d", list, err, soon, late, job)
		}
		got := claim(t, s, "at", baton.ClaimOptions{Max: 10})
		if len(got) != 2 || got[0].ID != past || (inTx != 0 && got[1].ID != inTx) {
			t.Fatalf("claimed %v, want the messages due in the past, %d and %d", got, past, inTx)
		}
		_, err = c.Enqueue(ctx, "at", []byte("both"), baton.EnqueueOptions{RunAt: now.Add(time.Hour), Delay: time.Hour})
		wantErr(t, err, baton.ErrInvalid)
		// RunNow by the bulk retry: the scheduled ones are due at once.
		bulk(t, c, baton.BulkRetry, baton.MessageFilter{Queue: "at", States: []baton.MessageState{baton.StateScheduled}}, 3)
		if got := claim(t, s, "at", baton.ClaimOptions{Max: 10}); len(got) != 3 {
			t.Fatalf("claimed %d retried scheduled messages, want 3", len(got))
		}
	})
}
