// Package jobtest helps the tests of programs that enqueue and handle
// baton messages: assert that messages of a kind were enqueued with given
// arguments and options (committed, or in the caller's transaction; one,
// or several in order), run one job through the real worker runtime and
// read its outcome, and run workers synchronously until nothing is ready.
//
//	func TestSignup(t *testing.T) {
//		c := openClient(t) // any baton.Client, SQLite in a t.TempDir() is enough
//		signup(ctx, c, "ann@example.com")
//		jobtest.RequireEnqueuedWith(t, c, "mail", welcomeArgs{To: "ann@example.com"}, jobtest.Opts{Priority: new(1)})
//		jobtest.Work(t, c, "mail", workers)
//	}
//
//	func TestWelcomeHandler(t *testing.T) {
//		out := jobtest.WorkOne(t, openClient(t), workers, welcomeArgs{To: "nobody"})
//		if out.State != baton.StateDead || !errors.Is(out.Err, errNoMailbox) {
//			t.Fatalf("%+v", out)
//		}
//	}
package jobtest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// timeout bounds every call of this package.
const timeout = time.Minute

// Enqueued returns the arguments of the waiting messages (scheduled, ready
// or retrying) of T's kind in queue, in claim order, and their ids. It
// fails the test when they cannot be read or do not decode.
func Enqueued[T baton.JobArgs](tb testing.TB, c *baton.Client, queue string) ([]T, []int64) {
	tb.Helper()
	var zero T
	ms := list(tb, c, queue, zero.Kind(), waiting)
	args := make([]T, len(ms))
	ids := make([]int64, len(ms))
	for i, m := range ms {
		args[i], ids[i] = decode[T](tb, m), m.ID
	}
	return args, ids
}

// RequireEnqueued fails the test unless a waiting message of want's kind
// in queue has arguments equal to want (reflect.DeepEqual after a JSON
// round trip), and returns that message's id.
func RequireEnqueued[T baton.JobArgs](tb testing.TB, c *baton.Client, queue string, want T) int64 {
	tb.Helper()
	args, ids := Enqueued[T](tb, c, queue)
	return requireIn(tb, queue, want, args, ids, "")
}

// EnqueuedTx is Enqueued as the caller's transaction tx sees the queue (a
// *sql.Tx, or a pgx transaction through postgres.PgxTx): messages it
// enqueued are there before it commits.
func EnqueuedTx[T baton.JobArgs](tb testing.TB, c *baton.Client, tx baton.Execer, queue string) ([]T, []int64) {
	tb.Helper()
	var zero T
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ids, payloads, err := c.WaitingTx(ctx, tx, queue, zero.Kind())
	if err != nil {
		tb.Fatalf("jobtest: list the waiting messages of kind %q in %s in the transaction: %v", zero.Kind(), queue, err)
	}
	args := make([]T, len(ids))
	for i, p := range payloads {
		if err := json.Unmarshal(p, &args[i]); err != nil {
			tb.Fatalf("jobtest: message %d of kind %q: the arguments do not decode: %v", ids[i], zero.Kind(), err)
		}
	}
	return args, ids
}

// RequireEnqueuedTx is RequireEnqueued in the caller's transaction tx: a
// message the transaction enqueued passes before it commits.
func RequireEnqueuedTx[T baton.JobArgs](tb testing.TB, c *baton.Client, tx baton.Execer, queue string, want T) int64 {
	tb.Helper()
	args, ids := EnqueuedTx[T](tb, c, tx, queue)
	return requireIn(tb, queue, want, args, ids, " in the transaction")
}

// requireIn returns the id of the first of args equal to want, and fails
// the test when there is none.
func requireIn[T baton.JobArgs](tb testing.TB, queue string, want T, args []T, ids []int64, where string) int64 {
	tb.Helper()
	norm := roundTrip(tb, want)
	for i, a := range args {
		if reflect.DeepEqual(a, norm) {
			return ids[i]
		}
	}
	tb.Fatalf("jobtest: no waiting message of kind %q in %s%s has the arguments %+v (waiting: %+v)", want.Kind(), queue, where, want, args)
	return 0
}

// RequireNotEnqueued fails the test if a waiting message of T's kind in
// queue exists.
func RequireNotEnqueued[T baton.JobArgs](tb testing.TB, c *baton.Client, queue string) {
	tb.Helper()
	var zero T
	if args, ids := Enqueued[T](tb, c, queue); len(args) > 0 {
		tb.Fatalf("jobtest: %d waiting messages of kind %q in %s (ids %v): %+v", len(args), zero.Kind(), queue, ids, args)
	}
}

// roundTrip is v as it comes back from its JSON (what a worker sees).
func roundTrip[T any](tb testing.TB, v T) T {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("jobtest: %+v does not encode: %v", v, err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("jobtest: %+v does not decode: %v", v, err)
	}
	return out
}

// Work runs the workers on queue in the calling goroutine until no message
// is ready and none is in flight (messages backing off before a retry, and
// delayed ones, stay). It fails the test if the worker fails, and if any
// attempt failed: a handler's error or panic, or a message whose kind has
// no worker in ws; the failure names each such message, its kind and its
// error. A test of failing jobs runs them with Client.WorkJobs and
// WorkerOptions{Drain: true} instead, and reads the outcome with
// Client.Message.
func Work(tb testing.TB, c *baton.Client, queue string, ws *baton.Workers, opts ...baton.WorkerOptions) {
	tb.Helper()
	var o baton.WorkerOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Drain = true
	var mu sync.Mutex
	var failed []string
	hook := o.OnError
	o.OnError = func(m *baton.Message, e baton.AttemptError) {
		kind := m.Kind
		if kind == "" {
			kind = "(none)"
		}
		mu.Lock()
		failed = append(failed, fmt.Sprintf("message %d of kind %s, attempt %d: %s", m.ID, kind, e.Attempt, e.Error))
		mu.Unlock()
		if hook != nil {
			hook(m, e)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.WorkJobs(ctx, queue, ws, o); err != nil {
		tb.Fatalf("jobtest: work %s: %v", queue, err)
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) > 0 {
		tb.Fatalf("jobtest: work %s: %d failed attempts:\n\t%s", queue, len(failed), strings.Join(failed, "\n\t"))
	}
}
