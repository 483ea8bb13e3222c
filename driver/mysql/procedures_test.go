package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/batontest"
)

// routine reads a routine's file, prefix baton_.
func routine(t *testing.T, name string) string {
	t.Helper()
	body, err := routines.ReadFile("sql/routines/" + name + ".sql")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(body), "{p}", "baton_")
}

// TestTurnstileProceduresFollowFastPath: the turnstile procedures carry
// copies of the fast path's statements (the uncontended path stays a
// plain statement, one round trip through the pool). The parts that
// decide a grant and a release must read as the fast path's do:
// fast_acquire's ON DUPLICATE KEY UPDATE, fast_release_name's SET and
// fast_release_ns up to its WHERE (its index hint too), the same text
// once spaces are folded. A change to one without the other fails here.
func TestTurnstileProceduresFollowFastPath(t *testing.T) {
	q, err := sqlbase.LoadQueries(queries, "sql", "baton_", map[string]string{"now": Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ routine, query, from, to string }{
		{"turnstile_acquire", "fast_acquire", "ON DUPLICATE KEY UPDATE", ""},
		{"turnstile_release", "fast_release_name", "SET h_session", " WHERE"},
		{"turnstile_release_ns", "fast_release_ns", "UPDATE", " WHERE"},
	} {
		proc := batontest.Fold(routine(t, c.routine))
		part := batontest.Clause(t, q[c.query], c.from, c.to)
		if !strings.Contains(proc, part) {
			t.Errorf("{p}%s does not carry %s's %q clause as it is now:\n%s", c.routine, c.query, c.from, part)
		}
	}
}

// TestReleaseProcedureFollowsRequest: the procedures that hand on, adopt
// or release carry copies of {p}request's adoption of the fast holder and
// of its grant rule's bookkeeping, and of fast_clear_ids' SET clause and
// of the hand-back to the fast path (fast_demote_check's condition,
// fast_demote's): the same text once spaces are folded. A change to one
// without the other fails here.
func TestReleaseProcedureFollowsRequest(t *testing.T) {
	q, err := sqlbase.LoadQueries(queries, "sql", "baton_", map[string]string{"now": Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	request := routine(t, "request")
	engage := batontest.Clause(t, request, "INSERT INTO baton_lock_fast (kind, ns, name, fence, slow)", "IF v_ffence > v_fence THEN")
	adopt := batontest.Clause(t, request, "INSERT IGNORE INTO baton_lock_requests", ";")
	grants := batontest.Clause(t, request, "IF v_wmode = 'W' AND FIND_IN_SET(v_wsess, v_gw) = 0 THEN", "END LOOP;")
	clear := batontest.Clause(t, q["fast_clear_ids"], "SET", " WHERE")
	demote := batontest.Clause(t, q["fast_demote"], "h_session = NULL", " WHERE")
	demoteSlow := batontest.Clause(t, q["fast_demote"], " AND slow = 1", "")
	for name, parts := range map[string][]string{
		"release_ident": {engage, adopt, grants},
		"adopt_ident":   {engage, adopt},
		"release_instances": {clear, demote, demoteSlow,
			batontest.Clause(t, q["fast_demote_check"], "li.n_r = 0", " AND NOT EXISTS (SELECT 1 FROM baton_lock_mutex"),
			batontest.Clause(t, q["fast_demote_check"], "AND NOT EXISTS (SELECT 1 FROM baton_lock_requests", "")},
		"remove_requests": {clear, demote},
		"request_commit":  {demoteSlow},
		"request_reentry": {adopt},
	} {
		proc := batontest.Fold(routine(t, name))
		for _, part := range parts {
			if !strings.Contains(proc, part) {
				t.Errorf("{p}%s does not carry this clause as it is now:\n%s", name, part)
			}
		}
	}
}

// TestRequestJoinsReaders: {p}request_commit grants a
// reader beside readers without {p}request (one procedure call where
// the whole rule makes two), with the next fence as its token and the
// counters set from the rows; and leaves every other case to {p}request,
// whose outcome it must not change: a session that is not live or of
// another incarnation ('X'), a gated identifier (decided by {p}request
// with the gate counted: here no transaction holds
// it), and a reader behind a waiting writer ('W' for a try, 'P'
// otherwise).
func TestRequestJoinsReaders(t *testing.T) {
	ctx, d := freshDriver(t)
	id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "n"}
	for _, s := range []string{"s1", "s2"} {
		// s1 the fast holder; s2 through {p}request, which adopts it.
		grantedFast(t, d, s, id, driver.ModeRead)
	}
	c := conn(t, d.SQL)
	calls := func() int64 { return procedureCalls(t, c) }
	var maxToken int64
	if err := c.QueryRowContext(ctx, "SELECT MAX(token) FROM baton_lock_requests").Scan(&maxToken); err != nil {
		t.Fatal(err)
	}
	// request runs request_commit for sess in mode in a transaction, as
	// the driver does (the call commits it), and returns its outcome,
	// token and the procedure calls it made.
	request := func(sess, mode string, try int, inc any) (status string, token, made int64) {
		t.Helper()
		before := calls()
		if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
			t.Fatal(err)
		}
		var rid, holder int64
		err := c.QueryRowContext(ctx, "CALL baton_request_commit(?, ?, ?, ?, 'c', ?, 2, ?, ?)",
			id.Kind, []byte(id.NS), []byte(id.Name), sess, mode, try, inc).Scan(&status, &rid, &token, &holder)
		if err != nil {
			t.Fatalf("%s's request: %v", sess, err)
		}
		return status, token, calls() - before
	}
	counters := func() (nr, nw, np, fence int64) {
		t.Helper()
		if err := c.QueryRowContext(ctx, "SELECT n_r, n_w, n_p, fence FROM baton_lock_idents WHERE kind = ? AND ns = 'ns' AND name = 'n'", id.Kind).Scan(&nr, &nw, &np, &fence); err != nil {
			t.Fatal(err)
		}
		return
	}

	st, token, made := request("s3", "R", 1, 0)
	if st != "G" || token <= maxToken || made != 1 {
		t.Fatalf("a reader beside readers: %s, token %d after %d, %d procedure calls; want G, a larger token, one call", st, token, maxToken, made)
	}
	if nr, nw, np, fence := counters(); nr != 3 || nw != 0 || np != 0 || fence != token {
		t.Fatalf("counters %d/%d/%d, fence %d; want 3 readers, the fence at the token %d", nr, nw, np, fence, token)
	}
	for _, tc := range []struct {
		what string
		inc  any
	}{{"a session that is not live", nil}, {"a session of another incarnation", int64(12345)}} {
		if st, _, _ := request("ghost", "R", 1, tc.inc); st != "X" {
			t.Fatalf("%s: %s, want X", tc.what, st)
		}
	}
	if _, err := c.ExecContext(ctx, "UPDATE baton_lock_mutex SET gated = 1"); err != nil {
		t.Fatal(err)
	}
	if st, _, made := request("s6", "R", 1, 0); st != "G" || made < 2 {
		t.Fatalf("a reader of a gated identifier nobody's transaction holds: %s in %d procedure calls, want G from {p}request", st, made)
	}
	if _, err := c.ExecContext(ctx, "UPDATE baton_lock_mutex SET gated = 0"); err != nil {
		t.Fatal(err)
	}
	// A waiting request row that no writer explains (as a reader left
	// waiting behind a lock since released, until its hand-on): the rule
	// grants the reader, and the counters keep the waiter.
	if _, err := c.ExecContext(ctx, `INSERT INTO baton_lock_requests (session_id, client_id, kind, ns, name, mode, status, call_id, token, created_at)
		VALUES ('pr', 'c', ?, 'ns', 'n', 'R', 'P', 3, 0, 1)`, id.Kind); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "UPDATE baton_lock_idents SET n_p = 1"); err != nil {
		t.Fatal(err)
	}
	if st, _, made := request("s5", "R", 1, 0); st != "G" || made != 2 {
		t.Fatalf("a reader beside a waiting reader: %s, %d procedure calls; want G through {p}request", st, made)
	}
	if nr, _, np, _ := counters(); nr != 5 || np != 1 {
		t.Fatalf("counters after it: %d readers, %d waiting; want 5 and 1", nr, np)
	}
	if st, _, _ := request("w", "W", 0, 0); st != "P" {
		t.Fatalf("a writer beside readers: %s, want P", st)
	}
	for try, want := range []string{"P", "W"} {
		if st, _, made := request("s4", "R", try, 0); st != want || made != 2 {
			t.Fatalf("a reader behind a waiting writer (try %d): %s, %d procedure calls; want %s through {p}request", try, st, made, want)
		}
	}
}

// TestRequestReentersInOneCall: {p}request_reentry grants
// a re-entry (the session's instance covers the request: anything under
// its write lock, a read under its read lock) without {p}request, with
// the next fence as its token, the fast holder adopted (a request row
// under its id, which is answered) and the counters counting both; a request the
// session's instances do not cover, or on a gated identifier, goes on to
// {p}request_commit.
func TestRequestReentersInOneCall(t *testing.T) {
	ctx, d := freshDriver(t)
	id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: "re"}
	held := grantedFast(t, d, "s1", id, driver.ModeWrite)
	c := conn(t, d.SQL)
	calls := func() int64 { return procedureCalls(t, c) }
	request := func(sess, mode string) (status string, token, holder, made int64) {
		t.Helper()
		before := calls()
		if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
			t.Fatal(err)
		}
		var rid int64
		err := c.QueryRowContext(ctx, "CALL baton_request_reentry(?, ?, ?, ?, 'c', ?, 2, 0, 0)",
			id.Kind, []byte(id.NS), []byte(id.Name), sess, mode).Scan(&status, &rid, &token, &holder)
		if err != nil {
			t.Fatalf("%s's request: %v", sess, err)
		}
		return status, token, holder, calls() - before
	}
	counters := func() string {
		t.Helper()
		var nr, nw, np int64
		if err := c.QueryRowContext(ctx, "SELECT n_r, n_w, n_p FROM baton_lock_idents WHERE ns = 'ns' AND name = 're'").Scan(&nr, &nw, &np); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d/%d/%d", nr, nw, np)
	}
	last := held.Token
	for i, mode := range []string{"W", "R", "W"} {
		st, token, holder, made := request("s1", mode)
		// The first also makes the identifier's rows, which only the fast
		// path had held ({p}ident_take).
		want := int64(1)
		if i == 0 {
			want = 2
		}
		if st != "G" || token <= last || made != want {
			t.Fatalf("re-entry %d (%s) under the write lock: %s, token %d after %d, %d procedure calls; want G, a later token, %d calls", i, mode, st, token, last, made, want)
		}
		// The fast row names the holder until a client marks it adopted
		// (the driver does after the call: clearAdopted), which this
		// test's calls do not.
		if holder != held.ID {
			t.Fatalf("re-entry %d answered the adopted holder %d; want the fast holder %d", i, holder, held.ID)
		}
		last = token
	}
	if n := holdsOf(t, d, "s1"); n != 4 {
		t.Fatalf("s1 has %d instances, want 4 (the adopted holder and three re-entries)", n)
	}
	if got := counters(); got != "1/3/0" {
		t.Fatalf("counters %s after the re-entries, want 1 reader, 3 writers, none waiting", got)
	}
	if st, _, _, made := request("s2", "R"); st != "P" || made != 3 {
		t.Fatalf("another session's reader: %s in %d procedure calls; want P from {p}request_commit and {p}request", st, made)
	}
	if _, err := c.ExecContext(ctx, "UPDATE baton_lock_mutex SET gated = 1"); err != nil {
		t.Fatal(err)
	}
	if st, _, _, made := request("s1", "W"); st != "G" || made < 3 {
		t.Fatalf("a re-entry on a gated identifier: %s in %d procedure calls; want G from {p}request_commit and {p}request", st, made)
	}
}

// procedureCalls is the procedure calls c's session has made
// (Com_call_procedure, nested calls included).
func procedureCalls(t *testing.T, c *sql.Conn) (n int64) {
	t.Helper()
	var name string
	if err := c.QueryRowContext(context.Background(), "SHOW SESSION STATUS LIKE 'Com_call_procedure'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
