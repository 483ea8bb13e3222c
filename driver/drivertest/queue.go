package drivertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

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
	checkSnooze(t, d, q.low)
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

// checkSnooze: a claim snoozed (for its attempt only, once) puts its
// message back, due after the delay, with its attempt taken back and the
// snooze recorded in its errors, not as its last error. The message is
// then made due again.
func checkSnooze(t *testing.T, d driver.Driver, id int64) {
	ctx := testCtx(t)
	tx := d.NoTx()
	got := claim(t, d, "q", "w", 1)
	failIf(t, len(got) != 1 || got[0].ID != id, "claimed %v, want %d", ids(got), id)
	c := driver.Claim{ID: id, SessionID: "w", Attempt: got[0].Attempt}
	other := c
	other.Attempt++
	e := driver.AttemptError{At: time.Now().UTC(), Attempt: c.Attempt, Error: "snoozed for 1h0m0s", Snoozed: true}
	snooze := func(c driver.Claim) func() (bool, error) {
		return func() (bool, error) { return tx.MessageSnooze(ctx, c, hour, true, e) }
	}
	wantSteps(t,
		step{"MessageSnooze of another attempt", snooze(other), false},
		step{"MessageSnooze", snooze(c), true},
		step{"a claim snoozed twice", snooze(c), false})
	m := message(t, tx, id)
	var errs []driver.AttemptError
	_ = json.Unmarshal([]byte(m.Errors), &errs)
	failIf(t, m.State != driver.MessageReady || m.Attempt != c.Attempt-1 || m.LastError != "" || m.ClaimedBy != "",
		"snoozed message: %+v, want ready with its attempt taken back and no last error", m)
	failIf(t, len(errs) != 1 || errs[0] != e, "snoozed message's errors: %s, want %+v", m.Errors, e)
	failIf(t, m.RunAt.Before(m.CreatedAt.Add(hour/2)), "snoozed for an hour, due at %v (created %v)", m.RunAt, m.CreatedAt)
	wantSteps(t, step{"MessageRetryNow of a snoozed message", func() (bool, error) { return acted(tx.MessageRetryNow(ctx, "q", id)) }, true})
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
		step{"MessageDelete", func() (bool, error) { return acted(tx.MessageDelete(ctx, "q", q.later)) }, true})
	done, state, err := tx.MessageDelete(ctx, "q", q.later)
	failIf(t, done || state != "" || err != nil, "MessageDelete of a deleted message: %v %q %v", done, state, err)
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
// queue's stats; the roll-up's rows (checkRollup).
func checkThroughput(t *testing.T, tx driver.Tx) {
	ctx := testCtx(t)
	must(t, tx.ThroughputAdd(ctx, "q", driver.Throughput{Acked: 3, Dead: 1}))
	st := queueStats(t, tx)
	failIf(t, st.RecentAcked != 3 || st.RecentDead != 1, "throughput: %+v, want 3 acknowledged and 1 dead", st)
	must(t, tx.ThroughputPurge(ctx))
	checkRollup(t, tx)
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

// workQueue registers queue q and starts session w of client A to work
// it; it returns the driver's statements outside a transaction.
func workQueue(t *testing.T, d driver.Driver) driver.Tx {
	t.Helper()
	newSession(t, d, "w", "A", hour)
	tx := d.NoTx()
	must(t, tx.QueueRegister(testCtx(t), "q"))
	return tx
}

// insertMessage enqueues m.
func insertMessage(t *testing.T, tx driver.Tx, m driver.NewMessage) int64 {
	t.Helper()
	id, err := tx.MessageInsert(testCtx(t), m)
	must(t, err)
	return id
}

// message reads the one message id.
func message(t *testing.T, tx driver.Tx, id int64) driver.Message {
	t.Helper()
	ms, err := tx.MessageByIDs(testCtx(t), []int64{id})
	must(t, err)
	failIf(t, len(ms) != 1, "MessageByIDs(%d) = %+v", id, ms)
	return ms[0]
}

// ready lists queue's ready messages through the filter (at most 10 when
// it sets no limit).
func ready(t *testing.T, tx driver.Tx, queue string, f driver.ListFilter) []driver.Message {
	t.Helper()
	f.Queue, f.State = queue, driver.MessageReady
	if f.Limit == 0 {
		f.Limit = 10
	}
	l, err := tx.MessageList(testCtx(t), f)
	must(t, err)
	return l
}

// content is what a message is enqueued with and keeps.
type content struct {
	Payload, Key, Meta    string
	HasKey                bool
	Priority, MaxAttempts int
}

func contentOf(m driver.Message) content {
	return content{string(m.Payload), m.Key, m.Meta, m.HasKey, m.Priority, m.MaxAttempts}
}

func sent(m driver.NewMessage) content {
	return content{string(m.Payload), m.Key, m.Meta, m.HasKey, m.Priority, m.MaxAttempts}
}

// claimsOf are the session's claims of the messages' current attempts.
func claimsOf(ms []driver.Message, session string) []driver.Claim {
	out := make([]driver.Claim, len(ms))
	for i, m := range ms {
		out[i] = driver.Claim{ID: m.ID, SessionID: session, Attempt: m.Attempt}
	}
	return out
}

// wantClaimIDs fails unless ClaimIDs of the ids for session w, in the mode
// and with the lease, claims want of them.
func wantClaimIDs(t *testing.T, tx driver.Tx, mode int, lease time.Duration, want int, ids ...int64) {
	t.Helper()
	n, err := tx.ClaimIDs(testCtx(t), "w", mode, lease, ids)
	wantCount(t, "ClaimIDs", n, err, want)
}

// backlog are a queue's message counts: ready, scheduled, claimed, dead.
func backlog(st driver.QueueStats) [4]int64 {
	return [4]int64{st.Ready, st.Scheduled, st.Claimed, st.Dead}
}

// queueStats reads the statistics of queue q.
func queueStats(t *testing.T, tx driver.Tx) driver.QueueStats {
	t.Helper()
	st, err := tx.QueueStats(testCtx(t), "q")
	must(t, err)
	return st
}

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
	hist, err := tx.HistoryList(ctx, "q", driver.MessageCompleted, "", driver.DataFilter{}, 0, 10)
	must(t, err)
	want := []int64{many[3], many[2], many[0], first}
	failIf(t, !slices.Equal(ids(hist), want), "completed history %v, want %v (newest first)", ids(hist), want)
	page, err := tx.HistoryList(ctx, "q", driver.MessageCompleted, "", driver.DataFilter{}, many[2], 2)
	must(t, err)
	failIf(t, !slices.Equal(ids(page), []int64{many[0], first}), "history page before %d: %v", many[2], ids(page))
	sms, err := tx.HistoryList(ctx, "q", driver.MessageCompleted, "sms", driver.DataFilter{}, 0, 10)
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
	cancelled, _ := tx.HistoryList(ctx, "q", driver.MessageCancelled, "", driver.DataFilter{}, 0, 10)
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
