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
	"fmt"
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
		{"ReleaseHandsOn", testReleaseRule},
		{"RemoveHandsOn", testRemoveRule},
		{"SettleCall", testSettleCall},
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
		{"QueuesReady", testQueuesReady},
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
	failIf(t, len(st) == 0, "no migrations known")
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
	checkSessionList(t, d, a1)
	checkSessionsByClient(t, d)
	checkReapable(t, d)
	must(t, d.NoTx().SessionDelete(ctx, "b1"))
	_, found := findSession(listSessions(t, d), "b1")
	failIf(t, found, "SessionDelete left the row")
}

func listSessions(t *testing.T, d driver.Driver) []driver.Session {
	t.Helper()
	all, err := d.NoTx().SessionList(testCtx(t))
	must(t, err)
	return all
}

func findSession(all []driver.Session, id string) (driver.Session, bool) {
	i := slices.IndexFunc(all, func(s driver.Session) bool { return s.ID == id })
	if i < 0 {
		return driver.Session{}, false
	}
	return all[i], true
}

// checkSessionList: the four sessions listed as stored, with their leases
// and host ids.
func checkSessionList(t *testing.T, d driver.Driver, a1 driver.Session) {
	all := listSessions(t, d)
	failIf(t, len(all) != 4, "SessionList: %d sessions, want 4", len(all))
	got, _ := findSession(all, "a1")
	want := a1
	want.CreatedAt, want.ExpiresAt = got.CreatedAt, got.ExpiresAt
	failIf(t, got != want, "SessionList: %+v, stored %+v", got, a1)
	failIf(t, !got.ExpiresAt.After(got.CreatedAt), "a session with a lease of an hour expires at %v, created at %v", got.ExpiresAt, got.CreatedAt)
	c1, _ := findSession(all, "c1")
	failIf(t, c1.HostID != "boot-1", "HostID not kept: %+v", c1)
}

// checkSessionsByClient: a client's live sessions, and a renewal that
// never revives an expired one.
func checkSessionsByClient(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	ids, err := d.NoTx().SessionListByClient(ctx, "A")
	must(t, err)
	sort.Strings(ids)
	failIf(t, !slices.Equal(ids, []string{"a1", "a2"}), "SessionListByClient(A) = %v", ids)
	ids, err = d.NoTx().SessionListByClient(ctx, "B")
	failIf(t, err != nil || len(ids) != 0, "SessionListByClient lists an expired session: %v %v", ids, err)
	n, err := d.NoTx().SessionRenew(ctx, []string{"a1", "b1", "nobody"}, hour)
	wantCount(t, "SessionRenew (an expired session is never revived)", n, err, 1)
}

// checkReapable: other clients' sessions that expired or run on the
// caller's host.
func checkReapable(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	reap, err := d.NoTx().SessionListReapable(ctx, "A", "boot-1", 10)
	must(t, err)
	wantReapable(t, "SessionListReapable(A, boot-1): b1 (expired) and c1 (same host)", reap, map[string]bool{"b1": true, "c1": false})
	i := slices.IndexFunc(reap, func(r driver.SessionRef) bool { return r.ID == "c1" })
	failIf(t, reap[i].PID != 7, "reapable c1 has PID %d, want 7", reap[i].PID)
	reap, _ = d.NoTx().SessionListReapable(ctx, "B", "other-boot", 10)
	wantReapable(t, "a client is offered its own or live sessions", reap, map[string]bool{})
	reap, _ = d.NoTx().SessionListReapable(ctx, "A", "", 10)
	wantReapable(t, "an empty host id matched sessions by host", reap, map[string]bool{"b1": true})
}

func testHeartbeat(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "a1", "A", hour)
	newSession(t, d, "a2", "A", hour)
	newSession(t, d, "b1", "B", -time.Second)
	renewed, reap, err := d.Sessions().SessionHeartbeat(ctx, driver.HeartbeatParams{
		ClientID: "A", HostID: "", SessionIDs: []string{"a1", "a2", "b1"}, Lease: hour, Limit: 10,
	})
	must(t, err)
	failIf(t, renewed != 2, "heartbeat renewed %d, want 2 (b1 is expired and another client's)", renewed)
	wantReapable(t, "heartbeat reapable", reap, map[string]bool{"b1": true})
	// No sessions to renew: still lists what may be reaped.
	renewed, reap, err = d.Sessions().SessionHeartbeat(ctx, driver.HeartbeatParams{ClientID: "A", Lease: hour, Limit: 10})
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
	for _, err := range []error{nil, errors.New("some error"), context.Canceled} {
		failIf(t, d.IsRetryable(err), "IsRetryable(%v) says an ordinary error is a transient conflict", err)
	}
}

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

func testNotify(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	got, woken := listenTo(t, d)
	notifyUntilHeard(t, d, got)
	must(t, d.Notifier().Notify(ctx, "ch", "one"))
	must(t, d.Notifier().Notify(ctx, "other", "two"))
	for _, want := range [][2]string{{"ch", "one"}, {"other", "two"}} {
		n := await(t, got, fmt.Sprintf("%q", want))
		failIf(t, n != want, "received %q, want %q (commit order)", n, want)
	}
	inTx(t, d, func(tx driver.Tx) { must(t, tx.WakeClients(ctx, []driver.Request{{ClientID: "L"}})) })
	await(t, woken, "the listener's wake-up")
	// A grant reaches the client with its id and token (no status read):
	// in-process on SQLite and MySQL, in the NOTIFY payload on PostgreSQL.
	grant := driver.Request{ClientID: "L", SessionID: "s-42", CallID: 77, ID: 42, Status: driver.StatusGranted, Token: 9}
	inTx(t, d, func(tx driver.Tx) {
		must(t, tx.WakeClients(ctx, []driver.Request{grant, {ClientID: "other", ID: 43, Status: driver.StatusGranted, Token: 10}}))
	})
	for {
		gs := await(t, woken, "the grant's wake-up")
		if gs == nil {
			continue // a look (SQLite's file watch may add one)
		}
		failIf(t, len(gs) != 1 || gs[0].ID != 42 || gs[0].Token != 9 || gs[0].Status != driver.StatusGranted || gs[0].SessionID != "s-42" || gs[0].CallID != 77,
			"the listener was handed %+v, want the grant %+v", gs, grant)
		break
	}
	q, args := d.Notifier().NotifyStatement("ch", "p")
	failIf(t, q == "" || len(args) == 0, "NotifyStatement = %q %v", q, args)
}

// notifyUntilHeard: notifications sent before the listener is ready may be
// missed, so it resends one until one arrives, then drops what else did.
func notifyUntilHeard(t *testing.T, d driver.Driver, got chan [2]string) {
	deadline := time.Now().Add(20 * time.Second)
	for !notifyHeard(t, d, got) {
		failIf(t, time.Now().After(deadline), "no notification delivered")
	}
	for len(got) > 0 {
		<-got
	}
}

// notifyHeard sends a notification and reports whether the listener
// received one within 200 ms.
func notifyHeard(t *testing.T, d driver.Driver, got chan [2]string) bool {
	must(t, d.Notifier().Notify(testCtx(t), "ch", "hello"))
	select {
	case n := <-got:
		failIf(t, n != [2]string{"ch", "hello"}, "received %q", n)
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

// await returns what arrives on ch within 20 s.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s not delivered", what)
		panic("unreachable")
	}
}

// listenTo starts client L's listener, notifying and waiting: it delivers
// notifications (but the engine's own channels) on got and wake-ups (the
// grants they carry, nil for a look) on woken, until the test ends.
func listenTo(t *testing.T, d driver.Driver) (got chan [2]string, woken chan []driver.Request) {
	got = make(chan [2]string, 16)
	woken = make(chan []driver.Request, 16)
	stop, err := d.Notifier().Listen(testCtx(t), driver.ListenParams{
		ClientID: "L",
		Wake: func(granted []driver.Request) {
			select {
			case woken <- granted:
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
	d.Notifier().SetNotifying("L", true)
	d.Notifier().SetWaiting("L", true)
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

// highMessage is the message of fillQueue with every field set.
var highMessage = driver.NewMessage{Queue: "q", Payload: []byte("high"), Priority: -5, MaxAttempts: 3, Key: "k", HasKey: true, Meta: `{"a":1}`}

// fillQueue registers queue q and inserts low, high (priority -5, a key,
// metadata), later (due in an hour) and two messages in one statement.
func fillQueue(t *testing.T, d driver.Driver) queueIDs {
	ctx := testCtx(t)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	must(t, tx.QueueRegister(ctx, "q")) // twice is fine
	ok, err := tx.QueueExists(ctx, "q")
	wantDone(t, "QueueExists(q)", ok, err, true)
	ok, err = tx.QueueExists(ctx, "none")
	wantDone(t, "QueueExists of an unknown queue", ok, err, false)
	qs, _ := tx.QueueList(ctx)
	failIf(t, !slices.Equal(qs, []string{"q"}), "QueueList = %v", qs)
	q := queueIDs{
		low:   insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("low"), MaxAttempts: 3}),
		high:  insertMessage(t, tx, highMessage),
		later: insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("later"), Delay: hour, MaxAttempts: 3}),
	}
	many, err := tx.MessageInsertMany(ctx, "q", []driver.NewMessage{{Queue: "q", Payload: []byte("m1"), MaxAttempts: 1}, {Queue: "q", Payload: []byte("m2"), MaxAttempts: 1}})
	must(t, err)
	failIf(t, len(many) != 2 || !rising(q.later, many[0], many[1]), "MessageInsertMany ids %v (after %d): want two rising ids", many, q.later)
	return q
}

// checkQueueListing: a message read back, the due and not-yet-due lists
// and the claim heads.
func checkQueueListing(t *testing.T, d driver.Driver, q queueIDs) {
	tx := d.NoTx()
	m := message(t, tx, q.high)
	failIf(t, contentOf(m) != sent(highMessage) || m.State != driver.MessageReady, "MessageByIDs = %+v, sent %+v", m, highMessage)
	due, notDue := true, false
	l := ready(t, tx, "q", driver.ListFilter{Due: &due})
	failIf(t, len(l) != 4 || !slices.Equal(ids(l[:2]), []int64{q.high, q.low}), "due messages in claim order: %v", ids(l))
	wantIDs(t, "messages not yet due", ids(ready(t, tx, "q", driver.ListFilter{Due: &notDue})), q.later)
	heads, dueIn, err := tx.ClaimHeads(testCtx(t), "q", 10)
	must(t, err)
	failIf(t, len(heads) != 5 || heads[0] != q.high || dueIn[len(dueIn)-1] <= 0, "ClaimHeads = %v %v", heads, dueIn)
}

// checkClaimCycle: claims in order, extension, acknowledgement of the
// current attempt only, release, and acknowledgement of many.
func checkClaimCycle(t *testing.T, d driver.Driver, q queueIDs) {
	tx := d.NoTx()
	claimed := claim(t, d, "q", "w", 2)
	wantIDs(t, "claimed (high then low)", ids(claimed), q.high, q.low)
	for _, m := range claimed {
		wantClaimed(t, m, "w", 1)
	}
	checkInFlight(t, tx, 2)
	checkAckOnce(t, tx, driver.Claim{ID: q.high, SessionID: "w", Attempt: 1})
	checkRelease(t, tx, driver.Claim{ID: q.low, SessionID: "w", Attempt: 1})
	all := claim(t, d, "q", "w", 10)
	failIf(t, len(all) != 3, "claimed %v, want low, m1, m2 (later is not due)", ids(all))
	n, err := tx.MessageAckMany(testCtx(t), "w", claimsOf(all, "w"))
	wantCount(t, "MessageAckMany", n, err, 3)
}

// wantClaimed fails unless m is claimed by the session for the attempt,
// with a lease.
func wantClaimed(t *testing.T, m driver.Message, session string, attempt int) {
	t.Helper()
	failIf(t, m.State != driver.MessageClaimed || m.ClaimedBy != session, "a claimed message: %+v", m)
	failIf(t, m.Attempt != attempt || !m.ClaimUntil.After(m.CreatedAt), "a claimed message: %+v, want attempt %d", m, attempt)
}

// checkInFlight: the claims of queue q and of session w.
func checkInFlight(t *testing.T, tx driver.Tx, want int) {
	ctx := testCtx(t)
	n, _ := tx.ClaimInFlight(ctx, "q")
	failIf(t, n != want, "ClaimInFlight = %d, want %d", n, want)
	refs, _ := tx.ClaimsBySession(ctx, "w")
	failIf(t, len(refs) != want, "ClaimsBySession = %+v, want %d", refs, want)
}

// checkAckOnce: claim c extended, then acknowledged for its attempt only
// and only once.
func checkAckOnce(t *testing.T, tx driver.Tx, c driver.Claim) {
	ctx := testCtx(t)
	other := c
	other.Attempt++
	ack := func(c driver.Claim) func() (bool, error) {
		return func() (bool, error) { return tx.MessageAck(ctx, c) }
	}
	wantSteps(t,
		step{"MessageExtend", func() (bool, error) { return tx.MessageExtend(ctx, c, hour) }, true},
		step{"a claim of another attempt acknowledged", ack(other), false},
		step{"MessageAck", ack(c), true},
		step{"a claim acknowledged twice", ack(c), false})
}

// checkRelease: a claim started (MessageStart, for its attempt only)
// takes the given claim mode; released, it puts its message back, ready,
// with its attempt taken back.
func checkRelease(t *testing.T, tx driver.Tx, c driver.Claim) {
	ctx := testCtx(t)
	other := c
	other.Attempt++
	wantSteps(t,
		step{"MessageStart of another attempt", func() (bool, error) { return tx.MessageStart(ctx, other, 1, hour) }, false},
		step{"MessageStart", func() (bool, error) { return tx.MessageStart(ctx, c, 1, hour) }, true})
	started := message(t, tx, c.ID)
	failIf(t, started.ClaimMode != 1 || started.State != driver.MessageClaimed, "started message: %+v, want claimed in mode 1", started)
	ok, err := tx.MessageRelease(testCtx(t), c)
	wantDone(t, "MessageRelease", ok, err, true)
	m := message(t, tx, c.ID)
	failIf(t, m.State != driver.MessageReady || m.Attempt != c.Attempt-1, "released message: %+v, want ready with its attempt taken back", m)
}

// checkQueueControl: stats, the next due time, pausing, retry now and
// delete of a waiting message.
func checkQueueControl(t *testing.T, d driver.Driver, q queueIDs) {
	ctx := testCtx(t)
	tx := d.NoTx()
	st := queueStats(t, tx)
	failIf(t, backlog(st) != [4]int64{0, 1, 0, 0}, "QueueStats = %+v, want one scheduled", st)
	next, ok, err := tx.QueueNextDue(ctx, "q")
	wantDone(t, "QueueNextDue", ok, err, true)
	failIf(t, next <= 0 || next > hour, "QueueNextDue = %v, want within the hour", next)
	pause := func(queue string) func() (bool, error) {
		return func() (bool, error) { return tx.QueuePause(ctx, queue, true) }
	}
	wantSteps(t, step{"QueuePause", pause("q"), true})
	failIf(t, !queueStats(t, tx).Paused, "a paused queue's stats say it is not")
	wantSteps(t,
		step{"QueuePause of an unknown queue", pause("none"), false},
		step{"MessageRetryNow", func() (bool, error) { return acted(tx.MessageRetryNow(ctx, "q", q.later)) }, true},
		step{"MessageDeleteWaiting", func() (bool, error) { return acted(tx.MessageDeleteWaiting(ctx, "q", q.later)) }, true})
	done, state, err := tx.MessageDeleteWaiting(ctx, "q", q.later)
	failIf(t, done || state != "" || err != nil, "MessageDeleteWaiting of a deleted message: %v %q %v", done, state, err)
	// A message enqueued to run at once has no due time to wait for.
	must(t, tx.QueueRegister(ctx, "now"))
	insertMessage(t, tx, driver.NewMessage{Queue: "now", Payload: []byte("now"), MaxAttempts: 1})
	next, ok, err = tx.QueueNextDue(ctx, "now")
	failIf(t, ok || err != nil, "QueueNextDue of a queue with only a message due at once = %v %v %v, want none", next, ok, err)
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
	tx := workQueue(t, d)
	id := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("x"), MaxAttempts: 2})
	m := claim(t, d, "q", "w", 1)[0]
	ok, err := tx.MessageRetry(ctx, driver.Claim{ID: id, SessionID: "w", Attempt: m.Attempt}, hour, true, driver.AttemptError{Attempt: 1, Error: "boom"})
	wantDone(t, "MessageRetry", ok, err, true)
	m = message(t, tx, id)
	failIf(t, m.State != driver.MessageReady || m.LastError != "boom", "retried message: %+v, want ready with its error", m)
	failIf(t, m.Attempt != 1 || !m.RunAt.After(time.Now().Add(30*time.Minute)), "retried message: %+v, want attempt 1, an hour from now", m)
	got := claim(t, d, "q", "w", 1)
	failIf(t, len(got) != 0, "claimed a message backing off: %v", ids(got))
	done, _, err := tx.MessageRetryNow(ctx, "q", id)
	wantDone(t, "MessageRetryNow", done, err, true)
	m = claim(t, d, "q", "w", 1)[0]
	failIf(t, m.Attempt != 2, "second claim counts attempt %d", m.Attempt)
	ok, err = tx.MessageFinish(ctx, driver.Claim{ID: id, SessionID: "w", Attempt: 2}, driver.MessageDead, &driver.AttemptError{Attempt: 2, Error: "gave up"})
	wantDone(t, "MessageFinish dead", ok, err, true)
	checkDeadLetters(t, d, id)
	checkThroughput(t, tx)
}

// checkDeadLetters: the buried message id in the dead letters, re-driven,
// deleted; purging an empty dead letter list.
func checkDeadLetters(t *testing.T, d driver.Driver, id int64) {
	ctx := testCtx(t)
	tx := d.NoTx()
	dead, err := tx.DeadList(ctx, "q", 10)
	must(t, err)
	failIf(t, len(dead) != 1 || dead[0].ID != id || dead[0].LastError != "gave up", "DeadList = %+v", dead)
	failIf(t, dead[0].Attempt != 2 || string(dead[0].Payload) != "x", "DeadList = %+v", dead)
	st := queueStats(t, tx)
	failIf(t, backlog(st) != [4]int64{0, 0, 0, 1}, "QueueStats after a burial: %+v", st)
	n, err := tx.DeadRedrive(ctx, "q")
	wantCount(t, "DeadRedrive", n, err, 1)
	got := claim(t, d, "q", "w", 1)
	failIf(t, len(got) != 1 || string(got[0].Payload) != "x", "the re-driven message is not claimable: %+v", got)
	n, err = tx.QueueDeleteMessages(ctx, "q")
	wantCount(t, "QueueDeleteMessages", n, err, 1)
	n, err = tx.DeadPurge(ctx, "q")
	wantCount(t, "DeadPurge of an empty dead letter list", n, err, 0)
}

// checkThroughput: the counts of acknowledged and dead messages in the
// queue's stats.
func checkThroughput(t *testing.T, tx driver.Tx) {
	ctx := testCtx(t)
	must(t, tx.ThroughputAdd(ctx, "q", 3, 1))
	st := queueStats(t, tx)
	failIf(t, st.RecentAcked != 3 || st.RecentDead != 1, "throughput: %+v, want 3 acknowledged and 1 dead", st)
	must(t, tx.ThroughputPurge(ctx))
}

// testStaleClaims: a claim whose lease ran out (a negative lease moves the
// database's clock past it) is listed for recovery, one within its lease
// is not.
func testStaleClaims(t *testing.T, d driver.Driver) {
	tx := workQueue(t, d)
	a := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("a"), MaxAttempts: 5})
	b := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("b"), MaxAttempts: 5})
	inTx(t, d, func(tx driver.Tx) {
		wantClaimIDs(t, tx, 0, -time.Second, 1, a)
		wantClaimIDs(t, tx, 0, hour, 1, b)
		wantClaimIDs(t, tx, 0, hour, 0, b) // a claimed message is not claimed again
	})
	stale, err := tx.ClaimsStale(testCtx(t), 10)
	must(t, err)
	failIf(t, len(stale) != 1 || stale[0] != driver.ClaimRef{ID: a, SessionID: "w", Attempt: 1, MaxAttempts: 5, Mode: stale[0].Mode}, "ClaimsStale = %+v, want only a's expired claim", stale)
}

// testQueuesReady: the poll of waiting consumers names the queues with a
// message due now, and only those: not a queue whose messages are all
// delayed, running or paused, not an empty or unknown one, and not a
// queue it was not asked about.
func testQueuesReady(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := workQueue(t, d)
	for _, q := range []string{"due", "delayed", "running", "paused", "empty", "other"} {
		must(t, tx.QueueRegister(ctx, q))
	}
	put := func(q string, delay time.Duration) int64 {
		return insertMessage(t, tx, driver.NewMessage{Queue: q, Payload: []byte(q), Delay: delay, MaxAttempts: 1})
	}
	put("due", 0)
	put("due", time.Hour)
	put("delayed", time.Hour)
	running := put("running", 0)
	inTx(t, d, func(tx driver.Tx) { wantClaimIDs(t, tx, 0, hour, 1, running) })
	put("paused", 0)
	ok, err := tx.QueuePause(ctx, "paused", true)
	wantDone(t, "QueuePause", ok, err, true)
	for q, want := range map[string]bool{"paused": true, "due": false, "unknown": false} {
		paused, err := tx.QueuePaused(ctx, q)
		failIf(t, paused != want || err != nil, "QueuePaused(%s) = %v, %v; want %v", q, paused, err, want)
	}
	put("other", 0)
	asked := []string{"due", "delayed", "running", "paused", "empty", "unknown"}
	got, err := d.Queue().QueuesReady(ctx, asked)
	must(t, err)
	failIf(t, !slices.Equal(got, []string{"due"}), "QueuesReady(%q) = %q, want only [due]", asked, got)
	ok, err = tx.QueuePause(ctx, "paused", false)
	wantDone(t, "QueuePause(false)", ok, err, true)
	paused, err := tx.QueuePaused(ctx, "paused")
	failIf(t, paused || err != nil, "QueuePaused after the resume = %v, %v", paused, err)
	got, err = d.Queue().QueuesReady(ctx, []string{"paused", "other"})
	must(t, err)
	slices.Sort(got)
	failIf(t, !slices.Equal(got, []string{"other", "paused"}), "QueuesReady after the resume = %q, want [other paused]", got)
	got, err = d.Queue().QueuesReady(ctx, nil)
	failIf(t, err != nil || len(got) != 0, "QueuesReady of no queue = %q, %v", got, err)
}

func testHousekeeping(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	must(t, d.Maintain(ctx))
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	holder, reserved, err := tx.UniqueReserve(ctx, "q", "u", 1, nil)
	must(t, err)
	failIf(t, !reserved || holder != 0, "UniqueReserve of a new key: %d %v", holder, reserved)
	id := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("u"), MaxAttempts: 1})
	must(t, tx.UniqueSet(ctx, "q", "u", id, 1))
	n, err := tx.UniquePurge(ctx)
	wantCount(t, "UniquePurge of a key whose period ended", n, err, 1)
	_, reserved, err = tx.UniqueReserve(ctx, "q", "u", 0, nil)
	wantDone(t, "UniqueReserve after the purge", reserved, err, true)
	must(t, tx.UniqueSet(ctx, "q", "u", id, 0))
	holder, reserved, err = tx.UniqueReserve(ctx, "q", "u", 0, nil)
	failIf(t, reserved || holder != id || err != nil, "UniqueReserve of a held key: %d %v %v, want holder %d", holder, reserved, err, id)
	checkStatements(t, d)
}

// checkStatements: the statements a program runs in its own transaction.
func checkStatements(t *testing.T, d driver.Driver) {
	q, args := d.Queue().QueueRegisterStatement("q2")
	failIf(t, q == "" || len(args) == 0, "QueueRegisterStatement = %q %v", q, args)
	q, args, _ = d.Queue().EnqueueStatement(driver.NewMessage{Queue: "q2", Payload: []byte("p"), MaxAttempts: 1})
	failIf(t, q == "" || len(args) == 0, "EnqueueStatement = %q %v", q, args)
}

// testPerKey: under the queue lock, the per-key candidates are the head of
// each key with nothing in flight and the messages without a key; listing
// pages by position.
func testPerKey(t *testing.T, d driver.Driver) {
	tx := workQueue(t, d)
	var id []int64
	for _, k := range []string{"x", "x", "y", ""} {
		id = append(id, insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte(k), Key: k, HasKey: k != "", MaxAttempts: 1}))
	}
	inTx(t, d, func(tx driver.Tx) {
		wantIDs(t, "per-key candidates: the heads of x and y and the keyless one", perKeyCandidates(t, tx), id[0], id[2], id[3])
		wantClaimIDs(t, tx, 2, hour, 1, id[0])
	})
	inTx(t, d, func(tx driver.Tx) {
		wantIDs(t, "per-key candidates with x in flight", perKeyCandidates(t, tx), id[2], id[3])
	})
	first := ready(t, tx, "q", driver.ListFilter{Limit: 2})
	failIf(t, len(first) != 2, "first page: %v", ids(first))
	last := first[1]
	rest := ready(t, tx, "q", driver.ListFilter{Limit: 2, After: driver.ListPos{Priority: last.Priority, OrderAt: last.OrderAt.UnixMicro(), ID: last.ID}})
	failIf(t, len(rest) != 1 || slices.Contains(ids(first), rest[0].ID), "second page %v after %v: want the one ready message left", ids(rest), ids(first))
}

// perKeyCandidates locks queue q and lists its per-key candidates, by id.
func perKeyCandidates(t *testing.T, tx driver.Tx) []int64 {
	ctx := testCtx(t)
	must(t, tx.QueueLock(ctx, "q"))
	cand, err := tx.ClaimCandidatesPerKey(ctx, "q", 10)
	must(t, err)
	slices.Sort(cand)
	return cand
}

func testSubscriptions(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := d.NoTx()
	s := driver.Subscription{Name: "orders", Table: "orders", SubscribedAs: "Orders", Actions: "IU", MaxAttempts: 4}
	must(t, tx.SubscriptionInsert(ctx, s))
	must(t, tx.SubscriptionInsert(ctx, driver.Subscription{Name: "audit", Table: "orders", Actions: "IUD", MaxAttempts: 1}))
	got, ok, err := tx.SubscriptionGet(ctx, "orders")
	must(t, err)
	want := s
	want.CreatedAt = got.CreatedAt
	failIf(t, !ok || got != want || got.CreatedAt.IsZero(), "SubscriptionGet = %+v %v, stored %+v", got, ok, s)
	get := func(name string) func() (bool, error) {
		return func() (bool, error) { _, ok, err := tx.SubscriptionGet(ctx, name); return ok, err }
	}
	del := func() (bool, error) { return tx.SubscriptionDelete(ctx, "orders") }
	l, _ := tx.SubscriptionList(ctx)
	failIf(t, len(l) != 2, "SubscriptionList = %+v", l)
	// Stored without SubscribedAs: the registry's name.
	failIf(t, l[0].Name != "audit" || l[0].SubscribedAs != "orders" || l[1].SubscribedAs != "Orders", "SubscriptionList = %+v", l)
	n, err := tx.SubscriptionCountTable(ctx, "orders")
	wantCount(t, "SubscriptionCountTable", n, err, 2)
	wantSteps(t,
		step{"SubscriptionGet of an unknown name", get("none"), false},
		step{"SubscriptionDelete", del, true},
		step{"a subscription deleted twice", del, false},
		step{"TableDescribe of a missing table", func() (bool, error) { _, ok, err := tx.TableDescribe(ctx, "no_such_table"); return ok, err }, false})
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
	failIf(t, len(got) != 3 || !rising(got...), "MessageInsertMany ids %v: want three rising ids", got)
	ms, err := tx.MessageByIDs(ctx, got)
	must(t, err)
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	failIf(t, len(ms) != 3, "MessageByIDs found %d of 3", len(ms))
	for i, m := range ms {
		failIf(t, contentOf(m) != sent(batch[i]) || m.Attempt != 0 || m.State != driver.MessageReady,
			"message %d stored as %+v, sent %+v", i, m, batch[i])
	}
	failIf(t, !ms[0].RunAt.After(ms[1].RunAt.Add(30*time.Minute)), "a delay of an hour: run at %v, the undelayed at %v", ms[0].RunAt, ms[1].RunAt)
}
