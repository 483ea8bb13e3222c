package drivertest

import (
	"slices"
	"testing"

	"github.com/batonhq/baton/driver"
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
	checkFastWaiter(t, d)
	checkFastRemoved(t, d)
}

// fastAcquire takes a lock by the fast path, which must grant it.
func fastAcquire(t *testing.T, d driver.Driver, session string, id driver.Ident, mode string) driver.Request {
	t.Helper()
	r, ok, err := d.LockFastAcquire(testCtx(t), fastParams(session, "C"+session, id, mode))
	must(t, err)
	failIf(t, !ok, "fast acquire of %v (%s) by %s refused", id, mode, session)
	return r
}

// checkFastSeen: three readers of a (s1 twice, s2 between) in every list.
func checkFastSeen(t *testing.T, d driver.Driver, first, other, again driver.Request) {
	ctx := testCtx(t)
	tx := d.NoTx()
	rs, err := tx.LockRequestList(ctx, []driver.Ident{identA})
	must(t, err)
	failIf(t, len(rs) != 3 || rs[0].ID != first.ID || rs[1].ID != other.ID || rs[2].ID != again.ID, "LockRequestList = %+v, want the three grants in order", rs)
	r := rs[0]
	failIf(t, r.SessionID != "s1" || r.ClientID != "Cs1" || r.Mode != driver.ModeRead || r.Status != driver.StatusGranted, "the first fast grant reads back as %+v", r)
	failIf(t, r.Token != first.Token || r.CallID != 1 || r.Ident != identA, "the first fast grant reads back as %+v, granted as %+v", r, first)
	mine, err := tx.LockRequestListBySession(ctx, "s1", driver.KindService, "ns")
	must(t, err)
	failIf(t, len(mine) != 2, "LockRequestListBySession(s1) = %+v, want 2", mine)
	call, err := tx.LockRequestListCall(ctx, "s1", 1)
	must(t, err)
	failIf(t, len(call) != 2 || call[0].ID != first.ID || call[1].ID != again.ID, "LockRequestListCall(s1) = %+v, want %d and %d", call, first.ID, again.ID)
	st, err := d.LockRequestStatuses(ctx, []int64{first.ID, again.ID})
	must(t, err)
	failIf(t, len(st) != 2 || st[first.ID].Status != driver.StatusGranted || st[first.ID].Token != first.Token, "LockRequestStatuses = %+v", st)
	info, err := tx.LockInfoList(ctx)
	must(t, err)
	failIf(t, len(info) != 3 || slices.IndexFunc(info, func(l driver.LockInfo) bool { return l.ID == first.ID && l.Owner == "owner s1" }) < 0,
		"LockInfoList = %+v, want the three grants with their owners", info)
}

// checkFastReleaseOrder: RELEASE_LOCK's order, the newest instance first.
func checkFastReleaseOrder(t *testing.T, d driver.Driver, first driver.Request) {
	ctx := testCtx(t)
	n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: driver.KindService, NS: "ns", Name: "a", Limit: 1})
	must(t, err)
	mine, _ := d.NoTx().LockRequestListBySession(ctx, "s1", -1, "")
	failIf(t, n != 1 || len(mine) != 1 || mine[0].ID != first.ID, "releasing one instance freed %d and left %+v, want the oldest (%d) left", n, mine, first.ID)
}

// checkFastWaiter: a writer queued behind both readers of a is granted
// only when both are gone; the lock row counts every reader, however
// stored.
func checkFastWaiter(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	var pending driver.Request
	inTx(t, d, func(tx driver.Tx) {
		st, err := tx.LockIdentLock(ctx, []driver.Ident{identA})
		must(t, err)
		failIf(t, st[0].Readers != 2 || st[0].Writers != 0, "the lock row counts %d readers and %d writers, want 2 and 0", st[0].Readers, st[0].Writers)
		pending = insertRequest(t, tx, driver.Request{SessionID: "s3", ClientID: "Cs3", Ident: identA, Mode: driver.ModeWrite, Status: driver.StatusPending, CallID: 7})
		st[0].Waiting++
		must(t, tx.LockIdentUpdate(ctx, st[0]))
	})
	granted := func() bool {
		st, err := d.LockRequestStatuses(ctx, []int64{pending.ID})
		must(t, err)
		return st[pending.ID].Status == driver.StatusGranted
	}
	releaseAll(t, d, "s1")
	failIf(t, granted(), "the writer was granted while s2 still reads")
	releaseAll(t, d, "s2")
	failIf(t, !granted(), "the writer still waits on a free lock")
}

// releaseAll releases the session's one instance in namespace ns and
// grants what that frees.
func releaseAll(t *testing.T, d driver.Driver, session string) {
	t.Helper()
	n, waiting, err := d.LockFastRelease(testCtx(t), driver.FastReleaseParams{SessionID: session, Kind: driver.KindService, NS: "ns"})
	must(t, err)
	failIf(t, n != 1, "release of %s freed %d instances, want 1", session, n)
	if len(waiting) == 0 {
		return
	}
	if handled, err := d.LockRegrant(testCtx(t), waiting); err != nil || !handled {
		regrantInTx(t, d, waiting)
	}
}

// checkFastRemoved: a fast grant removed by id in a transaction (as a
// session's end removes it), released by an inline-only release, found
// as a user lock's holder and as an orphan once its session is gone.
func checkFastRemoved(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := d.NoTx()
	b := fastAcquire(t, d, "s4", identB, driver.ModeWrite)
	inTx(t, d, func(tx driver.Tx) {
		st, err := tx.LockIdentLock(ctx, []driver.Ident{identB})
		must(t, err)
		must(t, tx.LockRequestDelete(ctx, []int64{b.ID}))
		st[0].Writers = 0
		must(t, tx.LockIdentUpdate(ctx, st[0]))
	})
	mine, _ := tx.LockRequestListBySession(ctx, "s4", -1, "")
	failIf(t, len(mine) != 0, "LockRequestDelete left %+v", mine)
	b2 := fastAcquire(t, d, "s1", identB, driver.ModeWrite)
	failIf(t, b2.Token <= b.Token, "token %d after a removed grant with %d", b2.Token, b.Token)

	// A release told that the session holds only inline holders frees
	// them (backends without inline holders ignore the hint).
	c := driver.Ident{Kind: driver.KindService, NS: "inline", Name: "c"}
	if r := fastAcquire(t, d, "s3", c, driver.ModeWrite); r.Inline {
		n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s3", Kind: driver.KindService, NS: "inline", InlineOnly: true})
		must(t, err)
		failIf(t, n != 1, "an inline-only release freed %d instances, want 1", n)
		fastAcquire(t, d, "s1", c, driver.ModeWrite)
	}

	u := fastAcquire(t, d, "s4", identU, driver.ModeWrite)
	holder, ok, err := tx.LockUserHolder(ctx, identU.Name)
	must(t, err)
	failIf(t, !ok || holder != "s4", "LockUserHolder = %q %v, want s4", holder, ok)
	must(t, tx.SessionDelete(ctx, "s4"))
	o, err := tx.LockRequestListOrphans(ctx, 10)
	must(t, err)
	failIf(t, len(o) != 1 || o[0].ID != u.ID, "LockRequestListOrphans = %+v, want s4's user lock %d", o, u.ID)
}

// regrantInTx grants what can be granted on the identifiers, as the
// engine does for a backend without LockRegrant.
func regrantInTx(t *testing.T, d driver.Driver, ids []driver.Ident) {
	t.Helper()
	ctx := testCtx(t)
	inTx(t, d, func(tx driver.Tx) {
		st, err := tx.LockIdentLock(ctx, ids)
		must(t, err)
		for _, s := range st {
			rs, err := tx.LockRequestList(ctx, []driver.Ident{s.Ident})
			must(t, err)
			for _, r := range rs {
				if r.Status != driver.StatusPending {
					continue
				}
				busy := slices.ContainsFunc(rs, func(g driver.Request) bool {
					return g.Status == driver.StatusGranted && g.SessionID != r.SessionID && (g.Mode == driver.ModeWrite || r.Mode == driver.ModeWrite)
				})
				if !busy {
					s.Fence++
					_, err := tx.LockRequestSetStatus(ctx, r.ID, driver.StatusPending, driver.StatusGranted, s.Fence)
					must(t, err)
				}
			}
			rs, err = tx.LockRequestList(ctx, []driver.Ident{s.Ident})
			must(t, err)
			s.Readers, s.Writers, s.Waiting = 0, 0, 0
			for _, r := range rs {
				switch {
				case r.Status != driver.StatusGranted:
					s.Waiting++
				case r.Mode == driver.ModeWrite:
					s.Writers++
				default:
					s.Readers++
				}
			}
			must(t, tx.LockIdentUpdate(ctx, s))
		}
	})
}
