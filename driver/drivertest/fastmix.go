package drivertest

import (
	"slices"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/lockcore"
)

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
