package baton_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// sweep runs c's dependency sweep now.
func sweep(t *testing.T, c *baton.Client) {
	t.Helper()
	if err := baton.SweepDeps(ctxT(t), c); err != nil {
		t.Fatalf("dependency sweep: %v", err)
	}
}

// wantState fails unless message id is in state.
func wantState(t *testing.T, c *baton.Client, id int64, want baton.MessageState) baton.MessageInfo {
	t.Helper()
	m := getMessage(t, c, id)
	if m.State != want {
		t.Fatalf("message %d is %s (%q), want %s", id, m.State, m.LastError, want)
	}
	return m
}

// claimIDs claims every ready message of q and returns their ids.
func claimIDs(t *testing.T, s *baton.Session, q string) ([]int64, []*baton.Message) {
	t.Helper()
	ms := claim(t, s, q, baton.ClaimOptions{Max: 50})
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	slices.Sort(ids)
	return ids, ms
}

// TestDepsWaitForAllParents: a child is pending, and no claim takes it,
// until every parent completed; a parent that completed before the child
// was enqueued counts at once.
func TestDepsWaitForAllParents(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, s := openQS(t, b)
		ctx := ctxT(t)
		p1, p2 := enqueue(t, c, "dq", "p1"), enqueue(t, c, "dq", "p2")
		child := enqueue(t, c, "dq", "child", baton.EnqueueOptions{After: []int64{p1, p2, p1}})
		wantState(t, c, child, baton.StatePending)
		if list, _, err := c.ListMessages(ctx, baton.ListOptions{Queue: "dq", State: baton.StatePending}); err != nil || len(list) != 1 || list[0].ID != child {
			t.Fatalf("pending messages: %+v %v", list, err)
		}
		if st := stats(t, c, "dq"); st.Pending != 1 || st.Ready != 2 {
			t.Fatalf("stats: %+v, want 1 pending and 2 ready", st)
		}
		ids, ms := claimIDs(t, s, "dq")
		if !slices.Equal(ids, []int64{p1, p2}) {
			t.Fatalf("claimed %v, want the parents %v", ids, []int64{p1, p2})
		}
		sweep(t, c)
		wantState(t, c, child, baton.StatePending)
		first := ms[0]
		if first.ID != p1 {
			first = ms[1]
		}
		ack(t, s, first)
		sweep(t, c)
		wantState(t, c, child, baton.StatePending)
		if ids, _ := claimIDs(t, s, "dq"); len(ids) != 0 {
			t.Fatalf("claimed %v with a parent still running", ids)
		}
		for _, m := range ms {
			if m != first {
				ack(t, s, m)
			}
		}
		sweep(t, c)
		wantState(t, c, child, baton.StateReady)
		if ids, ms := claimIDs(t, s, "dq"); !slices.Equal(ids, []int64{child}) {
			t.Fatalf("claimed %v, want the child %d", ids, child)
		} else {
			ack(t, s, ms...)
		}
		d, err := c.Dependencies(ctx, child)
		if err != nil || len(d.Parents) != 2 || d.Parents[0].ID != p1 || d.Parents[0].State != baton.StateCompleted {
			t.Fatalf("dependencies of %d: %+v %v", child, d, err)
		}
		if d, err := c.Dependencies(ctx, p1); err != nil || len(d.Children) != 1 || d.Children[0].ID != child {
			t.Fatalf("dependants of %d: %+v %v", p1, d, err)
		}

		// A parent completed already: ready at once, no sweep needed.
		late := enqueue(t, c, "dq", "late", baton.EnqueueOptions{After: []int64{p1, p2}})
		wantState(t, c, late, baton.StateReady)

		// In the caller's transaction, after a parent it enqueued.
		if b.Label != "sqlite" {
			c2, db, ctx := openQDB(t, b)
			tx := begin(t, db)
			p, err := c2.EnqueueTx(ctx, tx, "dq", []byte("txp"))
			if err != nil {
				t.Fatal(err)
			}
			ch, err := c2.EnqueueTx(ctx, tx, "dq", []byte("txc"), baton.EnqueueOptions{After: []int64{p}})
			if err != nil {
				t.Fatal(err)
			}
			endTx(t, tx, true)
			wantState(t, c2, ch, baton.StatePending)
		}
	})
}

// TestDepsConcurrentParents: two parents acknowledged at once by two
// processes, then swept at once by both, release their child exactly
// once, and never before both completed.
func TestDepsConcurrentParents(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c1, dsn := openQ(t, b)
		c2 := openDSN(t, dsn, fastRetry)
		s1, s2 := session(t, c1), session(t, c2)
		for round := range 5 {
			p1, p2 := enqueue(t, c1, "cq", "p1"), enqueue(t, c1, "cq", "p2")
			child := enqueue(t, c1, "cq", "child", baton.EnqueueOptions{After: []int64{p1, p2}})
			m1 := claim(t, s1, "cq", baton.ClaimOptions{})
			m2 := claim(t, s2, "cq", baton.ClaimOptions{})
			if len(m1) != 1 || len(m2) != 1 {
				t.Fatalf("round %d: claimed %d and %d, want a parent each", round, len(m1), len(m2))
			}
			var wg sync.WaitGroup
			for _, p := range []struct {
				c *baton.Client
				s *baton.Session
				m *baton.Message
			}{{c1, s1, m1[0]}, {c2, s2, m2[0]}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := p.s.Ack(ctxT(t), p.m); err != nil {
						t.Errorf("ack: %v", err)
					}
					if err := baton.SweepDeps(ctxT(t), p.c); err != nil {
						t.Errorf("sweep: %v", err)
					}
				}()
			}
			wg.Wait()
			wantState(t, c1, child, baton.StateReady)
			ids, ms := claimIDs(t, s1, "cq")
			if !slices.Equal(ids, []int64{child}) {
				t.Fatalf("round %d: claimed %v, want the child %d once", round, ids, child)
			}
			ack(t, s1, ms...)
			sweep(t, c2)
			if ids, _ := claimIDs(t, s2, "cq"); len(ids) != 0 {
				t.Fatalf("round %d: claimed %v after the child", round, ids)
			}
		}
	})
}

// TestDepsFailedParent: a parent that dies, is cancelled or deleted
// cancels its dependants, and theirs in turn; a dependant enqueued with
// AfterAnyOutcome runs instead and reads its parents' outcomes.
func TestDepsFailedParent(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, s := openQS(t, b)
		ctx := ctxT(t)
		dead := enqueue(t, c, "fq", "dead", baton.EnqueueOptions{MaxAttempts: 1})
		child := enqueue(t, c, "fq", "child", baton.EnqueueOptions{After: []int64{dead}})
		grand := enqueue(t, c, "fq", "grand", baton.EnqueueOptions{After: []int64{child}})
		anyway := enqueue(t, c, "fq", "anyway", baton.EnqueueOptions{After: []int64{dead}, AfterAnyOutcome: true})
		ms := claim(t, s, "fq", baton.ClaimOptions{Max: 10})
		if len(ms) != 1 || ms[0].ID != dead {
			t.Fatalf("claimed %v, want only %d", payloads(ms), dead)
		}
		if err := s.Fail(ctx, ms[0], "broken"); err != nil {
			t.Fatal(err)
		}
		sweep(t, c)
		if m := wantState(t, c, child, baton.StateCancelled); !strings.Contains(m.LastError, "parent") {
			t.Fatalf("cancelled child's error: %q", m.LastError)
		}
		wantState(t, c, grand, baton.StateCancelled)
		wantState(t, c, anyway, baton.StateReady)
		ms = claim(t, s, "fq", baton.ClaimOptions{Max: 10})
		if len(ms) != 1 || ms[0].ID != anyway {
			t.Fatalf("claimed %v, want only %d", payloads(ms), anyway)
		}
		if o, ok := ms[0].Batch(); !ok || o.Parents != 1 || o.Dead != 1 || !slices.Equal(o.Failed, []int64{dead}) {
			t.Fatalf("outcome: %+v %v", o, ok)
		}
		ack(t, s, ms...)

		// A cancelled parent (waiting) and a deleted one.
		for _, end := range []string{"cancel", "delete"} {
			p := enqueue(t, c, "fq", "p", baton.EnqueueOptions{Delay: 1 << 40})
			ch := enqueue(t, c, "fq", "ch", baton.EnqueueOptions{After: []int64{p}})
			gr := enqueue(t, c, "fq", "gr", baton.EnqueueOptions{After: []int64{ch}})
			var err error
			if end == "cancel" {
				err = c.CancelMessage(ctx, p)
			} else {
				err = c.DeleteMessage(ctx, "fq", p)
			}
			if err != nil {
				t.Fatalf("%s: %v", end, err)
			}
			sweep(t, c)
			wantState(t, c, ch, baton.StateCancelled)
			wantState(t, c, gr, baton.StateCancelled)
		}

		// A pending message can be cancelled or deleted itself; RetryNow
		// refuses to run it early.
		p := enqueue(t, c, "fq", "p", baton.EnqueueOptions{Delay: 1 << 40})
		ch := enqueue(t, c, "fq", "ch", baton.EnqueueOptions{After: []int64{p}})
		if err := c.RetryNow(ctx, "fq", ch); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("RetryNow of a pending message: %v", err)
		}
		if err := c.CancelMessage(ctx, ch); err != nil {
			t.Fatal(err)
		}
		wantState(t, c, ch, baton.StateCancelled)
	})
}

// TestDepsBadInput: an unknown parent, a unique key with parents, and a
// workflow with an unknown step, a cycle or a duplicate name are
// ErrInvalid, and nothing is inserted.
func TestDepsBadInput(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		_, err := c.EnqueueMany(ctx, "bq", []baton.NewMessage{{Payload: []byte("ok")},
			{Payload: []byte("bad"), EnqueueOptions: baton.EnqueueOptions{After: []int64{1 << 40}}}})
		if !errors.Is(err, baton.ErrInvalid) || !strings.Contains(err.Error(), "no such message") {
			t.Fatalf("unknown parent: %v", err)
		}
		p := enqueue(t, c, "bq", "p")
		if _, err := c.Enqueue(ctx, "bq", []byte("u"), baton.EnqueueOptions{After: []int64{p}, UniqueKey: "u"}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("unique key with parents: %v", err)
		}
		if _, err := c.EnqueueMany(ctx, "bq", []baton.NewMessage{{Payload: []byte("u"), EnqueueOptions: baton.EnqueueOptions{UniqueKey: "u"}},
			{Payload: []byte("c"), EnqueueOptions: baton.EnqueueOptions{After: []int64{p}}}}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("a unique key beside parents: %v", err)
		}
		// Among known parents, the unknown one is named.
		if _, err := c.Enqueue(ctx, "bq", []byte("u"), baton.EnqueueOptions{After: []int64{p, 1 << 41, p}}); !errors.Is(err, baton.ErrInvalid) ||
			!strings.Contains(err.Error(), fmt.Sprintf("parent %d: no such message", int64(1<<41))) {
			t.Fatalf("an unknown parent beside a known one: %v", err)
		}
		if _, err := c.Enqueue(ctx, "bq", []byte("u"), baton.EnqueueOptions{After: []int64{-1}}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("negative parent: %v", err)
		}
		step := func(name string, after ...string) baton.WorkflowStep {
			return baton.WorkflowStep{Name: name, Queue: "bq", Payload: []byte(name), After: after}
		}
		for what, steps := range map[string][]baton.WorkflowStep{
			"unknown step": {step("a"), step("b", "nope")},
			"cycle":        {step("a"), step("b", "c"), step("c", "b")},
			"itself":       {step("a", "a")},
			"duplicate":    {step("a"), step("a")},
			"no name":      {step("")},
			"bad parent":   {step("a"), {Name: "b", Queue: "bq", Options: baton.EnqueueOptions{After: []int64{1 << 40}}}},
			"bad queue":    {step("a"), {Name: "b", Queue: "no queue"}},
			"unique key":   {step("a"), {Name: "b", Queue: "bq", Payload: []byte("b"), Options: baton.EnqueueOptions{UniqueKey: "u"}}},
			"empty":        {},
		} {
			if _, err := c.EnqueueWorkflow(ctx, steps); !errors.Is(err, baton.ErrInvalid) {
				t.Fatalf("workflow with %s: %v", what, err)
			}
		}
		list, _, err := c.ListMessages(ctx, baton.ListOptions{Queue: "bq"})
		if err != nil || len(list) != 1 || list[0].ID != p {
			t.Fatalf("after bad input, the queue holds %+v %v; want only %d", list, err, p)
		}
	})
}

// TestWorkflow: a workflow's steps run parents first, are listed together
// with their edges, and EnqueueWorkflowTx inserts them with the caller's
// commit only.
func TestWorkflow(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, db, ctx := openQDB(t, b)
		s := session(t, c)
		steps := []baton.WorkflowStep{
			{Name: "d", Queue: "wq", Payload: []byte("d"), After: []string{"b", "c"}},
			{Name: "b", Queue: "wq", Payload: []byte("b"), After: []string{"a"}},
			{Name: "c", Queue: "wq2", Payload: []byte("c"), After: []string{"a"}},
			{Name: "a", Queue: "wq", Payload: []byte("a")},
		}
		ids, err := c.EnqueueWorkflow(ctx, steps)
		if err != nil {
			t.Fatal(err)
		}
		a, bb, cc, d := ids[3], ids[1], ids[2], ids[0]
		w, err := c.Workflow(ctx, slices.Min(ids))
		if err != nil || len(w.Steps) != 4 || w.Steps[0].Name != "a" || w.Steps[0].ID != a {
			t.Fatalf("workflow: %+v %v", w, err)
		}
		for _, st := range w.Steps {
			if st.Name == "d" && !slices.Equal(st.After, []int64{bb, cc}) {
				t.Fatalf("step d comes after %v, want %v", st.After, []int64{bb, cc})
			}
		}
		if dep, err := c.Dependencies(ctx, d); err != nil || dep.Workflow != a || dep.Step != "d" {
			t.Fatalf("dependencies of d: %+v %v", dep, err)
		}
		run := func(q string, want ...int64) {
			t.Helper()
			got, ms := claimIDs(t, s, q)
			if !slices.Equal(got, want) {
				t.Fatalf("claimed %v from %s, want %v", got, q, want)
			}
			ack(t, s, ms...)
			sweep(t, c)
		}
		run("wq2")
		run("wq", a)
		run("wq", bb)
		wantState(t, c, d, baton.StatePending)
		run("wq2", cc)
		run("wq", d)

		tx := begin(t, db)
		if b.Label == "sqlite" {
			return // the program's pool would wait for the client's write lock
		}
		ids, err = c.EnqueueWorkflowTx(ctx, tx, []baton.WorkflowStep{{Name: "x", Queue: "wt", Payload: []byte("x")}, {Name: "y", Queue: "wt", Payload: []byte("y"), After: []string{"x"}}})
		if err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, false)
		if _, err := c.Workflow(ctx, ids[0]); !errors.Is(err, baton.ErrNotFound) {
			t.Fatalf("rolled-back workflow: %v", err)
		}
		tx = begin(t, db)
		if ids, err = c.EnqueueWorkflowTx(ctx, tx, []baton.WorkflowStep{{Name: "x", Queue: "wt", Payload: []byte("x")}, {Name: "y", Queue: "wt", Payload: []byte("y"), After: []string{"x"}}}); err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, true)
		wantState(t, c, ids[0], baton.StateReady)
		wantState(t, c, ids[1], baton.StatePending)
	})
}

// TestBatch: a batch's callback is released once, after every job
// finished (completed, dead, cancelled), with their outcomes; also when
// the last two finish at once in two processes.
func TestBatch(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c1, dsn := openQ(t, b)
		c2 := openDSN(t, dsn, fastRetry)
		s1, s2 := session(t, c1), session(t, c2)
		ctx := ctxT(t)
		job := func(name string) baton.WorkflowStep {
			return baton.WorkflowStep{Name: name, Queue: "jobs", Payload: []byte(name), Options: baton.EnqueueOptions{MaxAttempts: 1}}
		}
		ids, err := c1.EnqueueWorkflow(ctx, baton.Batch([]baton.WorkflowStep{job("j1"), job("j2"), job("j3"), job("j4")},
			baton.WorkflowStep{Name: "done", Queue: "callbacks", Payload: []byte("cb")}))
		if err != nil {
			t.Fatal(err)
		}
		cb := ids[4]
		wantState(t, c1, cb, baton.StatePending)
		if err := c1.CancelMessage(ctx, ids[2]); err != nil { // j3, waiting
			t.Fatal(err)
		}
		ms := claim(t, s1, "jobs", baton.ClaimOptions{Max: 2})
		ms = append(ms, claim(t, s2, "jobs", baton.ClaimOptions{Max: 10})...)
		if len(ms) != 3 {
			t.Fatalf("claimed %v", payloads(ms))
		}
		if err := s1.Fail(ctx, ms[1], "broken"); err != nil { // j2
			t.Fatal(err)
		}
		sweep(t, c1)
		wantState(t, c1, cb, baton.StatePending)
		// j1 and j4 finish at once in two processes.
		var wg sync.WaitGroup
		for _, p := range []struct {
			c *baton.Client
			s *baton.Session
			m *baton.Message
		}{{c1, s1, ms[0]}, {c2, s2, ms[2]}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.s.Ack(ctxT(t), p.m); err != nil {
					t.Errorf("finish: %v", err)
				}
				if err := baton.SweepDeps(ctxT(t), p.c); err != nil {
					t.Errorf("sweep: %v", err)
				}
			}()
		}
		wg.Wait()
		got := claim(t, s2, "callbacks", baton.ClaimOptions{Max: 10})
		if len(got) != 1 || got[0].ID != cb {
			t.Fatalf("callbacks claimed: %v, want %d once", payloads(got), cb)
		}
		o, ok := got[0].Batch()
		if !ok || o.Parents != 4 || o.Completed != 2 || o.Dead != 1 || o.Cancelled != 1 || !slices.Equal(o.Failed, []int64{ids[1], ids[2]}) {
			t.Fatalf("batch outcome: %+v %v", o, ok)
		}
		ack(t, s2, got...)
		sweep(t, c1)
		if more := claim(t, s1, "callbacks", baton.ClaimOptions{Max: 10}); len(more) != 0 {
			t.Fatalf("callback released again: %v", payloads(more))
		}
	})
}

// TestDepsWorkers: workers run a chain in order with no sweep but their
// own (after each acknowledgement).
func TestDepsWorkers(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		ids, err := c.EnqueueWorkflow(ctx, []baton.WorkflowStep{
			{Name: "1", Queue: "chain", Payload: []byte("1")},
			{Name: "2", Queue: "chain", Payload: []byte("2"), After: []string{"1"}},
			{Name: "3", Queue: "chain", Payload: []byte("3"), After: []string{"2"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan string, 3)
		go func() {
			_ = c.Work(ctx, "chain", func(ctx context.Context, m *baton.Message) error {
				ran <- string(m.Payload)
				return nil
			}, baton.WorkerOptions{Concurrency: 4})
		}()
		var order []string
		for range 3 {
			select {
			case p := <-ran:
				order = append(order, p)
			case <-ctx.Done():
				t.Fatalf("ran %v, then nothing", order)
			}
		}
		if !slices.Equal(order, []string{"1", "2", "3"}) {
			t.Fatalf("ran %v", order)
		}
		_ = ids
	})
}

// TestDepsPurge: the edges and workflow steps of messages that left the
// tables (deleted, or pruned from the history) are purged.
func TestDepsPurge(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		p := enqueue(t, c, "pq", "p", baton.EnqueueOptions{Delay: 1 << 40})
		ch := enqueue(t, c, "pq", "ch", baton.EnqueueOptions{After: []int64{p}})
		ids, err := c.EnqueueWorkflow(ctx, []baton.WorkflowStep{{Name: "a", Queue: "pq", Payload: []byte("a"), Options: baton.EnqueueOptions{Delay: 1 << 40}},
			{Name: "b", Queue: "pq", Payload: []byte("b"), After: []string{"a"}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := baton.PurgeDeps(ctx, c); err != nil {
			t.Fatal(err)
		}
		if d, err := c.Dependencies(ctx, p); err != nil || len(d.Children) != 1 {
			t.Fatalf("purged while its child waits: %+v %v", d, err)
		}
		for _, id := range []int64{ch, ids[1], ids[0]} { // children first: a deleted parent cancels them
			if err := c.DeleteMessage(ctx, "pq", id); err != nil {
				t.Fatal(err)
			}
		}
		if err := baton.PurgeDeps(ctx, c); err != nil {
			t.Fatal(err)
		}
		if d, err := c.Dependencies(ctx, p); err != nil || len(d.Children) != 0 {
			t.Fatalf("after the child was deleted and a purge: %+v %v", d, err)
		}
		if _, err := c.Workflow(ctx, ids[0]); !errors.Is(err, baton.ErrNotFound) {
			t.Fatalf("a workflow whose steps were deleted, after a purge: %v", err)
		}
	})
}
