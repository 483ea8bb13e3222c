package drivertest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/lockcore"
)

// testRequester holds a backend's one-call slow path
// (driver.Locks.LockRequest) to the rule of lockcore.Grants: on random
// queues of granted, waiting and withdrawn requests (some granted by the
// fast path, however the backend stores those), a new request is granted
// exactly when Grants would grant it behind them, is stored as the rule
// says, and moves the counters and the fence as the engine's own
// transaction would. A backend without one (ErrRequestInTx) is skipped.
func testRequester(t *testing.T, d driver.Driver) {
	rq := d.Locks()
	for _, s := range ruleSessions {
		newSession(t, d, s, "C"+s, hour)
	}
	// A reader that no holder excludes still queues behind an earlier
	// writer of another session, unless its session holds the lock.
	for i, s := range []string{"s3", "s1"} {
		id := driver.Ident{Kind: driver.KindService, NS: "rule", Name: fmt.Sprint("fixed", i)}
		storeQueue(t, d, id, []driver.Request{{SessionID: "s1", Mode: driver.ModeRead, Status: driver.StatusGranted},
			{SessionID: "s2", Mode: driver.ModeWrite, Status: driver.StatusPending}})
		checkRequestRule(t, d, rq, fmt.Sprint("fixed ", i), id, s, driver.ModeRead, false)
	}
	// A write request where another session waits: it queues at once
	// only if its session has nothing on the identifier, granted or
	// waiting (re-entry and upgrade skip the queue; a session with a
	// waiting request is decided by the whole rule: here, one the rule
	// finds grantable, as after a transaction's gate is gone).
	g, p := driver.StatusGranted, driver.StatusPending
	for i, q := range [][]driver.Request{
		{{SessionID: "s1", Mode: driver.ModeWrite, Status: g}, {SessionID: "s2", Mode: driver.ModeWrite, Status: p}},
		{{SessionID: "s1", Mode: driver.ModeRead, Status: g}, {SessionID: "s2", Mode: driver.ModeWrite, Status: p}},
		{{SessionID: "s1", Mode: driver.ModeRead, Status: p}, {SessionID: "s2", Mode: driver.ModeWrite, Status: p}},
		{{SessionID: "s3", Mode: driver.ModeWrite, Status: g}, {SessionID: "s2", Mode: driver.ModeWrite, Status: p}},
	} {
		id := driver.Ident{Kind: driver.KindService, NS: "rule", Name: fmt.Sprint("queued", i)}
		storeQueue(t, d, id, q)
		checkRequestRule(t, d, rq, fmt.Sprint("queued ", i), id, "s1", driver.ModeWrite, false)
	}
	rnd := rand.New(rand.NewPCG(7, 11))
	for round := range 150 {
		id := driver.Ident{Kind: driver.KindService, NS: "rule", Name: fmt.Sprint(round)}
		fillRandomQueue(t, d, rnd, id)
		checkRequestRule(t, d, rq, fmt.Sprint(round), id, ruleSessions[rnd.IntN(3)], ruleModes[rnd.IntN(2)], rnd.IntN(4) == 0)
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

// storeQueue stores the requests (session, mode and status set) on id in
// turn, as storeRequest does, each of its session's client.
func storeQueue(t *testing.T, d driver.Driver, id driver.Ident, q []driver.Request) {
	for _, r := range q {
		r.ClientID, r.Ident, r.CallID = "C"+r.SessionID, id, 9
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
func checkRequestRule(t *testing.T, d driver.Driver, rq driver.Locks, round string, id driver.Ident, s string, mode driver.LockMode, tryOnce bool) {
	ctx := testCtx(t)
	state, before := identSnapshot(t, d, id)
	candidate := driver.Request{ID: math.MaxInt64, SessionID: s, ClientID: "C" + s, Ident: id, Mode: mode, Status: driver.StatusPending}
	want := slices.Contains(lockcore.Grants(append(slices.Clone(before), candidate)), candidate.ID)
	// The engine's hint that the session's instances cover the request
	// (Covered), right or wrong, on half the queues: it may change how a
	// backend looks, never the outcome.
	covered := len(before)%2 == 0
	r, err := rq.LockRequest(ctx, driver.RequestParams{SessionID: s, ClientID: "C" + s, Ident: id, Mode: mode, CallID: 5, TryOnce: tryOnce,
		Covered: covered})
	if errors.Is(err, driver.ErrRequestInTx) {
		t.Skipf("%s takes the slow path in the engine's transaction", d.Name())
	}
	after, lerr := d.NoTx().LockRequestList(ctx, []driver.Ident{id})
	must(t, lerr)
	if !want && tryOnce {
		failIf(t, !errors.Is(err, driver.ErrWouldWait), "round %s: a try-once request that must wait returned %+v, %v; want ErrWouldWait", round, r, err)
		failIf(t, len(after) != len(before), "round %s: a refused try-once request was stored: %+v", round, after)
		return
	}
	must(t, err)
	granted := r.Status == driver.StatusGranted
	failIf(t, granted != want, "round %s: %s's %s request on %+v: granted %v, the rule says %v", round, s, mode, before, granted, want)
	failIf(t, len(after) != len(before)+1 || !storedLast(after, r), "round %s: stored %+v, returned %+v", round, after, r)
	checkRowAfter(t, d, round, state, after, r)
}

// storedLast reports whether r is the last of the requests, in its status.
func storedLast(rs []driver.Request, r driver.Request) bool {
	last := rs[len(rs)-1]
	return last.ID == r.ID && last.Status == r.Status
}

// checkRowAfter: the lock row after request r counts the requests after
// it, and a grant took the next fence as its token.
func checkRowAfter(t *testing.T, d driver.Driver, round string, before driver.IdentState, after []driver.Request, r driver.Request) {
	var now driver.IdentState
	inTx(t, d, func(tx driver.Tx) { now = lockRow(t, tx, r.Ident) })
	want := before
	want.Readers, want.Writers, want.Waiting = lockcore.Counts(after)
	if r.Status == driver.StatusGranted {
		want.Fence++
		failIf(t, r.Token != want.Fence, "round %s: granted with token %d, want the next fence %d", round, r.Token, want.Fence)
	}
	failIf(t, now != want, "round %s: the lock row is %+v after the request, want %+v", round, now, want)
}

// testReleaseRule holds the hand-off after a release to lockcore.Grants:
// on fixed and random queues, one holder's release by name, followed by
// what the engine does with the identifiers the release reports
// (LockRegrant, else its own transaction), leaves granted exactly the
// requests the rule grants behind the remaining ones, with fresh tokens,
// and the lock row counting them. A backend may hand on in the release
// itself (PostgreSQL's statement, MySQL's transaction), which this holds
// to the same rule; one whose release runs in a transaction of the
// engine's (driver.Locks.ReleasesInTx, SQLite) is held to it that way in every
// other round.
func testReleaseRule(t *testing.T, d driver.Driver) {
	for _, s := range ruleSessions {
		newSession(t, d, s, "C"+s, hour)
	}
	// A reader the earlier writer waits for keeps a later reader waiting,
	// and a session's re-entry waits for no earlier waiter.
	fixed := [][]driver.Request{
		{{SessionID: "s1", Mode: driver.ModeRead, Status: driver.StatusGranted}, {SessionID: "s2", Mode: driver.ModeRead, Status: driver.StatusGranted},
			{SessionID: "s3", Mode: driver.ModeWrite, Status: driver.StatusPending}, {SessionID: "s2", Mode: driver.ModeRead, Status: driver.StatusPending}},
		{{SessionID: "s1", Mode: driver.ModeRead, Status: driver.StatusGranted}, {SessionID: "s2", Mode: driver.ModeWrite, Status: driver.StatusGranted},
			{SessionID: "s3", Mode: driver.ModeWrite, Status: driver.StatusPending}, {SessionID: "s1", Mode: driver.ModeRead, Status: driver.StatusPending}},
	}
	for round, q := range fixed {
		id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: fmt.Sprint("fixed", round)}
		storeQueue(t, d, id, q)
		checkHandOn(t, d, fmt.Sprint("fixed ", round), id, "s2", round%2 == 1)
	}
	rnd := rand.New(rand.NewPCG(13, 17))
	checked := 0
	for round := range 200 {
		id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: fmt.Sprint("handon", round)}
		fillRandomQueue(t, d, rnd, id)
		if checkHandOn(t, d, fmt.Sprint(round), id, ruleSessions[rnd.IntN(3)], round%2 == 1) {
			checked++
		}
	}
	failIf(t, checked < 50, "only %d of 200 rounds had a holder to release", checked)
}

// checkHandOn releases session s's instances of id and checks the
// hand-off (testReleaseRule); false when s held none (nothing checked).
// With inOneTx a backend that ReleasesInTx releases and hands on in one
// transaction.
func checkHandOn(t *testing.T, d driver.Driver, round string, id driver.Ident, s string, inOneTx bool) bool {
	state, before := identSnapshot(t, d, id)
	mine := func(r driver.Request) bool { return r.SessionID == s && r.Status == driver.StatusGranted }
	if !slices.ContainsFunc(before, mine) {
		return false
	}
	rest := slices.DeleteFunc(slices.Clone(before), mine)
	want := lockcore.Grants(rest)
	if tr := d.Locks(); tr.ReleasesInTx() && inOneTx {
		// The release and the hand-off in one transaction, as the engine
		// does once it found the identifier contended.
		inTx(t, d, func(tx driver.Tx) {
			_, waiting, err := tr.LockReleaseTx(testCtx(t), tx, driver.FastReleaseParams{SessionID: s, Kind: id.Kind, NS: id.NS, Name: id.Name})
			must(t, err)
			if len(waiting) > 0 {
				regrantIn(t, tx, waiting)
			}
		})
	} else if _, waiting := fastRelease(t, d, s, id.Name); len(waiting) > 0 {
		if handled, err := d.Locks().LockRegrant(testCtx(t), waiting); err != nil || !handled {
			must(t, err)
			regrantInTx(t, d, waiting)
		}
	}
	checkRuleAfter(t, d, round, fmt.Sprintf("%s's release of %+v", s, before), id, state, rest, want)
	return true
}

// checkRuleAfter holds id's requests and lock row, after what changed
// them (what) removed requests and handed the identifier on, to the rule:
// the requests left (rest, in order, as they were before the hand-off)
// are there, those the rule grants (want) granted with tokens rising
// above the fence (state's, from before), and the lock row counts them
// with the last token as its fence.
func checkRuleAfter(t *testing.T, d driver.Driver, round, what string, id driver.Ident, state driver.IdentState, rest []driver.Request, want []int64) {
	now, after := identSnapshot(t, d, id)
	failIf(t, len(after) != len(rest), "round %s: %d requests after %s, want %d", round, len(after), what, len(rest))
	fence := state.Fence
	for i, r := range after {
		handed := rest[i].Status == driver.StatusPending && r.Status == driver.StatusGranted
		failIf(t, r.ID != rest[i].ID || handed != slices.Contains(want, r.ID),
			"round %s: after %s: %+v, the rule grants %v", round, what, after, want)
		if handed {
			failIf(t, r.Token <= fence, "round %s: a hand-off's token %d is not above the fence %d", round, r.Token, fence)
			fence = r.Token
		}
	}
	wantRow := state
	wantRow.Fence = fence
	wantRow.Readers, wantRow.Writers, wantRow.Waiting = lockcore.Counts(after)
	failIf(t, now != wantRow, "round %s: the lock row is %+v after %s, want %+v", round, now, what, wantRow)
}

// testRemoveRule holds a backend's withdrawal in one call
// (driver.Locks.RemovesInOneCall) to the rule: on random queues of two
// identifiers (some holders granted by the fast path, however the backend
// stores those), a random set of requests of both, whatever their status,
// is deleted in one call (with a request gone already); in every other
// round, the requests of one lock call (a fast holder, a request row),
// which the backend finds itself (LockCallWithdraw). Each identifier the
// withdrawal names (or, for a call, where the call had something) is left
// as the engine's transaction would leave it, the others untouched: the
// other requests there, the waiters lockcore.Grants grants behind them
// granted with rising tokens, the lock row counting them.
func testRemoveRule(t *testing.T, d driver.Driver) {
	rr := d.Locks()
	if !rr.RemovesInOneCall() {
		t.Skipf("%s withdraws requests in the engine's transaction", d.Name())
	}
	for _, s := range ruleSessions {
		newSession(t, d, s, "C"+s, hour)
	}
	const call = 77
	rnd := rand.New(rand.NewPCG(19, 23))
	removed := 0
	for round := range 120 {
		ids := []driver.Ident{{Kind: driver.KindService, NS: "rm", Name: fmt.Sprint(round, "a")}, {Kind: driver.KindService, NS: "rm", Name: fmt.Sprint(round, "b")}}
		byCall, caller := round%2 == 1, ruleSessions[rnd.IntN(3)]
		states, rests, gone := removeRoundQueues(t, d, rnd, ids, byCall, caller, call)
		removed += len(gone)
		named := gone // the identifiers looked at
		var handled bool
		var err error
		if byCall {
			// Every other call's undo as for a call that may still run
			// (settle: the rows locked first), to the same rule.
			handled, err = rr.LockCallWithdraw(testCtx(t), caller, call, ids, round%4 == 3)
		} else {
			if len(gone) == 0 {
				continue
			}
			named = append(slices.Clone(gone), driver.Request{ID: math.MaxInt32, SessionID: "s1", Ident: ids[0]})
			rnd.Shuffle(len(named), func(i, j int) { named[i], named[j] = named[j], named[i] })
			handled, err = rr.LockRequestsRemove(testCtx(t), named)
		}
		must(t, err)
		failIf(t, !handled, "round %d: the withdrawal of %+v left to the engine", round, gone)
		for i, id := range ids {
			var want []int64
			if slices.ContainsFunc(named, func(r driver.Request) bool { return r.Ident == id }) {
				want = lockcore.Grants(rests[i])
			}
			checkRuleAfter(t, d, fmt.Sprint(round), fmt.Sprintf("the withdrawal of %+v", gone), id, states[i], rests[i], want)
		}
	}
	failIf(t, removed < 100, "only %d requests withdrawn in 120 rounds", removed)
}

// removeRoundQueues fills a random queue for each of ids and splits its
// requests into those a round of testRemoveRule withdraws (gone) and
// the rest (rests, by identifier), beside each identifier's state
// before. In a round that withdraws a lock call's requests (byCall) the
// queues get some of the call's own (caller's) requests, a fast holder
// and a request row, and gone is the call's; otherwise a random half.
func removeRoundQueues(t *testing.T, d driver.Driver, rnd *rand.Rand, ids []driver.Ident, byCall bool, caller string, call int64) (states []driver.IdentState, rests [][]driver.Request, gone []driver.Request) {
	states = make([]driver.IdentState, len(ids))
	rests = make([][]driver.Request, len(ids))
	for i, id := range ids {
		fillRandomQueue(t, d, rnd, id)
		if byCall && rnd.IntN(2) == 0 {
			// Granted or refused, as the queue has it.
			p := fastParams(caller, "C"+caller, id, ruleModes[rnd.IntN(2)])
			p.CallID = call
			_, _, err := d.Locks().LockFastAcquire(testCtx(t), p)
			must(t, err)
		}
		if byCall && rnd.IntN(2) == 0 {
			r := driver.Request{SessionID: caller, ClientID: "C" + caller, Ident: id, Mode: ruleModes[rnd.IntN(2)], Status: ruleStatuses[rnd.IntN(4)], CallID: call}
			inTx(t, d, func(tx driver.Tx) { storeRequest(t, tx, r) })
		}
		var before []driver.Request
		states[i], before = identSnapshot(t, d, id)
		for _, r := range before {
			if byCall && r.SessionID == caller && r.CallID == call || !byCall && rnd.IntN(2) == 0 {
				gone = append(gone, r)
			} else {
				rests[i] = append(rests[i], r)
			}
		}
	}
	return states, rests, gone
}

// testSettleCall: the undo of a lock call that may still run
// (LockCallWithdraw with settle) waits for a statement of the call that
// holds an identifier's row (here a transaction that has stored a grant
// of the call and not committed), then withdraws what it stored beside
// the call's fast holder, and hands on to the waiter behind that. A
// withdrawal that looked for the call's requests before it had the rows'
// locks would find only the fast holder and leave the grant behind.
func testSettleCall(t *testing.T, d driver.Driver) {
	rr := d.Locks()
	if !rr.RemovesInOneCall() {
		t.Skipf("%s withdraws requests in the engine's transaction", d.Name())
	}
	newSession(t, d, "s1", "Cs1", hour)
	newSession(t, d, "s2", "Cs2", hour)
	const call = 5
	ids := []driver.Ident{{Kind: driver.KindService, NS: "settle", Name: "a"}, {Kind: driver.KindService, NS: "settle", Name: "b"}}
	p := fastParams("s1", "Cs1", ids[0], driver.ModeWrite)
	p.CallID = call
	held := fastAcquireWith(t, d, p)
	waiter := queueWaiter(t, d, driver.Request{SessionID: "s2", ClientID: "Cs2", Ident: ids[0], Mode: driver.ModeWrite,
		Status: driver.StatusPending, CallID: 1}, 0, 1)
	running, err := d.Begin(testCtx(t))
	must(t, err)
	storeRequest(t, running, driver.Request{SessionID: "s1", ClientID: "Cs1", Ident: ids[1], Mode: driver.ModeRead,
		Status: driver.StatusGranted, CallID: call})
	type answer struct {
		handled bool
		err     error
	}
	done := make(chan answer, 1)
	go func() {
		handled, err := rr.LockCallWithdraw(testCtx(t), "s1", call, ids, true)
		done <- answer{handled, err}
	}()
	select {
	case a := <-done:
		_ = running.Rollback()
		t.Fatalf("the undo (%+v) ended while a statement of the call held a row it names", a)
	case <-time.After(300 * time.Millisecond):
	}
	must(t, running.Commit())
	a := <-done
	must(t, a.err)
	failIf(t, !a.handled, "the undo of a call that may still run was left to the engine")
	wantNoRequests(t, d, "s1", "the undo of a call that may still run left")
	got := requestStatus(t, d, waiter.ID)
	failIf(t, got.Status != driver.StatusGranted || got.Token <= held.Token, "the waiter behind the call's fast holder: %+v after the undo, want granted above token %d", got, held.Token)
	for _, id := range ids {
		st, _ := identSnapshot(t, d, id)
		want := int64(0)
		if id == ids[0] {
			want = 1 // s2's grant
		}
		failIf(t, st.Readers != 0 || st.Writers != want || st.Waiting != 0, "%v counts %+v after the undo, want %d writers", id, st, want)
	}
}
