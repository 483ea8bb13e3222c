package jobtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/jobtest"
)

// requireFails runs check with a recorder and fails the test unless check
// failed with a message saying each of wants.
func requireFails(t *testing.T, what string, check func(tb testing.TB), wants ...string) {
	t.Helper()
	r := &recorder{TB: t}
	check(r)
	if !r.failed {
		t.Errorf("%s passed", what)
		return
	}
	for _, w := range wants {
		if !strings.Contains(r.msg, w) {
			t.Errorf("%s: the failure %q does not say %q", what, r.msg, w)
		}
	}
}

// TestRequireEnqueuedWith: the options variant matches on state,
// priority, key, attempt limit and run-at, and its failure names what
// differed, on every backend.
func TestRequireEnqueuedWith(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		ctx := context.Background()
		c := open(t, dsn)
		ann, err := c.EnqueueJob(ctx, "mail", welcome{To: "ann"}, baton.EnqueueOptions{Priority: 3, MaxAttempts: 5, Key: "k1",
			Tags: []string{"vip", "eu"}, Metadata: json.RawMessage(`{"customer":"acme","seats":3}`)})
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		bob, err := c.EnqueueJob(ctx, "mail", welcome{To: "bob"}, baton.EnqueueOptions{Delay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if got := jobtest.RequireEnqueuedWith(t, c, "mail", welcome{To: "ann"}, jobtest.Opts{}); got != ann {
			t.Errorf("RequireEnqueuedWith returned %d, want %d", got, ann)
		}
		if got := jobtest.RequireEnqueuedWith(t, c, "mail", welcome{To: "ann"}, jobtest.Opts{
			State: baton.StateReady, Priority: new(3), Key: "k1", MaxAttempts: 5, RunBefore: time.Now().Add(time.Minute),
			Tags: []string{"eu"}, Metadata: map[string]any{"seats": 3, "customer": "acme"}}); got != ann {
			t.Errorf("RequireEnqueuedWith returned %d, want %d", got, ann)
		}
		if got := jobtest.RequireEnqueuedWith(t, c, "mail", welcome{To: "bob"}, jobtest.Opts{State: baton.StateScheduled,
			Priority: new(0), RunAfter: before.Add(59 * time.Minute), RunBefore: time.Now().Add(61 * time.Minute)}); got != bob {
			t.Errorf("RequireEnqueuedWith returned %d, want %d", got, bob)
		}

		requireFails(t, "a wrong priority", func(tb testing.TB) {
			jobtest.RequireEnqueuedWith(tb, c, "mail", welcome{To: "ann"}, jobtest.Opts{Priority: new(4)})
		}, fmt.Sprintf("message %d has the arguments but priority 3, want 4", ann))
		requireFails(t, "a wrong state, key and attempt limit", func(tb testing.TB) {
			jobtest.RequireEnqueuedWith(tb, c, "mail", welcome{To: "ann"}, jobtest.Opts{State: baton.StateScheduled, Key: "k2", MaxAttempts: 2})
		}, "it is ready, want scheduled", `key "k1", want "k2"`, "max attempts 5, want 2")
		requireFails(t, "a missing tag and other metadata", func(tb testing.TB) {
			jobtest.RequireEnqueuedWith(tb, c, "mail", welcome{To: "ann"}, jobtest.Opts{Tags: []string{"us"},
				Metadata: map[string]any{"seats": 4, "plan": "pro"}})
		}, `tags [eu vip], want "us" among them`, `metadata "seats" is 3, want 4`, `metadata has no "plan", want "pro"`)
		requireFails(t, "a run-at out of the window", func(tb testing.TB) {
			jobtest.RequireEnqueuedWith(tb, c, "mail", welcome{To: "bob"}, jobtest.Opts{RunBefore: time.Now().Add(30 * time.Minute)})
		}, fmt.Sprintf("message %d has the arguments but run-at", bob), "after")
		requireFails(t, "a run-at before the window", func(tb testing.TB) {
			jobtest.RequireEnqueuedWith(tb, c, "mail", welcome{To: "ann"}, jobtest.Opts{RunAfter: time.Now().Add(time.Hour)})
		}, "run-at", "before")
		requireFails(t, "arguments nobody enqueued", func(tb testing.TB) {
			jobtest.RequireEnqueuedWith(tb, c, "mail", welcome{To: "cy"}, jobtest.Opts{})
		}, "has the arguments {To:cy", "{To:ann", "{To:bob")

		// A job that ran, while the history keeps it.
		ws := baton.NewWorkers()
		if err := baton.AddWorker(ws, func(context.Context, *baton.Job[welcome]) error { return nil }); err != nil {
			t.Fatal(err)
		}
		jobtest.Work(t, c, "mail", ws)
		jobtest.RequireEnqueuedWith(t, c, "mail", welcome{To: "ann"}, jobtest.Opts{State: baton.StateCompleted})
		requireFails(t, "a completed job as waiting", func(tb testing.TB) {
			jobtest.RequireEnqueuedWith(tb, c, "mail", welcome{To: "ann"}, jobtest.Opts{})
		}, "has the arguments {To:ann")
	})
}

// TestRequireManyEnqueued: several jobs, in order; the failure names each
// position that differs, and what is missing or extra.
func TestRequireManyEnqueued(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		ctx := context.Background()
		c := open(t, dsn)
		var ids []int64
		for _, to := range []string{"ann", "bob", "cy"} {
			id, err := c.EnqueueJob(ctx, "mail", welcome{To: to})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if _, err := c.EnqueueJob(ctx, "mail", other{}); err != nil {
			t.Fatal(err)
		}
		got := jobtest.RequireManyEnqueued(t, c, "mail", welcome{To: "ann"}, welcome{To: "bob"}, welcome{To: "cy"})
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Errorf("RequireManyEnqueued returned %v, want %v", got, ids)
		}
		requireFails(t, "the wrong order", func(tb testing.TB) {
			jobtest.RequireManyEnqueued(tb, c, "mail", welcome{To: "bob"}, welcome{To: "ann"}, welcome{To: "cy"})
		}, fmt.Sprintf("#0: message %d has {To:ann Tags:[]}, want {To:bob", ids[0]), fmt.Sprintf("#1: message %d has {To:bob", ids[1]))
		requireFails(t, "one missing", func(tb testing.TB) {
			jobtest.RequireManyEnqueued(tb, c, "mail", welcome{To: "ann"}, welcome{To: "bob"}, welcome{To: "cy"}, welcome{To: "dee"})
		}, "#3: missing {To:dee")
		requireFails(t, "one extra", func(tb testing.TB) {
			jobtest.RequireManyEnqueued(tb, c, "mail", welcome{To: "ann"}, welcome{To: "bob"})
		}, fmt.Sprintf("#2: message %d {To:cy Tags:[]} is extra", ids[2]))
		requireFails(t, "none wanted", func(tb testing.TB) { jobtest.RequireManyEnqueued[welcome](tb, c, "mail") }, "#0", "#2")
	})
}
