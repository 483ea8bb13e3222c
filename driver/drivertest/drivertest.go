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

func testMigrations(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	st, err := d.MigrationStatus(ctx)
	must(t, err)
	failIf(t, len(st) == 0, "no migrations known")
	for i, m := range st {
		// Numbers start at 1 and increase; branches leave gaps until merged.
		failIf(t, (i == 0 && m.Version != 1) || (i > 0 && m.Version <= st[i-1].Version),
			"migration %d has version %d: numbers must start at 1 and increase in every dialect", i, m.Version)
		failIf(t, !m.Applied || m.AppliedAt.IsZero(), "migration %03d_%s not applied after Migrate", m.Version, m.Name)
	}
	again, err := d.Migrate(ctx)
	must(t, err)
	failIf(t, len(again) != len(st), "second Migrate knows %d migrations, the first %d", len(again), len(st))
	for i := range again {
		failIf(t, !again[i].AppliedAt.Equal(st[i].AppliedAt), "second Migrate applied %03d_%s again", again[i].Version, again[i].Name)
	}
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

// The suite's small checks and the reads they rest on. Each fails the test
// with what it was checking; none retries or waits.

// wantDone fails unless a call that reports whether it acted reported
// want, without an error.
func wantDone(t *testing.T, what string, ok bool, err error, want bool) {
	t.Helper()
	failIf(t, ok != want || err != nil, "%s: %v %v, want %v", what, ok, err, want)
}

// wantCount fails unless a call that counts what it did counted want,
// without an error.
func wantCount[N ~int | ~int64](t *testing.T, what string, n N, err error, want N) {
	t.Helper()
	failIf(t, n != want || err != nil, "%s: %d %v, want %d", what, n, err, want)
}

// wantIDs fails unless got holds exactly the ids, in their order.
func wantIDs(t *testing.T, what string, got []int64, want ...int64) {
	t.Helper()
	failIf(t, !slices.Equal(got, want), "%s = %v, want %v", what, got, want)
}

// step is a call that reports whether it acted, and what it must report.
type step struct {
	what string
	do   func() (bool, error)
	want bool
}

// wantSteps runs the steps in order; each must report its want without an
// error.
func wantSteps(t *testing.T, steps ...step) {
	t.Helper()
	for _, s := range steps {
		ok, err := s.do()
		wantDone(t, s.what, ok, err, s.want)
	}
}

// acted drops the state that MessageRetryNow, MessageDeleteWaiting and
// MessageCancel-like calls report beside whether they acted.
func acted(done bool, _ driver.MessageState, err error) (bool, error) { return done, err }

// rising reports whether the ids strictly increase.
func rising(ids ...int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}

func ids(ms []driver.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
