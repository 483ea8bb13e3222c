// Package batontest runs test bodies once per backend, each in a database of
// its own (a temporary file on SQLite, a schema on PostgreSQL, a database on
// MySQL/MariaDB), so conformance tests run in parallel.
//
// PostgreSQL and MariaDB are required: a backend that cannot be reached fails
// the test, it is never skipped. BATON_TEST_POSTGRES and BATON_TEST_MYSQL
// override the servers (defaults: the local ones); BATON_TEST_BACKENDS
// (comma-separated) narrows the run for local work.
package batontest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// Backend is one database server kind under test.
type Backend struct {
	// Name is the backend's kind: sqlite, postgres or mysql (what SQL the
	// test writes depends on it).
	Name string
	// Label names the subtest and BATON_TEST_BACKENDS selects by it; it is
	// Name but for pgbouncer (postgres through PgBouncer).
	Label string
	// NewDSN creates an empty database for the test and returns its DSN; it
	// is dropped when the test ends.
	NewDSN func(t testing.TB) string
}

// Default server DSNs.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test"
	DefaultMySQL    = "mysql://root@127.0.0.1:3306/test"
)

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// PostgresDSN and MySQLDSN are the servers tests use.
func PostgresDSN() string { return env("BATON_TEST_POSTGRES", DefaultPostgres) }

// MySQLDSN is the MySQL/MariaDB server tests use.
func MySQLDSN() string { return env("BATON_TEST_MYSQL", DefaultMySQL) }

func rnd() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// All returns every backend, narrowed by BATON_TEST_BACKENDS. It panics
// when the variable names a backend that does not exist or selects none:
// a misspelled name must fail the run, never drop a backend silently.
func All() []Backend {
	bs, err := selection()
	if err != nil {
		panic(err)
	}
	return bs
}

// Selected is All for a test: a BATON_TEST_BACKENDS that names an unknown
// backend or selects none fails the test.
func Selected(t testing.TB) []Backend {
	t.Helper()
	bs, err := selection()
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// selection is every backend, narrowed by BATON_TEST_BACKENDS, or why the
// variable is wrong.
func selection() ([]Backend, error) {
	all := []Backend{
		{Name: "sqlite", Label: "sqlite", NewDSN: SQLiteDSN},
		{Name: "postgres", Label: "postgres", NewDSN: newPostgres},
		{Name: "mysql", Label: "mysql", NewDSN: newMySQL},
		{Name: "postgres", Label: "pgbouncer", NewDSN: newPgBouncer},
	}
	only, set := os.LookupEnv("BATON_TEST_BACKENDS")
	if !set || only == "" {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		known := false
		for _, b := range all {
			known = known || b.Label == n
		}
		if !known {
			return nil, fmt.Errorf("BATON_TEST_BACKENDS=%q: unknown backend %q (use sqlite, postgres, mysql, pgbouncer, comma-separated)", only, n)
		}
		want[n] = true
	}
	var out []Backend
	for _, b := range all {
		if want[b.Label] {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("BATON_TEST_BACKENDS=%q selects no backend (use sqlite, postgres, mysql, pgbouncer, comma-separated)", only)
	}
	return out, nil
}

// SQLiteDSN returns the DSN of a new SQLite database, a file in a
// temporary directory of the test's own.
func SQLiteDSN(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "baton.db")
}

// NewDSN returns the DSN of a fresh database of the backend with label
// (sqlite, postgres, mysql, pgbouncer), or skips the test when
// BATON_TEST_BACKENDS leaves it out.
func NewDSN(t testing.TB, label string) string {
	t.Helper()
	for _, b := range Selected(t) {
		if b.Label == label {
			return b.NewDSN(t)
		}
	}
	t.Skip(label + " not in BATON_TEST_BACKENDS")
	return ""
}

// Each runs body as a parallel subtest once per backend.
func Each(t *testing.T, body func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Selected(t) {
		b := b
		t.Run(b.Label, func(t *testing.T) {
			t.Parallel()
			body(t, b)
		})
	}
}

// EachDSN runs body as a parallel subtest once per backend, each with the
// DSN of a fresh database of its own.
func EachDSN(t *testing.T, body func(t *testing.T, b Backend, dsn string)) {
	t.Helper()
	Each(t, func(t *testing.T, b Backend) { body(t, b, b.NewDSN(t)) })
}

var (
	adminMu sync.Mutex
	admins  = map[string]*sql.DB{}
)

func admin(t testing.TB, driverName, dsn string) *sql.DB {
	adminMu.Lock()
	defer adminMu.Unlock()
	if db := admins[dsn]; db != nil {
		return db
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatalf("%s: %v", driverName, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("%s test server unreachable at %s: %v (start it, or set BATON_TEST_BACKENDS=sqlite for local work only)", driverName, dsn, err)
	}
	admins[dsn] = db
	return db
}

func newPostgres(t testing.TB) string {
	base := PostgresDSN()
	db := admin(t, "pgx", base)
	schema := "bt_" + rnd()
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
	})
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// MySQLDriverDSN converts a mysql:// URL to go-sql-driver's format.
func MySQLDriverDSN(u *url.URL) string {
	pass, _ := u.User.Password()
	user := u.User.Username()
	cred := user
	if pass != "" {
		cred += ":" + pass
	}
	return fmt.Sprintf("%s@tcp(%s)%s?multiStatements=true", cred, u.Host, u.Path)
}

func newMySQL(t testing.TB) string {
	base := MySQLDSN()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	db := admin(t, "mysql", MySQLDriverDSN(u))
	name := "bt_" + rnd()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec("DROP DATABASE " + name)
	})
	u.Path = "/" + name
	return u.String()
}

// SQLDB opens the database a test DSN names with plain database/sql, as an
// application would (for the caller's-transaction variants).
func SQLDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := OpenSQL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenSQL is SQLDB for code without a testing.TB (child processes).
func OpenSQL(dsn string) (*sql.DB, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite://"):
		return sql.Open("sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite://")+"?_busy_timeout=10000&_txlock=immediate")
	case strings.HasPrefix(dsn, "postgres://") && strings.Contains(dsn, "listen_dsn="):
		return pooledSQLDB(dsn)
	case strings.HasPrefix(dsn, "postgres://"):
		return sql.Open("pgx", dsn)
	case strings.HasPrefix(dsn, "mysql://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, err
		}
		return sql.Open("mysql", MySQLDriverDSN(u))
	}
	return nil, fmt.Errorf("OpenSQL: unsupported DSN %s", dsn)
}
