package bus

import (
	"slices"
	"sync"
	"testing"

	"github.com/batonhq/baton/driver"
)

// answerOf returns the one answer on ch, or fails if none came.
func answerOf(t *testing.T, ch <-chan driver.Request) driver.Request {
	t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatal("no answer")
		return driver.Request{}
	}
}

func noAnswer(t *testing.T, ch <-chan driver.Request) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("unexpected answer %+v", r)
	default:
	}
}

func TestLocksSettle(t *testing.T) {
	var states []bool
	l := NewLocks(func(w bool) { states = append(states, w) })
	pending := l.Add(1, "s1", 0)
	granted := l.Add(2, "s1", 0)
	reused := l.Add(3, "s1", 0)
	gone := l.Add(4, "s2", 0)
	snap := l.Snapshot()
	if ids := slices.Sorted(slices.Values(snap.IDs)); !slices.Equal(ids, []int64{1, 2, 3, 4}) {
		t.Fatalf("IDs = %v", ids)
	}
	l.Settle(snap, map[int64]driver.Request{
		1: {ID: 1, SessionID: "s1", Status: driver.StatusPending},
		2: {ID: 2, SessionID: "s1", Status: driver.StatusGranted},
		3: {ID: 3, SessionID: "s9", Status: driver.StatusGranted}, // the id now belongs to another session
	})
	noAnswer(t, pending)
	if r := answerOf(t, granted); r.Status != driver.StatusGranted {
		t.Errorf("granted request answered %+v", r)
	}
	if r := answerOf(t, reused); r.Status != "" || r.ID != 3 {
		t.Errorf("reused id answered %+v, want an empty request", r)
	}
	if r := answerOf(t, gone); r.Status != "" || r.ID != 4 {
		t.Errorf("vanished request answered %+v, want an empty request", r)
	}
	if !l.Waits(1) || l.Waits(2) || !l.Waiting() {
		t.Errorf("after settling, request 1 alone must wait")
	}
	l.Grant([]driver.Request{{ID: 1, Status: driver.StatusGranted}, {ID: 99, Status: driver.StatusGranted}})
	if r := answerOf(t, pending); r.Status != driver.StatusGranted {
		t.Errorf("grant answered %+v", r)
	}
	if l.Waiting() || states[len(states)-1] {
		t.Errorf("nothing waits, yet Waiting is %v and the last change said %v", l.Waiting(), states[len(states)-1])
	}
}

func TestLocksEndSessionAndRemove(t *testing.T) {
	l := NewLocks(func(bool) {})
	a := l.Add(1, "s1", 0)
	b := l.Add(2, "s2", 0)
	c := l.Add(3, "s1", 0)
	l.EndSession("s1")
	if r := answerOf(t, a); r.ID != 1 || r.Status != "" {
		t.Errorf("ended session's waiter answered %+v", r)
	}
	answerOf(t, c)
	noAnswer(t, b)
	l.Remove(2)
	l.Grant([]driver.Request{{ID: 2, Status: driver.StatusGranted}})
	noAnswer(t, b)
	if l.Waiting() {
		t.Error("a removed waiter still counts")
	}
}

func TestQueues(t *testing.T) {
	q := NewQueues(nil)
	a, b, other := q.Add("a"), q.Add("a"), q.Add("b")
	if q.Count("a") != 2 || q.Count("b") != 1 {
		t.Fatalf("counts %d %d", q.Count("a"), q.Count("b"))
	}
	q.Wake("a")
	q.Wake("a") // a second wake-up before the first is taken is one
	for _, ch := range []chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Error("consumer of a not woken")
		}
		select {
		case <-ch:
			t.Error("two wake-ups queued")
		default:
		}
	}
	select {
	case <-other:
		t.Error("consumer of b woken by a")
	default:
	}
	q.WakeAll()
	<-other
	q.Remove("a", a)
	q.Remove("a", b)
	if q.Count("a") != 0 || len(q.waiters) != 1 {
		t.Errorf("removed consumers remain: %v", q.waiters)
	}
}

func TestCoalescer(t *testing.T) {
	c := NewCoalescer()
	if !c.Start("q") {
		t.Fatal("first start must run")
	}
	for range 2 {
		if c.Start("q") {
			t.Fatal("a start while one runs must not run")
		}
	}
	if !c.Start("other") {
		t.Fatal("keys are independent")
	}
	if !c.Done("q") {
		t.Fatal("starts during a run make one more run")
	}
	if c.Done("q") {
		t.Fatal("one more run only")
	}
	if !c.Start("q") {
		t.Fatal("after the runs end a start runs again")
	}
}

func TestUsers(t *testing.T) {
	var mu sync.Mutex
	var got []bool
	u := NewUsers(func(on bool) { mu.Lock(); got = append(got, on); mu.Unlock() })
	u.In()
	u.In()
	u.Out()
	u.Out()
	u.In()
	if !slices.Equal(got, []bool{true, false, true}) {
		t.Errorf("switches %v, want on, off, on", got)
	}
}

// A grant is taken only by a waiter of its session and lock call (request
// ids can repeat); a grant with no waiter asks for a look, since its
// waiter may be about to register.
func TestLocksGrantMatchesCall(t *testing.T) {
	l := NewLocks(func(bool) {})
	if look := l.Grant([]driver.Request{{ID: 7, SessionID: "s1", CallID: 5, Status: driver.StatusGranted}}); !look {
		t.Fatal("a grant with no waiter did not ask for a look")
	}
	ch := l.Add(7, "s1", 6)
	if look := l.Grant([]driver.Request{{ID: 7, SessionID: "s1", CallID: 5, Status: driver.StatusGranted}}); look {
		t.Fatal("a grant of another call asked for a look")
	}
	noAnswer(t, ch) // an earlier call's grant under the same id
	l.Grant([]driver.Request{{ID: 7, SessionID: "s0", CallID: 6, Status: driver.StatusGranted}})
	noAnswer(t, ch) // another session's
	l.Grant([]driver.Request{{ID: 7, SessionID: "s1", CallID: 6, Status: driver.StatusGranted, Token: 3}})
	if r := answerOf(t, ch); r.Token != 3 {
		t.Fatalf("answered %+v", r)
	}
	// A grant naming neither (an older releaser's) is taken by the id alone.
	ch = l.Add(8, "s1", 9)
	l.Grant([]driver.Request{{ID: 8, Status: driver.StatusGranted, Token: 4}})
	if r := answerOf(t, ch); r.Token != 4 {
		t.Fatalf("answered %+v", r)
	}
}

// A grant can come twice (PostgreSQL's release hands it in its process and
// its NOTIFY follows, or comes first): the second coming finds its waiter
// answered and asks for no look, whichever path answered it; a grant of
// another call under the same id still does. Forgotten after recentCap
// later grants, it costs a look again.
func TestLocksGrantTwice(t *testing.T) {
	l := NewLocks(func(bool) {})
	g := driver.Request{ID: 7, SessionID: "s1", CallID: 5, Status: driver.StatusGranted, Token: 2}
	ch := l.Add(7, "s1", 5)
	if look := l.Grant([]driver.Request{g}); look {
		t.Fatal("a grant its waiter took asked for a look")
	}
	answerOf(t, ch)
	if look := l.Grant([]driver.Request{g}); look {
		t.Fatal("the same grant again asked for a look")
	}
	other := g
	other.CallID = 6
	if look := l.Grant([]driver.Request{other}); !look {
		t.Fatal("another call's grant under the id did not ask for a look")
	}
	// Answered by a status read, then the grant comes.
	ch = l.Add(8, "s1", 9)
	l.Settle(l.Snapshot(), map[int64]driver.Request{8: {ID: 8, SessionID: "s1", CallID: 9, Status: driver.StatusGranted}})
	answerOf(t, ch)
	if look := l.Grant([]driver.Request{{ID: 8, SessionID: "s1", CallID: 9, Status: driver.StatusGranted}}); look {
		t.Fatal("a grant its status read answered asked for a look")
	}
	// An abort is no grant: a grant after it looks.
	ch = l.Add(9, "s1", 10)
	l.Settle(l.Snapshot(), map[int64]driver.Request{9: {ID: 9, SessionID: "s1", CallID: 10, Status: driver.StatusDeadlock}})
	answerOf(t, ch)
	if look := l.Grant([]driver.Request{{ID: 9, SessionID: "s1", CallID: 10, Status: driver.StatusGranted}}); !look {
		t.Fatal("a grant after an abort did not ask for a look")
	}
	for i := range recentCap {
		id := int64(100 + i)
		ch := l.Add(id, "s2", 1)
		l.Grant([]driver.Request{{ID: id, SessionID: "s2", CallID: 1, Status: driver.StatusGranted}})
		answerOf(t, ch)
	}
	if look := l.Grant([]driver.Request{g}); !look {
		t.Fatal("a grant forgotten long ago did not ask for a look")
	}
	if look := l.Grant([]driver.Request{{ID: 100 + recentCap - 1, SessionID: "s2", CallID: 1, Status: driver.StatusGranted}}); look {
		t.Fatal("the latest grant was forgotten")
	}
}

// TestLocksSettleLater: a status read answers only the waiters registered
// before it began; a later request under the same id (SQLite reuses a
// deleted row's id) is not answered with the earlier one's row.
func TestLocksSettleLater(t *testing.T) {
	l := NewLocks(func(bool) {})
	first := l.Add(1, "s1", 5)
	snap := l.Snapshot()
	l.Grant([]driver.Request{{ID: 1, SessionID: "s1", CallID: 5, Status: driver.StatusGranted}})
	answerOf(t, first)
	later := l.Add(1, "s1", 6)
	l.Settle(snap, map[int64]driver.Request{1: {ID: 1, SessionID: "s1", CallID: 5, Status: driver.StatusGranted}})
	noAnswer(t, later)
	if !l.Waits(1) {
		t.Fatal("the later request no longer waits")
	}
}

// TestQueuesFirstAndNames: first is called when a consumer registers while
// none waits, and only then; Names lists the waited queues.
func TestQueuesFirstAndNames(t *testing.T) {
	firsts := 0
	q := NewQueues(func() { firsts++ })
	if q.Waiting() || len(q.Names()) != 0 {
		t.Fatal("an empty registry has waiters")
	}
	b := q.Add("b")
	a := q.Add("a")
	q.Add("b")
	if got := q.Names(); !slices.Equal(got, []string{"a", "b"}) || !q.Waiting() || firsts != 1 {
		t.Fatalf("Names %q, Waiting %v, first called %d times; want [a b], true, once", got, q.Waiting(), firsts)
	}
	q.Remove("b", b)
	q.Remove("a", a)
	if got := q.Names(); !slices.Equal(got, []string{"b"}) || firsts != 1 {
		t.Fatalf("Names %q after removals, first called %d times", got, firsts)
	}
	for ch := range q.waiters["b"] {
		q.Remove("b", ch)
	}
	if q.Waiting() {
		t.Fatal("waiting after every consumer left")
	}
	q.Add("c")
	if firsts != 2 {
		t.Fatalf("first called %d times after a consumer came to an empty registry again, want 2", firsts)
	}
}
