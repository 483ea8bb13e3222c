package drivertest

import (
	"encoding/json"
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
	ctx := testCtx(t)
	newSession(t, d, "w", "A", hour)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	id, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("x"), MaxAttempts: 3, Kind: "email"})
	must(t, err)
	errs := failTwice(t, d, id)

	c := driver.Claim{ID: id, SessionID: "w", Attempt: 3}
	ok, err := tx.MessageFinish(ctx, driver.Claim{ID: id, SessionID: "w", Attempt: 2}, driver.MessageCompleted, nil)
	failIf(t, ok || err != nil, "MessageFinish with a stale claim: %v %v, want false", ok, err)
	ok, err = tx.MessageFinish(ctx, c, driver.MessageCompleted, nil)
	failIf(t, !ok || err != nil, "MessageFinish: %v %v", ok, err)
	got, found, err := tx.MessageGet(ctx, id)
	must(t, err)
	failIf(t, !found || got.State != driver.MessageCompleted || got.Kind != "email" || got.Attempt != 3 || got.FinishedAt.IsZero() ||
		string(got.Payload) != "x" || !sameErrors(t, got.Errors, errs), "finished message: %+v", got)
	ok, err = tx.MessageFinish(ctx, c, driver.MessageCompleted, nil)
	failIf(t, ok || err != nil, "finishing twice: %v %v, want false", ok, err)
	if _, found, _ := tx.MessageGet(ctx, id+1000); found {
		t.Fatal("MessageGet found a message that does not exist")
	}
	many := finishMany(t, d)
	checkHistoryLists(t, d, append([]int64{id}, many...))
	testCancel(t, d, many[1])
	checkPrune(t, d)
}

// failTwice fails two attempts of message id, each with its error (a
// panic's stack in the second), and claims it a third time; it returns
// the errors the third claim carries.
func failTwice(t *testing.T, d driver.Driver, id int64) []driver.AttemptError {
	ctx := testCtx(t)
	tx := d.NoTx()
	for attempt, e := range []driver.AttemptError{
		{At: time.Now().UTC().Truncate(time.Second), Attempt: 1, Error: "smtp 451 \"quoted\"\nsecond line"},
		{At: time.Now().UTC().Truncate(time.Second), Attempt: 2, Error: "panic: boom", Stack: "goroutine 1 [running]:\nmain.f()"},
	} {
		m := claim(t, d, "q", "w", 1)
		failIf(t, len(m) != 1 || m[0].Attempt != attempt+1 || m[0].Kind != "email", "claim %d: %+v", attempt+1, m)
		ok, err := tx.MessageRetry(ctx, driver.Claim{ID: id, SessionID: "w", Attempt: attempt + 1}, -time.Second, false, e)
		failIf(t, !ok || err != nil, "MessageRetry: %v %v", ok, err)
	}
	m := claim(t, d, "q", "w", 1)
	failIf(t, len(m) != 1, "third claim: %+v", m)
	var errs []driver.AttemptError
	must(t, json.Unmarshal([]byte(m[0].Errors), &errs))
	failIf(t, len(errs) != 2 || errs[0].Attempt != 1 || errs[0].Error != "smtp 451 \"quoted\"\nsecond line" ||
		errs[1].Stack != "goroutine 1 [running]:\nmain.f()" || errs[0].At.IsZero(), "errors after two attempts: %s", m[0].Errors)
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
	claims := []driver.Claim{{ID: claimed[0].ID, SessionID: "w", Attempt: 1}, {ID: claimed[1].ID, SessionID: "w", Attempt: 9}}
	for _, m := range claimed[2:] {
		claims = append(claims, driver.Claim{ID: m.ID, SessionID: "w", Attempt: m.Attempt})
	}
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
	failIf(t, n != 0 || err != nil, "pruning fresh history: %d %v", n, err)
	n, err = tx.HistoryPrune(ctx, driver.MessageCompleted, -hour, 3)
	failIf(t, n != 3 || err != nil, "pruning a batch of 3: %d %v", n, err)
	n, err = tx.HistoryPrune(ctx, driver.MessageCompleted, -hour, 3)
	failIf(t, n != 1 || err != nil, "pruning the rest: %d %v", n, err)
	if cancelled, _ := tx.HistoryList(ctx, "q", driver.MessageCancelled, "", 0, 10); len(cancelled) != 2 {
		t.Fatalf("pruning completed messages touched cancelled ones: %v", ids(cancelled))
	}
}

// testCancel: a waiting message is cancelled at once; a running one is
// flagged, its lease no longer extends and a retry is refused, so that its
// worker finishes it cancelled; a finished one is left as it is.
func testCancel(t *testing.T, d driver.Driver, running int64) {
	ctx := testCtx(t)
	tx := d.NoTx()
	waiting, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("w"), MaxAttempts: 3, Delay: hour})
	must(t, err)
	var state string
	inTx(t, d, func(tx driver.Tx) { state, err = tx.MessageCancel(ctx, waiting) })
	failIf(t, state != driver.MessageReady || err != nil, "cancelling a waiting message: %q %v", state, err)
	m, _, _ := tx.MessageGet(ctx, waiting)
	failIf(t, m.State != driver.MessageCancelled, "cancelled waiting message is %q", m.State)

	inTx(t, d, func(tx driver.Tx) { state, err = tx.MessageCancel(ctx, running) })
	failIf(t, state != driver.MessageClaimed || err != nil, "cancelling a running message: %q %v", state, err)
	m, _, _ = tx.MessageGet(ctx, running)
	failIf(t, m.State != driver.MessageClaimed || !m.CancelRequested, "cancelled running message: %+v", m)
	c := driver.Claim{ID: running, SessionID: "w", Attempt: m.Attempt}
	ok, err := tx.MessageExtend(ctx, c, hour)
	failIf(t, ok || err != nil, "extending a cancelled claim: %v %v, want false", ok, err)
	ok, err = tx.MessageRetry(ctx, c, 0, false, driver.AttemptError{Attempt: m.Attempt, Error: "stopped"})
	failIf(t, ok || err != nil, "retrying a cancelled claim: %v %v, want false", ok, err)
	ok, err = tx.MessageFinish(ctx, c, driver.MessageCancelled, &driver.AttemptError{Attempt: m.Attempt, Error: "stopped"})
	failIf(t, !ok || err != nil, "finishing a cancelled claim: %v %v", ok, err)

	inTx(t, d, func(tx driver.Tx) { state, err = tx.MessageCancel(ctx, running) })
	failIf(t, state != driver.MessageCancelled || err != nil, "cancelling a finished message: %q %v", state, err)
	inTx(t, d, func(tx driver.Tx) { state, err = tx.MessageCancel(ctx, running+1000) })
	failIf(t, state != "" || err != nil, "cancelling a message that does not exist: %q %v", state, err)
}

// testListFilters: the waiting messages list by whether they were retried
// and by kind.
func testListFilters(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	newSession(t, d, "w", "A", hour)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, "q"))
	fresh, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "q", Payload: []byte("a"), MaxAttempts: 3, Delay: hour, Kind: "a"})
	must(t, err)
	many, err := tx.MessageInsertMany(ctx, "q", []driver.NewMessage{
		{Queue: "q", Payload: []byte("b"), MaxAttempts: 3, Kind: "b"}, {Queue: "q", Payload: []byte("c"), MaxAttempts: 3}})
	must(t, err)
	m := claimKind(t, d, "q", "zz", "w", 10)
	failIf(t, len(m) != 0, "claimed %v of a kind no message has", ids(m))
	m = claimByIDs(t, d, "q", "zz", "w", 10)
	failIf(t, len(m) != 0, "claimed %v of a kind no message has, by candidates", ids(m))
	m = claimKind(t, d, "q", "b", "w", 10)
	failIf(t, len(m) != 1 || m[0].ID != many[0] || m[0].Kind != "b", "claim of kind b: %+v", m)
	ok, err := tx.MessageRetry(ctx, driver.Claim{ID: many[0], SessionID: "w", Attempt: 1}, hour, false, driver.AttemptError{Attempt: 1, Error: "x"})
	failIf(t, !ok || err != nil, "retry: %v %v", ok, err)
	yes, no := true, false
	list := func(f driver.ListFilter) []int64 {
		f.Queue, f.State, f.Limit = "q", driver.MessageReady, 10
		l, err := tx.MessageList(ctx, f)
		must(t, err)
		return ids(l)
	}
	failIf(t, !slices.Equal(list(driver.ListFilter{Due: &no, Retried: &no}), []int64{fresh}), "scheduled: %v", list(driver.ListFilter{Due: &no, Retried: &no}))
	failIf(t, !slices.Equal(list(driver.ListFilter{Due: &no, Retried: &yes}), []int64{many[0]}), "retrying: %v", list(driver.ListFilter{Due: &no, Retried: &yes}))
	failIf(t, !slices.Equal(list(driver.ListFilter{Kind: "a"}), []int64{fresh}), "kind a: %v", list(driver.ListFilter{Kind: "a"}))
	failIf(t, !slices.Equal(list(driver.ListFilter{Due: &yes}), []int64{many[1]}), "ready: %v", list(driver.ListFilter{Due: &yes}))
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
	failIf(t, found || err != nil, "ScheduleLast of a schedule never seen: %v %v", found, err)
	must(t, tx.ScheduleEnsure(ctx, "nightly", 100))
	must(t, tx.ScheduleEnsure(ctx, "nightly", 500)) // exists: unchanged
	last, found, err := tx.ScheduleLast(ctx, "nightly")
	failIf(t, !found || last != 100 || err != nil, "ScheduleLast = %d %v %v, want 100", last, found, err)
	for _, c := range []struct {
		tick int64
		want bool
	}{{200, true}, {200, false}, {150, false}, {300, true}} {
		ok, err := tx.ScheduleAdvance(ctx, "nightly", c.tick)
		failIf(t, ok != c.want || err != nil, "ScheduleAdvance to %d: %v %v, want %v", c.tick, ok, err, c.want)
	}
	ok, err := tx.ScheduleAdvance(ctx, "unknown", 1)
	failIf(t, ok || err != nil, "ScheduleAdvance of a schedule without a row: %v %v", ok, err)
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
	failIf(t, !reserved || err != nil, "UniqueReserve of a new key: %v %v", reserved, err)
	id, err := tx.MessageInsert(ctx, driver.NewMessage{Queue: "uq", Payload: []byte("u"), MaxAttempts: 3})
	must(t, err)
	must(t, tx.UniqueSet(ctx, "uq", "k", id, 0))
	holds := func(when string, want bool, states ...string) {
		t.Helper()
		holder, reserved, err := tx.UniqueReserve(ctx, "uq", "k", 0, states)
		must(t, err)
		failIf(t, reserved == want || (want && holder != id), "%s, states %v: holder %d, reserved %v; want the key held: %v", when, states, holder, reserved, want)
	}
	holds("ready", true)
	holds("ready", true, "ready", "completed")
	holds("ready", false, "running")
	claimed := claim(t, d, "uq", "w", 1)
	failIf(t, len(claimed) != 1 || claimed[0].ID != id, "claimed %+v", claimed)
	holds("running", true)
	holds("running", true, "running")
	holds("running", false, "scheduled", "ready", "retrying")
	n, err := tx.MessageFinishMany(ctx, "w", []driver.Claim{{ID: id, SessionID: "w", Attempt: claimed[0].Attempt}})
	failIf(t, n != 1 || err != nil, "MessageFinishMany: %d %v", n, err)
	holds("completed", false)
	holds("completed", true, "completed")
	holds("completed", false, "cancelled", "dead")

	// One statement for a new key, where the backend has it: the message
	// and its key together, nothing at all when the key exists.
	ui, ok := d.(driver.UniqueInserter)
	if !ok {
		return
	}
	m := driver.NewMessage{Queue: "uq", Payload: []byte("one"), MaxAttempts: 3, UniqueKey: "fresh"}
	id2, inserted, err := ui.MessageInsertUnique(ctx, m)
	failIf(t, err != nil || !inserted || id2 <= id, "MessageInsertUnique of a new key: %d %v %v", id2, inserted, err)
	holder, reserved, err := tx.UniqueReserve(ctx, "uq", "fresh", 0, nil)
	failIf(t, err != nil || reserved || holder != id2, "the key MessageInsertUnique took: holder %d, reserved %v, %v; want held by %d", holder, reserved, err, id2)
	_, inserted, err = ui.MessageInsertUnique(ctx, m)
	failIf(t, err != nil || inserted, "MessageInsertUnique of a taken key inserted: %v %v", inserted, err)
	ms, err := tx.MessageList(ctx, driver.ListFilter{Queue: "uq", State: driver.MessageReady, Limit: 10})
	must(t, err)
	failIf(t, len(ms) != 1 || ms[0].ID != id2, "the queue holds %d messages (%v), want the one MessageInsertUnique added", len(ms), ids(ms))
}
