package drivertest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/lockcore"
)

// testRequester holds a backend's one-call slow path (driver.Requester) to
// the rule of lockcore.Grants: on random queues of granted, waiting and
// withdrawn requests (some granted by the fast path, however the backend
// stores those), a new request is granted exactly when Grants would grant
// it behind them, is stored as the rule says, and moves the counters and
// the fence as the engine's own transaction would.
func testRequester(t *testing.T, d driver.Driver) {
	rq, ok := d.(driver.Requester)
	if !ok {
		t.Skipf("%s takes the slow path in the engine's transaction", d.Name())
	}
	for _, s := range ruleSessions {
		newSession(t, d, s, "C"+s, hour)
	}
	rnd := rand.New(rand.NewPCG(7, 11))
	for round := range 60 {
		id := driver.Ident{Kind: driver.KindService, NS: "rule", Name: fmt.Sprint(round)}
		fillRandomQueue(t, d, rnd, id)
		checkRequestRule(t, d, rq, rnd, round, id)
	}
	// A session the database does not have (reaped, or lost in a crash).
	_, err := rq.LockRequest(testCtx(t), driver.RequestParams{SessionID: "gone", ClientID: "Cgone", Ident: identA, Mode: driver.ModeWrite, CallID: 1})
	failIf(t, !errors.Is(err, driver.ErrNoSession), "a request of a session the database does not have: %v, want ErrNoSession", err)
	wantNoRequests(t, d, "gone", "a request of a missing session was stored")
}

var (
	ruleSessions = []string{"s1", "s2", "s3"}
	ruleModes    = []driver.LockMode{driver.ModeRead, driver.ModeWrite}
	ruleStatuses = []driver.RequestStatus{driver.StatusGranted, driver.StatusPending, driver.StatusPending, driver.StatusDeadlock}
)

// fillRandomQueue queues random requests on id: the first instance by the
// fast path, as most locks begin (two times in three), then up to four
// requests granted, waiting or withdrawn.
func fillRandomQueue(t *testing.T, d driver.Driver, rnd *rand.Rand, id driver.Ident) {
	if rnd.IntN(3) > 0 {
		s := ruleSessions[rnd.IntN(3)]
		wantFastAcquire(t, d, fastParams(s, "C"+s, id, ruleModes[rnd.IntN(2)]), true, "fast acquire on a free lock")
	}
	for range rnd.IntN(5) {
		status := ruleStatuses[rnd.IntN(4)]
		s := ruleSessions[rnd.IntN(3)]
		r := driver.Request{SessionID: s, ClientID: "C" + s, Ident: id, Mode: ruleModes[rnd.IntN(2)], Status: status, CallID: 9}
		inTx(t, d, func(tx driver.Tx) { storeRequest(t, tx, r) })
	}
}

// storeRequest stores r as the engine's transaction does: a grant takes
// the next fence as its token, and the lock row counts r.
func storeRequest(t *testing.T, tx driver.Tx, r driver.Request) {
	ctx := testCtx(t)
	st := lockRow(t, tx, r.Ident)
	if r.Status == driver.StatusGranted {
		st.Fence++
		r.Token = st.Fence
	}
	insertRequest(t, tx, r)
	rs, err := tx.LockRequestList(ctx, []driver.Ident{r.Ident})
	must(t, err)
	st.Readers, st.Writers, st.Waiting = lockcore.Counts(rs)
	must(t, tx.LockIdentUpdate(ctx, st))
}

// identSnapshot reads id's lock row and requests in one transaction.
func identSnapshot(t *testing.T, d driver.Driver, id driver.Ident) (state driver.IdentState, reqs []driver.Request) {
	inTx(t, d, func(tx driver.Tx) {
		state = lockRow(t, tx, id)
		var err error
		reqs, err = tx.LockRequestList(testCtx(t), []driver.Ident{id})
		must(t, err)
	})
	return state, reqs
}

// checkRequestRule makes a random request on id's queue and holds the
// outcome to lockcore.Grants: refused when it must wait and may not, else
// granted exactly when the rule says, stored, and counted on the lock row.
func checkRequestRule(t *testing.T, d driver.Driver, rq driver.Requester, rnd *rand.Rand, round int, id driver.Ident) {
	ctx := testCtx(t)
	state, before := identSnapshot(t, d, id)
	s, mode := ruleSessions[rnd.IntN(3)], ruleModes[rnd.IntN(2)]
	candidate := driver.Request{ID: math.MaxInt64, SessionID: s, ClientID: "C" + s, Ident: id, Mode: mode, Status: driver.StatusPending}
	want := slices.Contains(lockcore.Grants(append(slices.Clone(before), candidate)), candidate.ID)
	tryOnce := rnd.IntN(4) == 0
	r, err := rq.LockRequest(ctx, driver.RequestParams{SessionID: s, ClientID: "C" + s, Ident: id, Mode: mode, CallID: 5, TryOnce: tryOnce})
	after, lerr := d.NoTx().LockRequestList(ctx, []driver.Ident{id})
	must(t, lerr)
	if !want && tryOnce {
		failIf(t, !errors.Is(err, driver.ErrWouldWait), "round %d: a try-once request that must wait returned %+v, %v; want ErrWouldWait", round, r, err)
		failIf(t, len(after) != len(before), "round %d: a refused try-once request was stored: %+v", round, after)
		return
	}
	must(t, err)
	granted := r.Status == driver.StatusGranted
	failIf(t, granted != want, "round %d: %s's %s request on %+v: granted %v, the rule says %v", round, s, mode, before, granted, want)
	failIf(t, len(after) != len(before)+1 || !storedLast(after, r), "round %d: stored %+v, returned %+v", round, after, r)
	checkRowAfter(t, d, round, state, after, r)
}

// storedLast reports whether r is the last of the requests, in its status.
func storedLast(rs []driver.Request, r driver.Request) bool {
	last := rs[len(rs)-1]
	return last.ID == r.ID && last.Status == r.Status
}

// checkRowAfter: the lock row after request r counts the requests after
// it, and a grant took the next fence as its token.
func checkRowAfter(t *testing.T, d driver.Driver, round int, before driver.IdentState, after []driver.Request, r driver.Request) {
	var now driver.IdentState
	inTx(t, d, func(tx driver.Tx) { now = lockRow(t, tx, r.Ident) })
	want := before
	want.Readers, want.Writers, want.Waiting = lockcore.Counts(after)
	if r.Status == driver.StatusGranted {
		want.Fence++
		failIf(t, r.Token != want.Fence, "round %d: granted with token %d, want the next fence %d", round, r.Token, want.Fence)
	}
	failIf(t, now != want, "round %d: the lock row is %+v after the request, want %+v", round, now, want)
}
