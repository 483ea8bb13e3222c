package baton_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// bouncerDSN returns a test database's DSN through the private PgBouncer
// (transaction mode, default settings), without baton's listen_dsn.
func bouncerDSN(t *testing.T) (string, bool) {
	for _, b := range batontest.All() {
		if b.Label == "pgbouncer" {
			u, err := url.Parse(b.NewDSN(t))
			if err != nil {
				t.Fatal(err)
			}
			u.RawQuery = ""
			return u.String(), true
		}
	}
	return "", false
}

// TestPoolerWithoutListenDSN: through PgBouncer with the DSN of a direct
// connection but the port (no listen_dsn), baton detects the pooler, works,
// and lock waiters are handed the lock (by polling: LISTEN cannot work
// there, which baton says once in its log).
func TestPoolerWithoutListenDSN(t *testing.T) {
	dsn, ok := bouncerDSN(t)
	if !ok {
		t.Skip("pgbouncer not selected by BATON_TEST_BACKENDS")
	}
	opts := baton.Options{PollInterval: 100 * time.Millisecond}
	c1 := openDSN(t, dsn, opts)
	c2 := openDSN(t, dsn, opts)
	s1, s2 := session(t, c1), session(t, c2)
	mustLock(t, s1, "pool", baton.Write, "x")
	got := async(s2, "pool", baton.Write, baton.Forever, "x")
	waitPending(t, c1, s2, 1)
	if _, err := s1.Release(ctxT(t), "pool"); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, got); err != nil {
		t.Fatal(err)
	}
	// Queues too: a waiting claim gets a message enqueued later.
	ch := make(chan error, 1)
	go func() {
		ms, err := s1.Claim(context.Background(), "pq", baton.ClaimOptions{Wait: 15 * time.Second})
		if err == nil && (len(ms) != 1 || string(ms[0].Payload) != "hi") {
			t.Errorf("claimed %v", ms)
		}
		ch <- err
	}()
	if _, err := c2.Enqueue(ctxT(t), "pq", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, ch); err != nil {
		t.Fatal(err)
	}
}

// TestPoolerRefusesSearchPath: a search_path through a transaction pooler
// fails with an error that names it and the fix, not the pooler's words.
func TestPoolerRefusesSearchPath(t *testing.T) {
	dsn, ok := bouncerDSN(t)
	if !ok {
		t.Skip("pgbouncer not selected by BATON_TEST_BACKENDS")
	}
	for _, extra := range []string{"?search_path=app", "?search_path=app&pooler=transaction"} {
		_, err := baton.Open(ctxT(t), dsn+extra)
		wantErr(t, err, baton.ErrBadDSN)
		if !strings.Contains(err.Error(), "search_path") || !strings.Contains(err.Error(), "ALTER ROLE") {
			t.Fatalf("error %v does not name search_path and the fix", err)
		}
	}
}
