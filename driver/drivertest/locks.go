package drivertest

import (
	"errors"
	"slices"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/lockcore"
)

var (
	identA = driver.Ident{Kind: driver.KindService, NS: "ns", Name: "a"}
	identB = driver.Ident{Kind: driver.KindService, NS: "ns", Name: "b"}
	identU = driver.Ident{Kind: driver.KindUser, NS: "", Name: "user.lock"}
)

func testIdentRows(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	var first driver.IdentState
	inTx(t, d, func(tx driver.Tx) {
		st, err := tx.LockIdentLock(ctx, []driver.Ident{identA, identB})
		must(t, err)
		failIf(t, len(st) != 2 || st[0].Ident != identA || st[1].Ident != identB, "LockIdentLock = %+v, want a and b in order", st)
		for _, s := range st {
			failIf(t, s.Fence <= 0 || counts(s) != [3]int64{}, "a new lock row: %+v, want a positive fence and zero counts", s)
		}
		// The counter 2 s behind the clock: idle, this row may be purged
		// (a row is purged only when its counter is a second behind).
		st[0].Readers, st[0].Waiting, st[0].Fence = 2, 1, st[0].Fence-2_000_000
		must(t, tx.LockIdentUpdate(ctx, st[0]))
		first = st[0]
	})
	inTx(t, d, func(tx driver.Tx) {
		st := lockRow(t, tx, identA)
		failIf(t, st != first, "LockIdentUpdate stored %+v, read back %+v", first, st)
		st.Readers, st.Waiting = 0, 0
		must(t, tx.LockIdentUpdate(ctx, st))
	})
	n, err := d.NoTx().LockIdentPurgeIdle(ctx)
	wantCount(t, "LockIdentPurgeIdle deleted idle rows (b's counter is not yet a second old)", n, err, 1)
	inTx(t, d, func(tx driver.Tx) {
		st := lockRow(t, tx, identA)
		failIf(t, st.Fence <= first.Fence, "a purged and recreated lock row starts its fence at %d, not above the old %d", st.Fence, first.Fence)
	})
}

func insertRequest(t *testing.T, tx driver.Tx, r driver.Request) driver.Request {
	t.Helper()
	id, err := tx.LockRequestInsert(testCtx(t), r)
	must(t, err)
	failIf(t, id <= 0, "LockRequestInsert returned id %d", id)
	r.ID = id
	return r
}

func testRequests(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "s1", "A", hour)
	newSession(t, d, "s2", "B", hour)
	var g1, p2, u1 driver.Request
	inTx(t, d, func(tx driver.Tx) {
		_, err := tx.LockIdentLock(ctx, []driver.Ident{identA, identU})
		must(t, err)
		g1 = insertRequest(t, tx, driver.Request{SessionID: "s1", ClientID: "A", Ident: identA, Mode: driver.ModeWrite, Status: driver.StatusGranted, CallID: 1, Token: 11})
		p2 = insertRequest(t, tx, driver.Request{SessionID: "s2", ClientID: "B", Ident: identA, Mode: driver.ModeRead, Status: driver.StatusPending, CallID: 2})
		u1 = insertRequest(t, tx, driver.Request{SessionID: "s1", ClientID: "A", Ident: identU, Mode: driver.ModeWrite, Status: driver.StatusGranted, CallID: 3, Token: 12})
	})
	checkRequestLists(t, d, g1, p2, u1)
	checkRequestStatuses(t, d, g1, p2)

	// A request whose session is gone is an orphan.
	tx := d.NoTx()
	wantOrphans(t, tx)
	must(t, tx.SessionDelete(ctx, "s1"))
	wantOrphans(t, tx, u1.ID)
}

// checkRequestLists: the requests by identifier, session, call, user-lock
// holder and monitoring.
func checkRequestLists(t *testing.T, d driver.Driver, g1, p2, u1 driver.Request) {
	ctx := testCtx(t)
	tx := d.NoTx()
	rs, err := tx.LockRequestList(ctx, []driver.Ident{identA})
	must(t, err)
	wantIDs(t, "LockRequestList (the granted then the pending request)", reqIDs(rs), g1.ID, p2.ID)
	failIf(t, stored(rs[0]) != stored(g1), "stored %+v, read %+v", g1, rs[0])
	mine := sessionRequests(t, d, "s1")
	failIf(t, len(mine) != 2, "LockRequestListBySession(every kind) = %+v, want 2", mine)
	mine, _ = tx.LockRequestListBySession(ctx, "s1", driver.KindUser, "")
	wantIDs(t, "LockRequestListBySession(user kind)", reqIDs(mine), u1.ID)
	mine, _ = tx.LockRequestListBySession(ctx, "s1", driver.KindService, "other")
	wantIDs(t, "LockRequestListBySession(another namespace)", reqIDs(mine))
	call, _ := tx.LockRequestListCall(ctx, "s2", 2, []driver.Ident{p2.Ident})
	wantIDs(t, "LockRequestListCall", reqIDs(call), p2.ID)
	beside := p2.Ident
	beside.Name += "~"
	call, _ = tx.LockRequestListCall(ctx, "s2", 2, []driver.Ident{beside})
	wantIDs(t, "LockRequestListCall of another name", reqIDs(call))
	wantConflict(t, d, "s2", identA, driver.ModeRead, true)   // s1's writer
	wantConflict(t, d, "s1", identA, driver.ModeWrite, false) // its own, and s2's reader only waits
	wantConflict(t, d, "s2", beside, driver.ModeWrite, false)
	wantHolder(t, tx, identU.Name, "s1")
	wantHolder(t, tx, "nobody", "")
	l := lockInfo(t, tx, 3, g1.ID)
	failIf(t, l != driver.LockInfo{Request: l.Request, Owner: "owner s1", Host: "host-A", PID: 4242}, "LockInfoList: %+v", l)
}

// checkRequestStatuses: compare-and-set of a status, statuses by id,
// deletion.
func checkRequestStatuses(t *testing.T, d driver.Driver, g1, p2 driver.Request) {
	ctx := testCtx(t)
	tx := d.NoTx()
	wantSteps(t,
		step{"pending to granted", func() (bool, error) {
			return tx.LockRequestSetStatus(ctx, p2.ID, driver.StatusPending, driver.StatusGranted, 13)
		}, true},
		step{"a status changed from a value it did not have", func() (bool, error) {
			return tx.LockRequestSetStatus(ctx, p2.ID, driver.StatusPending, driver.StatusDeadlock, 0)
		}, false})
	st, err := d.Locks().LockRequestStatuses(ctx, []int64{g1.ID, p2.ID, 999999})
	must(t, err)
	failIf(t, len(st) != 2 || grantOf(st[p2.ID]) != grant{driver.StatusGranted, 13}, "LockRequestStatuses = %+v", st)
	must(t, tx.LockRequestDelete(ctx, []int64{g1.ID, p2.ID}))
	st, _ = tx.LockRequestStatuses(ctx, []int64{g1.ID, p2.ID})
	failIf(t, len(st) != 0, "LockRequestDelete left %+v", st)
}

func fastParams(session, client string, id driver.Ident, mode driver.LockMode) driver.FastAcquireParams {
	return driver.FastAcquireParams{SessionID: session, ClientID: client, Ident: id, Mode: mode, CallID: 1}
}

func testFastPath(t *testing.T, d driver.Driver) {
	newSession(t, d, "s1", "A", hour)
	newSession(t, d, "s2", "B", hour)
	r := fastAcquire(t, d, "s1", identA, driver.ModeWrite)
	// Ids are opaque and unique; MySQL's fast holders have negative ones
	// (older than every request row).
	failIf(t, r.ID == 0 || r.Token <= 0 || r.Status != driver.StatusGranted || r.SessionID != "s1", "fast acquire of a free lock: %+v", r)
	wantFastAcquire(t, d, fastParams("s2", "B", identA, driver.ModeRead), false, "fast acquire of a read under a write")
	wantFastAcquire(t, d, fastParams("s2", "B", identB, driver.ModeRead), true, "fast acquire of another name")
	r2 := fastAcquire(t, d, "s1", identB, driver.ModeRead) // a second reader
	failIf(t, r2.Token == r.Token, "two grants share the fencing token %d", r.Token)
	n, waiting := fastRelease(t, d, "s1", "a")
	failIf(t, n != 1 || len(waiting) != 0, "fast release: %d released, waiters on %v; want 1 and none", n, waiting)
	r3, ok, err := d.Locks().LockFastAcquire(testCtx(t), fastParams("s2", "B", identA, driver.ModeWrite))
	must(t, err)
	failIf(t, !ok || r3.Token <= r.Token, "after the release: granted %v with token %d (the first grant had %d: tokens only rise)", ok, r3.Token, r.Token)
	// Release of a whole namespace.
	n, _ = fastRelease(t, d, "s2", "")
	failIf(t, n != 2, "namespace release freed %d, want 2 (a and b)", n)
	wantNoRequests(t, d, "s2", "left after release")
	if d.Locks().AcquiresMany() {
		checkAcquireMany(t, d, d.Locks())
	}
}

// checkAcquireMany: several free names at once, and none of a set of
// which one is taken.
func checkAcquireMany(t *testing.T, d driver.Driver, m driver.Locks) {
	ctx := testCtx(t)
	names := []string{"m1", "m2", "m3"}
	p := fastParams("s1", "A", driver.Ident{Kind: driver.KindService, NS: "many"}, driver.ModeWrite)
	rs, ok, err := m.LockFastAcquireMany(ctx, p, names)
	must(t, err)
	failIf(t, !ok || len(rs) != 3 || rs[0].Name != "m1" || rs[2].Name != "m3", "LockFastAcquireMany = %+v %v", rs, ok)
	p.SessionID, p.ClientID = "s2", "B"
	rs, ok, err = m.LockFastAcquireMany(ctx, p, []string{"m0", "m3"})
	failIf(t, ok || err != nil || len(rs) != 0, "LockFastAcquireMany granted some of a conflicting set: %+v %v %v", rs, ok, err)
	wantNoRequests(t, d, "s2", "a refused LockFastAcquireMany left")
}

// testFastReleaseWaiters: with a waiter queued on the identifier (as the
// slow path leaves it), the fast path grants nothing new, the release says
// the identifier needs re-examination, and LockRegrant (where the backend
// has it) grants the waiter.
func testFastReleaseWaiters(t *testing.T, d driver.Driver) {
	newSession(t, d, "s1", "A", hour)
	newSession(t, d, "s2", "B", hour)
	newSession(t, d, "s3", "C", hour)
	wantFastAcquire(t, d, fastParams("s1", "A", identA, driver.ModeWrite), true, "fast acquire")
	pending := queueWaiter(t, d, driver.Request{SessionID: "s2", ClientID: "B", Ident: identA, Mode: driver.ModeWrite, Status: driver.StatusPending, CallID: 2}, 0, 1)
	n, waiting := fastRelease(t, d, "s1", "a")
	failIf(t, n != 1, "fast release with a waiter released %d, want 1", n)
	granted := func() bool {
		r := requestStatus(t, d, pending.ID)
		return r.Status == driver.StatusGranted && r.Token > 0
	}
	if len(waiting) == 0 {
		// The backend handed the lock over in the release itself.
		failIf(t, !granted(), "fast release neither reported the waiter nor granted it the free lock")
		return
	}
	failIf(t, !slices.Equal(waiting, []driver.Ident{identA}), "fast release reports waiters on %v, want [a]", waiting)
	wantFastAcquire(t, d, fastParams("s3", "C", identA, driver.ModeRead), false, "fast acquire jumped a queued waiter")
	handled, err := d.Locks().LockRegrant(testCtx(t), []driver.Ident{identA})
	must(t, err)
	failIf(t, handled && !granted(), "LockRegrant left the only waiter of a free lock waiting")
}

func testWaitGraph(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "s1", "A", hour)
	newSession(t, d, "s2", "B", hour)
	var g, p driver.Request
	inTx(t, d, func(tx driver.Tx) {
		_, err := tx.LockIdentLock(ctx, []driver.Ident{identA, identB})
		must(t, err)
		g = insertRequest(t, tx, driver.Request{SessionID: "s1", ClientID: "A", Ident: identA, Mode: driver.ModeWrite, Status: driver.StatusGranted, CallID: 1, Token: 1})
		p = insertRequest(t, tx, driver.Request{SessionID: "s2", ClientID: "B", Ident: identA, Mode: driver.ModeWrite, Status: driver.StatusPending, CallID: 2})
		insertRequest(t, tx, driver.Request{SessionID: "s1", ClientID: "A", Ident: identB, Mode: driver.ModeWrite, Status: driver.StatusGranted, CallID: 3, Token: 2})
	})
	inTx(t, d, func(tx driver.Tx) {
		must(t, tx.LockDetectorLock(ctx))
		rs, err := tx.LockWaitGraph(ctx)
		must(t, err)
		wantIDs(t, "LockWaitGraph: the holder and the waiter of a (b has no waiter)", reqIDs(rs), g.ID, p.ID)
		must(t, tx.WakeClients(ctx, []driver.Request{{ClientID: "A"}, {ClientID: "B", ID: p.ID, Status: driver.StatusGranted, Token: 7}}))
	})
}

func reqIDs(rs []driver.Request) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// stored is the part of a request a backend keeps as it was given: all but
// its id, its times and where it lives.
func stored(r driver.Request) driver.Request {
	return driver.Request{SessionID: r.SessionID, ClientID: r.ClientID, Ident: r.Ident, Mode: r.Mode, Status: r.Status, CallID: r.CallID, Token: r.Token}
}

// counts are a lock row's counters: granted readers, granted writers,
// waiting requests.
func counts(s driver.IdentState) [3]int64 { return [3]int64{s.Readers, s.Writers, s.Waiting} }

// lockRow locks and reads the lock row of id in tx.
func lockRow(t *testing.T, tx driver.Tx, id driver.Ident) driver.IdentState {
	t.Helper()
	st, err := tx.LockIdentLock(testCtx(t), []driver.Ident{id})
	must(t, err)
	failIf(t, len(st) != 1, "LockIdentLock(%v) = %+v, want its one row", id, st)
	return st[0]
}

// requestStatus reads request id outside a transaction, as
// LockRequestStatuses does (the zero request when it is gone).
func requestStatus(t *testing.T, d driver.Driver, id int64) driver.Request {
	t.Helper()
	st, err := d.Locks().LockRequestStatuses(testCtx(t), []int64{id})
	must(t, err)
	return st[id]
}

// grant is a request's status and fencing token.
type grant struct {
	status driver.RequestStatus
	token  int64
}

func grantOf(r driver.Request) grant { return grant{r.Status, r.Token} }

// wantHolder fails unless LockUserHolder finds the user lock held by the
// session (want "": by nobody).
func wantHolder(t *testing.T, tx driver.Tx, name, want string) {
	t.Helper()
	holder, ok, err := tx.LockUserHolder(testCtx(t), name)
	must(t, err)
	failIf(t, ok != (want != "") || holder != want, "LockUserHolder(%s) = %q %v, want %q", name, holder, ok, want)
}

// lockInfo fails unless LockInfoList lists n requests, id among them, and
// returns id's row.
func lockInfo(t *testing.T, tx driver.Tx, n int, id int64) driver.LockInfo {
	t.Helper()
	info, err := tx.LockInfoList(testCtx(t))
	must(t, err)
	i := slices.IndexFunc(info, func(l driver.LockInfo) bool { return l.ID == id })
	failIf(t, len(info) != n || i < 0, "LockInfoList = %+v, want %d requests, %d among them", info, n, id)
	return info[i]
}

// wantOrphans fails unless LockRequestListOrphans lists exactly the
// requests.
func wantOrphans(t *testing.T, tx driver.Tx, want ...int64) {
	t.Helper()
	o, err := tx.LockRequestListOrphans(testCtx(t), 10)
	must(t, err)
	wantIDs(t, "LockRequestListOrphans", reqIDs(o), want...)
}

// sessionRequests lists the session's requests of every kind.
func sessionRequests(t *testing.T, d driver.Driver, session string) []driver.Request {
	t.Helper()
	rs, err := d.NoTx().LockRequestListBySession(testCtx(t), session, -1, "")
	must(t, err)
	return rs
}

// wantFastAcquire fails unless the fast path grants (want) or refuses the
// lock, without an error.
func wantFastAcquire(t *testing.T, d driver.Driver, p driver.FastAcquireParams, want bool, what string) {
	t.Helper()
	_, ok, err := d.Locks().LockFastAcquire(testCtx(t), p)
	wantDone(t, what, ok, err, want)
}

// fastRelease releases the session's instances of name in namespace ns
// ("": every name) by the fast path.
func fastRelease(t *testing.T, d driver.Driver, session, name string) (n int, waiting []driver.Ident) {
	t.Helper()
	n, waiting, err := d.Locks().LockFastRelease(testCtx(t), driver.FastReleaseParams{SessionID: session, Kind: driver.KindService, NS: "ns", Name: name})
	must(t, err)
	return n, waiting
}

// queueWaiter stores the pending request r behind the holders of its
// identifier, as the slow path leaves it, once the lock row shows the
// holders' readers and writers.
func queueWaiter(t *testing.T, d driver.Driver, r driver.Request, readers, writers int64) driver.Request {
	t.Helper()
	inTx(t, d, func(tx driver.Tx) {
		st := lockRow(t, tx, r.Ident)
		failIf(t, st.Readers != readers || st.Writers != writers, "the lock row counts %d readers and %d writers, want %d and %d (the grants so far)", st.Readers, st.Writers, readers, writers)
		r = insertRequest(t, tx, r)
		st.Waiting++
		must(t, tx.LockIdentUpdate(testCtx(t), st))
	})
	return r
}

// wantNoRequests fails unless the session has no request left.
func wantNoRequests(t *testing.T, d driver.Driver, session, what string) {
	t.Helper()
	rs := sessionRequests(t, d, session)
	failIf(t, len(rs) != 0, "%s: %+v", what, rs)
}

// testFastPathSeen: instances granted by the fast path are ordinary granted
// requests to every other method, however the backend stores them (on
// PostgreSQL the first instance on a free lock lives in the lock's own
// row): listed by identifier, session, call and monitoring, counted on the
// lock row, found by id and by the user-lock holder query, removed by
// LockRequestDelete, orphaned with their session, and released newest
// first.
func testFastPathSeen(t *testing.T, d driver.Driver) {
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		newSession(t, d, s, "C"+s, hour)
	}
	first := fastAcquire(t, d, "s1", identA, driver.ModeRead)
	other := fastAcquire(t, d, "s2", identA, driver.ModeRead)
	again := fastAcquire(t, d, "s1", identA, driver.ModeRead)
	failIf(t, !(first.Token < other.Token && other.Token < again.Token), "tokens %d, %d, %d do not rise in grant order", first.Token, other.Token, again.Token)
	checkFastSeen(t, d, first, other, again)
	checkFastReleaseOrder(t, d, first)
	// Left: s1's first instance (the inline one) and s2's.
	wantConflict(t, d, "s2", identA, driver.ModeWrite, true) // s1's first reader only
	wantConflict(t, d, "s1", identA, driver.ModeWrite, true)
	wantConflict(t, d, "s3", identA, driver.ModeRead, false)
	wantConflict(t, d, "s1", identA, driver.ModeRead, false)
	wantConflict(t, d, "s3", identA, driver.ModeWrite, true)
	checkFastWaiter(t, d)
	checkFastRemoved(t, d)
}

// wantConflict checks LockConflictHeld's answer for a request of session
// on id in mode.
func wantConflict(t *testing.T, d driver.Driver, session string, id driver.Ident, mode driver.LockMode, want bool) {
	t.Helper()
	held, err := d.Locks().LockConflictHeld(testCtx(t), session, id, mode)
	must(t, err)
	failIf(t, held != want, "LockConflictHeld(%s, %v, %s) = %v, want %v", session, id, mode, held, want)
}

// fastAcquire takes a lock by the fast path, which must grant it.
func fastAcquire(t *testing.T, d driver.Driver, session string, id driver.Ident, mode driver.LockMode) driver.Request {
	t.Helper()
	return fastAcquireWith(t, d, fastParams(session, "C"+session, id, mode))
}

// fastAcquireWith is fastAcquire with the parameters given.
func fastAcquireWith(t *testing.T, d driver.Driver, p driver.FastAcquireParams) driver.Request {
	t.Helper()
	r, ok, err := d.Locks().LockFastAcquire(testCtx(t), p)
	must(t, err)
	failIf(t, !ok, "fast acquire of %v (%s) by %s refused", p.Ident, p.Mode, p.SessionID)
	return r
}

// checkFastSeen: three readers of a (s1 twice, s2 between) in every list.
func checkFastSeen(t *testing.T, d driver.Driver, first, other, again driver.Request) {
	ctx := testCtx(t)
	tx := d.NoTx()
	rs, err := tx.LockRequestList(ctx, []driver.Ident{identA})
	must(t, err)
	wantIDs(t, "LockRequestList: the three grants in order", reqIDs(rs), first.ID, other.ID, again.ID)
	want := driver.Request{SessionID: "s1", ClientID: "Cs1", Ident: identA, Mode: driver.ModeRead, Status: driver.StatusGranted, CallID: 1, Token: first.Token}
	failIf(t, stored(rs[0]) != want, "the first fast grant reads back as %+v, granted as %+v", rs[0], first)
	mine, err := tx.LockRequestListBySession(ctx, "s1", driver.KindService, "ns")
	must(t, err)
	failIf(t, len(mine) != 2, "LockRequestListBySession(s1) = %+v, want 2", mine)
	call, err := tx.LockRequestListCall(ctx, "s1", 1, []driver.Ident{identA})
	must(t, err)
	wantIDs(t, "LockRequestListCall(s1)", reqIDs(call), first.ID, again.ID)
	st, err := d.Locks().LockRequestStatuses(ctx, []int64{first.ID, again.ID})
	must(t, err)
	failIf(t, len(st) != 2 || grantOf(st[first.ID]) != grantOf(want), "LockRequestStatuses = %+v", st)
	l := lockInfo(t, tx, 3, first.ID)
	failIf(t, l.Owner != "owner s1", "LockInfoList: %+v, want the first grant's owner", l)
}

// checkFastReleaseOrder: RELEASE_LOCK's order, the newest instance first.
func checkFastReleaseOrder(t *testing.T, d driver.Driver, first driver.Request) {
	n, _, err := d.Locks().LockFastRelease(testCtx(t), driver.FastReleaseParams{SessionID: "s1", Kind: driver.KindService, NS: "ns", Name: "a", Limit: 1})
	must(t, err)
	mine := sessionRequests(t, d, "s1")
	failIf(t, n != 1 || !slices.Equal(reqIDs(mine), []int64{first.ID}), "releasing one instance freed %d and left %+v, want the oldest (%d) left", n, mine, first.ID)
}

// checkFastWaiter: a writer queued behind both readers of a is granted
// only when both are gone; the lock row counts every reader, however
// stored.
func checkFastWaiter(t *testing.T, d driver.Driver) {
	pending := queueWaiter(t, d, driver.Request{SessionID: "s3", ClientID: "Cs3", Ident: identA, Mode: driver.ModeWrite, Status: driver.StatusPending, CallID: 7}, 2, 0)
	releaseAll(t, d, "s1")
	failIf(t, requestStatus(t, d, pending.ID).Status == driver.StatusGranted, "the writer was granted while s2 still reads")
	releaseAll(t, d, "s2")
	failIf(t, requestStatus(t, d, pending.ID).Status != driver.StatusGranted, "the writer still waits on a free lock")
}

// releaseAll releases the session's one instance in namespace ns and
// grants what that frees.
func releaseAll(t *testing.T, d driver.Driver, session string) {
	t.Helper()
	n, waiting := fastRelease(t, d, session, "")
	failIf(t, n != 1, "release of %s freed %d instances, want 1", session, n)
	if len(waiting) == 0 {
		return
	}
	if handled, err := d.Locks().LockRegrant(testCtx(t), waiting); err != nil || !handled {
		regrantInTx(t, d, waiting)
	}
}

// checkFastRemoved: a fast grant removed by id in a transaction (as a
// session's end removes it), released by an inline-only release, found
// as a user lock's holder and as an orphan once its session is gone.
func checkFastRemoved(t *testing.T, d driver.Driver) {
	tx := d.NoTx()
	b := fastAcquire(t, d, "s4", identB, driver.ModeWrite)
	inTx(t, d, func(tx driver.Tx) {
		st := lockRow(t, tx, identB)
		must(t, tx.LockRequestDelete(testCtx(t), []int64{b.ID}))
		st.Writers = 0
		must(t, tx.LockIdentUpdate(testCtx(t), st))
	})
	wantNoRequests(t, d, "s4", "LockRequestDelete left")
	b2 := fastAcquire(t, d, "s1", identB, driver.ModeWrite)
	failIf(t, b2.Token <= b.Token, "token %d after a removed grant with %d", b2.Token, b.Token)
	checkInlineRelease(t, d)
	u := fastAcquire(t, d, "s4", identU, driver.ModeWrite)
	wantHolder(t, tx, identU.Name, "s4")
	must(t, tx.SessionDelete(testCtx(t), "s4"))
	wantOrphans(t, tx, u.ID)
}

// checkInlineRelease: a release told that the session holds only inline
// holders frees them (backends without inline holders ignore the hint).
func checkInlineRelease(t *testing.T, d driver.Driver) {
	c := driver.Ident{Kind: driver.KindService, NS: "inline", Name: "c"}
	if r := fastAcquire(t, d, "s3", c, driver.ModeWrite); !r.Inline {
		return
	}
	n, _, err := d.Locks().LockFastRelease(testCtx(t), driver.FastReleaseParams{SessionID: "s3", Kind: driver.KindService, NS: "inline", InlineOnly: true})
	must(t, err)
	failIf(t, n != 1, "an inline-only release freed %d instances, want 1", n)
	fastAcquire(t, d, "s1", c, driver.ModeWrite)
	// Taken over by a transaction of the slow path (which moves it into
	// a request row where the backend does that): still freed by an
	// inline-only release, and the lock is free again.
	o := driver.Ident{Kind: driver.KindService, NS: "inline2", Name: "o"}
	fastAcquire(t, d, "s3", o, driver.ModeWrite)
	inTx(t, d, func(tx driver.Tx) { lockRow(t, tx, o) })
	n, _, err = d.Locks().LockFastRelease(testCtx(t), driver.FastReleaseParams{SessionID: "s3", Kind: o.Kind, NS: o.NS, InlineOnly: true})
	must(t, err)
	failIf(t, n != 1, "an inline-only release of a holder a transaction took over freed %d instances, want 1", n)
	fastAcquire(t, d, "s2", o, driver.ModeWrite)
	// Both kinds in one release: s3's first read is the inline holder,
	// its second a request row beside s2's.
	m := driver.Ident{Kind: driver.KindService, NS: "inline3", Name: "m"}
	fastAcquire(t, d, "s3", m, driver.ModeRead)
	fastAcquire(t, d, "s2", m, driver.ModeRead)
	fastAcquire(t, d, "s3", m, driver.ModeRead)
	for _, s := range []string{"s3", "s2"} {
		n, _, err = d.Locks().LockFastRelease(testCtx(t), driver.FastReleaseParams{SessionID: s, Kind: m.Kind, NS: m.NS})
		must(t, err)
		failIf(t, n != map[string]int{"s3": 2, "s2": 1}[s], "releasing %s's reads of %v freed %d instances", s, m, n)
	}
	fastAcquire(t, d, "s1", m, driver.ModeWrite)
}

// regrantInTx grants what can be granted on the identifiers, as the
// engine does for a backend without LockRegrant.
func regrantInTx(t *testing.T, d driver.Driver, ids []driver.Ident) {
	t.Helper()
	inTx(t, d, func(tx driver.Tx) { regrantIn(t, tx, ids) })
}

// regrantIn is regrantInTx's work in tx (lockcore.Regrant, as the engine).
func regrantIn(t *testing.T, tx driver.Tx, ids []driver.Ident) {
	t.Helper()
	ctx := testCtx(t)
	st, err := tx.LockIdentLock(ctx, ids)
	must(t, err)
	for i := range st {
		rs, err := tx.LockRequestList(ctx, []driver.Ident{st[i].Ident})
		must(t, err)
		_, err = lockcore.Regrant(&st[i], nil, rs, func(id, token int64) (bool, error) {
			return tx.LockRequestSetStatus(ctx, id, driver.StatusPending, driver.StatusGranted, token)
		})
		must(t, err)
		must(t, tx.LockIdentUpdate(ctx, st[i]))
	}
}

// callerTx is a transaction of the driver's own pool standing for a
// program's (the sqlbase-based backends' Tx offers one).
func callerTx(t *testing.T, d driver.Driver) (driver.Tx, driver.CallerTx) {
	t.Helper()
	tx, err := d.Begin(testCtx(t))
	must(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	c, ok := tx.(interface{ Caller() driver.CallerTx })
	if !ok {
		t.Skipf("%T offers no caller transaction", tx)
	}
	return tx, c.Caller()
}

// gate takes id's gate the way the engine does: readied first where the
// backend does not check, again after ErrGateUngated.
func gate(t *testing.T, tl driver.TxLocker, ct driver.CallerTx, id driver.Ident, mode driver.LockMode) error {
	t.Helper()
	ctx := testCtx(t)
	if !tl.TxGateChecks() {
		must(t, tl.TxPrepare(ctx, id))
	}
	for range 2 {
		_, err := tl.TxGate(ctx, ct, id, mode, 0, true)
		if !errors.Is(err, driver.ErrGateUngated) {
			return err
		}
		must(t, tl.TxPrepare(ctx, id))
	}
	t.Fatalf("gate of %v: still not gated after TxPrepare", id)
	return nil
}

// testTxGate: a transaction's gate, as sessions' grants see it (held in
// its mode until the transaction ends, the identifier marked gated, listed
// by TxHolds), and a session's instance refusing it.
func testTxGate(t *testing.T, d driver.Driver) {
	tl := d.Locks()
	id := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "g"}
	for _, mode := range []driver.LockMode{driver.ModeWrite, driver.ModeRead} {
		tx, ct := callerTx(t, d)
		must(t, gate(t, tl, ct, id, mode))
		must(t, tl.TxHoldCaller(testCtx(t), ct, driver.TxHold{Ident: id, Mode: mode, Host: "h", PID: 1, Owner: "o"}))
		wantGateHeld(t, d, tl, id, mode)
		must(t, tx.Rollback())
		wantGateHeld(t, d, tl, id, "")
	}
	checkGateRefused(t, d, tl)
	checkGatedFound(t, d, tl)
}

// checkGatedFound: the poll of waiting requests finds the gated names
// among theirs, by TxGatedAmong and with the requests' statuses
// (LockRequestStatusesGated).
func checkGatedFound(t *testing.T, d driver.Driver, tl driver.TxLocker) {
	if tl.TxGateSerial() {
		return // no session waits while a transaction holds a gate
	}
	newSession(t, d, "s9", "Cs9", hour)
	gated := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "w1"}
	free := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "w2"}
	var ids []int64
	for _, id := range []driver.Ident{gated, free} {
		r := queueWaiter(t, d, driver.Request{SessionID: "s9", ClientID: "Cs9", Ident: id, Mode: driver.ModeWrite, Status: driver.StatusPending, CallID: 9}, 0, 0)
		ids = append(ids, r.ID)
	}
	look := func(want []driver.Ident, when string) {
		t.Helper()
		got, err := tl.TxGatedAmong(testCtx(t), []driver.Ident{gated, free})
		must(t, err)
		failIf(t, !sameIdents(got, want), "TxGatedAmong %s: %v, want %v", when, got, want)
		st, got, err := d.Locks().LockRequestStatusesGated(testCtx(t), ids)
		must(t, err)
		failIf(t, len(st) != 2 || st[ids[0]].Status != driver.StatusPending || st[ids[1]].Ident != free,
			"LockRequestStatusesGated %s: statuses %+v, want both pending requests", when, st)
		failIf(t, !sameIdents(got, want), "LockRequestStatusesGated %s: gated %v, want %v", when, got, want)
	}
	look(nil, "before any gate")
	must(t, tl.TxPrepare(testCtx(t), gated))
	look([]driver.Ident{gated}, "once one name is gated")
}

// sameIdents reports whether a and b hold the same identifiers.
func sameIdents(a, b []driver.Ident) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}

// gateHeld reads, under id's lock row, whether id is marked gated and the
// mode its gate is held in ("" for none).
func gateHeld(t *testing.T, d driver.Driver, tl driver.TxLocker, id driver.Ident) (gated bool, mode driver.LockMode) {
	t.Helper()
	inTx(t, d, func(tx driver.Tx) {
		gated = lockRow(t, tx, id).Gated
		var err error
		mode, err = tl.TxGateHeld(testCtx(t), tx, id)
		must(t, err)
	})
	return gated, mode
}

// wantGateHeld fails unless id's gate is held in mode want ("" for none)
// as the sessions' grants see it: the identifier gated, TxGateHeld and
// TxHolds. Under a serial gate (the write lock) nobody else could be
// asking, and there is nothing to see.
func wantGateHeld(t *testing.T, d driver.Driver, tl driver.TxLocker, id driver.Ident, want driver.LockMode) {
	t.Helper()
	if tl.TxGateSerial() {
		return
	}
	gated, mode := gateHeld(t, d, tl, id)
	failIf(t, !gated, "%v is not gated once a transaction took its gate", id)
	failIf(t, mode != want, "TxGateHeld = %q, want %q", mode, want)
	holds, err := tl.TxHolds(testCtx(t))
	must(t, err)
	n := countHolds(holds, id, want)
	failIf(t, (want != "") != (n > 0), "TxHolds lists %d holds of %v in mode %q: %+v", n, id, want, holds)
}

// countHolds counts the granted holds of id in the mode.
func countHolds(holds []driver.LockInfo, id driver.Ident, mode driver.LockMode) int {
	n := 0
	for _, h := range holds {
		if h.Ident == id && h.Mode == mode && h.Status == driver.StatusGranted {
			n++
		}
	}
	return n
}

// checkGateRefused: beside a session's write instance, a gate is refused
// (where the backend checks) and given back.
func checkGateRefused(t *testing.T, d driver.Driver, tl driver.TxLocker) {
	newSession(t, d, "s1", "Cs1", hour)
	other := driver.Ident{Kind: driver.KindService, NS: "tx", Name: "held"}
	fastAcquire(t, d, "s1", other, driver.ModeWrite)
	_, ct := callerTx(t, d)
	if !tl.TxGateChecks() {
		return
	}
	err := gate(t, tl, ct, other, driver.ModeRead)
	failIf(t, !errors.Is(err, driver.ErrGateSession), "gate beside a session's write lock: %v, want ErrGateSession", err)
	if tl.TxGateSerial() {
		return
	}
	_, held := gateHeld(t, d, tl, other)
	failIf(t, held != "", "a refused gate is still held (%q)", held)
}
