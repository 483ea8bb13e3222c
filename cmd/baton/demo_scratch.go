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

	"github.com/batonhq/baton/cmd/baton/internal/bench"
	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/driver/sqlite"
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
	db, err := rawOpeners[backend](dsn)
	if err != nil {
		return nil, "", err
	}
	return db, backend, nil
}

// rawOpeners open a baton DSN of each backend with database/sql.
var rawOpeners = map[string]func(dsn string) (*sql.DB, error){
	"sqlite": func(dsn string) (*sql.DB, error) {
		path, err := sqlite.ParseDSN(dsn)
		if err != nil {
			return nil, err
		}
		return openSQLiteFile(path)
	},
	"postgres": func(dsn string) (*sql.DB, error) {
		return postgres.OpenSQL(context.Background(), dsn)
	},
	"mysql": func(dsn string) (*sql.DB, error) {
		ddsn, err := bench.MySQLDriverDSN(dsn)
		if err != nil {
			return nil, err
		}
		return sql.Open("mysql", ddsn)
	},
}

// openSQLiteFile opens a SQLite file as an application would.
func openSQLiteFile(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000")
}

// catalogQuery lists objects by name prefix ($1/? the prefix's length,
// $2/? the prefix), each quoted (MySQL's with its kind and IF EXISTS
// before it); drop is the statement that drops one, made from that.
type catalogQuery struct{ list, drop string }

var catalogQueries = map[string][]catalogQuery{
	"sqlite": {{
		// Views first, as on MySQL.
		`SELECT CASE type WHEN 'view' THEN 'VIEW' ELSE 'TABLE' END || ' IF EXISTS "' || replace(name, '"', '""') || '"'
		   FROM sqlite_master WHERE type IN ('table', 'view') AND substr(name, 1, ?) = ? ORDER BY type = 'view' DESC, name`,
		"DROP %s"}},
	"postgres": {{
		`SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema() AND left(tablename, $1) = $2 ORDER BY tablename`,
		"DROP TABLE IF EXISTS %s CASCADE"}, {
		`SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname = current_schema() AND left(p.proname, $1) = $2 ORDER BY 1`,
		"DROP FUNCTION IF EXISTS %s CASCADE"}},
	"mysql": {{
		// Views first: a table's views would be left behind invalid.
		"SELECT CONCAT(IF(table_type = 'VIEW', 'VIEW', 'TABLE'), ' IF EXISTS `', REPLACE(table_name, '`', '``'), '`') FROM information_schema.tables WHERE table_schema = DATABASE() AND LEFT(table_name, ?) = ? ORDER BY table_type = 'VIEW' DESC, table_name",
		"DROP %s"}, {
		"SELECT CONCAT(routine_type, ' IF EXISTS `', REPLACE(routine_name, '`', '``'), '`') FROM information_schema.routines WHERE routine_schema = DATABASE() AND LEFT(routine_name, ?) = ? ORDER BY routine_name",
		"DROP %s"}},
}

// prefixedObjects lists the tables (and PostgreSQL's functions, MySQL's
// and SQLite's views, MySQL's procedures and functions) whose names
// start with prefix, each as the statement that drops it.
func prefixedObjects(ctx context.Context, db *sql.DB, backend, prefix string) ([]string, error) {
	var out []string
	for _, q := range catalogQueries[backend] {
		stmts, err := q.drops(ctx, db, prefix)
		if err != nil {
			return nil, err
		}
		out = append(out, stmts...)
	}
	return out, nil
}

// drops lists the objects the query finds, each as the statement that
// drops it.
func (q catalogQuery) drops(ctx context.Context, db *sql.DB, prefix string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q.list, len(prefix), prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf(q.drop, name))
	}
	return out, rows.Err()
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
	dropped, err := dropAll(ctx, db, backend, prefix)
	if err != nil {
		return err
	}
	left, err := prefixedObjects(ctx, db, backend, prefix)
	if err != nil {
		return fmt.Errorf("demo clean-up: %w", err)
	}
	if len(left) > 0 {
		return fmt.Errorf("demo clean-up: could not drop %s", strings.Join(left, "; "))
	}
	say("\nCleaned up: dropped the demo's %s (named %s*, with their indexes and triggers),", describeDropped(dropped), prefix)
	say("its queues, dead letters, subscriptions and sessions with them. Nothing else was touched.")
	return nil
}

// dropAll drops the objects named with prefix and counts them by kind.
// A table's indexes and triggers go with it, and tables are dropped before
// functions; it looks again until nothing is left (three rounds at most),
// in case an object could only go once another had.
func dropAll(ctx context.Context, db *sql.DB, backend, prefix string) (map[string]int, error) {
	dropped := map[string]int{}
	for round := 0; round < 3; round++ {
		stmts, err := prefixedObjects(ctx, db, backend, prefix)
		if err != nil {
			return nil, fmt.Errorf("demo clean-up: list %s* objects: %w", prefix, err)
		}
		if len(stmts) == 0 {
			break
		}
		if err := dropEach(ctx, db, stmts, dropped); err != nil {
			return nil, err
		}
	}
	return dropped, nil
}

// dropEach runs the drop statements in turn, counting them by kind.
func dropEach(ctx context.Context, db *sql.DB, stmts []string, dropped map[string]int) error {
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("demo clean-up: %s: %w", s, err)
		}
		dropped[droppedKind(s)]++
	}
	return nil
}

// droppedKind is what a drop statement drops: tables, functions (which
// counts MySQL's procedures) or views (MySQL's and SQLite's;
// PostgreSQL's go with their tables).
func droppedKind(stmt string) string {
	switch {
	case strings.HasPrefix(stmt, "DROP FUNCTION") || strings.HasPrefix(stmt, "DROP PROCEDURE"):
		return "functions"
	case strings.HasPrefix(stmt, "DROP VIEW"):
		return "views"
	}
	return "tables"
}

// describeDropped says how many tables, and functions if any, were dropped.
func describeDropped(dropped map[string]int) string {
	what := fmt.Sprintf("%d tables", dropped["tables"])
	if dropped["functions"] > 0 {
		what += fmt.Sprintf(" and %d functions", dropped["functions"])
	}
	return what
}
