package mysql

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

// TestRemoveRequestsCall: {p}remove_requests withdraws
// requests in one call: a waiting request (the one behind it stays
// waiting), a fast holder read through lock_holds and a slow-path grant
// of another identifier (the waiters behind each are granted with later
// tokens and their client woken in another process, the counters and the
// fast row left as the remaining instances make them), a request gone
// already (skipped). Gated identifiers: TestGatedInOneCall.
func TestRemoveRequestsCall(t *testing.T) {
	ctx := context.Background()
	d1, d2 := twoProcesses(t)
	_, w := remoteListener(t, d1, "far", 20*time.Second)
	ident := func(name string) driver.Ident { return driver.Ident{Kind: driver.KindService, NS: "rm", Name: name} }
	a, b := ident("a"), ident("b")
	holder, ok, err := d2.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s1", ClientID: "near", Ident: a, Mode: driver.ModeWrite, CallID: 1})
	if err != nil || !ok {
		t.Fatalf("holder: %v %v", ok, err)
	}
	granted := grantedSlow(t, d2, "s1", b, driver.ModeWrite)
	pending := func(sess string, id driver.Ident) driver.Request {
		t.Helper()
		// Incarnation 0: no session rows needed (as TestRequestCommitsInCall).
		r, err := d1.request(ctx, driver.RequestParams{SessionID: sess, ClientID: "far", Ident: id, Mode: driver.ModeWrite, CallID: 2}, 0)
		if err != nil || r.Status != driver.StatusPending {
			t.Fatalf("request of %s on %v: %+v %v; want it pending", sess, id.Name, r, err)
		}
		return r
	}
	first, second := pending("s2", a), pending("s3", a)
	onB, behind := pending("s4", b), pending("s7", b)
	status := func(r driver.Request) (string, int64) {
		t.Helper()
		var st string
		var token int64
		err := d2.SQL.QueryRow("SELECT status, COALESCE(token, 0) FROM baton_lock_requests WHERE id = ?", r.ID).Scan(&st, &token)
		if err != nil {
			return "gone", 0
		}
		return st, token
	}
	counters := func(id driver.Ident) string {
		t.Helper()
		var nr, nw, np int64
		if err := d2.SQL.QueryRow("SELECT n_r, n_w, n_p FROM baton_lock_idents WHERE ns = 'rm' AND name = ?", id.Name).Scan(&nr, &nw, &np); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d/%d/%d", nr, nw, np)
	}
	remove := func(rs ...driver.Request) {
		t.Helper()
		if handled, err := d2.LockRequestsRemove(ctx, rs); err != nil || !handled {
			t.Fatalf("remove %v: %v %v; want it handled", rs, handled, err)
		}
	}
	holds := func(sess string) int { return holdsOf(t, d2, sess) }

	// A waiting request and the fast holder (as lock_holds lists it:
	// its fast row's id), adopted by the waiters' requests. Its fast row
	// still names it, as when the mark after an adoption failed (best
	// effort): the call's hand-on must not adopt the holder it deleted
	// again.
	fastHolder := holder
	fastHolder.Ident = a
	if _, err := d2.SQL.Exec("UPDATE baton_lock_fast SET h_id = ? WHERE ns = 'rm' AND name = 'a'", holder.ID); err != nil {
		t.Fatal(err)
	}
	n := w.quiet()
	remove(first, fastHolder)
	st2, tok2 := status(second)
	if st, _ := status(first); st != "gone" || st2 != "G" || tok2 <= holder.Token {
		t.Fatalf("after the withdrawal of a waiter and the holder: %s, and the next waiter %s/%d (after %d); want it gone, and the next one granted with a later token",
			st, st2, tok2, holder.Token)
	}
	w.waitWake(t, n, 5*time.Second)
	if c := counters(a); c != "0/1/0" || holds("s1") != 1 {
		t.Fatalf("a's counters %s, s1 holds %d; want 0/1/0 and only b", c, holds("s1"))
	}

	// A fast holder nobody waits for, adopted and deleted by the call:
	// its fast row no longer names it.
	c := ident("c")
	onC, ok, err := d2.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s1", ClientID: "near", Ident: c, Mode: driver.ModeRead, CallID: 3})
	if err != nil || !ok {
		t.Fatalf("fast holder of c: %v %v", ok, err)
	}
	onC.Ident = c
	remove(onC)
	if holds("s1") != 1 {
		t.Fatalf("s1 holds %d instances after c's withdrawal; want only b", holds("s1"))
	}

	// A waiting request alone: the one behind it stays waiting.
	remove(onB)
	if st, _ := status(onB); st != "gone" {
		t.Fatalf("the withdrawn request: %s", st)
	}
	if st, _ := status(behind); st != "P" {
		t.Fatalf("the request behind the withdrawn one: %s; want it still waiting behind the holder", st)
	}
	if c := counters(b); c != "0/1/1" {
		t.Fatalf("b's counters %s; want one holder, one waiter", c)
	}

	// A slow-path grant, with a request gone already.
	n = w.quiet()
	remove(granted, first)
	if st, tok := status(behind); st != "G" || tok <= granted.Token {
		t.Fatalf("b's waiter after its holder's withdrawal: %s/%d (after %d); want it granted with a later token", st, tok, granted.Token)
	}
	w.waitWake(t, n, 5*time.Second)
	if c := counters(b); c != "0/1/0" || holds("s1") != 0 {
		t.Fatalf("b's counters %s, s1 holds %d; want 0/1/0 and nothing", c, holds("s1"))
	}
}

// TestParseRemoveCall: remove_call's identifiers carry their kind and
// namespace (a withdrawal may span several) around release_call's entry.
func TestParseRemoveCall(t *testing.T) {
	out, err := parseRemoveCall([]byte(`[[0, "6E73", ["61", 1, 0, -5, 0]], ["2", "", ["62", 0, 0, 0, 1]]]`), []byte(`[[12, "s", "c", 3, "7"]]`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := driver.Ident{Kind: 0, NS: "ns", Name: "a"}, driver.Ident{Kind: 2, NS: "", Name: "b"}
	if fmt.Sprint(out.waiting) != fmt.Sprint([]driver.Ident{a}) || fmt.Sprint(out.free) != fmt.Sprint([]driver.Ident{b}) ||
		fmt.Sprint(out.adopted) != "[-5 0]" || len(out.grants) != 1 || out.grants[0].Token != 7 {
		t.Fatalf("parsed %+v", out)
	}
	for _, bad := range []string{`[["61", 0, 0, 0, 0]]`, `[[0, "zz", ["61", 0, 0, 0, 0]]]`, `[[0, "6E73", "61"]]`, `[[0, "6E73", ["61", 0]]]`} {
		if _, err := parseRemoveCall([]byte(bad), []byte(`[]`)); err == nil {
			t.Errorf("parseRemoveCall(%s): no error", bad)
		}
	}
}

// TestWithdrawCallFindsFastHolder: {p}withdraw_call finds
// a call's fast holder that no transaction has adopted (no request row
// names it) as well as its request rows, withdraws both, and answers a
// call that has nothing there without changing anything.
func TestWithdrawCallFindsFastHolder(t *testing.T) {
	ctx, d := freshDriver(t)
	ids := []driver.Ident{{Kind: driver.KindService, NS: "wc", Name: "a"}, {Kind: driver.KindService, NS: "wc", Name: "b"}}
	if _, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s1", ClientID: "c", Ident: ids[0], Mode: driver.ModeWrite, CallID: 7}); err != nil || !ok {
		t.Fatalf("fast holder: %v %v", ok, err)
	}
	grantedSlow(t, d, "s2", ids[1], driver.ModeWrite)
	if r, err := d.request(ctx, driver.RequestParams{SessionID: "s1", ClientID: "c", Ident: ids[1], Mode: driver.ModeRead, CallID: 7}, 0); err != nil || r.Status != driver.StatusPending {
		t.Fatalf("waiting request: %+v %v", r, err)
	}
	holds := func(sess string) int { return holdsOf(t, d, sess) }
	if n := holds("s1"); n != 2 {
		t.Fatalf("s1 has %d requests before, want 2", n)
	}
	for _, call := range []int64{8, 7} {
		if handled, err := d.LockCallWithdraw(ctx, "s1", call, ids, false); err != nil || !handled {
			t.Fatalf("withdraw call %d: %v %v", call, handled, err)
		}
		if want := map[int64]int{8: 2, 7: 0}[call]; holds("s1") != want {
			t.Fatalf("after the withdrawal of call %d: s1 has %d requests, want %d", call, holds("s1"), want)
		}
	}
	if n := holds("s2"); n != 1 {
		t.Fatalf("s2 has %d instances, want 1", n)
	}
	if _, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: "s3", ClientID: "c", Ident: ids[0], Mode: driver.ModeWrite, CallID: 1}); err != nil || !ok {
		t.Fatalf("a fast acquire of the withdrawn holder's lock: %v %v; want it granted", ok, err)
	}
}

// holdsOf counts the session's instances and waiting requests as
// lock_holds lists them (fast holders not adopted included).
func holdsOf(t *testing.T, d *Driver, sess string) int {
	t.Helper()
	var n int
	if err := d.SQL.QueryRow("SELECT COUNT(*) FROM baton_lock_holds WHERE session_id = ?", sess).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
