package drivertest

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/driver"
)

// testData: the user data in the meta column: listings filter by a tag
// and by a metadata value, in the messages table and the history;
// MessageMeta and MessageSetMeta read and write the column wherever the
// message is; MessageSetOutput sets "output" on a current claim only (not
// a stale one, not one asked to stop), keeping the other keys.
func testData(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := workQueue(t, d)
	m1 := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("1"), MaxAttempts: 3,
		Meta: `{"tags":["a","b"],"metadata":{"k":"v","n":7,"ok":true,"o":{"k":"v"}}}`})
	m2 := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("2"), MaxAttempts: 3, Meta: `{"tags":["b"],"metadata":{"k":"V"}}`})
	m3 := insertMessage(t, tx, driver.NewMessage{Queue: "q", Payload: []byte("3"), MaxAttempts: 3})
	for _, c := range []struct {
		f    driver.DataFilter
		want []int64
	}{
		{driver.DataFilter{Tag: "a"}, []int64{m1}},
		{driver.DataFilter{Tag: "b"}, []int64{m1, m2}},
		{driver.DataFilter{Tag: "c"}, nil},
		{driver.DataFilter{MetaKey: "k", MetaValue: "v"}, []int64{m1}},
		{driver.DataFilter{MetaKey: "n", MetaValue: "7"}, []int64{m1}},
		{driver.DataFilter{MetaKey: "ok", MetaValue: "true"}, []int64{m1}},
		{driver.DataFilter{Tag: "b", MetaKey: "k", MetaValue: "V"}, []int64{m2}},
		{driver.DataFilter{MetaKey: "x", MetaValue: ""}, nil},
		{driver.DataFilter{}, []int64{m1, m2, m3}},
	} {
		wantIDs(t, "ready by "+c.f.Tag+" "+c.f.MetaKey+"="+c.f.MetaValue, ids(ready(t, tx, "q", driver.ListFilter{DataFilter: c.f})), c.want...)
	}
	meta, finished, found, err := tx.MessageMeta(ctx, m3)
	failIf(t, meta != "" || finished || !found || err != nil, "MessageMeta of a message without meta: %q %v %v %v", meta, finished, found, err)
	_, _, found, err = tx.MessageMeta(ctx, m3+1000)
	wantDone(t, "MessageMeta of no message", found, err, false)
	ok, err := tx.MessageSetMeta(ctx, m3, false, `{"metadata":{"x":1}}`)
	wantDone(t, "MessageSetMeta", ok, err, true)
	meta, _, _, err = tx.MessageMeta(ctx, m3)
	failIf(t, meta != `{"metadata":{"x":1}}` || err != nil, "MessageMeta after MessageSetMeta: %q %v", meta, err)

	claimed := claimKind(t, d, "q", "", "w", 10)
	failIf(t, len(claimed) != 3, "claimed %v", ids(claimed))
	stale := driver.Claim{ID: m1, SessionID: "w", Attempt: 2}
	ok, err = tx.MessageSetOutput(ctx, stale, `1`)
	wantDone(t, "MessageSetOutput of a stale claim", ok, err, false)
	c1 := driver.Claim{ID: m1, SessionID: "w", Attempt: 1}
	ok, err = tx.MessageSetOutput(ctx, c1, `{"sum": [1, "x"]}`)
	wantDone(t, "MessageSetOutput", ok, err, true)
	_, err = tx.MessageCancel(ctx, m2)
	must(t, err)
	ok, err = tx.MessageSetOutput(ctx, driver.Claim{ID: m2, SessionID: "w", Attempt: 1}, `2`)
	wantDone(t, "MessageSetOutput of a claim asked to stop", ok, err, false)
	n, err := tx.MessageFinishMany(ctx, "w", []driver.Claim{c1})
	failIf(t, n != 1 || err != nil, "MessageFinishMany = %d %v", n, err)

	meta, finished, found, err = tx.MessageMeta(ctx, m1)
	failIf(t, !finished || !found || err != nil, "MessageMeta of a finished message: %v %v %v", finished, found, err)
	var got struct {
		Tags     []string
		Metadata map[string]any
		Output   json.RawMessage
	}
	failIf(t, json.Unmarshal([]byte(meta), &got) != nil, "the meta column is not JSON: %q", meta)
	var out any
	failIf(t, json.Unmarshal(got.Output, &out) != nil || len(got.Tags) != 2 || got.Metadata["k"] != "v",
		"after MessageSetOutput and the finish: %q", meta)
	hist, err := tx.HistoryList(ctx, "q", driver.MessageCompleted, "", driver.DataFilter{Tag: "a"}, 0, 10)
	must(t, err)
	wantIDs(t, "history by tag a", ids(hist), m1)
	hist, err = tx.HistoryList(ctx, "q", driver.MessageCompleted, "", driver.DataFilter{MetaKey: "k", MetaValue: "x"}, 0, 10)
	must(t, err)
	wantIDs(t, "history by k=x", ids(hist))
	ok, err = tx.MessageSetMeta(ctx, m1, true, `{"metadata":{"k":"x"}}`)
	wantDone(t, "MessageSetMeta of a finished message", ok, err, true)
	hist, err = tx.HistoryList(ctx, "q", driver.MessageCompleted, "", driver.DataFilter{MetaKey: "k", MetaValue: "x"}, 0, 10)
	must(t, err)
	wantIDs(t, "history by k=x after MessageSetMeta", ids(hist), m1)
}
