package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/driver/mysql"
	"github.com/batonhq/baton/driver/postgres"
)

// nativeLock is a database's own connection-bound lock, the baseline baton
// is compared with. Every connection it opens works on the same lock, a
// key of its own so that concurrent runs on one server do not meet.
type nativeLock interface {
	name() string
	// open opens a dedicated connection.
	open(ctx context.Context) (nativeConn, error)
	// waiting reports whether c is blocked waiting for the lock.
	waiting(ctx context.Context, c nativeConn) (bool, error)
	// turnstileWaiting reports whether a baton session waits in the
	// server behind a turnstile (driver.Turnstiles).
	turnstileWaiting(ctx context.Context) (bool, error)
	close()
}

type nativeConn interface {
	// lock takes the lock; block says whether to wait for it (otherwise
	// it must be free).
	lock(ctx context.Context, block bool) error
	unlock(ctx context.Context) error
	// lockMany takes n locks of their own, one call each, and unlockAll
	// releases every lock of the connection in one call.
	lockMany(ctx context.Context, n int) error
	unlockAll(ctx context.Context) error
	// tryRefused tries the lock once, which another connection holds,
	// and fails unless it is refused.
	tryRefused(ctx context.Context) error
	close()
}

// sharedConn is a nativeConn whose lock has a shared mode (PostgreSQL's;
// MySQL's GET_LOCK has none).
type sharedConn interface {
	lockShared(ctx context.Context) error
	unlockShared(ctx context.Context) error
}

// native returns the backend's baseline, or nil when it has none.
func (r *runner) native() nativeLock {
	switch r.cfg.Backend {
	case "postgres":
		var b [8]byte
		_, _ = rand.Read(b[:])
		return &pgAdvisory{server: r.sc.server, key: int64(binary.BigEndian.Uint64(b[:]) >> 1)}
	case "mysql":
		return &getLock{server: r.sc.server, lockName: "baton_bench_" + randomSuffix()}
	}
	return nil
}

// ---- PostgreSQL: pg_advisory_lock ----

type pgAdvisory struct {
	server string
	key    int64
	admin  *pgx.Conn
}

func (p *pgAdvisory) name() string { return "pg_advisory_lock" }

func (p *pgAdvisory) open(ctx context.Context) (nativeConn, error) {
	c, err := pgx.Connect(ctx, p.server)
	if err != nil {
		return nil, err
	}
	return &pgConn{c: c, key: p.key}, nil
}

// adminConn is the connection that looks at pg_locks.
func (p *pgAdvisory) adminConn(ctx context.Context) (*pgx.Conn, error) {
	if p.admin == nil {
		a, err := pgx.Connect(ctx, p.server)
		if err != nil {
			return nil, err
		}
		p.admin = a
	}
	return p.admin, nil
}

func (p *pgAdvisory) waiting(ctx context.Context, c nativeConn) (bool, error) {
	a, err := p.adminConn(ctx)
	if err != nil {
		return false, err
	}
	var w bool
	err = a.QueryRow(ctx,
		"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted)",
		c.(*pgConn).c.PgConn().PID()).Scan(&w)
	return w, err
}

func (p *pgAdvisory) turnstileWaiting(ctx context.Context) (bool, error) {
	a, err := p.adminConn(ctx)
	if err != nil {
		return false, err
	}
	var w bool
	err = a.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
		AND objsubid = 2 AND classid::bigint = $1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`,
		int64(uint32(postgres.TurnstileClass))).Scan(&w)
	return w, err
}

func (p *pgAdvisory) close() {
	if p.admin != nil {
		_ = p.admin.Close(context.Background())
	}
}

type pgConn struct {
	c   *pgx.Conn
	key int64
}

// lock always uses pg_advisory_lock: on a free key it returns at once.
func (c *pgConn) lock(ctx context.Context, _ bool) error {
	_, err := c.c.Exec(ctx, "SELECT pg_advisory_lock($1)", c.key)
	return err
}

func (c *pgConn) unlock(ctx context.Context) error { return c.release(ctx, "pg_advisory_unlock") }

func (c *pgConn) lockShared(ctx context.Context) error {
	_, err := c.c.Exec(ctx, "SELECT pg_advisory_lock_shared($1)", c.key)
	return err
}

func (c *pgConn) unlockShared(ctx context.Context) error {
	return c.release(ctx, "pg_advisory_unlock_shared")
}

// release calls fn, an advisory unlock function, on the key: an error
// when the lock was not held.
func (c *pgConn) release(ctx context.Context, fn string) error {
	var ok bool
	if err := c.c.QueryRow(ctx, "SELECT "+fn+"($1)", c.key).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return errors.New(fn + ": lock was not held")
	}
	return nil
}

func (c *pgConn) lockMany(ctx context.Context, n int) error {
	for i := 1; i <= n; i++ {
		if _, err := c.c.Exec(ctx, "SELECT pg_advisory_lock($1)", c.key^int64(i)); err != nil {
			return err
		}
	}
	return nil
}

func (c *pgConn) unlockAll(ctx context.Context) error {
	_, err := c.c.Exec(ctx, "SELECT pg_advisory_unlock_all()")
	return err
}

func (c *pgConn) tryRefused(ctx context.Context) error {
	var got bool
	if err := c.c.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", c.key).Scan(&got); err != nil {
		return err
	}
	if got {
		return errors.New("pg_try_advisory_lock took a lock another connection holds")
	}
	return nil
}

func (c *pgConn) close() { _ = c.c.Close(context.Background()) }

// ---- MySQL/MariaDB: GET_LOCK ----

type getLock struct {
	server   string
	lockName string
	db       *sql.DB
}

func (g *getLock) name() string { return "get_lock" }

func (g *getLock) pool() (*sql.DB, error) {
	if g.db != nil {
		return g.db, nil
	}
	dsn, err := MySQLDriverDSN(g.server)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	g.db = db
	return db, nil
}

func (g *getLock) open(ctx context.Context) (nativeConn, error) {
	db, err := g.pool()
	if err != nil {
		return nil, err
	}
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var id int64
	if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		c.Close()
		return nil, err
	}
	return &myConn{c: c, id: id, lockName: g.lockName}, nil
}

func (g *getLock) waiting(ctx context.Context, c nativeConn) (bool, error) {
	db, err := g.pool()
	if err != nil {
		return false, err
	}
	var n int
	err = db.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND STATE = 'User lock'",
		c.(*myConn).id).Scan(&n)
	return n > 0, err
}

func (g *getLock) turnstileWaiting(ctx context.Context) (bool, error) {
	db, err := g.pool()
	if err != nil {
		return false, err
	}
	// The turnstile's call (driver/mysql), waiting in
	// GET_LOCK.
	var n int
	err = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.PROCESSLIST
		WHERE STATE = 'User lock' AND INFO LIKE ?`, mysql.TurnstileCallPattern).Scan(&n)
	return n > 0, err
}

func (g *getLock) close() {
	if g.db != nil {
		_ = g.db.Close()
	}
}

type myConn struct {
	c        *sql.Conn
	id       int64
	lockName string
}

func (c *myConn) lock(ctx context.Context, block bool) error {
	timeout := 0
	if block {
		timeout = 10
	}
	return c.getLock(ctx, c.lockName, timeout, 1)
}

// getLock calls GET_LOCK(name, timeout) and fails unless it returns want
// (1: taken; 0: refused).
func (c *myConn) getLock(ctx context.Context, name string, timeout int, want int64) error {
	var got sql.NullInt64
	if err := c.c.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, timeout).Scan(&got); err != nil {
		return err
	}
	if !got.Valid || got.Int64 != want {
		return fmt.Errorf("GET_LOCK(%q, %d) returned %v, want %d", name, timeout, got, want)
	}
	return nil
}

func (c *myConn) unlock(ctx context.Context) error {
	var rel sql.NullInt64
	if err := c.c.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", c.lockName).Scan(&rel); err != nil {
		return err
	}
	if !rel.Valid || rel.Int64 != 1 {
		return fmt.Errorf("RELEASE_LOCK(%q) returned %v", c.lockName, rel)
	}
	return nil
}

func (c *myConn) lockMany(ctx context.Context, n int) error {
	for i := 1; i <= n; i++ {
		if err := c.getLock(ctx, fmt.Sprintf("%s.%d", c.lockName, i), 0, 1); err != nil {
			return err
		}
	}
	return nil
}

func (c *myConn) unlockAll(ctx context.Context) error {
	_, err := c.c.ExecContext(ctx, "SELECT RELEASE_ALL_LOCKS()")
	return err
}

// tryRefused: the lock is another connection's.
func (c *myConn) tryRefused(ctx context.Context) error {
	return c.getLock(ctx, c.lockName, 0, 0)
}

func (c *myConn) close() { _ = c.c.Close() }
