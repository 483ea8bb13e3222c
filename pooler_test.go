package baton_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// bouncerDSNs returns a test database's DSNs through the private PgBouncer
// (transaction mode, default settings): withListen with baton's listen_dsn,
// pooled without it, and direct, the direct connection listen_dsn names.
// It skips the test when BATON_TEST_BACKENDS does not select pgbouncer.
func bouncerDSNs(t testing.TB) (withListen, pooled, direct string) {
	t.Helper()
	for _, b := range batontest.All() {
		if b.Label == "pgbouncer" {
			withListen = b.NewDSN(t)
		}
	}
	if withListen == "" {
		t.Skip("pgbouncer not selected by BATON_TEST_BACKENDS")
	}
	u, err := url.Parse(withListen)
	if err != nil {
		t.Fatal(err)
	}
	direct = u.Query().Get("listen_dsn")
	u.RawQuery = ""
	return withListen, u.String(), direct
}

// BenchmarkPoolerHandoff: lock hand-off between two clients through
// PgBouncer (transaction mode), wake-ups by LISTEN on listen_dsn; reports
// the p50 from the holder's Release to the waiter's Lock returning.
//
//	go test -run '^$' -bench PoolerHandoff -benchtime 200x .
func BenchmarkPoolerHandoff(b *testing.B) {
	for _, tc := range []struct {
		name   string
		listen bool
	}{{"listen_dsn", true}, {"polling", false}} {
		b.Run(tc.name, func(b *testing.B) {
			dsn, pooled, _ := bouncerDSNs(b)
			if !tc.listen {
				dsn = pooled
			}
			ctx := context.Background()
			open := func() *baton.Client {
				c, err := baton.Open(ctx, dsn)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = c.Close() })
				return c
			}
			c1, c2 := open(), open()
			s1, err := c1.NewSession(ctx)
			if err != nil {
				b.Fatal(err)
			}
			s2, err := c2.NewSession(ctx)
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s1.Lock(ctx, "h", baton.Write, 0, "x"); err != nil {
					b.Fatal(err)
				}
				got := make(chan time.Time, 1)
				go func() {
					if _, err := s2.Lock(ctx, "h", baton.Write, baton.Forever, "x"); err != nil {
						b.Error(err)
					}
					got <- time.Now()
				}()
				waitPendingB(b, c1, s2)
				t0 := time.Now()
				if _, err := s1.Release(ctx, "h"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-got).Sub(t0))
				if _, err := s2.Release(ctx, "h"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
		})
	}
}

// waitPendingB waits until the session has a waiting request.
func waitPendingB(b *testing.B, c *baton.Client, s *baton.Session) {
	for {
		ls, err := c.Locks(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range ls {
			if l.Session == s.ID() && l.Status == "PENDING" {
				return
			}
		}
	}
}

// TestPoolerWithoutListenDSN: through PgBouncer with the DSN of a direct
// connection but the port (no listen_dsn), baton detects the pooler, works,
// and lock waiters are handed the lock (by polling: LISTEN cannot work
// there, which baton says once in its log).
func TestPoolerWithoutListenDSN(t *testing.T) {
	_, dsn, _ := bouncerDSNs(t)
	var logged batontest.LogBuffer
	opts := baton.Options{PollInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	c1 := openDSN(t, dsn, opts)
	c2 := openDSN(t, dsn, opts)
	s1, s2 := session(t, c1), session(t, c2)
	mustLock(t, s1, "pool", baton.Write, "x")
	got := waiting(t, c1, s2, "pool", baton.Write, baton.Forever, "x")
	if _, err := s1.Release(ctxT(t), "pool"); err != nil {
		t.Fatal(err)
	}
	mustRecv(t, got)
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
	mustRecv(t, ch)
	// The backend's warning went to the client's logger (Options.Logger).
	if out := logged.String(); !strings.Contains(out, "LISTEN cannot work") {
		t.Fatalf("the client's logger lacks the pooler warning:\n%s", out)
	}
}

// TestPoolerRefusesSearchPath: a search_path through a transaction pooler
// fails with an error that names it and the fix, not the pooler's words.
func TestPoolerRefusesSearchPath(t *testing.T) {
	_, dsn, _ := bouncerDSNs(t)
	for _, extra := range []string{"?search_path=app", "?search_path=app&pooler=transaction"} {
		_, err := baton.Open(ctxT(t), dsn+extra)
		wantErr(t, err, baton.ErrBadDSN)
		if !strings.Contains(err.Error(), "search_path") || !strings.Contains(err.Error(), "ALTER ROLE") {
			t.Fatalf("error %v does not name search_path and the fix", err)
		}
	}
}

// TestPoolerNotificationsWithoutListenDSN: through PgBouncer without
// listen_dsn LISTEN cannot work, so notifications come from a table: a
// listener behind the pooler gets every notification, in order per sender,
// from a client behind the pooler and from a direct one, from their own
// transactions and from committed caller's transactions (one of them
// committed long after later ones), never from a rolled-back one; and its
// registration as a reader of the table goes with it.
func TestPoolerNotificationsWithoutListenDSN(t *testing.T) {
	withListen, pooled, direct := bouncerDSNs(t)
	opts := baton.Options{PollInterval: 100 * time.Millisecond}
	receiver := openDSN(t, pooled, opts)
	viaPooler := openDSN(t, pooled, opts)
	viaDirect := openDSN(t, direct, opts)
	pooledDB := batontest.SQLDB(t, withListen) // unnamed statements
	directDB := batontest.SQLDB(t, direct)
	l := listen(t, receiver, "pn")
	ctx := ctxT(t)

	notifyTx := func(db *sql.DB, payload string, commit bool) {
		t.Helper()
		tx := begin(t, db)
		if err := viaDirect.NotifyTx(ctx, tx, "pn", payload); err != nil {
			t.Fatal(err)
		}
		endTx(t, tx, commit)
	}
	// Begun first, committed last: its id is below every other one.
	late, err := directDB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := viaDirect.NotifyTx(ctx, late, "pn", "late"); err != nil {
		t.Fatal(err)
	}
	const n = 50
	senders := []struct {
		c      *baton.Client
		prefix string
	}{{viaPooler, "p"}, {viaDirect, "d"}}
	batontest.Concurrently(t, len(senders), func(k int) error {
		for i := 0; i < n; i++ {
			if err := senders[k].c.Notify(ctx, "pn", fmt.Sprint(senders[k].prefix, i)); err != nil {
				return err
			}
		}
		return nil
	})
	// Each notification once, in order per sender; the others (want) in
	// any order.
	nextOf := map[string]int{"p": 0, "d": 0}
	receive := func(want map[string]bool) {
		t.Helper()
		for nextOf["p"]+nextOf["d"] < 2*n || len(want) > 0 {
			m := next(t, l)
			if m.Channel != "pn" {
				t.Fatalf("got %+v", m)
			}
			if want[m.Payload] {
				delete(want, m.Payload)
				continue
			}
			var i int
			prefix := m.Payload[:1]
			if _, err := fmt.Sscan(m.Payload[1:], &i); err != nil || (prefix != "p" && prefix != "d") {
				t.Fatalf("unexpected notification %+v (rolled back or duplicated?)", m)
			}
			if i != nextOf[prefix] {
				t.Fatalf("from sender %q: got %d, want %d (order kept per sender)", prefix, i, nextOf[prefix])
			}
			nextOf[prefix]++
		}
	}
	receive(nil)
	notifyTx(pooledDB, "rolled back via pooler", false)
	notifyTx(directDB, "rolled back direct", false)
	notifyTx(pooledDB, "tx via pooler", true)
	notifyTx(directDB, "tx direct", true)
	// Read after a hundred later ones: the reader looks for it again.
	if err := late.Commit(); err != nil {
		t.Fatal(err)
	}
	receive(map[string]bool{"late": true, "tx via pooler": true, "tx direct": true})
	none(t, l, 500*time.Millisecond)

	// The listener's client registered as a reader of the table; it is
	// gone when the client closes.
	count := func() int {
		var k int
		if err := directDB.QueryRowContext(ctx, "SELECT count(*) FROM baton_notify_pollers").Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	if k := count(); k != 1 {
		t.Fatalf("%d registered readers, want 1", k)
	}
	l.Close()
	if err := receiver.Close(); err != nil {
		t.Fatal(err)
	}
	if k := count(); k != 0 {
		t.Fatalf("%d registered readers after Close, want 0", k)
	}
}

// TestPoolerNotifyOrderWithoutListenDSN is TestNotifyOrderAfterLateCommit
// for a listener behind PgBouncer without listen_dsn, which reads
// notifications from the table, sent by a direct client.
func TestPoolerNotifyOrderWithoutListenDSN(t *testing.T) {
	_, pooled, direct := bouncerDSNs(t)
	notifyOrderAfterLateCommit(t, pooled, direct)
}

// TestPoolerEventWakeups: while a consumer behind PgBouncer without
// listen_dsn reads notifications from the table, a change captured by a
// subscription's trigger writes its wake-up there too (before, pooled
// event consumers found new events only at their sparser safety-net poll).
func TestPoolerEventWakeups(t *testing.T) {
	_, pooledDSN, direct := bouncerDSNs(t)
	c := openDSN(t, direct, baton.Options{PollInterval: 100 * time.Millisecond})
	db := batontest.SQLDB(t, direct)
	ctx := ctxT(t)
	if _, err := db.ExecContext(ctx, "CREATE TABLE bells (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(ctx, baton.Subscription{Name: "bells", Table: "bells"}); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM baton_notifications WHERE channel = '#q#ev:bells'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO bells VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d wake-up rows written with no pooled reader", n)
	}
	// A pooled consumer registers as a table reader while it waits.
	pooled := openDSN(t, pooledDSN, baton.Options{PollInterval: 100 * time.Millisecond})
	got := make(chan baton.Action, 100)
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		_ = pooled.WorkEvents(wctx, "bells", func(ctx context.Context, e baton.Event, _ *baton.Message) error {
			select {
			case got <- e.Action:
			default:
			}
			return nil
		}, baton.WorkerOptions{})
	}()
	if a := <-got; a != baton.Insert {
		t.Fatalf("first event %q", a)
	}
	deadline := time.Now().Add(20 * time.Second)
	for n := 0; n == 0; n = count() {
		if _, err := db.ExecContext(ctx, "UPDATE bells SET id = id + 1"); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no wake-up row for a captured change while a pooled consumer reads the table")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
