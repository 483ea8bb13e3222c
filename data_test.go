package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// orderArgs are typed arguments whose uniqueness counts Customer and
// Order only (Note is not tagged).
type orderArgs struct {
	Customer string `json:"customer" baton:"unique"`
	Order    int    `json:"order" baton:"unique"`
	Note     string `json:"note"`
}

func (orderArgs) Kind() string { return "order" }

// plainArgs has no tagged field: all of it counts.
type plainArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func (plainArgs) Kind() string { return "plain" }

// many is n tags of 64 characters.
func many(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("%064d", i)
	}
	return tags
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	return fmt.Sprint(g) == fmt.Sprint(w)
}

// TestDataRoundTrip: metadata and tags given at enqueue (Enqueue,
// EnqueueMany, EnqueueJob) are on the claimed Message, kept through a
// retry, and in the history with the output the successful run recorded;
// the failed run's output is not kept.
func TestDataRoundTrip(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		md := json.RawMessage(`{"customer":"acme","n":42}`)
		id := enqueue(t, c, "dq", "one", baton.EnqueueOptions{Metadata: md, Tags: []string{"vip", "eu", "vip"}})
		ids, err := c.EnqueueMany(ctx, "dq", []baton.NewMessage{
			{Payload: []byte("two"), EnqueueOptions: baton.EnqueueOptions{Tags: []string{"bulk"}}},
			{Payload: []byte("three")},
		})
		if err != nil {
			t.Fatal(err)
		}
		jid, err := c.EnqueueJob(ctx, "dq", plainArgs{A: 1}, baton.EnqueueOptions{Metadata: json.RawMessage(`{"typed":true}`), Tags: []string{"job"}})
		if err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int32
		var mu sync.Mutex
		seen := map[int64]string{}
		handler := func(ctx context.Context, m *baton.Message) error {
			mu.Lock()
			seen[m.ID] = fmt.Sprintf("%s %v", m.Metadata, m.Tags)
			mu.Unlock()
			if err := m.SetOutput(map[string]any{"run": m.Attempt, "payload": string(m.Payload)}); err != nil {
				return err
			}
			if m.ID == id && runs.Add(1) == 1 {
				return errors.New("first run fails")
			}
			return nil
		}
		waitFor(t, "every message to complete", func() bool {
			if err := c.Work(ctxT(t), "dq", handler, baton.WorkerOptions{Drain: true, Concurrency: 2}); err != nil {
				t.Fatal(err)
			}
			for _, i := range append([]int64{id, jid}, ids...) {
				if getMessage(t, c, i).State != baton.StateCompleted {
					return false
				}
			}
			return true
		})
		if got := seen[id]; got != `{"customer":"acme","n":42} [eu vip]` {
			t.Errorf("the claimed message's metadata and tags: %s", got)
		}
		if got := seen[ids[0]]; got != ` [bulk]` {
			t.Errorf("EnqueueMany's message: %s", got)
		}
		m := getMessage(t, c, id)
		if !sameJSON(t, m.Metadata, string(md)) || !slices.Equal(m.Tags, []string{"eu", "vip"}) {
			t.Errorf("history: metadata %s, tags %v", m.Metadata, m.Tags)
		}
		if !sameJSON(t, m.Output, `{"run":2,"payload":"one"}`) || m.Attempt != 2 {
			t.Errorf("history: output %s after attempt %d, want the second run's", m.Output, m.Attempt)
		}
		if m := getMessage(t, c, ids[1]); m.Metadata != nil || m.Tags != nil || !sameJSON(t, m.Output, `{"run":1,"payload":"three"}`) {
			t.Errorf("a message without data: %+v", m)
		}
		if m := getMessage(t, c, jid); !sameJSON(t, m.Metadata, `{"typed":true}`) || !slices.Equal(m.Tags, []string{"job"}) {
			t.Errorf("a typed job's data: %s %v", m.Metadata, m.Tags)
		}
		j, _ := json.Marshal(getMessage(t, c, id))
		if !strings.Contains(string(j), `"tags":["eu","vip"]`) || !strings.Contains(string(j), `"output":{`) {
			t.Errorf("JSON of the message: %s", j)
		}
	})
}

// TestDataOutput: the output is recorded by a typed worker (Job's
// SetOutput), by Session.Ack and by CompleteTx; a too large or
// unencodable output is refused and leaves the previous one.
func TestDataOutput(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		ctx := ctxT(t)
		ws := baton.NewWorkers()
		if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[plainArgs]) error {
			return j.SetOutput(j.Args.A + j.Args.B)
		}); err != nil {
			t.Fatal(err)
		}
		jid, err := c.EnqueueJob(ctx, "do", plainArgs{A: 2, B: 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WorkJobs(ctx, "do", ws, baton.WorkerOptions{Drain: true}); err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, jid); m.State != baton.StateCompleted || string(m.Output) != "5" {
			t.Fatalf("typed job: %s, output %s", m.State, m.Output)
		}

		s, err := c.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(context.Background())
		aid := enqueue(t, c, "do", "ack")
		ms := claim(t, s, "do", baton.ClaimOptions{})
		if err := ms[0].SetOutput(strings.Repeat("x", baton.MaxOutput)); !errors.Is(err, baton.ErrInvalid) || !strings.Contains(err.Error(), "more than") {
			t.Fatalf("too large an output: %v", err)
		}
		if err := ms[0].SetOutput(func() {}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("an output that does not encode: %v", err)
		}
		if err := ms[0].SetOutput("done"); err != nil {
			t.Fatal(err)
		}
		if err := s.Ack(ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, aid); string(m.Output) != `"done"` {
			t.Fatalf("Ack: output %s", m.Output)
		}

		tid := enqueue(t, c, "do", "tx")
		ms = claim(t, s, "do", baton.ClaimOptions{})
		db := batontest.SQLDB(t, dsn)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := ms[0].SetOutput([]int{1, 2}); err != nil {
			t.Fatal(err)
		}
		if err := c.CompleteTx(ctx, tx, ms[0]); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, tid); m.State != baton.StateCompleted || string(m.Output) != "[1,2]" {
			t.Fatalf("CompleteTx: %s, output %s", m.State, m.Output)
		}

		// The largest metadata and output fit together (MySQL's TEXT
		// column, its JSON functions adding spaces).
		md := `{"a":[` + strings.Repeat("1,", (baton.MaxMetadata-12)/2) + `1]}`
		bid := enqueue(t, c, "do", "big", baton.EnqueueOptions{Metadata: json.RawMessage(md), Tags: many(baton.MaxTags)})
		ms = claim(t, s, "do", baton.ClaimOptions{})
		out := make([]int, baton.MaxOutput/2-1)
		if err := ms[0].SetOutput(out); err != nil {
			t.Fatal(err)
		}
		if err := s.Ack(ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, bid); m.State != baton.StateCompleted || string(m.Metadata) != md || len(m.Output) != 2*len(out)+1 || len(m.Tags) != baton.MaxTags {
			t.Fatalf("the largest data: %s, metadata %d bytes (want %d), output %d bytes", m.State, len(m.Metadata), len(md), len(m.Output))
		}
	})
}

// TestDataTagFilter: ListMessages by tag and by a metadata value, in
// waiting (ready and scheduled) and finished states, with pages.
func TestDataTagFilter(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		var red []int64
		for i := range 5 {
			tags := []string{"red"}
			if i%2 == 1 {
				tags = []string{"blue", "red"}
			}
			red = append(red, enqueue(t, c, "tf", fmt.Sprint(i), baton.EnqueueOptions{Tags: tags,
				Metadata: json.RawMessage(fmt.Sprintf(`{"i":%d,"who":"w%d","ok":true}`, i, i%2))}))
		}
		enqueue(t, c, "tf", "plain")
		enqueue(t, c, "tf", "other", baton.EnqueueOptions{Tags: []string{"redder"}, Metadata: json.RawMessage(`{"who":"W0"}`)})
		later := enqueue(t, c, "tf", "later", baton.EnqueueOptions{Tags: []string{"red"}, Delay: 1 << 40})
		list := func(o baton.ListOptions) []int64 {
			t.Helper()
			var ids []int64
			for {
				page, next, err := c.ListMessages(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range page {
					ids = append(ids, m.ID)
				}
				if next == "" {
					return ids
				}
				o.After = next
			}
		}
		if got := list(baton.ListOptions{Queue: "tf", State: baton.StateReady, Tag: "red", Limit: 2}); !slices.Equal(got, red) {
			t.Fatalf("ready, tag red: %v, want %v", got, red)
		}
		if got := list(baton.ListOptions{Queue: "tf", State: baton.StateReady, Tag: "blue"}); !slices.Equal(got, []int64{red[1], red[3]}) {
			t.Fatalf("ready, tag blue: %v", got)
		}
		if got := list(baton.ListOptions{Queue: "tf", State: baton.StateScheduled, Tag: "red"}); !slices.Equal(got, []int64{later}) {
			t.Fatalf("scheduled, tag red: %v", got)
		}
		if got := list(baton.ListOptions{Queue: "tf", Tag: "green"}); len(got) != 0 {
			t.Fatalf("tag green: %v", got)
		}
		if got := list(baton.ListOptions{Queue: "tf", State: baton.StateReady, MetaKey: "who", MetaValue: "w0"}); !slices.Equal(got, []int64{red[0], red[2], red[4]}) {
			t.Fatalf("who=w0: %v", got)
		}
		if got := list(baton.ListOptions{Queue: "tf", MetaKey: "i", MetaValue: "3"}); !slices.Equal(got, []int64{red[3]}) {
			t.Fatalf("i=3: %v", got)
		}
		if got := list(baton.ListOptions{Queue: "tf", MetaKey: "ok", MetaValue: "true", Tag: "blue"}); !slices.Equal(got, []int64{red[1], red[3]}) {
			t.Fatalf("ok=true, tag blue: %v", got)
		}
		if err := c.Work(ctx, "tf", func(context.Context, *baton.Message) error { return nil }, baton.WorkerOptions{Drain: true}); err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(red)
		slices.Reverse(want)
		if got := list(baton.ListOptions{Queue: "tf", State: baton.StateCompleted, Tag: "red", Limit: 2}); !slices.Equal(got, want) {
			t.Fatalf("completed, tag red: %v, want %v", got, want)
		}
		if got := list(baton.ListOptions{Queue: "tf", State: baton.StateCompleted, MetaKey: "who", MetaValue: "w1"}); !slices.Equal(got, []int64{red[3], red[1]}) {
			t.Fatalf("completed, who=w1: %v", got)
		}
	})
}

// TestUpdateMessage: UpdateMessage merges metadata into a waiting, a
// running and a finished message (a null removes a key), in the caller's
// transaction too, and leaves the tags and output alone.
func TestUpdateMessage(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		ctx := ctxT(t)
		id := enqueue(t, c, "um", "x", baton.EnqueueOptions{Metadata: json.RawMessage(`{"a":1,"b":{"c":2,"d":3}}`), Tags: []string{"t"}})
		update := func(id int64, patch string) {
			t.Helper()
			if err := c.UpdateMessage(ctx, id, baton.MessageUpdate{Metadata: json.RawMessage(patch)}); err != nil {
				t.Fatalf("update %d with %s: %v", id, patch, err)
			}
		}
		update(id, `{"a":null,"b":{"d":4},"e":"new"}`)
		if m := getMessage(t, c, id); !sameJSON(t, m.Metadata, `{"b":{"c":2,"d":4},"e":"new"}`) || !slices.Equal(m.Tags, []string{"t"}) {
			t.Fatalf("waiting: %s %v", m.Metadata, m.Tags)
		}
		s, err := c.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(context.Background())
		ms := claim(t, s, "um", baton.ClaimOptions{})
		update(id, `{"running":true}`)
		if m := getMessage(t, c, id); m.State != baton.StateRunning || !sameJSON(t, m.Metadata, `{"b":{"c":2,"d":4},"e":"new","running":true}`) {
			t.Fatalf("running: %s %s", m.State, m.Metadata)
		}
		if err := ms[0].SetOutput("out"); err != nil {
			t.Fatal(err)
		}
		if err := s.Ack(ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, id); !sameJSON(t, m.Metadata, `{"b":{"c":2,"d":4},"e":"new","running":true}`) || string(m.Output) != `"out"` {
			t.Fatalf("completed after a running update: %s, output %s", m.Metadata, m.Output)
		}
		db := batontest.SQLDB(t, dsn)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.UpdateMessageTx(ctx, tx, id, baton.MessageUpdate{Metadata: json.RawMessage(`{"b":null,"e":null,"running":null,"done":"yes"}`)}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if m := getMessage(t, c, id); !sameJSON(t, m.Metadata, `{"b":{"c":2,"d":4},"e":"new","running":true}`) {
			t.Fatalf("rolled back: %s", m.Metadata)
		}
		tx, err = db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.UpdateMessageTx(ctx, tx, id, baton.MessageUpdate{Metadata: json.RawMessage(`{"b":null,"e":null,"running":null,"done":"yes"}`)}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		m := getMessage(t, c, id)
		if m.State != baton.StateCompleted || !sameJSON(t, m.Metadata, `{"done":"yes"}`) || string(m.Output) != `"out"` || !slices.Equal(m.Tags, []string{"t"}) {
			t.Fatalf("finished: %s %s %s %v", m.State, m.Metadata, m.Output, m.Tags)
		}
		update(id, `{"done":null}`)
		if m := getMessage(t, c, id); m.Metadata != nil {
			t.Fatalf("every key removed: %s", m.Metadata)
		}
		plain := enqueue(t, c, "um", "no data")
		update(plain, `{"added":1}`)
		if m := getMessage(t, c, plain); !sameJSON(t, m.Metadata, `{"added":1}`) {
			t.Fatalf("added to a message without metadata: %s", m.Metadata)
		}
		for _, patch := range []string{`[1]`, `"x"`, `null`, ``, `{`} {
			if err := c.UpdateMessage(ctx, plain, baton.MessageUpdate{Metadata: json.RawMessage(patch)}); !errors.Is(err, baton.ErrInvalid) {
				t.Errorf("patch %q: %v, want ErrInvalid", patch, err)
			}
		}
		if err := c.UpdateMessage(ctx, 1<<50, baton.MessageUpdate{Metadata: json.RawMessage(`{}`)}); !errors.Is(err, baton.ErrNotFound) {
			t.Errorf("no such message: %v", err)
		}
	})
}

// TestUniqueByArgs: a key derived from the arguments: equal arguments
// collide (whatever the order of their JSON keys), different ones do not;
// with tagged fields only those count; the kind is part of the key.
func TestUniqueByArgs(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		u := baton.EnqueueOptions{UniqueByArgs: true}
		first, err := c.EnqueueJob(ctx, "ua", orderArgs{Customer: "acme", Order: 1, Note: "a"}, u)
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.EnqueueJob(ctx, "ua", orderArgs{Customer: "acme", Order: 1, Note: "b"}, u)
		if !errors.Is(err, baton.ErrDuplicate) || id != first {
			t.Fatalf("equal tagged fields: %d, %v; want %d and ErrDuplicate", id, err, first)
		}
		if _, err := c.EnqueueJob(ctx, "ua", orderArgs{Customer: "acme", Order: 2}, u); err != nil {
			t.Fatalf("another order: %v", err)
		}
		if _, err := c.EnqueueJob(ctx, "ua", orderArgs{Customer: "acme", Order: 1}); err != nil {
			t.Fatalf("without UniqueByArgs: %v", err)
		}
		p1, err := c.EnqueueJob(ctx, "ua", plainArgs{A: 1, B: 2}, u)
		if err != nil {
			t.Fatal(err)
		}
		if id, err := c.EnqueueJob(ctx, "ua", plainArgs{A: 1, B: 2}, u); !errors.Is(err, baton.ErrDuplicate) || id != p1 {
			t.Fatalf("equal arguments: %d, %v", id, err)
		}
		if _, err := c.EnqueueJob(ctx, "ua", plainArgs{A: 1, B: 3}, u); err != nil {
			t.Fatalf("different arguments: %v", err)
		}
		// Untyped: the payload's canonical JSON, with the kind.
		e1, err := c.Enqueue(ctx, "ua", []byte(`{"b":2, "a":1}`), baton.EnqueueOptions{Kind: "plain", UniqueByArgs: true})
		if !errors.Is(err, baton.ErrDuplicate) || e1 != p1 {
			t.Fatalf("the same arguments as JSON in another order: %d, %v; want %d", e1, err, p1)
		}
		if _, err := c.Enqueue(ctx, "ua", []byte(`{"a":1,"b":2}`), baton.EnqueueOptions{Kind: "other", UniqueByArgs: true}); err != nil {
			t.Fatalf("another kind: %v", err)
		}
		if _, err := c.Enqueue(ctx, "ua", []byte(`not json`), baton.EnqueueOptions{UniqueByArgs: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Enqueue(ctx, "ua", []byte(`not json`), baton.EnqueueOptions{UniqueByArgs: true}); !errors.Is(err, baton.ErrDuplicate) {
			t.Fatalf("equal bytes: %v", err)
		}
		if _, err := c.EnqueueJob(ctx, "ua", plainArgs{}, baton.EnqueueOptions{UniqueByArgs: true, UniqueKey: "k"}); !errors.Is(err, baton.ErrInvalid) {
			t.Fatalf("both a key and by arguments: %v", err)
		}
	})
}

// TestDataValidation: bad tags, metadata and filters are refused with
// ErrInvalid, naming the problem, and nothing is enqueued.
func TestDataValidation(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := openQ(t, b)
		ctx := ctxT(t)
		for _, tc := range []struct {
			o    baton.EnqueueOptions
			want string
		}{
			{baton.EnqueueOptions{Tags: []string{strings.Repeat("t", 65)}}, "tag"},
			{baton.EnqueueOptions{Tags: []string{"has space"}}, "tag"},
			{baton.EnqueueOptions{Tags: []string{""}}, "tag"},
			{baton.EnqueueOptions{Tags: many(baton.MaxTags + 1)}, "tags, more than"},
			{baton.EnqueueOptions{Metadata: json.RawMessage(`[1,2]`)}, "JSON object"},
			{baton.EnqueueOptions{Metadata: json.RawMessage(`"s"`)}, "JSON object"},
			{baton.EnqueueOptions{Metadata: json.RawMessage(`{"a":`)}, "JSON object"},
			{baton.EnqueueOptions{Metadata: json.RawMessage(`{"a":"` + strings.Repeat("x", baton.MaxMetadata) + `"}`)}, "more than"},
			{baton.EnqueueOptions{UniqueByArgs: true, UniqueKey: "k"}, "not both"},
		} {
			_, err := c.Enqueue(ctx, "dv", []byte("x"), tc.o)
			if !errors.Is(err, baton.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: %v, want ErrInvalid saying %q", tc.o.Tags, err, tc.want)
			}
		}
		for _, o := range []baton.ListOptions{{Tag: "bad tag"}, {MetaKey: `a"b`}, {MetaValue: "v"}} {
			if _, _, err := c.ListMessages(ctx, o); !errors.Is(err, baton.ErrInvalid) {
				t.Errorf("listing %+v: %v, want ErrInvalid", o, err)
			}
		}
		if st, err := c.Stats(ctx, "dv"); err == nil && st.Ready != 0 {
			t.Fatalf("something was enqueued: %+v", st)
		}
	})
}
