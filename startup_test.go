package baton_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/internal/batontest"
)

// TestConcurrentMigrate: several processes' clients opening a fresh database
// at the same moment all succeed, and the schema is applied once.
func TestConcurrentMigrate(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		batontest.Concurrently(t, 6, func(int) error {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := baton.Open(ctx, dsn)
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.NewSession(ctx)
			if err == nil {
				_, err = s.Lock(ctx, "m", baton.Read, 0, "x")
			}
			return err
		})
		st, err := batontest.Driver(t, dsn).MigrationStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(st) == 0 {
			t.Fatal("no migration known, want every backend's (the baseline at least)")
		}
		for _, m := range st {
			if !m.Applied {
				t.Fatalf("migration %03d_%s not applied", m.Version, m.Name)
			}
		}
	})
}

// TestSchemaNewerRefused: a program refuses a database that a later
// version migrated further (a later lock state may mean what this program
// cannot see), on Open, saying so.
func TestSchemaNewerRefused(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		db := batontest.SQLDB(t, dsn)
		mustExec(t, db, sqlFor(b, "INSERT INTO baton_migrations (version, name, applied_at) VALUES (?, ?, ?)"), 999, "from_the_future", 1)
		c, err := baton.Open(ctxT(t), dsn)
		if err == nil {
			c.Close()
			t.Fatal("Open accepted a database with a migration it does not know")
		}
		if !strings.Contains(err.Error(), "newer than this program") || !strings.Contains(err.Error(), "999") {
			t.Fatalf("Open: %v, want a schema-newer error naming migration 999", err)
		}
	})
}

// batonObjects lists the tables, views and routines named baton_* in the
// test's schema (database, file).
func batonObjects(t *testing.T, b batontest.Backend, db *sql.DB) []string {
	t.Helper()
	q := map[string]string{
		"sqlite": "SELECT name FROM sqlite_master WHERE name LIKE 'baton!_%' ESCAPE '!' AND type IN ('table', 'view', 'trigger')",
		"postgres": `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'baton!_%' ESCAPE '!'
			UNION ALL SELECT routine_name FROM information_schema.routines WHERE routine_schema = current_schema() AND routine_name LIKE 'baton!_%' ESCAPE '!'`,
		"mysql": `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'baton!_%' ESCAPE '!'
			UNION ALL SELECT routine_name FROM information_schema.routines WHERE routine_schema = DATABASE() AND routine_name LIKE 'baton!_%' ESCAPE '!'`,
	}[b.Name]
	out := batontest.Strings(t, db, q)
	slices.Sort(out)
	return out
}

// TestPreReleaseSchemaRefused: a database migrated by the pre-release
// migrations (001_locks ... 044_event_table, squashed into the baseline
// since) is refused by Open and by Migrate with an error that names the
// fix, and nothing is created in it; the fix (uninstall, then migrate)
// works.
func TestPreReleaseSchemaRefused(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		db := batontest.SQLDB(t, dsn)
		mustExec(t, db, "CREATE TABLE baton_migrations (version INTEGER NOT NULL PRIMARY KEY, name VARCHAR(200) NOT NULL, applied_at BIGINT NOT NULL)")
		mustExec(t, db, `CREATE TABLE baton_sessions (id VARCHAR(64) NOT NULL PRIMARY KEY, client_id VARCHAR(64) NOT NULL,
			host VARCHAR(100) NOT NULL, pid BIGINT NOT NULL, name VARCHAR(100) NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL)`)
		for v, name := range map[int]string{1: "locks", 2: "session_hostid", 43: "memory_state", 44: "event_table"} {
			mustExec(t, db, sqlFor(b, "INSERT INTO baton_migrations (version, name, applied_at) VALUES (?, ?, ?)"), v, name, 1)
		}
		before := batonObjects(t, b, db)
		const want = "this database has a pre-release baton schema: run `baton uninstall --yes` and then `baton migrate`"
		c, err := baton.Open(ctxT(t), dsn)
		if err == nil {
			c.Close()
			t.Fatal("Open accepted a database with a pre-release schema")
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("Open: %v, want %q", err, want)
		}
		d := batontest.Driver(t, dsn)
		for what, f := range map[string]func(context.Context) ([]driver.MigrationStatus, error){"Migrate": d.Migrate, "MigrationStatus": d.MigrationStatus} {
			if _, err := f(ctxT(t)); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %v, want %q", what, err, want)
			}
		}
		if after := batonObjects(t, b, db); !slices.Equal(after, before) {
			t.Fatalf("objects after the refusals: %v, want those before: %v", after, before)
		}

		c, err = baton.Open(ctxT(t), dsn, baton.Options{NoMigrate: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Uninstall(ctxT(t), baton.UninstallOptions{Remove: true}); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if left := batonObjects(t, b, db); len(left) != 0 {
			t.Fatalf("after uninstall: %v", left)
		}
		c, err = baton.Open(ctxT(t), dsn)
		if err != nil {
			t.Fatalf("Open after uninstall: %v", err)
		}
		c.Close()
	})
}

// TestRoutineRecreatedOnChecksum: Migrate (re)creates a stored routine
// when the checksum the database recorded for it is not its file's, and
// only then: a routine dropped behind baton's back stays dropped while its
// checksum is current, and comes back once the checksum differs.
func TestRoutineRecreatedOnChecksum(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn := open(t, b)
		db := batontest.SQLDB(t, dsn)
		d := batontest.Driver(t, dsn)
		if b.Name == "sqlite" {
			// No stored routines: no checksum table either.
			if slices.Contains(batonObjects(t, b, db), "baton_routines") {
				t.Fatal("SQLite has a routines table")
			}
			return
		}
		drop := map[string]string{
			"postgres": "DROP FUNCTION baton_grantable(text, text, text[], text[], text[], text[])",
			"mysql":    "DROP FUNCTION baton_grantable",
		}[b.Name]
		var sum string
		if err := db.QueryRow("SELECT checksum FROM baton_routines WHERE name = 'grantable'").Scan(&sum); err != nil || len(sum) != 64 {
			t.Fatalf("grantable's checksum: %q, %v", sum, err)
		}
		mustExec(t, db, drop)
		if _, err := d.Migrate(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(batonObjects(t, b, db), "baton_grantable") {
			t.Fatal("Migrate made a routine whose checksum was current")
		}
		mustExec(t, db, "UPDATE baton_routines SET checksum = 'changed' WHERE name = 'grantable'")
		if _, err := d.Migrate(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(batonObjects(t, b, db), "baton_grantable") {
			t.Fatal("Migrate did not make again a routine whose checksum changed")
		}
		var again string
		if err := db.QueryRow("SELECT checksum FROM baton_routines WHERE name = 'grantable'").Scan(&again); err != nil || again != sum {
			t.Fatalf("grantable's checksum after: %q, %v; want %q", again, err, sum)
		}
	})
}

// TestOneShotOneConnection: a client that only takes a free lock and
// enqueues (what `baton queue push` and `baton lock -- CMD` do) holds one
// connection: no listening connection and no second pool. The listener
// starts with the first wait. Connections are counted on PostgreSQL by the
// client's application_name and on MariaDB by the test's own database
// (SQLite has none; a pooler multiplexes them).
func TestOneShotOneConnection(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "postgres" && b.Label != "mysql" {
			t.Skip("connections are counted on PostgreSQL and MariaDB, directly")
		}
		dsn := b.NewDSN(t)
		db := batontest.SQLDB(t, dsn)
		var count string
		var arg any
		if b.Name == "postgres" {
			app := "oneshot_" + time.Now().Format("150405.000000")
			dsn += "&application_name=" + app
			count, arg = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app
		} else {
			if err := db.QueryRowContext(ctxT(t), "SELECT DATABASE()").Scan(&arg); err != nil {
				t.Fatal(err)
			}
			count = "SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()"
		}
		conns := func() int {
			t.Helper()
			var n int
			if err := db.QueryRowContext(ctxT(t), count, arg).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		// A long lease: no heartbeat and no statement preparation run
		// during the test (a long-running client prepares after one
		// heartbeat).
		c := openDSN(t, dsn, baton.Options{Lease: time.Hour})
		s := session(t, c)
		mustLock(t, s, "default", baton.Write, "job")
		release(t, s, "default")
		enqueue(t, c, "mail", "x")
		if n := conns(); n != 1 {
			t.Fatalf("a one-shot client holds %d connections, want 1", n)
		}
		// The first wait or Listen starts the listener, and the statement
		// preparation, which may run beside the listener's first
		// statements on a second connection of the pool.
		listen(t, c, "news")
		// PostgreSQL: the pool's one (two when the preparation ran beside
		// another statement) and the listener's. MariaDB: the listener's
		// besides the pool's, which the notification pump and the
		// preparation may grow meanwhile.
		if n := conns(); n < 2 || n > 3 && b.Name == "postgres" {
			t.Fatalf("after Listen the client holds %d connections, want the pool's and the listener's", n)
		}
		if b.Name == "postgres" {
			var listening int
			err := db.QueryRowContext(ctxT(t), "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %'", arg).Scan(&listening)
			if err != nil || listening != 1 {
				t.Fatalf("%d connections of the client LISTEN (%v), want 1", listening, err)
			}
		}
	})
}

// TestShortWaitStartsListener: a wait shorter than the listener's start (a
// connection on PostgreSQL and MySQL) still ends as a wait does, with
// ErrEmpty or ErrTimeout, and the start goes on for the next waiter.
func TestShortWaitStartsListener(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := open(t, b)
		s := session(t, c)
		if _, err := s.Claim(ctxT(t), "empty", baton.ClaimOptions{Wait: time.Microsecond}); !errors.Is(err, baton.ErrEmpty) {
			t.Fatalf("claim with a short wait: %v, want ErrEmpty", err)
		}
		mustLock(t, session(t, c), "ns", baton.Write, "x")
		if _, err := s.Lock(ctxT(t), "ns", baton.Write, time.Microsecond, "x"); !errors.Is(err, baton.ErrTimeout) {
			t.Fatalf("lock with a short wait: %v, want ErrTimeout", err)
		}
		// A listener that runs delivers.
		l := listen(t, c, "news")
		if err := c.Notify(ctxT(t), "news", "hi"); err != nil {
			t.Fatal(err)
		}
		if n := next(t, l); n.Payload != "hi" {
			t.Fatalf("notification %+v", n)
		}
	})
}

// pgxPool is for the tests of the program's own pgx pool: it skips the
// test but on PostgreSQL reached directly (why: pgx's pools and
// transactions are PostgreSQL's), and returns a fresh database's DSN and a
// pgx pool on it, closed when the test ends.
func pgxPool(t *testing.T, b batontest.Backend, why string) (string, *pgxpool.Pool) {
	t.Helper()
	if b.Label != "postgres" {
		t.Skip(why)
	}
	dsn := b.NewDSN(t)
	pool, err := pgxpool.New(ctxT(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return dsn, pool
}

// TestOpenOnProgramsPool: a client on the program's own pgx pool or
// *sql.DB locks, enqueues and hands a lock over through LISTEN; closing the
// client leaves the program's pool open.
func TestOpenOnProgramsPool(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn, pool := pgxPool(t, b, "pgx pools are PostgreSQL's (behind a pooler, open by DSN)")
		sdb, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer sdb.Close()
		opens := map[string]func() (driver.Driver, error){
			"pgxpool": func() (driver.Driver, error) { return postgres.OpenPool(ctxT(t), pool, "baton_") },
			"sql.DB":  func() (driver.Driver, error) { return postgres.OpenDB(ctxT(t), sdb, "baton_") },
		}
		for _, how := range []string{"pgxpool", "sql.DB"} {
			drv, err := opens[how]()
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			c, err := baton.NewClient(ctxT(t), drv, baton.Options{PollInterval: time.Hour}) // hand-off by LISTEN only
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			s1, s2 := session(t, c), session(t, c)
			mustLock(t, s1, "pool", baton.Write, how)
			got := waiting(t, c, s2, "pool", baton.Write, 10*time.Second, how)
			if _, err := s1.Release(ctxT(t), "pool"); err != nil {
				t.Fatal(err)
			}
			if err := recv(t, got); err != nil {
				t.Fatalf("%s: hand-off: %v", how, err)
			}
			if _, err := c.Enqueue(ctxT(t), "pooled", []byte(how)); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := pool.Ping(ctxT(t)); err != nil {
			t.Fatalf("closing the client closed the program's pgx pool: %v", err)
		}
		var n int
		if err := sdb.QueryRowContext(ctxT(t), "SELECT count(*) FROM baton_messages WHERE queue = 'pooled'").Scan(&n); err != nil || n != 2 {
			t.Fatalf("closing the client closed the program's *sql.DB, or lost messages: %d %v", n, err)
		}
		other, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		_, err = postgres.OpenDB(context.Background(), other, "baton_")
		wantErr(t, err, baton.ErrBadDSN)
	})
}

// TestEnqueueInPgxTx: EnqueueTx, EnqueueManyTx and NotifyTx in a pgx
// transaction (postgres.PgxTx): visible if and only if it commits.
func TestEnqueueInPgxTx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn, pool := pgxPool(t, b, "pgx transactions are PostgreSQL's (the pool is the program's, opened directly)")
		c := openDSN(t, dsn, fastRetry)
		l := listen(t, c, "tx")
		for _, commit := range []bool{false, true} {
			tx, err := pool.Begin(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			ptx := postgres.PgxTx{Tx: tx}
			id, err := c.EnqueueTx(ctxT(t), ptx, "pgxq", []byte("one"))
			if err != nil || id == 0 {
				t.Fatalf("EnqueueTx in a pgx transaction: %d %v", id, err)
			}
			u := baton.EnqueueOptions{UniqueKey: "pgx"}
			ids, err := c.EnqueueManyTx(ctxT(t), ptx, "pgxq", []baton.NewMessage{{Payload: []byte("two"), EnqueueOptions: u}, {Payload: []byte("three")}})
			if err != nil || len(ids) != 2 || ids[0] == 0 || ids[1] <= ids[0] {
				t.Fatalf("EnqueueManyTx in a pgx transaction: %v %v", ids, err)
			}
			if again, err := c.EnqueueTx(ctxT(t), ptx, "pgxq", []byte("dup"), u); !errors.Is(err, baton.ErrDuplicate) || again != ids[0] {
				t.Fatalf("EnqueueTx of a unique key the pgx transaction took: %d %v, want %d with ErrDuplicate", again, err, ids[0])
			}
			if err := c.NotifyTx(ctxT(t), ptx, "tx", fmt.Sprint(commit)); err != nil {
				t.Fatal(err)
			}
			if commit {
				err = tx.Commit(ctxT(t))
			} else {
				err = tx.Rollback(ctxT(t))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		s := session(t, c)
		if got := payloads(claim(t, s, "pgxq", baton.ClaimOptions{Max: 10})); strings.Join(got, ",") != "one,two,three" {
			t.Fatalf("after a rolled-back and a committed pgx transaction: %v", got)
		}
		if n := next(t, l); n.Payload != "true" {
			t.Fatalf("notification %+v, want the committed one only", n)
		}
	})
}
