package mysql

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
	"github.com/batonhq/baton/internal/batontest"
)

func TestParseDSN(t *testing.T) {
	good := []struct {
		dsn, user, pass, addr, db string
		check                     func(t *testing.T, c *Config)
	}{
		{dsn: "mysql://root@127.0.0.1/test", user: "root", addr: "127.0.0.1:3306", db: "test"},
		{dsn: "mariadb://app:s%40cr%3At%2F@db.example.com:3307/app_db", user: "app", pass: "s@cr:t/", addr: "db.example.com:3307", db: "app_db"},
		{dsn: "mysql://u:p@[::1]:3306/d", user: "u", pass: "p", addr: "[::1]:3306", db: "d"},
		{dsn: "mysql://u@h/d?tls=skip-verify&readTimeout=5s&innodb_lock_wait_timeout=7&time_zone=%2B00:00", user: "u", addr: "h:3306", db: "d",
			check: func(t *testing.T, c *Config) {
				if c.Driver.TLSConfig != "skip-verify" || c.Driver.ReadTimeout != 5*time.Second {
					t.Errorf("driver options not applied: %+v", c.Driver)
				}
				if c.Driver.Params["innodb_lock_wait_timeout"] != "7" || c.Driver.Params["time_zone"] != "'+00:00'" {
					t.Errorf("system variables: %v", c.Driver.Params)
				}
				if !c.Driver.InterpolateParams || c.Driver.Timeout != ConnectTimeout {
					t.Errorf("defaults not set: %+v", c.Driver)
				}
			}},
		{dsn: "mysql://u@h/d?interpolateParams=false&timeout=2s", user: "u", addr: "h:3306", db: "d",
			check: func(t *testing.T, c *Config) {
				if c.Driver.InterpolateParams || c.Driver.Timeout != 2*time.Second {
					t.Errorf("explicit options overridden: %+v", c.Driver)
				}
			}},
	}
	for _, g := range good {
		c, err := ParseDSN(g.dsn)
		if err != nil {
			t.Errorf("%s: %v", g.dsn, err)
			continue
		}
		if c.Driver.User != g.user || c.Driver.Passwd != g.pass || c.Addr != g.addr || c.Driver.Addr != g.addr || c.DBName != g.db || c.Driver.DBName != g.db {
			t.Errorf("%s: got user %q pass %q addr %q db %q", g.dsn, c.Driver.User, c.Driver.Passwd, c.Addr, c.DBName)
		}
		if g.check != nil {
			g.check(t, c)
		}
	}
	bad := []struct{ dsn, want string }{
		{"postgres://u@h/d", "mysql://"},
		{"mysql:u@h/d", "mysql://user:password@host"},
		{"mysql://u:secret@/d", "no host"},
		{"mysql://u:secret@h", "no database"},
		{"mysql://u:secret@h/", "no database"},
		{"mysql://u:secret@h/a/b", "slash"},
		{"mysql://u:secret@h:99999/d", "bad port"},
		{"mysql://u:secret@h:x/d", "port"},
		{"mysql://:secret@h/d", "no user"},
		{"mysql://u:secret@h/d?multiStatements=true", "multiStatements is not supported"},
		{"mysql://u:secret@h/d?clientFoundRows=true", "clientFoundRows is not supported"},
		{"mysql://u:secret@h/d?tx_isolation=SERIALIZABLE", "READ COMMITTED"},
		{"mysql://u:secret@h/d?readTimeOut=5s", `unknown option "readTimeOut"`},
		{"mysql://u:secret@h/d?sql_mode=a'b", "sql_mode"},
		{"mysql://u:secret@h/d?timeout=soon", "timeout"},
		{"mysql://u:se#cret@h/d", "not a valid URL"},
		{"mysql://u:secret@h/d#x", "#fragment"},
		{"mysql://u:s%zzecret@h/d", "not a valid URL"},
		{"mysql://u:se cret@h/d", "not a valid URL"},
		{"mysql://u:secret@h/d?a=1&a=2", "2 times"},
	}
	for _, b := range bad {
		_, err := ParseDSN(b.dsn)
		if err == nil {
			t.Errorf("%s: no error", b.dsn)
			continue
		}
		if !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: error %q does not mention %q", b.dsn, err, b.want)
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "cret") {
			t.Errorf("%s: error %q shows the password", b.dsn, err)
		}
	}
}

func TestOpenUnreachable(t *testing.T) {
	ln := mustFreePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Open(ctx, "mysql://u:secret@"+ln+"/d", "baton_")
	if err == nil {
		t.Fatal("no error")
	}
	if !strings.Contains(err.Error(), ln) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("error %q should name %s and hide the password", err, ln)
	}
}

// mustFreePort returns host:port where nothing listens.
func mustFreePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// newDSN returns a fresh database of the test server, or skips when
// BATON_TEST_BACKENDS leaves mysql out.
func newDSN(t testing.TB) string { return batontest.NewDSN(t, "mysql") }

// freshDriver is openDriver on a fresh database, with the context for
// its calls.
func freshDriver(t testing.TB) (context.Context, *Driver) {
	t.Helper()
	return context.Background(), openDriver(t, newDSN(t))
}

func openDriver(t testing.TB, dsn string) *Driver {
	t.Helper()
	return batontest.Prepared(t, dsn).(*Driver)
}

func TestMigrateConcurrently(t *testing.T) {
	dsn := newDSN(t)
	batontest.Concurrently(t, 6, func(int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		d, err := Open(ctx, dsn, "baton_")
		if err != nil {
			return err
		}
		defer d.Close()
		st, err := d.Migrate(ctx)
		if err == nil && (len(st) == 0 || !st[0].Applied) {
			t.Errorf("status after migrate: %+v", st)
		}
		return err
	})
	d := openDriver(t, dsn)
	var n int
	want, err := sqlbase.LoadMigrations(migrations, "migrations", "baton_")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SQL.QueryRow("SELECT COUNT(*) FROM baton_migrations").Scan(&n); err != nil || n != len(want) {
		t.Fatalf("migrations recorded: %d, %v; want %d, each once", n, err, len(want))
	}
}

// TestFastPaths: an uncontended lock lives in the MEMORY table alone
// (nothing in InnoDB); a reader beside it, or a release after the slow
// path took the identifier over, goes through InnoDB, the fast holder
// adopted under its own id; once free, the identifier is the fast path's
// again, and tokens rise throughout. Both shapes of the many-name
// acquire (MariaDB's INSERT ... RETURNING, MySQL's insert then read)
// run on MariaDB.
func TestFastPaths(t *testing.T) {
	dsn := newDSN(t)
	// MariaDB's statements (its many-name acquire with the Sequence
	// engine, and without it), and MySQL's.
	for i, shape := range []string{"mariadb", "mariadb without seq", "mysql"} {
		d := openDriver(t, dsn)
		mariadb := d.mariadb
		d.mariadb = mariadb && shape != "mysql"
		d.noSeq.Store(shape == "mariadb without seq")
		testFastPaths(t, d, fmt.Sprint("x", i))
		if mariadb && shape == "mariadb" && d.noSeq.Load() {
			t.Fatal("the many-name acquire went back to the derived table on a MariaDB with the Sequence engine")
		}
	}
}

func testFastPaths(t *testing.T, d *Driver, name string) {
	ctx := context.Background()
	id := driver.Ident{Kind: driver.KindService, NS: "ns", Name: name}
	acq := func(sess string, mode driver.LockMode) (driver.Request, bool) {
		t.Helper()
		r, ok, err := d.LockFastAcquire(ctx, driver.FastAcquireParams{SessionID: sess, ClientID: "c", Ident: id, Mode: mode, CallID: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r, ok
	}
	rel := func(sess string, limit int) (int, []driver.Ident) {
		t.Helper()
		n, waiting, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: sess, Kind: id.Kind, NS: id.NS, Name: id.Name, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return n, waiting
	}
	count := func(q string) (n int) {
		t.Helper()
		if err := d.SQL.QueryRow(q, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	innoRows := func() int { return count("SELECT COUNT(*) FROM baton_lock_requests WHERE ns = 'ns' AND name = ?") }
	slow := func() int { return count("SELECT slow FROM baton_lock_fast WHERE ns = 'ns' AND name = ?") }
	var engine string
	if err := d.SQL.QueryRow("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'baton_lock_fast'").Scan(&engine); err != nil || engine != "MEMORY" {
		t.Fatalf("baton_lock_fast engine %q, %v; want MEMORY", engine, err)
	}
	w1, ok := acq("s1", driver.ModeWrite)
	if !ok || w1.ID >= 0 || w1.Token == 0 || innoRows() != 0 || slow() != 0 {
		t.Fatalf("uncontended write: %+v %v; %d request rows, slow %d; want a negative id and nothing in InnoDB", w1, ok, innoRows(), slow())
	}
	if _, ok := acq("s2", driver.ModeWrite); ok {
		t.Fatal("a second writer granted")
	}
	// A reader refused by the fast statement looks under the row lock: the
	// writer is adopted, and the reader refused.
	if _, ok := acq("s2", driver.ModeRead); ok {
		t.Fatal("read granted over a writer")
	}
	var adopted int64
	if err := d.SQL.QueryRow("SELECT id FROM baton_lock_requests WHERE ns = 'ns' AND name = ?", name).Scan(&adopted); err != nil || adopted != w1.ID || slow() != 1 {
		t.Fatalf("adopted holder id %d, %v, slow %d; want %d, 1", adopted, err, slow(), w1.ID)
	}
	if n, waiting := rel("s1", 1); n != 1 || len(waiting) != 0 || innoRows() != 0 || slow() != 0 {
		t.Fatalf("release of the adopted holder: %d %v; %d rows, slow %d; want 1, none, 0 and the fast path's again", n, waiting, innoRows(), slow())
	}
	r1, ok1 := acq("s1", driver.ModeRead)
	r2, ok2 := acq("s2", driver.ModeRead)
	if !ok1 || !ok2 || r1.Token <= w1.Token || r2.Token != r1.Token+1 || r2.ID <= 0 {
		t.Fatalf("two readers after the writer (token %d): %+v %v, %+v %v", w1.Token, r1, ok1, r2, ok2)
	}
	if _, ok := acq("s3", driver.ModeWrite); ok {
		t.Fatal("write granted over readers")
	}
	for _, s := range []string{"s2", "s1"} {
		if n, _ := rel(s, 0); n != 1 {
			t.Fatalf("release %s: %d, want 1", s, n)
		}
	}
	if n, _ := rel("s1", 0); n != 0 {
		t.Fatalf("a second release freed %d", n)
	}
	w2, ok := acq("s3", driver.ModeWrite)
	if !ok || w2.Token <= r2.Token || slow() != 0 {
		t.Fatalf("write after the readers: %+v %v, slow %d", w2, ok, slow())
	}
	testFastMany(t, d, name, w2.Token)
}

// testFastMany: several names in one statement (MariaDB: INSERT ...
// RETURNING, MySQL: a read-back), all or nothing: name is held by s3
// (token held).
func testFastMany(t *testing.T, d *Driver, name string, held int64) {
	ctx := context.Background()
	p := driver.FastAcquireParams{SessionID: "s4", ClientID: "c", Ident: driver.Ident{Kind: driver.KindService, NS: "ns"},
		Mode: driver.ModeWrite, CallID: 8}
	free := []string{name + "-m1", name + "-m2"}
	rs, ok, err := d.LockFastAcquireMany(ctx, p, free)
	if err != nil || !ok || len(rs) != 2 || rs[0].Name != free[0] || rs[1].Name != free[1] || rs[0].ID >= 0 || rs[0].ID == rs[1].ID || rs[0].Token == 0 {
		t.Fatalf("two free names: %+v %v %v", rs, ok, err)
	}
	p.CallID = 9
	rs, ok, err = d.LockFastAcquireMany(ctx, p, []string{name + "-m3", name})
	if err != nil || ok || len(rs) != 0 {
		t.Fatalf("a free name and one s3 holds: %+v %v %v, want nothing", rs, ok, err)
	}
	var n int
	if err := d.SQL.QueryRowContext(ctx, "SELECT COUNT(*) FROM baton_lock_fast WHERE h_session = 's4'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("s4 holds %d fast rows (%v), want the first call's 2", n, err)
	}
	if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s4", Kind: p.Kind, NS: p.NS, InlineOnly: true}); err != nil || n != 2 {
		t.Fatalf("release of s4: %d, %v; want 2", n, err)
	}
	// MariaDB ran both two-name calls as one statement prepared for two
	// names; more than manyPrepared names run as text, all or none alike.
	if prepared := d.many[2].Load() != nil; prepared != d.mariadb {
		t.Fatalf("two-name acquire prepared: %v, want %v (MariaDB)", prepared, d.mariadb)
	}
	var many []string
	for i := range manyPrepared + 1 {
		many = append(many, fmt.Sprintf("%s-big%d", name, i))
	}
	p.CallID = 10
	if rs, ok, err := d.LockFastAcquireMany(ctx, p, many); err != nil || !ok || len(rs) != len(many) || rs[manyPrepared].Name != many[manyPrepared] {
		t.Fatalf("%d free names: %d granted, %v %v", len(many), len(rs), ok, err)
	}
	p.CallID = 11
	p.SessionID = "s5"
	if rs, ok, err := d.LockFastAcquireMany(ctx, p, append(many[1:], name+"-big-free")); err != nil || ok || len(rs) != 0 {
		t.Fatalf("names s4 holds: %+v %v %v, want nothing", rs, ok, err)
	}
	if n, _, err := d.LockFastRelease(ctx, driver.FastReleaseParams{SessionID: "s4", Kind: p.Kind, NS: p.NS, InlineOnly: true}); err != nil || n != len(many) {
		t.Fatalf("release of s4: %d, %v; want %d", n, err, len(many))
	}
	if err := d.SQL.QueryRowContext(ctx, "SELECT COUNT(*) FROM baton_lock_fast WHERE h_session IS NOT NULL AND ns = 'ns' AND name LIKE '%big%'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d holders left (%v)", n, err)
	}
}

// wakeCounter counts wake calls.
// wakeCounter counts a listener's wake-ups (n) and its safety net's
// reads of the notifications (nets).
type wakeCounter struct{ n, nets atomic.Int64 }

func (w *wakeCounter) wake() { w.n.Add(1) }
func (w *wakeCounter) net()  { w.nets.Add(1) }

// waitWake waits until the counter moves past from, and returns how long
// that took.
func (w *wakeCounter) waitWake(t *testing.T, from int64, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for w.n.Load() == from {
		if time.Since(start) > limit {
			t.Fatalf("no wake-up within %v", limit)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// quiet waits until no wake-up came for a moment and returns the count.
func (w *wakeCounter) quiet() int64 {
	for {
		n := w.n.Load()
		time.Sleep(50 * time.Millisecond)
		if w.n.Load() == n {
			return n
		}
	}
}

// wakeFrom wakes clients from a transaction of d.
func wakeFrom(t *testing.T, d *Driver, clientIDs ...string) {
	t.Helper()
	batontest.DriverTx(t, d, func(ctx context.Context, tx driver.Tx) error {
		return tx.WakeClients(ctx, sqlbase.Looks(clientIDs))
	})
}

// remoteListener starts d's listener of clientID as if it lived in
// another process (no in-process wake-ups), stopped when the test ends,
// and waits for the wake-up of its first poll.
func remoteListener(t *testing.T, d *Driver, clientID string, interval time.Duration) (*listener, *wakeCounter) {
	t.Helper()
	w := &wakeCounter{}
	l, err := d.listen(context.Background(), clientID, w.wake, w.net, nil, interval)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.stop)
	local.Delete(clientID)
	w.waitWake(t, 0, 5*time.Second)
	return l, w
}

// twoProcesses opens two drivers on one new database, as two processes
// would.
func twoProcesses(t *testing.T) (*Driver, *Driver) {
	dsn := newDSN(t)
	return openDriver(t, dsn), openDriver(t, dsn)
}

// TestWakeAcrossProcesses exercises the KILL QUERY path: the listener's
// interval is long, so only an interruption can wake it in time.
func TestWakeAcrossProcesses(t *testing.T) {
	d1, d2 := twoProcesses(t)
	// The first poll wakes at once.
	_, w := remoteListener(t, d1, "client-1", 20*time.Second)
	for i := 0; i < 5; i++ {
		n := w.quiet()
		wakeFrom(t, d2, "client-1")
		el := w.waitWake(t, n, 5*time.Second)
		t.Logf("woken after %v", el)
	}
	// Several clients at once take the other statement shape.
	_, w2 := remoteListener(t, d1, "client-2", 20*time.Second)
	n1, n2 := w.quiet(), w2.quiet()
	wakeFrom(t, d2, "client-2", "client-1", "nobody")
	w.waitWake(t, n1, 5*time.Second)
	w2.waitWake(t, n2, 5*time.Second)
}

// TestWakeWhileOwnPoolBusy: a client bounded to one connection (MaxConns
// 1, as the baton command runs) wakes another process's listener while a
// statement of its own holds that connection: the KILL QUERY has a
// connection of its own, so a KILL the server is slow to carry out never
// keeps the client's statements (its lease renewal) waiting, nor they it.
func TestWakeWhileOwnPoolBusy(t *testing.T) {
	d1, d2 := twoProcesses(t)
	d2.LimitConns(1)
	// A 20 s poll: only an interruption wakes the listener in time.
	l, w := remoteListener(t, d1, "client-1", 20*time.Second)
	c, err := d2.SQL.Conn(context.Background()) // the pool's only one
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := w.quiet()
	d2.interrupt([]int64{l.connID.Load()})
	w.waitWake(t, n, 5*time.Second)
}

// TestWakeNothingOnRollback: a wake-up is sent only on commit.
func TestWakeNothingOnRollback(t *testing.T) {
	d1, d2 := twoProcesses(t)
	_, w := remoteListener(t, d1, "client-1", 20*time.Second)
	n := w.quiet()
	ctx := context.Background()
	tx, err := d2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WakeClients(ctx, []driver.Request{{ClientID: "client-1"}}); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback()
	time.Sleep(300 * time.Millisecond)
	if got := w.n.Load(); got != n {
		t.Fatalf("woken %d times after a rollback", got-n)
	}
}

// TestListenerReconnects: the listener's connection is killed (as by a
// server restart); it reconnects, registers the new connection and is woken
// through it.
func TestListenerReconnects(t *testing.T) {
	d1, d2 := twoProcesses(t)
	l, w := remoteListener(t, d1, "client-1", 20*time.Second)
	for round := 0; round < 3; round++ {
		n := w.quiet()
		old := l.connID.Load()
		if _, err := d2.SQL.Exec("KILL CONNECTION " + strconv.FormatInt(old, 10)); err != nil {
			t.Fatal(err)
		}
		// The broken connection is reported as a wake-up (one may have
		// been missed), then the new connection is registered.
		w.waitWake(t, n, 5*time.Second)
		deadline := time.Now().Add(5 * time.Second)
		var reg int64
		for {
			_ = d2.SQL.QueryRow("SELECT conn_id FROM baton_wakeups WHERE client_id = 'client-1'").Scan(&reg)
			if reg != old && reg == l.connID.Load() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("registration %d, listener %d, old %d", reg, l.connID.Load(), old)
			}
			time.Sleep(5 * time.Millisecond)
		}
		n = w.quiet()
		wakeFrom(t, d2, "client-1")
		w.waitWake(t, n, 5*time.Second)
	}
}

// TestListenStopIsPrompt: stopping does not wait for the sleep to end, and
// removes the registration.
func TestListenStopIsPrompt(t *testing.T) {
	d := openDriver(t, newDSN(t))
	var w wakeCounter
	stop, err := d.Listen(context.Background(), driver.ListenParams{ClientID: "client-1", Wake: func([]driver.Request) { w.wake() }, Notify: func(string, string) {}, Interval: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.waitWake(t, 0, 5*time.Second)
	for deadline := time.Now().Add(10 * time.Second); sleepers(t, d) != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d listener statements running, want 1", sleepers(t, d))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Stop interrupts the sleeping poll statement (it would otherwise
	// sleep for the 30 s interval): none runs once stop has returned.
	stop()
	if n := sleepers(t, d); n != 0 {
		t.Fatalf("%d listener statements still running after stop", n)
	}
	var n int
	if err := d.SQL.QueryRow("SELECT COUNT(*) FROM baton_wakeups").Scan(&n); err != nil || n != 0 {
		t.Fatalf("registrations left: %d %v", n, err)
	}
	if _, ok := local.Load("client-1"); ok {
		t.Fatal("still registered in the process")
	}
	// No server thread is left sleeping for the client.
	if n := sleepers(t, d); n != 0 {
		t.Fatalf("%d listener statements still running", n)
	}
}

// sleepers counts the listener statements running on the database.
func sleepers(t *testing.T, d *Driver) int {
	t.Helper()
	var n int
	err := d.SQL.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SLEEP%baton_wakeups%' AND INFO NOT LIKE '%PROCESSLIST%' AND DB = DATABASE()").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStaleRegistrationNeverInterrupted: a registration older than the
// server's start names a connection id that may belong to anyone now.
func TestStaleRegistrationNeverInterrupted(t *testing.T) {
	d := openDriver(t, newDSN(t))
	c, err := d.SQL.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var victim int64
	if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&victim); err != nil {
		t.Fatal(err)
	}
	_, err = d.SQL.Exec("INSERT INTO baton_wakeups (client_id, conn_id, seq, updated_at) VALUES ('old', ?, 0, ?)",
		victim, d.serverStart.Load()-1)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var r int
		err := c.QueryRowContext(context.Background(), "SELECT SLEEP(1)").Scan(&r)
		if err == nil && r != 0 {
			err = fmt.Errorf("SLEEP returned %d", r)
		}
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		if err := d.SQL.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(1)'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unrelated statement never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	wakeFrom(t, d, "old")
	if err := <-done; err != nil {
		t.Fatalf("an unrelated connection was interrupted: %v", err)
	}
}

// TestSafetyNetWhileStuck: with the listener's statement stuck on a frozen
// network, the notifications are still read once per interval (the lock
// waits are the engine's poll's); when the network comes back the
// listener carries on.
func TestSafetyNetWhileStuck(t *testing.T) {
	dsn := newDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	f := batontest.NewProxy(t, u.Host)
	u.Host = f.Addr()
	d := openDriver(t, u.String())
	l, w := remoteListener(t, d, "client-1", 200*time.Millisecond)
	f.Partition()
	// While the connection is stuck the safety net keeps reading (every
	// 200ms interval): wait for three reads.
	n := w.nets.Load()
	for deadline := time.Now().Add(20 * time.Second); w.nets.Load()-n < 3; {
		if time.Now().After(deadline) {
			f.Heal()
			t.Fatalf("%d reads of the notifications while stuck, want the safety net's", w.nets.Load()-n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.Heal()
	n = w.quiet()
	wakeFrom(t, openDriver(t, dsn), "client-1")
	w.waitWake(t, n, 5*time.Second)
	l.stop()
}

// TestNoSequenceEngineError: the error that sends the many-name acquire
// back to the derived table is the server's own for a seq_1_to_ table it
// does not have, and no other missing table's.
func TestNoSequenceEngineError(t *testing.T) {
	d := openDriver(t, newDSN(t))
	_, err := d.SQL.ExecContext(context.Background(), "SELECT 1 FROM seq_1_to_none")
	if !noSequenceEngine(err) {
		t.Fatalf("a missing seq_1_to_ table: %v, not taken for a server without the Sequence engine", err)
	}
	_, err = d.SQL.ExecContext(context.Background(), "SELECT 1 FROM baton_no_such_table")
	if err == nil || noSequenceEngine(err) {
		t.Fatalf("another missing table: %v, taken for a server without the Sequence engine", err)
	}
}
