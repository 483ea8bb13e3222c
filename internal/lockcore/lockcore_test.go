package lockcore

import (
	"reflect"
	"testing"

	"github.com/batonhq/baton/driver"
)

var x = driver.Ident{NS: "ns", Name: "x"}

func req(id int64, sess string, mode driver.LockMode, status driver.RequestStatus) driver.Request {
	return req2(id, sess, mode, status, x)
}

func req2(id int64, sess string, mode driver.LockMode, status driver.RequestStatus, ident driver.Ident) driver.Request {
	return driver.Request{ID: id, SessionID: sess, Ident: ident, Mode: mode, Status: status}
}

const (
	R, W    = driver.ModeRead, driver.ModeWrite
	G, P, D = driver.StatusGranted, driver.StatusPending, driver.StatusDeadlock
)

func TestGrants(t *testing.T) {
	cases := []struct {
		name string
		reqs []driver.Request
		want []int64
	}{
		{"free write", []driver.Request{req(1, "a", W, P)}, []int64{1}},
		{"readers share", []driver.Request{req(1, "a", R, G), req(2, "b", R, P)}, []int64{2}},
		{"writer waits for reader", []driver.Request{req(1, "a", R, G), req(2, "b", W, P)}, nil},
		{"waiting writer blocks later reader", []driver.Request{req(1, "a", R, G), req(2, "b", W, P), req(3, "c", R, P)}, nil},
		{"holder skips the queue", []driver.Request{req(1, "a", R, G), req(2, "b", W, P), req(3, "a", R, P)}, []int64{3}},
		{"upgrade waits only for other readers", []driver.Request{req(1, "a", R, G), req(2, "b", W, P), req(3, "a", W, P)}, []int64{3}},
		{"upgrade blocked by other reader", []driver.Request{req(1, "a", R, G), req(2, "c", R, G), req(3, "a", W, P)}, nil},
		{"write holder gets anything", []driver.Request{req(1, "a", W, G), req(2, "a", R, P), req(3, "a", W, P)}, []int64{2, 3}},
		{"release grants readers in a batch", []driver.Request{req(2, "b", R, P), req(3, "c", R, P), req(4, "d", W, P), req(5, "e", R, P)}, []int64{2, 3}},
		{"release grants one writer", []driver.Request{req(2, "b", W, P), req(3, "c", W, P)}, []int64{2}},
		{"victims are ignored", []driver.Request{req(2, "b", W, D), req(3, "c", R, P)}, []int64{3}},
		{"granted pending upgrade blocks others", []driver.Request{req(2, "a", R, P), req(3, "b", W, P)}, []int64{2}},
	}
	for _, c := range cases {
		if got := Grants(c.reqs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestVictims(t *testing.T) {
	a := driver.Ident{NS: "ns", Name: "a"}
	b := driver.Ident{NS: "ns", Name: "b"}
	c := driver.Ident{NS: "ns", Name: "c"}
	// s1 holds a, s2 holds b; s1 waits for b (write), s2 for a (write):
	// the newest request closed the cycle.
	graph := []driver.Request{
		req2(1, "s1", W, G, a), req2(2, "s2", W, G, b),
		req2(3, "s1", W, P, b), req2(4, "s2", W, P, a),
	}
	if v := Victims(graph); len(v) != 1 || v[0].ID != 4 {
		t.Fatalf("write cycle victim %+v, want request 4", v)
	}
	// The read waiter is chosen even though it is older.
	graph[2].Mode = R
	if v := Victims(graph); len(v) != 1 || v[0].ID != 3 {
		t.Fatalf("read waiter not chosen: %+v", v)
	}
	// Three sessions.
	graph = []driver.Request{
		req2(1, "s1", W, G, a), req2(2, "s2", W, G, b), req2(3, "s3", W, G, c),
		req2(4, "s1", W, P, b), req2(5, "s2", R, P, c), req2(6, "s3", W, P, a),
	}
	if v := Victims(graph); len(v) != 1 || v[0].ID != 5 {
		t.Fatalf("three-session victim %+v, want 5", v)
	}
	// No cycle: a chain.
	graph = []driver.Request{req2(1, "s1", W, G, a), req2(2, "s2", W, P, a), req2(3, "s3", W, P, a)}
	if v := Victims(graph); len(v) != 0 {
		t.Fatalf("victims without a cycle: %+v", v)
	}
	// No cycle, though waits pass through the queue: s3's write request on
	// a waits for s1's read; s1 waits for s2's read of b; s2 waits for s4,
	// which waits for nothing.
	graph = []driver.Request{
		req2(1, "s1", R, G, a), req2(2, "s2", R, G, b),
		req2(3, "s3", W, P, a), req2(4, "s1", W, P, b), // s1 waits for s2
		req2(5, "s2", R, P, c), req2(6, "s4", W, G, c), // s2 waits for s4
	}
	if v := Victims(graph); len(v) != 0 {
		t.Fatalf("victims without a cycle: %+v", v)
	}
	// A real cycle through the queue: s1 reads x, s3 writes y; s2 queues
	// a write on x (behind s1's read), s3 queues a read on x (behind s2's
	// waiting write: a waiting writer blocks later readers), s1 asks to
	// read y (behind s3's write). s1 waits for s3, s3 for s2 (a queued
	// request, not a holder), s2 for s1. Of the two read waiters, s1's
	// newest request closed the cycle.
	x, y := driver.Ident{NS: "ns", Name: "x"}, driver.Ident{NS: "ns", Name: "y"}
	graph = []driver.Request{
		req2(1, "s1", R, G, x), req2(2, "s3", W, G, y),
		req2(3, "s2", W, P, x), req2(4, "s3", R, P, x),
		req2(5, "s1", R, P, y),
	}
	if got := Blockers(graph[3], []driver.Request{graph[0], graph[2], graph[3]}); !reflect.DeepEqual(got, []string{"s2"}) {
		t.Fatalf("s3's queued read of x waits for %v, want s2 (the waiting writer ahead of it)", got)
	}
	if v := Victims(graph); len(v) != 1 || v[0].ID != 5 {
		t.Fatalf("cycle through a queued request: victims %+v, want request 5", v)
	}
}

func TestCounts(t *testing.T) {
	r, w, p := Counts([]driver.Request{req(1, "a", R, G), req(2, "b", R, G), req(3, "c", W, P), req(4, "d", W, D)})
	if r != 2 || w != 0 || p != 2 {
		t.Fatalf("counts %d %d %d", r, w, p)
	}
}

// Regrant grants in queue order with consecutive tokens, skips a request
// its store reports no longer pending (its token spent), counts from what
// was stored, and leaves stand-ins ahead uncounted.
func TestRegrant(t *testing.T) {
	st := driver.IdentState{Fence: 10}
	gate := []driver.Request{req(0, "", R, G)}
	rows := []driver.Request{req(1, "a", R, P), req(2, "b", R, P), req(3, "c", W, P)}
	rows[0].ClientID, rows[0].CallID = "ca", 7
	var stored []int64
	grants, err := Regrant(&st, gate, rows, func(id, token int64) (bool, error) {
		stored = append(stored, id, token)
		return id != 2, nil // b was withdrawn meanwhile
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored, []int64{1, 11, 2, 12}) {
		t.Fatalf("stored (id, token) %v, want 1/11 and 2/12", stored)
	}
	want := []driver.Request{{ID: 1, ClientID: "ca", SessionID: "a", CallID: 7, Status: G, Token: 11}}
	if !reflect.DeepEqual(grants, want) {
		t.Fatalf("grants %+v, want %+v", grants, want)
	}
	if st.Fence != 12 || st.Readers != 1 || st.Writers != 0 || st.Waiting != 2 {
		t.Fatalf("state %+v: want fence 12, 1 reader, 2 waiting", st)
	}
}
