// Package drivertest is the conformance suite of baton's driver interface:
// every method of driver.Driver and driver.Tx exercised directly on a real
// database, so that a backend is known to keep the contract the engine
// relies on without going through the engine. Each backend's tests run it:
//
//	func TestDriver(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T) driver.Driver { ... a fresh, empty database ... })
//	}
//
// Leases and expiry are measured on the database's clock; the suite moves
// that clock for a row by giving it a negative lease (a session or claim
// already expired), never by waiting.
package drivertest

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// Open returns a driver on a fresh, empty database owned by the test (it
// closes the driver and drops the database when the test ends).
type Open func(t *testing.T) driver.Driver

// Run runs every case of the suite as a parallel subtest, each on a
// database of its own, migrated and prepared.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		f    func(*testing.T, driver.Driver)
	}{
		{"Migrations", testMigrations},
		{"Sessions", testSessions},
		{"Heartbeat", testHeartbeat},
		{"Transactions", testTransactions},
		{"IdentRows", testIdentRows},
		{"Requests", testRequests},
		{"FastPath", testFastPath},
		{"FastReleaseReportsWaiters", testFastReleaseWaiters},
		{"FastPathSeen", testFastPathSeen},
		{"Requester", testRequester},
		{"TxGate", testTxGate},
		{"WaitGraph", testWaitGraph},
		{"Notify", testNotify},
		{"Queue", testQueue},
		{"InsertMany", testInsertMany},
		{"QueueRetryAndBury", testQueueRetryBury},
		{"History", testHistory},
		{"UniqueStates", testUniqueStates},
		{"ListFilters", testListFilters},
		{"Schedules", testSchedules},
		{"StaleClaims", testStaleClaims},
		{"PerKeyClaims", testPerKey},
		{"ClaimRules", testClaimRules},
		{"Subscriptions", testSubscriptions},
		{"Housekeeping", testHousekeeping},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			ctx := testCtx(t)
			_, err := d.Migrate(ctx)
			failIf(t, err != nil, "migrate: %v", err)
			err = d.Prepare(ctx)
			failIf(t, err != nil, "prepare: %v", err)
			tc.f(t, d)
		})
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// failIf fails the test with the message when cond holds.
func failIf(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if cond {
		t.Fatalf(format, args...)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// inTx runs f in a transaction of d and commits it.
func inTx(t *testing.T, d driver.Driver, f func(tx driver.Tx)) {
	t.Helper()
	tx, err := d.Begin(testCtx(t))
	must(t, err)
	f(tx)
	must(t, tx.Commit())
}

const hour = time.Hour

func newSession(t *testing.T, d driver.Driver, id, client string, lease time.Duration) driver.Session {
	t.Helper()
	s := driver.Session{ID: id, ClientID: client, Host: "host-" + client, PID: 4242, Name: "owner " + id}
	must(t, d.NoTx().SessionInsert(testCtx(t), s, lease))
	return s
}

func testMigrations(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	st, err := d.MigrationStatus(ctx)
	must(t, err)
	if len(st) == 0 {
		t.Fatal("no migrations known")
	}
	for i, m := range st {
		failIf(t, m.Version != i+1, "migration %d has version %d: numbers must run 1, 2, 3 … in every dialect", i, m.Version)
		failIf(t, !m.Applied || m.AppliedAt.IsZero(), "migration %03d_%s not applied after Migrate", m.Version, m.Name)
	}
	again, err := d.Migrate(ctx)
	must(t, err)
	failIf(t, len(again) != len(st), "second Migrate knows %d migrations, the first %d", len(again), len(st))
	for i := range again {
		failIf(t, !again[i].AppliedAt.Equal(st[i].AppliedAt), "second Migrate applied %03d_%s again", again[i].Version, again[i].Name)
	}
}

func testSessions(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	a1 := newSession(t, d, "a1", "A", hour)
	newSession(t, d, "a2", "A", hour)
	newSession(t, d, "b1", "B", -time.Second) // its lease already ran out
	c1 := driver.Session{ID: "c1", ClientID: "C", Host: "h", PID: 7, Name: "c", HostID: "boot-1"}
	must(t, d.NoTx().SessionInsert(ctx, c1, hour))

	all, err := d.NoTx().SessionList(ctx)
	must(t, err)
	failIf(t, len(all) != 4, "SessionList: %d sessions, want 4", len(all))
	got := all[slices.IndexFunc(all, func(s driver.Session) bool { return s.ID == "a1" })]
	failIf(t, got.ClientID != a1.ClientID || got.Host != a1.Host || got.PID != a1.PID || got.Name != a1.Name, "SessionList: %+v, stored %+v", got, a1)
	failIf(t, !got.ExpiresAt.After(got.CreatedAt), "a session with a lease of an hour expires at %v, created at %v", got.ExpiresAt, got.CreatedAt)
	if i := slices.IndexFunc(all, func(s driver.Session) bool { return s.ID == "c1" }); all[i].HostID != "boot-1" {
		t.Fatalf("HostID not kept: %+v", all[i])
	}

	ids, err := d.NoTx().SessionListByClient(ctx, "A")
	must(t, err)
	sort.Strings(ids)
	if !slices.Equal(ids, []string{"a1", "a2"}) {
		t.Fatalf("SessionListByClient(A) = %v", ids)
	}
	ids, err = d.NoTx().SessionListByClient(ctx, "B")
	failIf(t, err != nil || len(ids) != 0, "SessionListByClient lists an expired session: %v %v", ids, err)
	n, err := d.NoTx().SessionRenew(ctx, []string{"a1", "b1", "nobody"}, hour)
	must(t, err)
	failIf(t, n != 1, "SessionRenew renewed %d, want 1 (an expired session is never revived)", n)

	reap, err := d.NoTx().SessionListReapable(ctx, "A", "boot-1", 10)
	must(t, err)
	want := map[string]bool{"b1": true, "c1": false} // id -> expired
	failIf(t, len(reap) != len(want), "SessionListReapable = %+v, want b1 (expired) and c1 (same host)", reap)
	for _, r := range reap {
		exp, ok := want[r.ID]
		failIf(t, !ok || exp != r.Expired, "SessionListReapable = %+v, want b1 (expired) and c1 (same host)", reap)
		failIf(t, r.ID == "c1" && r.PID != 7, "reapable c1 has PID %d, want 7", r.PID)
	}
	reap, _ = d.NoTx().SessionListReapable(ctx, "B", "other-boot", 10)
	failIf(t, len(reap) != 0, "a client is offered its own or live sessions: %+v", reap)
	reap, _ = d.NoTx().SessionListReapable(ctx, "A", "", 10)
	failIf(t, len(reap) != 1 || reap[0].ID != "b1", "an empty host id matched sessions by host: %+v", reap)

	must(t, d.NoTx().SessionDelete(ctx, "b1"))
	all, err = d.NoTx().SessionList(ctx)
	must(t, err)
	if slices.ContainsFunc(all, func(s driver.Session) bool { return s.ID == "b1" }) {
		t.Fatal("SessionDelete left the row")
	}
}

func testHeartbeat(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "a1", "A", hour)
	newSession(t, d, "a2", "A", hour)
	newSession(t, d, "b1", "B", -time.Second)
	renewed, reap, err := d.SessionHeartbeat(ctx, driver.HeartbeatParams{
		ClientID: "A", HostID: "", SessionIDs: []string{"a1", "a2", "b1"}, Lease: hour, Limit: 10,
	})
	must(t, err)
	failIf(t, renewed != 2, "heartbeat renewed %d, want 2 (b1 is expired and another client's)", renewed)
	failIf(t, len(reap) != 1 || reap[0].ID != "b1" || !reap[0].Expired, "heartbeat reapable = %+v, want b1 expired", reap)
	// No sessions to renew: still lists what may be reaped.
	renewed, reap, err = d.SessionHeartbeat(ctx, driver.HeartbeatParams{ClientID: "A", Lease: hour, Limit: 10})
	must(t, err)
	failIf(t, renewed != 0 || len(reap) != 1, "heartbeat without sessions: renewed %d, reapable %+v", renewed, reap)
}

func testTransactions(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx, err := d.Begin(ctx)
	must(t, err)
	must(t, tx.SessionInsert(ctx, driver.Session{ID: "rolled", ClientID: "A"}, hour))
	must(t, tx.Rollback())
	inTx(t, d, func(tx driver.Tx) {
		must(t, tx.SessionInsert(ctx, driver.Session{ID: "kept", ClientID: "A"}, hour))
	})
	ids, err := d.NoTx().SessionListByClient(ctx, "A")
	must(t, err)
	if !slices.Equal(ids, []string{"kept"}) {
		t.Fatalf("after a rollback and a commit: %v, want [kept]", ids)
	}
	if d.IsRetryable(nil) || d.IsRetryable(errors.New("some error")) || d.IsRetryable(context.Canceled) {
		t.Fatal("IsRetryable says an ordinary error is a transient conflict")
	}
}

var (
	identA = driver.Ident{Kind: driver.KindService, NS: "ns", Name: "a"}
	identB = driver.Ident{Kind: driver.KindService, NS: "ns", Name: "b"}
	identU = driver.Ident{Kind: driver.KindUser, NS: "", Name: "user.lock"}
)

func testIdentRows(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	var first []driver.IdentState
	inTx(t, d, func(tx driver.Tx) {
		st, err := tx.LockIdentLock(ctx, []driver.Ident{identA, identB})
		must(t, err)
		failIf(t, len(st) != 2 || st[0].Ident != identA || st[1].Ident != identB, "LockIdentLock = %+v, want a and b in order", st)
		for _, s := range st {
			failIf(t, s.Fence <= 0 || s.Readers != 0 || s.Writers != 0 || s.Waiting != 0, "a new lock row: %+v, want a positive fence and zero counts", s)
		}
		// The counter 2 s behind the clock: idle, this row may be purged
		// (a row is purged only when its counter is a second behind).
		st[0].Readers, st[0].Waiting, st[0].Fence = 2, 1, st[0].Fence-2_000_000
		must(t, tx.LockIdentUpdate(ctx, st[0]))
		first = st
	})
	inTx(t, d, func(tx driver.Tx) {
		st, err := tx.LockIdentLock(ctx, []driver.Ident{identA})
		must(t, err)
		failIf(t, st[0] != first[0], "LockIdentUpdate stored %+v, read back %+v", first[0], st[0])
		st[0].Readers, st[0].Waiting = 0, 0
		must(t, tx.LockIdentUpdate(ctx, st[0]))
	})
	n, err := d.NoTx().LockIdentPurgeIdle(ctx)
	must(t, err)
	failIf(t, n != 1, "LockIdentPurgeIdle deleted %d idle rows, want 1 (b's counter is not yet a second old)", n)
	inTx(t, d, func(tx driver.Tx) {
		st, err := tx.LockIdentLock(ctx, []driver.Ident{identA})
		must(t, err)
		failIf(t, st[0].Fence <= first[0].Fence, "a purged and recreated lock row starts its fence at %d, not above the old %d", st[0].Fence, first[0].Fence)
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
	o, _ := tx.LockRequestListOrphans(ctx, 10)
	failIf(t, len(o) != 0, "orphans while every session lives: %+v", o)
	must(t, tx.SessionDelete(ctx, "s1"))
	o, err := tx.LockRequestListOrphans(ctx, 10)
	must(t, err)
	failIf(t, len(o) != 1 || o[0].ID != u1.ID, "LockRequestListOrphans = %+v, want the dead session's request", o)
}

// checkRequestLists: the requests by identifier, session, call, user-lock
// holder and monitoring.
func checkRequestLists(t *testing.T, d driver.Driver, g1, p2, u1 driver.Request) {
	ctx := testCtx(t)
	tx := d.NoTx()
	rs, err := tx.LockRequestList(ctx, []driver.Ident{identA})
	must(t, err)
	failIf(t, len(rs) != 2 || rs[0].ID != g1.ID || rs[1].ID != p2.ID, "LockRequestList = %+v, want the granted then the pending request", rs)
	r := rs[0]
	failIf(t, r.SessionID != "s1" || r.ClientID != "A" || r.Mode != driver.ModeWrite || r.Status != driver.StatusGranted, "stored %+v, read %+v", g1, r)
	failIf(t, r.Token != 11 || r.CallID != 1 || r.Ident != identA, "stored %+v, read %+v", g1, r)
	mine, err := tx.LockRequestListBySession(ctx, "s1", -1, "")
	must(t, err)
	failIf(t, len(mine) != 2, "LockRequestListBySession(every kind) = %+v, want 2", mine)
	mine, _ = tx.LockRequestListBySession(ctx, "s1", driver.KindUser, "")
	failIf(t, len(mine) != 1 || mine[0].ID != u1.ID, "LockRequestListBySession(user kind) = %+v", mine)
	mine, _ = tx.LockRequestListBySession(ctx, "s1", driver.KindService, "other")
	failIf(t, len(mine) != 0, "LockRequestListBySession(another namespace) = %+v", mine)
	call, _ := tx.LockRequestListCall(ctx, "s2", 2)
	failIf(t, len(call) != 1 || call[0].ID != p2.ID, "LockRequestListCall = %+v", call)
	holder, ok, err := tx.LockUserHolder(ctx, identU.Name)
	must(t, err)
	failIf(t, !ok || holder != "s1", "LockUserHolder = %q %v, want s1", holder, ok)
	_, ok, _ = tx.LockUserHolder(ctx, "nobody")
	failIf(t, ok, "LockUserHolder found a holder of an unused lock")
	info, err := tx.LockInfoList(ctx)
	must(t, err)
	i := slices.IndexFunc(info, func(l driver.LockInfo) bool { return l.ID == g1.ID })
	failIf(t, len(info) != 3 || i < 0, "LockInfoList = %+v", info)
	failIf(t, info[i].Owner != "owner s1" || info[i].Host != "host-A" || info[i].PID != 4242, "LockInfoList = %+v", info)
}

// checkRequestStatuses: compare-and-set of a status, statuses by id,
// deletion.
func checkRequestStatuses(t *testing.T, d driver.Driver, g1, p2 driver.Request) {
	ctx := testCtx(t)
	tx := d.NoTx()
	ok, err := tx.LockRequestSetStatus(ctx, p2.ID, driver.StatusPending, driver.StatusGranted, 13)
	failIf(t, !ok || err != nil, "pending to granted: %v %v", ok, err)
	ok, err = tx.LockRequestSetStatus(ctx, p2.ID, driver.StatusPending, driver.StatusDeadlock, 0)
	failIf(t, ok || err != nil, "a status changed from a value it did not have: %v %v", ok, err)
	st, err := d.LockRequestStatuses(ctx, []int64{g1.ID, p2.ID, 999999})
	must(t, err)
	failIf(t, len(st) != 2 || st[p2.ID].Status != driver.StatusGranted || st[p2.ID].Token != 13, "LockRequestStatuses = %+v", st)
	must(t, tx.LockRequestDelete(ctx, []int64{g1.ID, p2.ID}))
	st, _ = tx.LockRequestStatuses(ctx, []int64{g1.ID, p2.ID})
	failIf(t, len(st) != 0, "LockRequestDelete left %+v", st)
}

func fastParams(session, client string, id driver.Ident, mode string) driver.FastAcquireParams {
	return driver.FastAcquireParams{SessionID: session, ClientID: client, Ident: id, Mode: mode, CallID: 1}
}

func testFastPath(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "s1", "A", hour)
	newSession(t, d, "s2", "B", hour)
	r := fastAcquire(t, d, "s1", identA, driver.ModeWrite)
	failIf(t, r.ID <= 0 || r.Status != driver.StatusGranted || r.Token <= 0 || r.SessionID != "s1", "fast acquire of a free lock: %+v", r)
	_, ok, err := d.LockFastAcquire(ctx, fastParams("s2", "B", identA, driver.ModeRead))
	failIf(t, ok || err != nil, "fast acquire granted a read under a write: %v %v", ok, err)
	_, ok, err = d.LockFastAcquire(ctx, fastParams("s2", "B", identB, driver.ModeRead))
	failIf(t, !ok || err != nil, "fast acquire of another name: %v %v", ok, err)
	r2 := fastAcquire(t, d, "s1", identB, driver.ModeRead) // a second reader
	failIf(t, r2.Token == r.Token, "two grants share the fencing token %d", r.Token)
	n, waiting, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: driver.KindService, NS: "ns", Name: "a"})
	must(t, err)
	failIf(t, n != 1 || len(waiting) != 0, "fast release: %d released, waiters on %v; want 1 and none", n, waiting)
	r3, ok, err := d.LockFastAcquire(ctx, fastParams("s2", "B", identA, driver.ModeWrite))
	must(t, err)
	failIf(t, !ok || r3.Token <= r.Token, "after the release: granted %v with token %d (the first grant had %d: tokens only rise)", ok, r3.Token, r.Token)
	// Release of a whole namespace.
	n, _, err = d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s2", Kind: driver.KindService, NS: "ns"})
	must(t, err)
	failIf(t, n != 2, "namespace release freed %d, want 2 (a and b)", n)
	rs, _ := d.NoTx().LockRequestListBySession(ctx, "s2", -1, "")
	failIf(t, len(rs) != 0, "left after release: %+v", rs)
	if m, ok := d.(driver.ManyAcquirer); ok {
		checkAcquireMany(t, d, m)
	}
}

// checkAcquireMany: several free names at once, and none of a set of
// which one is taken.
func checkAcquireMany(t *testing.T, d driver.Driver, m driver.ManyAcquirer) {
	ctx := testCtx(t)
	names := []string{"m1", "m2", "m3"}
	p := fastParams("s1", "A", driver.Ident{Kind: driver.KindService, NS: "many"}, driver.ModeWrite)
	rs, ok, err := m.LockFastAcquireMany(ctx, p, names)
	must(t, err)
	failIf(t, !ok || len(rs) != 3 || rs[0].Name != "m1" || rs[2].Name != "m3", "LockFastAcquireMany = %+v %v", rs, ok)
	p.SessionID, p.ClientID = "s2", "B"
	rs, ok, err = m.LockFastAcquireMany(ctx, p, []string{"m0", "m3"})
	failIf(t, ok || err != nil || len(rs) != 0, "LockFastAcquireMany granted some of a conflicting set: %+v %v %v", rs, ok, err)
	rs, _ = d.NoTx().LockRequestListBySession(ctx, "s2", -1, "")
	failIf(t, len(rs) != 0, "a refused LockFastAcquireMany left %+v", rs)
}

// testFastReleaseWaiters: with a waiter queued on the identifier (as the
// slow path leaves it), the fast path grants nothing new, the release says
// the identifier needs re-examination, and LockRegrant (where the backend
// has it) grants the waiter.
func testFastReleaseWaiters(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "s1", "A", hour)
	newSession(t, d, "s2", "B", hour)
	newSession(t, d, "s3", "C", hour)
	_, ok, err := d.LockFastAcquire(ctx, fastParams("s1", "A", identA, driver.ModeWrite))
	failIf(t, !ok || err != nil, "fast acquire: %v %v", ok, err)
	var pending driver.Request
	inTx(t, d, func(tx driver.Tx) {
		st, err := tx.LockIdentLock(ctx, []driver.Ident{identA})
		must(t, err)
		failIf(t, st[0].Writers != 1, "the fast path's grant is not counted on the lock row: %+v", st[0])
		pending = insertRequest(t, tx, driver.Request{SessionID: "s2", ClientID: "B", Ident: identA, Mode: driver.ModeWrite, Status: driver.StatusPending, CallID: 2})
		st[0].Waiting++
		must(t, tx.LockIdentUpdate(ctx, st[0]))
	})
	n, waiting, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s1", Kind: driver.KindService, NS: "ns", Name: "a"})
	must(t, err)
	granted := func() bool {
		st, err := d.LockRequestStatuses(ctx, []int64{pending.ID})
		must(t, err)
		return st[pending.ID].Status == driver.StatusGranted && st[pending.ID].Token > 0
	}
	failIf(t, n != 1, "fast release with a waiter released %d, want 1", n)
	if len(waiting) == 0 {
		// The backend handed the lock over in the release itself.
		if !granted() {
			t.Fatal("fast release neither reported the waiter nor granted it the free lock")
		}
		return
	}
	failIf(t, len(waiting) != 1 || waiting[0] != identA, "fast release reports waiters on %v, want [a]", waiting)
	_, ok, err = d.LockFastAcquire(ctx, fastParams("s3", "C", identA, driver.ModeRead))
	failIf(t, ok || err != nil, "fast acquire jumped a queued waiter: %v %v", ok, err)
	handled, err := d.LockRegrant(ctx, []driver.Ident{identA})
	must(t, err)
	if handled && !granted() {
		t.Fatal("LockRegrant left the only waiter of a free lock waiting")
	}
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
		failIf(t, len(rs) != 2 || rs[0].ID != g.ID || rs[1].ID != p.ID, "LockWaitGraph = %+v, want the holder and the waiter of a (b has no waiter)", rs)
		must(t, tx.WakeClients(ctx, []string{"A", "B"}))
	})
}

func testNotify(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	got, woken := listenTo(t, d)
	// Notifications sent before the listener is ready may be missed:
	// resend until one arrives, then check the order of the next two.
	deadline := time.Now().Add(20 * time.Second)
	for first := false; !first; {
		must(t, d.Notify(ctx, "ch", "hello"))
		select {
		case n := <-got:
			failIf(t, n != [2]string{"ch", "hello"}, "received %q", n)
			first = true
		case <-time.After(200 * time.Millisecond):
			failIf(t, time.Now().After(deadline), "no notification delivered")
		}
	}
	for len(got) > 0 {
		<-got
	}
	must(t, d.Notify(ctx, "ch", "one"))
	must(t, d.Notify(ctx, "other", "two"))
	for _, want := range [][2]string{{"ch", "one"}, {"other", "two"}} {
		select {
		case n := <-got:
			failIf(t, n != want, "received %q, want %q (commit order)", n, want)
		case <-time.After(20 * time.Second):
			t.Fatalf("%q not delivered", want)
		}
	}
	inTx(t, d, func(tx driver.Tx) { must(t, tx.WakeClients(ctx, []string{"L"})) })
	select {
	case <-woken:
	case <-time.After(20 * time.Second):
		t.Fatal("the listener was never woken")
	}
	q, args := d.NotifyStatement("ch", "p")
	failIf(t, q == "" || len(args) == 0, "NotifyStatement = %q %v", q, args)
}

// listenTo starts client L's listener, notifying and waiting: it delivers
// notifications (but the engine's own channels) on got and wake-ups on
// woken, until the test ends.
func listenTo(t *testing.T, d driver.Driver) (got chan [2]string, woken chan struct{}) {
	got = make(chan [2]string, 16)
	woken = make(chan struct{}, 16)
	stop, err := d.Listen(testCtx(t), driver.ListenParams{
		ClientID: "L",
		Wake: func([]driver.Request) {
			select {
			case woken <- struct{}{}:
			default:
			}
		},
		Notify: func(ch, payload string) {
			if strings.HasPrefix(ch, "#") {
				return // the engine's own channels (queue wake-ups)
			}
			select {
			case got <- [2]string{ch, payload}:
			default:
			}
		},
		Interval: 50 * time.Millisecond,
	})
	must(t, err)
	t.Cleanup(stop)
	d.SetNotifying("L", true)
	d.SetWaiting("L", true)
	return got, woken
}

func testQueue(t *testing.T, d driver.Driver) {
	newSession(t, d, "w", "A", hour)
	q := fillQueue(t, d)
	checkQueueListing(t, d, q)
	checkClaimCycle(t, d, q)
	checkQueueControl(t, d, q)
}

// queueIDs are the messages fillQueue inserts.
type queueIDs struct{ low, high, later int64 }

// fillQueue registers queue q and inserts low, high (priority -5, a key,
// metadata), later (due in an hour) and two messages in one statement.
func fillQueue(t *testing.T, d driver.Driver) queueIDs {
	ctx := testCtx(t)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	must(t, tx.QueueRegister(ctx, "q")) // twice is fine
	ok, err := tx.QueueExists(ctx, "q")
	failIf(t, !ok || err != nil, "QueueExists: %v %v", ok, err)
	if ok, _ := tx.QueueExists(ctx, "none"); ok {
		t.Fatal("QueueExists of an unknown queue")
	}
	if qs, _ := tx.QueueList(ctx); !slices.Equal(qs, []string{"q"}) {
		t.Fatalf("QueueList = %v", qs)
	}
	var q queueIDs
	q.low, err = tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("low"), MaxAttempts: 3})
	must(t, err)
	q.high, err = tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("high"), Priority: -5, MaxAttempts: 3, Key: "k", HasKey: true, Meta: `{"a":1}`})
	must(t, err)
	q.later, err = tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("later"), Delay: hour, MaxAttempts: 3})
	must(t, err)
	many, err := tx.MessageInsertMany(ctx, "q", []driver.NewMessage{{Queue: "q", Payload: []byte("m1"), MaxAttempts: 1}, {Queue: "q", Payload: []byte("m2"), MaxAttempts: 1}})
	must(t, err)
	failIf(t, len(many) != 2 || many[0] >= many[1] || many[0] <= q.later, "MessageInsertMany ids %v (after %d): want two rising ids", many, q.later)
	return q
}

// checkQueueListing: a message read back, the due and not-yet-due lists
// and the claim heads.
func checkQueueListing(t *testing.T, d driver.Driver, q queueIDs) {
	ctx := testCtx(t)
	tx := d.NoTx()
	ms, err := tx.MessageByIDs(ctx, []int64{q.high})
	must(t, err)
	failIf(t, len(ms) != 1, "MessageByIDs = %+v", ms)
	m := ms[0]
	failIf(t, string(m.Payload) != "high" || m.Priority != -5 || !m.HasKey || m.Key != "k", "MessageByIDs = %+v", m)
	failIf(t, m.Meta != `{"a":1}` || m.State != driver.MessageReady, "MessageByIDs = %+v", m)
	due, notDue := true, false
	ready, err := tx.MessageList(ctx, driver.ListFilter{Queue: "q", State: driver.MessageReady, Due: &due, Limit: 10})
	must(t, err)
	failIf(t, len(ready) != 4 || ready[0].ID != q.high || ready[1].ID != q.low, "due messages in claim order: %v", ids(ready))
	l, err := tx.MessageList(ctx, driver.ListFilter{Queue: "q", State: driver.MessageReady, Due: &notDue, Limit: 10})
	must(t, err)
	failIf(t, len(l) != 1 || l[0].ID != q.later, "messages not yet due: %v", ids(l))
	heads, dueIn, err := tx.ClaimHeads(ctx, "q", 10)
	must(t, err)
	failIf(t, len(heads) != 5 || heads[0] != q.high || dueIn[len(dueIn)-1] <= 0, "ClaimHeads = %v %v", heads, dueIn)
}

// checkClaimCycle: claims in order, extension, acknowledgement of the
// current attempt only, release, and acknowledgement of many.
func checkClaimCycle(t *testing.T, d driver.Driver, q queueIDs) {
	ctx := testCtx(t)
	tx := d.NoTx()
	claimed := claim(t, d, "q", "w", 2)
	failIf(t, len(claimed) != 2 || claimed[0].ID != q.high || claimed[1].ID != q.low, "claimed %v, want high then low", ids(claimed))
	for _, m := range claimed {
		failIf(t, m.State != driver.MessageClaimed || m.ClaimedBy != "w", "a claimed message: %+v", m)
		failIf(t, m.Attempt != 1 || !m.ClaimUntil.After(m.CreatedAt), "a claimed message: %+v", m)
	}
	n, _ := tx.ClaimInFlight(ctx, "q")
	failIf(t, n != 2, "ClaimInFlight = %d, want 2", n)
	refs, _ := tx.ClaimsBySession(ctx, "w")
	failIf(t, len(refs) != 2, "ClaimsBySession = %+v", refs)
	c := driver.Claim{ID: q.high, SessionID: "w", Attempt: 1}
	ok, err := tx.MessageExtend(ctx, c, hour)
	failIf(t, !ok || err != nil, "MessageExtend: %v %v", ok, err)
	ok, err = tx.MessageAck(ctx, driver.Claim{ID: q.high, SessionID: "w", Attempt: 2})
	failIf(t, ok || err != nil, "a claim of another attempt acknowledged: %v %v", ok, err)
	ok, err = tx.MessageAck(ctx, c)
	failIf(t, !ok || err != nil, "MessageAck: %v %v", ok, err)
	ok, _ = tx.MessageAck(ctx, c)
	failIf(t, ok, "a claim acknowledged twice")
	ok, err = tx.MessageRelease(ctx, driver.Claim{ID: q.low, SessionID: "w", Attempt: 1})
	failIf(t, !ok || err != nil, "MessageRelease: %v %v", ok, err)
	ms, _ := tx.MessageByIDs(ctx, []int64{q.low})
	failIf(t, ms[0].State != driver.MessageReady || ms[0].Attempt != 0, "released message: %+v, want ready with its attempt taken back", ms[0])
	all := claim(t, d, "q", "w", 10)
	failIf(t, len(all) != 3, "claimed %v, want low, m1, m2 (later is not due)", ids(all))
	claims := make([]driver.Claim, len(all))
	for i, m := range all {
		claims[i] = driver.Claim{ID: m.ID, SessionID: "w", Attempt: m.Attempt}
	}
	n, err = tx.MessageAckMany(ctx, "w", claims)
	failIf(t, n != 3 || err != nil, "MessageAckMany: %d %v", n, err)
}

// checkQueueControl: stats, the next due time, pausing, retry now and
// delete of a waiting message.
func checkQueueControl(t *testing.T, d driver.Driver, q queueIDs) {
	ctx := testCtx(t)
	tx := d.NoTx()
	st, err := tx.QueueStats(ctx, "q")
	must(t, err)
	failIf(t, st.Ready != 0 || st.Scheduled != 1 || st.Claimed != 0 || st.Dead != 0, "QueueStats = %+v, want one scheduled", st)
	next, ok, err := tx.QueueNextDue(ctx, "q")
	failIf(t, !ok || err != nil || next <= 0 || next > hour, "QueueNextDue = %v %v %v", next, ok, err)
	ok, err = tx.QueuePause(ctx, "q", true)
	failIf(t, !ok || err != nil, "QueuePause: %v %v", ok, err)
	st, _ = tx.QueueStats(ctx, "q")
	failIf(t, !st.Paused, "a paused queue's stats say it is not")
	ok, _ = tx.QueuePause(ctx, "none", true)
	failIf(t, ok, "QueuePause of an unknown queue")
	done, _, err := tx.MessageRetryNow(ctx, "q", q.later)
	failIf(t, !done || err != nil, "MessageRetryNow: %v %v", done, err)
	done, _, err = tx.MessageDeleteWaiting(ctx, "q", q.later)
	failIf(t, !done || err != nil, "MessageDeleteWaiting: %v %v", done, err)
	done, state, err := tx.MessageDeleteWaiting(ctx, "q", q.later)
	failIf(t, done || state != "" || err != nil, "MessageDeleteWaiting of a deleted message: %v %q %v", done, state, err)
	// A message enqueued to run at once has no due time to wait for.
	must(t, tx.QueueRegister(ctx, "now"))
	_, err = tx.MessageInsert(ctx, driver.NewMessage{Queue: "now", Payload: []byte("now"), MaxAttempts: 1})
	must(t, err)
	next, ok, err = tx.QueueNextDue(ctx, "now")
	failIf(t, ok || err != nil, "QueueNextDue of a queue with only a message due at once = %v %v %v, want none", next, ok, err)
}

func ids(ms []driver.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// claim claims up to limit due messages of queue for session the way the
// engine does: in one statement where the backend can, otherwise by
// candidates and ids.
func claim(t *testing.T, d driver.Driver, queue, session string, limit int) []driver.Message {
	t.Helper()
	return claimKind(t, d, queue, "", session, limit)
}

// claimKind is claim restricted to one kind of message ("" for any).
func claimKind(t *testing.T, d driver.Driver, queue, kind, session string, limit int) []driver.Message {
	t.Helper()
	ctx := testCtx(t)
	out, ok, err := d.NoTx().ClaimParallel(ctx, queue, kind, session, hour, limit)
	must(t, err)
	if !ok {
		out = claimByIDs(t, d, queue, kind, session, limit)
	}
	// In serving order (the statement need not return them so).
	sort.Slice(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority < out[j].Priority // lower numbers first
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func claimByIDs(t *testing.T, d driver.Driver, queue, kind, session string, limit int) (out []driver.Message) {
	ctx := testCtx(t)
	inTx(t, d, func(tx driver.Tx) {
		cand, err := tx.ClaimCandidates(ctx, queue, kind, limit)
		must(t, err)
		n, err := tx.ClaimIDs(ctx, session, 0, hour, cand)
		must(t, err)
		failIf(t, n != len(cand), "ClaimIDs claimed %d of %d candidates", n, len(cand))
		out, err = tx.MessageByIDs(ctx, cand)
		must(t, err)
	})
	return out
}

func testQueueRetryBury(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "w", "A", hour)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	id, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("x"), MaxAttempts: 2})
	must(t, err)
	m := claim(t, d, "q", "w", 1)[0]
	if ok, err := tx.MessageRetry(ctx, driver.Claim{ID: id, SessionID: "w", Attempt: m.Attempt}, hour, true, driver.AttemptError{Attempt: 1, Error: "boom"}); !ok || err != nil {
		t.Fatalf("MessageRetry: %v %v", ok, err)
	}
	ms, err := tx.MessageByIDs(ctx, []int64{id})
	must(t, err)
	failIf(t, ms[0].State != driver.MessageReady || ms[0].LastError != "boom", "retried message: %+v, want ready with its error", ms[0])
	failIf(t, ms[0].Attempt != 1 || !ms[0].RunAt.After(time.Now().Add(30*time.Minute)), "retried message: %+v, want attempt 1, an hour from now", ms[0])
	got := claim(t, d, "q", "w", 1)
	failIf(t, len(got) != 0, "claimed a message backing off: %v", ids(got))
	done, _, err := tx.MessageRetryNow(ctx, "q", id)
	failIf(t, !done || err != nil, "MessageRetryNow: %v %v", done, err)
	m = claim(t, d, "q", "w", 1)[0]
	failIf(t, m.Attempt != 2, "second claim counts attempt %d", m.Attempt)
	if ok, err := tx.MessageFinish(ctx, driver.Claim{ID: id, SessionID: "w", Attempt: 2}, driver.MessageDead, &driver.AttemptError{Attempt: 2, Error: "gave up"}); !ok || err != nil {
		t.Fatalf("MessageFinish dead: %v %v", ok, err)
	}
	checkDeadLetters(t, d, id)
}

// checkDeadLetters: the buried message id in the dead letters, re-driven,
// deleted; throughput counts; purging an empty dead letter list.
func checkDeadLetters(t *testing.T, d driver.Driver, id int64) {
	ctx := testCtx(t)
	tx := d.NoTx()
	dead, err := tx.DeadList(ctx, "q", 10)
	must(t, err)
	failIf(t, len(dead) != 1 || dead[0].ID != id || dead[0].LastError != "gave up", "DeadList = %+v", dead)
	failIf(t, dead[0].Attempt != 2 || string(dead[0].Payload) != "x", "DeadList = %+v", dead)
	st, _ := tx.QueueStats(ctx, "q")
	failIf(t, st.Dead != 1 || st.Ready != 0, "QueueStats after a burial: %+v", st)
	n, err := tx.DeadRedrive(ctx, "q")
	failIf(t, n != 1 || err != nil, "DeadRedrive: %d %v", n, err)
	got := claim(t, d, "q", "w", 1)
	failIf(t, len(got) != 1 || string(got[0].Payload) != "x", "the re-driven message is not claimable: %+v", got)
	n, err = tx.QueueDeleteMessages(ctx, "q")
	failIf(t, n != 1 || err != nil, "QueueDeleteMessages: %d %v", n, err)
	must(t, tx.ThroughputAdd(ctx, "q", 3, 1))
	st, _ = tx.QueueStats(ctx, "q")
	failIf(t, st.RecentAcked != 3 || st.RecentDead != 1, "throughput: %+v, want 3 acknowledged and 1 dead", st)
	must(t, tx.ThroughputPurge(ctx))
	n, err = tx.DeadPurge(ctx, "q")
	failIf(t, n != 0 || err != nil, "DeadPurge of an empty dead letter list: %d %v", n, err)
}

// testStaleClaims: a claim whose lease ran out (a negative lease moves the
// database's clock past it) is listed for recovery, one within its lease
// is not.
func testStaleClaims(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "w", "A", hour)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	a, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("a"), MaxAttempts: 5})
	must(t, err)
	b, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("b"), MaxAttempts: 5})
	must(t, err)
	inTx(t, d, func(tx driver.Tx) {
		if n, err := tx.ClaimIDs(ctx, "w", 0, -time.Second, []int64{a}); n != 1 || err != nil {
			t.Fatalf("ClaimIDs: %d %v", n, err)
		}
		if n, err := tx.ClaimIDs(ctx, "w", 0, hour, []int64{b}); n != 1 || err != nil {
			t.Fatalf("ClaimIDs: %d %v", n, err)
		}
		if n, _ := tx.ClaimIDs(ctx, "w", 0, hour, []int64{b}); n != 0 {
			t.Fatal("a claimed message claimed again")
		}
	})
	stale, err := tx.ClaimsStale(ctx, 10)
	must(t, err)
	failIf(t, len(stale) != 1 || stale[0].ID != a || stale[0].SessionID != "w" || stale[0].Attempt != 1 || stale[0].MaxAttempts != 5, "ClaimsStale = %+v, want only a's expired claim", stale)
}

func testHousekeeping(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	must(t, d.Maintain(ctx))
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	holder, reserved, err := tx.UniqueReserve(ctx, "q", "u", 1, nil)
	must(t, err)
	failIf(t, !reserved || holder != 0, "UniqueReserve of a new key: %d %v", holder, reserved)
	id, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("u"), MaxAttempts: 1})
	must(t, err)
	must(t, tx.UniqueSet(ctx, "q", "u", id, 1))
	n, err := tx.UniquePurge(ctx)
	failIf(t, n != 1 || err != nil, "UniquePurge of a key whose period ended: %d %v", n, err)
	_, reserved, err = tx.UniqueReserve(ctx, "q", "u", 0, nil)
	failIf(t, !reserved || err != nil, "UniqueReserve after the purge: %v %v", reserved, err)
	must(t, tx.UniqueSet(ctx, "q", "u", id, 0))
	holder, reserved, err = tx.UniqueReserve(ctx, "q", "u", 0, nil)
	failIf(t, reserved || holder != id || err != nil, "UniqueReserve of a held key: %d %v %v, want holder %d", holder, reserved, err, id)
	q, args := d.QueueRegisterStatement("q2")
	failIf(t, q == "" || len(args) == 0, "QueueRegisterStatement = %q %v", q, args)
	q, args, _ = d.EnqueueStatement(driver.NewMessage{Queue: "q2", Payload: []byte("p"), MaxAttempts: 1})
	failIf(t, q == "" || len(args) == 0, "EnqueueStatement = %q %v", q, args)
}

// testPerKey: under the queue lock, the per-key candidates are the head of
// each key with nothing in flight and the messages without a key; listing
// pages by position.
func testPerKey(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "w", "A", hour)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	var id []int64
	for _, k := range []string{"x", "x", "y", ""} {
		i, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte(k), Key: k, HasKey: k != "", MaxAttempts: 1})
		must(t, err)
		id = append(id, i)
	}
	inTx(t, d, func(tx driver.Tx) {
		must(t, tx.QueueLock(ctx, "q"))
		cand, err := tx.ClaimCandidatesPerKey(ctx, "q", 10)
		must(t, err)
		slices.Sort(cand)
		if !slices.Equal(cand, []int64{id[0], id[2], id[3]}) {
			t.Fatalf("per-key candidates %v, want the heads of x and y and the keyless one %v", cand, []int64{id[0], id[2], id[3]})
		}
		if n, err := tx.ClaimIDs(ctx, "w", 2, hour, []int64{id[0]}); n != 1 || err != nil {
			t.Fatalf("ClaimIDs: %d %v", n, err)
		}
	})
	inTx(t, d, func(tx driver.Tx) {
		must(t, tx.QueueLock(ctx, "q"))
		cand, err := tx.ClaimCandidatesPerKey(ctx, "q", 10)
		must(t, err)
		slices.Sort(cand)
		if !slices.Equal(cand, []int64{id[2], id[3]}) {
			t.Fatalf("per-key candidates with x in flight: %v, want %v", cand, []int64{id[2], id[3]})
		}
	})
	first, err := tx.MessageList(ctx, driver.ListFilter{Queue: "q", State: driver.MessageReady, Limit: 2})
	must(t, err)
	failIf(t, len(first) != 2, "first page: %v", ids(first))
	last := first[1]
	rest, err := tx.MessageList(ctx, driver.ListFilter{Queue: "q", State: driver.MessageReady, Limit: 2,
		After: driver.ListPos{Priority: last.Priority, OrderAt: last.OrderAt.UnixMicro(), ID: last.ID}})
	must(t, err)
	failIf(t, len(rest) != 1 || slices.Contains(ids(first), rest[0].ID), "second page %v after %v: want the one ready message left", ids(rest), ids(first))
}

func testSubscriptions(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := d.NoTx()
	s := driver.Subscription{Name: "orders", Table: "orders", Actions: "IU", MaxAttempts: 4}
	must(t, tx.SubscriptionInsert(ctx, s))
	must(t, tx.SubscriptionInsert(ctx, driver.Subscription{Name: "audit", Table: "orders", Actions: "IUD", MaxAttempts: 1}))
	got, ok, err := tx.SubscriptionGet(ctx, "orders")
	must(t, err)
	failIf(t, !ok || got.Table != s.Table || got.Actions != s.Actions || got.MaxAttempts != s.MaxAttempts || got.CreatedAt.IsZero(), "SubscriptionGet = %+v %v, stored %+v", got, ok, s)
	if _, ok, _ := tx.SubscriptionGet(ctx, "none"); ok {
		t.Fatal("SubscriptionGet of an unknown name")
	}
	l, _ := tx.SubscriptionList(ctx)
	failIf(t, len(l) != 2, "SubscriptionList = %+v", l)
	n, err := tx.SubscriptionCountTable(ctx, "orders")
	failIf(t, n != 2 || err != nil, "SubscriptionCountTable = %d %v", n, err)
	ok, err = tx.SubscriptionDelete(ctx, "orders")
	failIf(t, !ok || err != nil, "SubscriptionDelete: %v %v", ok, err)
	if ok, _ := tx.SubscriptionDelete(ctx, "orders"); ok {
		t.Fatal("a subscription deleted twice")
	}
	_, ok, err = tx.TableDescribe(ctx, "no_such_table")
	failIf(t, ok || err != nil, "TableDescribe of a missing table: %v %v", ok, err)
}

// testInsertMany: a batch keeps every field of every message (binary and
// empty payloads, keys, metadata, delays), in order.
func testInsertMany(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	batch := []driver.NewMessage{
		{Queue: "q", Payload: []byte{}, Priority: 3, Key: "k", HasKey: true, Meta: `{"b":2}`, Delay: hour, MaxAttempts: 4},
		{Queue: "q", Payload: []byte{0, 1, 0xff, '"', '\\'}, MaxAttempts: 1},
		{Queue: "q", Payload: []byte("c"), Key: "", HasKey: true, MaxAttempts: 2},
	}
	got, err := tx.MessageInsertMany(ctx, "q", batch)
	must(t, err)
	failIf(t, len(got) != 3 || got[0] >= got[1] || got[1] >= got[2], "MessageInsertMany ids %v: want three rising ids", got)
	ms, err := tx.MessageByIDs(ctx, got)
	must(t, err)
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	failIf(t, len(ms) != 3, "MessageByIDs found %d of 3", len(ms))
	for i, m := range ms {
		w := batch[i]
		failIf(t, string(m.Payload) != string(w.Payload) || m.Priority != w.Priority || m.HasKey != w.HasKey || m.Key != w.Key,
			"message %d stored as %+v, sent %+v", i, m, w)
		failIf(t, m.Meta != w.Meta || m.MaxAttempts != w.MaxAttempts || m.Attempt != 0 || m.State != driver.MessageReady,
			"message %d stored as %+v, sent %+v", i, m, w)
	}
	failIf(t, !ms[0].RunAt.After(ms[1].RunAt.Add(30*time.Minute)), "a delay of an hour: run at %v, the undelayed at %v", ms[0].RunAt, ms[1].RunAt)
}
