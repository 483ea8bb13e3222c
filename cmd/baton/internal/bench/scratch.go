package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // the scratch database and the native baseline
	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/internal/benchrec"
)

// DefaultServer returns the server DSN used for a backend when none is
// given: $BATON_TEST_POSTGRES or $BATON_TEST_MYSQL, else the local server;
// "" for sqlite (a temporary file).
func DefaultServer(backend string) string {
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	switch backend {
	case "postgres":
		return env("BATON_TEST_POSTGRES", benchrec.DefaultPostgres)
	case "mysql":
		return env("BATON_TEST_MYSQL", benchrec.DefaultMySQL)
	}
	return ""
}

// BackendOf returns the backend a baton DSN selects, as baton.Open does.
func BackendOf(dsn string) (string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		return "sqlite", nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return "postgres", nil
	case strings.HasPrefix(dsn, "mysql://"), strings.HasPrefix(dsn, "mariadb://"):
		return "mysql", nil
	}
	return "", fmt.Errorf("DSN %q names no backend (use sqlite:PATH, postgres://... or mysql://...)", redact(dsn))
}

// CheckServer reports, without connecting, whether server can hold the
// scratch database of a backend; "" is always fine (the default server).
func CheckServer(backend, server string) error {
	if server == "" {
		return nil
	}
	switch backend {
	case "sqlite":
		path, err := sqlite.ParseDSN(server)
		if err != nil {
			return err
		}
		if path == ":memory:" {
			return errors.New("sqlite::memory: is private to one client; the benchmarks need a file shared by several clients and processes (omit --dsn for a temporary file)")
		}
		return nil
	case "postgres":
		if _, err := pgx.ParseConfig(server); err != nil {
			return fmt.Errorf("postgres DSN %s: %w", redact(server), err)
		}
		return nil
	case "mysql":
		_, err := MySQLDriverDSN(server)
		return err
	}
	return fmt.Errorf("unknown backend %q (use sqlite, postgres or mysql)", backend)
}

// scratch is a database made for one run and dropped after it.
type scratch struct {
	backend string
	dsn     string // baton DSN of the scratch database
	server  string // DSN of the server (postgres/mysql), for native connections
	drop    func()
}

func randomSuffix() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func newScratch(ctx context.Context, backend, server string) (*scratch, error) {
	if err := CheckServer(backend, server); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if server == "" {
		server = DefaultServer(backend)
	}
	switch backend {
	case "sqlite":
		return sqliteScratch(server)
	case "postgres":
		return postgresScratch(ctx, server)
	case "mysql":
		return mysqlScratch(ctx, server)
	}
	return nil, fmt.Errorf("bench: unknown backend %q", backend)
}

func sqliteScratch(server string) (*scratch, error) {
	dir := ""
	if server != "" {
		path, err := sqlite.ParseDSN(server)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		dir = filepath.Dir(path)
	}
	tmp, err := os.MkdirTemp(dir, "baton-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: scratch directory: %w", err)
	}
	return &scratch{
		backend: "sqlite",
		dsn:     "sqlite://" + filepath.Join(tmp, "bench.db"),
		drop:    func() { _ = os.RemoveAll(tmp) },
	}, nil
}

func postgresScratch(ctx context.Context, server string) (*scratch, error) {
	cfg, err := pgx.ParseConfig(server)
	if err != nil {
		return nil, fmt.Errorf("bench: postgres DSN %s: %w", redact(server), err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: connect to postgres at %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	defer conn.Close(context.Background())
	schema := "bench_" + randomSuffix()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, fmt.Errorf("bench: create schema %s: %w", schema, err)
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("bench: postgres DSN %s: %w", redact(server), err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return &scratch{
		backend: "postgres",
		dsn:     u.String(),
		server:  server,
		drop: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				return
			}
			defer c.Close(context.Background())
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		},
	}, nil
}

// MySQLDriverDSN converts a mysql:// (or mariadb://) URL to
// go-sql-driver/mysql's format, for the native connections. Parameters
// after ? are passed on; interpolateParams makes a statement with
// arguments one round trip, the fastest way to call GET_LOCK.
func MySQLDriverDSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("mysql DSN %s: %w", redact(dsn), err)
	}
	if u.Scheme != "mysql" && u.Scheme != "mariadb" {
		return "", fmt.Errorf("mysql DSN %s: scheme must be mysql:// or mariadb://", redact(dsn))
	}
	cred := u.User.Username()
	if pass, ok := u.User.Password(); ok {
		cred += ":" + pass
	}
	if cred != "" {
		cred += "@"
	}
	q := u.Query()
	q.Set("interpolateParams", "true")
	return fmt.Sprintf("%stcp(%s)%s?%s", cred, u.Host, u.Path, q.Encode()), nil
}

func mysqlScratch(ctx context.Context, server string) (*scratch, error) {
	ddsn, err := MySQLDriverDSN(server)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	db, err := sql.Open("mysql", ddsn)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	name := "bench_" + randomSuffix()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		return nil, fmt.Errorf("bench: create database %s on %s: %w", name, redact(server), err)
	}
	u, _ := url.Parse(server)
	u.Path = "/" + name
	return &scratch{
		backend: "mysql",
		dsn:     u.String(),
		server:  server,
		drop: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = db.ExecContext(ctx, "DROP DATABASE "+name)
			db.Close()
		},
	}, nil
}

var passwordRE = regexp.MustCompile(`(://[^:/@]*:)[^@]*@`)

// redact hides a password in a DSN, even one that does not parse.
func redact(dsn string) string { return passwordRE.ReplaceAllString(dsn, "${1}xxx@") }

// migratedScratch is a scratch database with baton's schema migrated.
func migratedScratch(ctx context.Context, backend, server string) (*scratch, error) {
	sc, err := newScratch(ctx, backend, server)
	if err != nil {
		return nil, err
	}
	probe, err := baton.Open(ctx, sc.dsn)
	if err == nil {
		err = probe.Close()
	}
	if err != nil {
		sc.drop()
		return nil, fmt.Errorf("bench: migrate baton on the %s scratch database: %w", backend, err)
	}
	return sc, nil
}
