package drivertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// testHistory: finishing moves a message to the history in its state, with
// every attempt's error; a message is found by id wherever it is; the
// history lists by queue, state and kind, newest first, and is pruned by
// age.
func testHistory(t *testing.T, d driver.Driver) {
	tx := workQueue(t, d)
	id := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("x"), MaxAttempts: 3, Kind: "email"})
	errs := failTwice(t, d, id)
	checkFinish(t, tx, id, errs)
	many := finishMany(t, d)
	checkHistoryLists(t, d, append([]int64{id}, many...))
	testCancel(t, d, many[1])
	st := queueStats(t, tx)
	failIf(t, st.Completed != 4 || st.Cancelled != 2 || st.Claimed != 0 || st.Dead != 0,
		"QueueStats after the history: %+v, want 4 completed and 2 cancelled", st)
	checkPrune(t, d)
	st = queueStats(t, tx)
	failIf(t, st.Completed != 0 || st.Cancelled != 2, "QueueStats after pruning the completed: %+v, want 2 cancelled", st)
}

// checkFinish: message id, claimed for its third attempt after failing
// with errs, is finished by that claim only, and once; it is then found by
// id, completed, with every attempt's error.
func checkFinish(t *testing.T, tx driver.Tx, id int64, errs []driver.AttemptError) {
	ctx := testCtx(t)
	finish := func(attempt int) func() (bool, error) {
		return func() (bool, error) {
			return tx.MessageFinish(ctx, driver.Claim{ID: id, SessionID: "w", Attempt: attempt}, driver.MessageCompleted, nil)
		}
	}
	wantSteps(t, step{"MessageFinish with a stale claim", finish(2), false}, step{"MessageFinish", finish(3), true})
	got, found, err := tx.MessageGet(ctx, id)
	must(t, err)
	failIf(t, !found || recordOf(got) != record{driver.MessageCompleted, "email", "x", 3}, "finished message: %+v", got)
	failIf(t, got.FinishedAt.IsZero() || !sameErrors(t, got.Errors, errs), "finished message: %+v, want its finishing time and errors %+v", got, errs)
	wantSteps(t, step{"finishing twice", finish(3), false})
	_, found, _ = tx.MessageGet(ctx, id+1000)
	failIf(t, found, "MessageGet found a message that does not exist")
}

// record is where a message stands, with what it was enqueued with.
type record struct {
	State         driver.MessageState
	Kind, Payload string
	Attempt       int
}

func recordOf(m driver.Message) record { return record{m.State, m.Kind, string(m.Payload), m.Attempt} }

// failTwice fails two attempts of message id, each with its error (a
// panic's stack in the second), and claims it a third time; it returns
// the errors the third claim carries.
func failTwice(t *testing.T, d driver.Driver, id int64) []driver.AttemptError {
	ctx := testCtx(t)
	tx := d.NoTx()
	sent := []driver.AttemptError{
		{At: time.Now().UTC().Truncate(time.Second), Attempt: 1, Error: "smtp 451 \"quoted\"\nsecond line"},
		{At: time.Now().UTC().Truncate(time.Second), Attempt: 2, Error: "panic: boom", Stack: "goroutine 1 [running]:\nmain.f()"},
	}
	for attempt, e := range sent {
		m := claim(t, d, "q", "w", 1)
		failIf(t, len(m) != 1 || m[0].Attempt != attempt+1 || m[0].Kind != "email", "claim %d: %+v", attempt+1, m)
		ok, err := tx.MessageRetry(ctx, driver.Claim{ID: id, SessionID: "w", Attempt: attempt + 1}, -time.Second, false, e)
		wantDone(t, "MessageRetry", ok, err, true)
	}
	m := claim(t, d, "q", "w", 1)
	failIf(t, len(m) != 1, "third claim: %+v", m)
	return twoErrors(t, m[0].Errors, sent)
}

// twoErrors decodes the error record of a message that failed with the
// two errors sent, which it must hold: the first's time, attempt and text,
// the second's stack.
func twoErrors(t *testing.T, doc string, sent []driver.AttemptError) []driver.AttemptError {
	var errs []driver.AttemptError
	must(t, json.Unmarshal([]byte(doc), &errs))
	failIf(t, len(errs) != 2, "errors after two attempts: %s", doc)
	failIf(t, errs[0].Attempt != 1 || errs[0].Error != sent[0].Error || errs[0].At.IsZero(), "errors after two attempts: %s", doc)
	failIf(t, errs[1].Stack != sent[1].Stack, "errors after two attempts: %s", doc)
	return errs
}

// finishMany enqueues four messages (kinds sms, none, sms, none), claims
// them and completes three at once (the claim of the second is stale);
// it returns their ids.
func finishMany(t *testing.T, d driver.Driver) []int64 {
	ctx := testCtx(t)
	tx := d.NoTx()
	var many []int64
	for i := range 4 {
		kind := ""
		if i%2 == 0 {
			kind = "sms"
		}
		id, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("m"), MaxAttempts: 3, Kind: kind})
		must(t, err)
		many = append(many, id)
	}
	claimed := claim(t, d, "q", "w", 4)
	claims := append([]driver.Claim{{ID: claimed[0].ID, SessionID: "w", Attempt: 1}, {ID: claimed[1].ID, SessionID: "w", Attempt: 9}}, claimsOf(claimed[2:], "w")...)
	n, err := tx.MessageFinishMany(ctx, "w", claims)
	failIf(t, n != 3 || err != nil, "MessageFinishMany: %d %v, want 3 (one claim is stale)", n, err)
	return many
}

// checkHistoryLists: the completed history newest first, by pages and by
// kind; ids are the first completed message and finishMany's.
func checkHistoryLists(t *testing.T, d driver.Driver, ids5 []int64) {
	ctx := testCtx(t)
	tx := d.NoTx()
	first, many := ids5[0], ids5[1:]
	hist, err := tx.HistoryList(ctx, "q", driver.MessageCompleted, "", 0, 10)
	must(t, err)
	want := []int64{many[3], many[2], many[0], first}
	failIf(t, !slices.Equal(ids(hist), want), "completed history %v, want %v (newest first)", ids(hist), want)
	page, err := tx.HistoryList(ctx, "q", driver.MessageCompleted, "", many[2], 2)
	must(t, err)
	failIf(t, !slices.Equal(ids(page), []int64{many[0], first}), "history page before %d: %v", many[2], ids(page))
	sms, err := tx.HistoryList(ctx, "q", driver.MessageCompleted, "sms", 0, 10)
	must(t, err)
	failIf(t, !slices.Equal(ids(sms), []int64{many[2], many[0]}), "completed sms: %v", ids(sms))
}

// checkPrune: nothing is old enough for a day's retention; everything is
// for a negative one (the clock an hour ahead), in batches, one state
// at a time.
func checkPrune(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := d.NoTx()
	n, err := tx.HistoryPrune(ctx, driver.MessageCompleted, 24*hour, 100)
	wantCount(t, "pruning fresh history", n, err, 0)
	n, err = tx.HistoryPrune(ctx, driver.MessageCompleted, -hour, 3)
	wantCount(t, "pruning a batch of 3", n, err, 3)
	n, err = tx.HistoryPrune(ctx, driver.MessageCompleted, -hour, 3)
	wantCount(t, "pruning the rest", n, err, 1)
	cancelled, _ := tx.HistoryList(ctx, "q", driver.MessageCancelled, "", 0, 10)
	failIf(t, len(cancelled) != 2, "pruning completed messages touched cancelled ones: %v", ids(cancelled))
}

// testCancel: a waiting message is cancelled at once; a running one is
// flagged, its lease no longer extends and a retry is refused, so that its
// worker finishes it cancelled; a finished one is left as it is.
func testCancel(t *testing.T, d driver.Driver, running int64) {
	ctx := testCtx(t)
	tx := d.NoTx()
	waiting := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("w"), MaxAttempts: 3, Delay: hour})
	wantCancel(t, d, waiting, driver.MessageReady, "a waiting message")
	m, _, _ := tx.MessageGet(ctx, waiting)
	failIf(t, m.State != driver.MessageCancelled, "cancelled waiting message is %q", m.State)

	wantCancel(t, d, running, driver.MessageClaimed, "a running message")
	m, _, _ = tx.MessageGet(ctx, running)
	failIf(t, m.State != driver.MessageClaimed || !m.CancelRequested, "cancelled running message: %+v", m)
	c := driver.Claim{ID: running, SessionID: "w", Attempt: m.Attempt}
	stopped := driver.AttemptError{Attempt: m.Attempt, Error: "stopped"}
	wantSteps(t,
		step{"extending a cancelled claim", func() (bool, error) { return tx.MessageExtend(ctx, c, hour) }, false},
		step{"retrying a cancelled claim", func() (bool, error) { return tx.MessageRetry(ctx, c, 0, false, stopped) }, false},
		step{"finishing a cancelled claim", func() (bool, error) { return tx.MessageFinish(ctx, c, driver.MessageCancelled, &stopped) }, true})

	wantCancel(t, d, running, driver.MessageCancelled, "a finished message")
	wantCancel(t, d, running+1000, "", "a message that does not exist")
}

// wantCancel fails unless MessageCancel of message id, in a transaction,
// finds it in the state (before the cancellation; "" when there is no such
// message).
func wantCancel(t *testing.T, d driver.Driver, id int64, want driver.MessageState, what string) {
	t.Helper()
	var state driver.MessageState
	var err error
	inTx(t, d, func(tx driver.Tx) { state, err = tx.MessageCancel(testCtx(t), id) })
	failIf(t, state != want || err != nil, "cancelling %s: %q %v, want %q", what, state, err, want)
}

// testListFilters: the waiting messages list by whether they were retried
// and by kind.
func testListFilters(t *testing.T, d driver.Driver) {
	tx := workQueue(t, d)
	fresh := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("a"), MaxAttempts: 3, Delay: hour, Kind: "a"})
	many, err := tx.MessageInsertMany(testCtx(t), "q", []driver.NewMessage{
		{Queue: "q", Payload: []byte("b"), MaxAttempts: 3, Kind: "b"}, {Queue: "q", Payload: []byte("c"), MaxAttempts: 3}})
	must(t, err)
	m := claimKind(t, d, "q", "zz", "w", 10)
	failIf(t, len(m) != 0, "claimed %v of a kind no message has", ids(m))
	m = claimByIDs(t, d, "q", "zz", "w", 10)
	failIf(t, len(m) != 0, "claimed %v of a kind no message has, by candidates", ids(m))
	m = claimKind(t, d, "q", "b", "w", 10)
	failIf(t, len(m) != 1 || m[0].ID != many[0] || m[0].Kind != "b", "claim of kind b: %+v", m)
	ok, err := tx.MessageRetry(testCtx(t), driver.Claim{ID: many[0], SessionID: "w", Attempt: 1}, hour, false, driver.AttemptError{Attempt: 1, Error: "x"})
	wantDone(t, "retry", ok, err, true)
	yes, no := true, false
	for _, c := range []struct {
		what string
		f    driver.ListFilter
		want int64
	}{
		{"scheduled", driver.ListFilter{Due: &no, Retried: &no}, fresh},
		{"retrying", driver.ListFilter{Due: &no, Retried: &yes}, many[0]},
		{"kind a", driver.ListFilter{Kind: "a"}, fresh},
		{"ready", driver.ListFilter{Due: &yes}, many[1]},
	} {
		wantIDs(t, c.what, ids(ready(t, tx, "q", c.f)), c.want)
	}
	st := queueStats(t, tx)
	failIf(t, st.Ready != 1 || st.Scheduled != 1 || st.Retrying != 1 || st.Claimed != 0,
		"QueueStats = %+v, want one ready, one scheduled, one retrying", st)
}

// sameErrors says whether a stored error record holds the errors.
func sameErrors(t *testing.T, doc string, want []driver.AttemptError) bool {
	var got []driver.AttemptError
	if err := json.Unmarshal([]byte(doc), &got); err != nil {
		t.Fatalf("error record %q: %v", doc, err)
	}
	return slices.EqualFunc(got, want, func(a, b driver.AttemptError) bool {
		return a.At.Equal(b.At) && a.Attempt == b.Attempt && a.Error == b.Error && a.Stack == b.Stack
	})
}

// testSchedules: a schedule's last tick moves forward once per tick, never
// back, whoever asks.
func testSchedules(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := d.NoTx()
	_, found, err := tx.ScheduleLast(ctx, "nightly")
	wantDone(t, "ScheduleLast of a schedule never seen", found, err, false)
	must(t, tx.ScheduleEnsure(ctx, "nightly", 100))
	must(t, tx.ScheduleEnsure(ctx, "nightly", 500)) // exists: unchanged
	last, found, err := tx.ScheduleLast(ctx, "nightly")
	failIf(t, !found || last != 100 || err != nil, "ScheduleLast = %d %v %v, want 100", last, found, err)
	for _, c := range []struct {
		tick int64
		want bool
	}{{200, true}, {200, false}, {150, false}, {300, true}} {
		ok, err := tx.ScheduleAdvance(ctx, "nightly", c.tick)
		wantDone(t, fmt.Sprintf("ScheduleAdvance to %d", c.tick), ok, err, c.want)
	}
	ok, err := tx.ScheduleAdvance(ctx, "unknown", 1)
	wantDone(t, "ScheduleAdvance of a schedule without a row", ok, err, false)
}

// testUniqueStates: a unique key holds while its message is in one of the
// states the colliding enqueue names, and by default while it waits or
// runs; the state is read wherever the message is (the queue or the
// history).
func testUniqueStates(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "uq"))
	_, reserved, err := tx.UniqueReserve(ctx, "uq", "k", 0, nil)
	wantDone(t, "UniqueReserve of a new key", reserved, err, true)
	id := insertMessage(t, tx, driver.NewMessage{Queue: "uq", Payload: []byte("u"), MaxAttempts: 3})
	must(t, tx.UniqueSet(ctx, "uq", "k", id, 0))
	wantKeyHeld(t, tx, id, "ready", heldIn{true, nil}, heldIn{true, []string{"ready", "completed"}}, heldIn{false, []string{"running"}})
	claimed := claim(t, d, "uq", "w", 1)
	wantIDs(t, "claimed", ids(claimed), id)
	wantKeyHeld(t, tx, id, "running", heldIn{true, nil}, heldIn{true, []string{"running"}}, heldIn{false, []string{"scheduled", "ready", "retrying"}})
	n, err := tx.MessageFinishMany(ctx, "w", claimsOf(claimed, "w"))
	wantCount(t, "MessageFinishMany", n, err, 1)
	wantKeyHeld(t, tx, id, "completed", heldIn{false, nil}, heldIn{true, []string{"completed"}}, heldIn{false, []string{"cancelled", "dead"}})
	checkInsertUnique(t, tx, d.Queue(), id)
}

// heldIn says whether the unique key holds against an enqueue naming the
// states (none: the default).
type heldIn struct {
	held   bool
	states []string
}

// wantKeyHeld fails unless queue uq's key k, held by message id in the
// state when, holds as the cases say.
func wantKeyHeld(t *testing.T, tx driver.Tx, id int64, when string, cases ...heldIn) {
	t.Helper()
	for _, c := range cases {
		holder, reserved, err := tx.UniqueReserve(testCtx(t), "uq", "k", 0, c.states)
		must(t, err)
		failIf(t, reserved == c.held || (c.held && holder != id), "%s, states %v: holder %d, reserved %v; want the key held: %v", when, c.states, holder, reserved, c.held)
	}
}

// checkInsertUnique: one statement for a new key, where the backend has
// it: the message and its key together, nothing at all when the key
// exists. Message id is the queue's one other message, finished.
func checkInsertUnique(t *testing.T, tx driver.Tx, ui driver.Queue, id int64) {
	ctx := testCtx(t)
	m := driver.NewMessage{Queue: "uq", Payload: []byte("one"), MaxAttempts: 3, UniqueKey: "fresh"}
	id2, inserted, err := ui.MessageInsertUnique(ctx, m)
	failIf(t, err != nil || !inserted || id2 <= id, "MessageInsertUnique of a new key: %d %v %v", id2, inserted, err)
	holder, reserved, err := tx.UniqueReserve(ctx, "uq", "fresh", 0, nil)
	failIf(t, err != nil || reserved || holder != id2, "the key MessageInsertUnique took: holder %d, reserved %v, %v; want held by %d", holder, reserved, err, id2)
	_, inserted, err = ui.MessageInsertUnique(ctx, m)
	wantDone(t, "MessageInsertUnique of a taken key inserted", inserted, err, false)
	wantIDs(t, "the queue's messages: the one MessageInsertUnique added", ids(ready(t, tx, "uq", driver.ListFilter{})), id2)
}
