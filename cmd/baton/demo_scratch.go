package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/internal/bench"
)

// The demo on a database given with --dsn keeps to tables of its own: every
// table (and PostgreSQL function) it creates is named with a fresh prefix,
// and everything with that prefix is dropped when it ends, whatever
// happened. Nothing else in the database is read or written.

// redactDSN hides the password of a DSN.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return dsn
}

// demoPrefix returns a fresh table prefix for one demo run.
func demoPrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "demo_" + hex.EncodeToString(b[:]) + "_"
}

// openRaw opens a baton DSN with plain database/sql, for catalog queries.
func openRaw(dsn string) (*sql.DB, string, error) {
	backend, err := bench.BackendOf(dsn)
	if err != nil {
		return nil, "", err
	}
	var db *sql.DB
	switch backend {
	case "sqlite":
		path, perr := sqlite.ParseDSN(dsn)
		if perr != nil {
			return nil, "", perr
		}
		db, err = openSQLiteFile(path)
	case "postgres":
		db, err = postgres.OpenSQL(context.Background(), dsn)
	case "mysql":
		var ddsn string
		if ddsn, err = bench.MySQLDriverDSN(dsn); err == nil {
			db, err = sql.Open("mysql", ddsn)
		}
	}
	if err != nil {
		return nil, "", err
	}
	return db, backend, nil
}

// openSQLiteFile opens a SQLite file as an application would.
func openSQLiteFile(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000")
}

// catalogQuery lists objects by name prefix ($1/? the prefix's length,
// $2/? the prefix), each quoted; drop is the statement that drops one.
type catalogQuery struct{ list, drop string }

var catalogQueries = map[string][]catalogQuery{
	"sqlite": {{
		`SELECT '"' || replace(name, '"', '""') || '"' FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?) = ? ORDER BY name`,
		"DROP TABLE IF EXISTS %s"}},
	"postgres": {{
		`SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema() AND left(tablename, $1) = $2 ORDER BY tablename`,
		"DROP TABLE IF EXISTS %s CASCADE"}, {
		`SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname = current_schema() AND left(p.proname, $1) = $2 ORDER BY 1`,
		"DROP FUNCTION IF EXISTS %s CASCADE"}},
	"mysql": {{
		"SELECT CONCAT('`', REPLACE(table_name, '`', '``'), '`') FROM information_schema.tables WHERE table_schema = DATABASE() AND LEFT(table_name, ?) = ? ORDER BY table_name",
		"DROP TABLE IF EXISTS %s"}, {
		"SELECT CONCAT('`', REPLACE(routine_name, '`', '``'), '`') FROM information_schema.routines WHERE routine_schema = DATABASE() AND routine_type = 'PROCEDURE' AND LEFT(routine_name, ?) = ? ORDER BY routine_name",
		"DROP PROCEDURE IF EXISTS %s"}},
}

// prefixedObjects lists the tables (and PostgreSQL's functions, MySQL's
// procedures) whose names start with prefix, each as the statement that
// drops it.
func prefixedObjects(ctx context.Context, db *sql.DB, backend, prefix string) ([]string, error) {
	var out []string
	for _, q := range catalogQueries[backend] {
		rows, err := db.QueryContext(ctx, q.list, len(prefix), prefix)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, fmt.Sprintf(q.drop, name))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dropPrefixed drops every table and function whose name starts with
// prefix and says what it dropped.
func dropPrefixed(dsn, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, backend, err := openRaw(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	// A table's indexes and triggers go with it, and tables are dropped
	// before functions; look again until nothing is left, in case an
	// object could only go once another had.
	dropped := map[string]int{}
	for round := 0; round < 3; round++ {
		stmts, err := prefixedObjects(ctx, db, backend, prefix)
		if err != nil {
			return fmt.Errorf("demo clean-up: list %s* objects: %w", prefix, err)
		}
		if len(stmts) == 0 {
			break
		}
		for _, s := range stmts {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("demo clean-up: %s: %w", s, err)
			}
			kind := "tables"
			if strings.HasPrefix(s, "DROP FUNCTION") || strings.HasPrefix(s, "DROP PROCEDURE") {
				kind = "functions"
			}
			dropped[kind]++
		}
	}
	left, err := prefixedObjects(ctx, db, backend, prefix)
	if err != nil {
		return fmt.Errorf("demo clean-up: %w", err)
	}
	if len(left) > 0 {
		return fmt.Errorf("demo clean-up: could not drop %s", strings.Join(left, "; "))
	}
	what := fmt.Sprintf("%d tables", dropped["tables"])
	if dropped["functions"] > 0 {
		what += fmt.Sprintf(" and %d functions", dropped["functions"])
	}
	say("\nCleaned up: dropped the demo's %s (named %s*, with their indexes and triggers),", what, prefix)
	say("its queues, dead letters, subscriptions and sessions with them. Nothing else was touched.")
	return nil
}
