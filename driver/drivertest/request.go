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
	ctx := testCtx(t)
	sessions := []string{"s1", "s2", "s3"}
	for _, s := range sessions {
		newSession(t, d, s, "C"+s, hour)
	}
	modes := []string{driver.ModeRead, driver.ModeWrite}
	rnd := rand.New(rand.NewPCG(7, 11))
	for round := range 60 {
		id := driver.Ident{Kind: driver.KindService, NS: "rule", Name: fmt.Sprint(round)}
		// The first instance by the fast path, as most locks begin.
		if rnd.IntN(3) > 0 {
			s := sessions[rnd.IntN(3)]
			_, ok, err := d.LockFastAcquire(ctx, fastParams(s, "C"+s, id, modes[rnd.IntN(2)]))
			failIf(t, !ok || err != nil, "fast acquire on a free lock: %v %v", ok, err)
		}
		for range rnd.IntN(5) {
			status := []string{driver.StatusGranted, driver.StatusPending, driver.StatusPending, driver.StatusDeadlock}[rnd.IntN(4)]
			s := sessions[rnd.IntN(3)]
			inTx(t, d, func(tx driver.Tx) {
				st, err := tx.LockIdentLock(ctx, []driver.Ident{id})
				must(t, err)
				token := int64(0)
				if status == driver.StatusGranted {
					st[0].Fence++
					token = st[0].Fence
				}
				insertRequest(t, tx, driver.Request{SessionID: s, ClientID: "C" + s, Ident: id, Mode: modes[rnd.IntN(2)], Status: status, CallID: 9, Token: token})
				rs, err := tx.LockRequestList(ctx, []driver.Ident{id})
				must(t, err)
				st[0].Readers, st[0].Writers, st[0].Waiting = lockcore.Counts(rs)
				must(t, tx.LockIdentUpdate(ctx, st[0]))
			})
		}
		var before []driver.Request
		var state driver.IdentState
		inTx(t, d, func(tx driver.Tx) {
			st, err := tx.LockIdentLock(ctx, []driver.Ident{id})
			must(t, err)
			state = st[0]
			before, err = tx.LockRequestList(ctx, []driver.Ident{id})
			must(t, err)
		})
		s, mode := sessions[rnd.IntN(3)], modes[rnd.IntN(2)]
		candidate := driver.Request{ID: math.MaxInt64, SessionID: s, ClientID: "C" + s, Ident: id, Mode: mode, Status: driver.StatusPending}
		want := slices.Contains(lockcore.Grants(append(slices.Clone(before), candidate)), candidate.ID)
		tryOnce := rnd.IntN(4) == 0
		r, err := rq.LockRequest(ctx, driver.RequestParams{SessionID: s, ClientID: "C" + s, Ident: id, Mode: mode, CallID: 5, TryOnce: tryOnce})
		after, lerr := d.NoTx().LockRequestList(ctx, []driver.Ident{id})
		must(t, lerr)
		if !want && tryOnce {
			failIf(t, !errors.Is(err, driver.ErrWouldWait), "round %d: a try-once request that must wait returned %+v, %v; want ErrWouldWait", round, r, err)
			failIf(t, len(after) != len(before), "round %d: a refused try-once request was stored: %+v", round, after)
			continue
		}
		must(t, err)
		granted := r.Status == driver.StatusGranted
		failIf(t, granted != want, "round %d: %s's %s request on %+v: granted %v, the rule says %v", round, s, mode, before, granted, want)
		failIf(t, len(after) != len(before)+1 || after[len(after)-1].ID != r.ID || after[len(after)-1].Status != r.Status, "round %d: stored %+v, returned %+v", round, after, r)
		var now driver.IdentState
		inTx(t, d, func(tx driver.Tx) {
			st, err := tx.LockIdentLock(ctx, []driver.Ident{id})
			must(t, err)
			now = st[0]
		})
		wantState := state
		wantState.Readers, wantState.Writers, wantState.Waiting = lockcore.Counts(after)
		if granted {
			wantState.Fence++
			failIf(t, r.Token != wantState.Fence, "round %d: granted with token %d, want the next fence %d", round, r.Token, wantState.Fence)
		}
		failIf(t, now != wantState, "round %d: the lock row is %+v after the request, want %+v", round, now, wantState)
	}
	// A session the database does not have (reaped, or lost in a crash).
	_, err := rq.LockRequest(ctx, driver.RequestParams{SessionID: "gone", ClientID: "Cgone", Ident: identA, Mode: driver.ModeWrite, CallID: 1})
	failIf(t, !errors.Is(err, driver.ErrNoSession), "a request of a session the database does not have: %v, want ErrNoSession", err)
	rs, _ := d.NoTx().LockRequestListBySession(ctx, "gone", -1, "")
	failIf(t, len(rs) != 0, "a request of a missing session was stored: %+v", rs)
}
