package drivertest

import (
	"slices"
	"testing"

	"github.com/batonhq/baton/driver"
)

// testBulk: MessagesBulk acts on the listed messages of one queue that are
// still where the list says (waiting or running, or in the history) and
// in a state its action applies to: cancel moves waiting ones to the
// history and flags running ones, returning them; delete and retry skip
// running ones; retry moves finished ones back under their ids, due now.
// MessageDelete deletes a finished message too, never a running one.
func testBulk(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := workQueue(t, d)
	must(t, tx.QueueRegister(ctx, "other"))
	var ids []int64
	for range 4 {
		ids = append(ids, insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("x"), MaxAttempts: 1}))
	}
	later := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("later"), MaxAttempts: 1, Delay: hour})
	elsewhere := insertMessage(t, tx, driver.NewMessage{Queue: "other", Payload: []byte("x"), MaxAttempts: 1})
	running := claim(t, d, "q", "w", 1)[0].ID
	failIf(t, running != ids[0], "claimed %d, want %d", running, ids[0])
	bulk := func(action driver.BulkAction, ids []int64, finished bool) (n int, running []int64) {
		t.Helper()
		inTx(t, d, func(tx driver.Tx) {
			var err error
			n, running, err = tx.MessagesBulk(ctx, action, "q", ids, finished)
			must(t, err)
		})
		return n, running
	}
	state := func(id int64) driver.MessageState {
		t.Helper()
		m, found, err := tx.MessageGet(ctx, id)
		must(t, err)
		if !found {
			return ""
		}
		return m.State
	}

	n, _ := bulk(driver.BulkDelete, []int64{running, ids[1], elsewhere}, false)
	failIf(t, n != 1 || state(running) != driver.MessageClaimed || state(ids[1]) != "" || state(elsewhere) != driver.MessageReady,
		"bulk delete of a running, a waiting and another queue's message: %d, states %q %q %q", n, state(running), state(ids[1]), state(elsewhere))
	n, _ = bulk(driver.BulkRetry, []int64{running, later}, false)
	m := message(t, tx, later)
	failIf(t, n != 1 || m.RunAt.After(m.CreatedAt.Add(hour/2)), "bulk retry of a running and a scheduled message: %d, due %v (created %v)", n, m.RunAt, m.CreatedAt)
	n, flagged := bulk(driver.BulkCancel, []int64{running, ids[2], ids[3]}, false)
	failIf(t, n != 3 || !slices.Equal(flagged, []int64{running}), "bulk cancel: %d, running %v, want 3 and [%d]", n, flagged, running)
	failIf(t, state(ids[2]) != driver.MessageCancelled || state(ids[3]) != driver.MessageCancelled, "bulk cancelled: %q %q", state(ids[2]), state(ids[3]))
	c, found, err := tx.MessageGet(ctx, running)
	must(t, err)
	failIf(t, !found || c.State != driver.MessageClaimed || !c.CancelRequested, "bulk cancel of a running message: %+v", c)

	// Finished: waiting statements find nothing; retry moves them back.
	n, _ = bulk(driver.BulkDelete, []int64{ids[2]}, false)
	failIf(t, n != 0, "bulk delete of a finished message listed as waiting: %d", n)
	n, _ = bulk(driver.BulkRetry, []int64{ids[2], ids[3], running}, true)
	failIf(t, n != 2 || state(ids[2]) != driver.MessageReady || state(ids[3]) != driver.MessageReady,
		"bulk retry of finished messages: %d, states %q %q", n, state(ids[2]), state(ids[3]))
	n, _ = bulk(driver.BulkCancel, []int64{ids[2]}, false)
	failIf(t, n != 1, "bulk cancel again: %d", n)
	n, _ = bulk(driver.BulkDelete, []int64{ids[2], ids[3]}, true)
	failIf(t, n != 1 || state(ids[2]) != "" || state(ids[3]) != driver.MessageReady, "bulk delete of finished messages: %d, states %q %q", n, state(ids[2]), state(ids[3]))

	// MessageDelete: a finished message by id, not a running one.
	done, st, err := tx.MessageDelete(ctx, "q", running)
	failIf(t, done || st != driver.MessageClaimed || err != nil, "MessageDelete of a running message: %v %q %v", done, st, err)
	n, _ = bulk(driver.BulkCancel, []int64{ids[3]}, false)
	failIf(t, n != 1, "bulk cancel: %d", n)
	wantSteps(t, step{"MessageDelete of a finished message", func() (bool, error) { return acted(tx.MessageDelete(ctx, "q", ids[3])) }, true},
		step{"MessageDelete of a deleted message", func() (bool, error) { return acted(tx.MessageDelete(ctx, "q", ids[3])) }, false})
}
