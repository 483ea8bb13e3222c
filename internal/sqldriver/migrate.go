package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/stmtbound"
)

// Migration is one embedded, numbered schema change.
type Migration struct {
	Version int
	Name    string
	Up      string
}

var migName = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.up\.sql$`)

// LoadMigrations reads NNN_name.up.sql files from dir in fsys and expands
// the {p} prefix macro.
func LoadMigrations(fsys fs.FS, dir, prefix string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		m := migName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		v, _ := strconv.Atoi(m[1])
		out = append(out, Migration{Version: v, Name: m[2], Up: strings.ReplaceAll(string(body), "{p}", prefix)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration versions must run 1, 2, 3...: found %03d at position %d", m.Version, i+1)
		}
	}
	return out, nil
}

// Statements splits a migration into statements at semicolons that end a
// line. A line "-- statement" ... "-- end" block is kept whole, for bodies
// (triggers, functions) that contain semicolons of their own.
func Statements(src string) []string {
	var out []string
	var cur strings.Builder
	block := false
	flush := func() {
		s := strings.TrimSpace(cur.String())
		s = strings.TrimSuffix(s, ";")
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "-- statement":
			flush()
			block = true
			continue
		case t == "-- end" && block:
			flush()
			block = false
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if !block && strings.HasSuffix(t, ";") {
			flush()
		}
	}
	flush()
	return out
}

// Migrator applies migrations under a backend's cross-process lock.
type Migrator struct {
	DB         *sql.DB
	Prefix     string
	Migrations []Migration
	// Locked runs fn while holding a lock that only one migrating process
	// can hold at a time, on a single connection.
	Locked func(ctx context.Context, fn func(ctx context.Context, conn *sql.Conn) error) error
	// Now is the dialect's expression for the current time in microseconds.
	Now string
	// Bind is the dialect's first bind variables, "?" or "$1" style.
	Numbered bool
}

func (m *Migrator) bind(i int) string {
	if m.Numbered {
		return "$" + strconv.Itoa(i)
	}
	return "?"
}

func (m *Migrator) ensureTable(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+m.Prefix+`migrations (
		version INTEGER NOT NULL PRIMARY KEY,
		name VARCHAR(200) NOT NULL,
		applied_at BIGINT NOT NULL)`)
	return err
}

func (m *Migrator) applied(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (map[int]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT version, applied_at FROM `+m.Prefix+`migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]int64{}
	for rows.Next() {
		var v int
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		out[v] = at
	}
	return out, rows.Err()
}

// ErrSchemaNewer: the database has migrations this program does not know.
var ErrSchemaNewer = errors.New("the database schema is newer than this program")

// newer refuses a database with migrations this program does not know: a
// later version may have changed what the lock state means (PostgreSQL's
// migration 017 keeps a lock's first holder in its identifier row, which
// an earlier program would not see), so running beside it is not safe.
func (m *Migrator) newer(done map[int]int64) error {
	known := 0
	for _, mig := range m.Migrations {
		known = max(known, mig.Version)
	}
	for v := range done {
		if v > known {
			return fmt.Errorf("%w: it has migration %03d, this baton knows up to %03d; upgrade baton", ErrSchemaNewer, v, known)
		}
	}
	return nil
}

// Up applies every pending migration and returns the full status. When
// every migration is applied already, that is one query and no lock.
func (m *Migrator) Up(ctx context.Context) ([]driver.MigrationStatus, error) {
	done, err := m.applied(ctx, m.DB)
	switch {
	case err == nil && m.complete(done):
		return m.status(done), m.newer(done)
	case err != nil && !m.noTable(err):
		// A user who may not read the table (it exists) is told that,
		// not that it may not create it.
		return nil, err
	}
	// Waiting for another migrator and applying migrations may take as
	// long as they take: no statement timeout (stmtbound) there.
	if err := m.Locked(stmtbound.Unbounded(ctx), m.applyPending); err != nil {
		return nil, err
	}
	return m.Status(ctx)
}

// applyPending applies, on the locked connection, every migration the
// database does not have yet.
func (m *Migrator) applyPending(ctx context.Context, conn *sql.Conn) error {
	if err := m.ensureTable(ctx, conn); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	done, err := m.applied(ctx, conn)
	if err != nil {
		return err
	}
	if err := m.newer(done); err != nil {
		return err
	}
	for _, mig := range m.Migrations {
		if _, ok := done[mig.Version]; ok {
			continue
		}
		if err := m.apply(ctx, conn, mig); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one migration's statements and records it as applied.
func (m *Migrator) apply(ctx context.Context, conn *sql.Conn, mig Migration) error {
	for _, stmt := range Statements(mig.Up) {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migration %03d_%s: %w", mig.Version, mig.Name, err)
		}
	}
	_, err := conn.ExecContext(ctx, `INSERT INTO `+m.Prefix+`migrations (version, name, applied_at) VALUES (`+
		m.bind(1)+`, `+m.bind(2)+`, `+m.Now+`)`, mig.Version, mig.Name)
	if err != nil {
		return fmt.Errorf("record migration %03d: %w", mig.Version, err)
	}
	return nil
}

// Status lists every migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]driver.MigrationStatus, error) {
	done, err := m.applied(ctx, m.DB)
	switch {
	case err != nil && m.noTable(err):
		// No migrations table yet: nothing is applied.
		done = map[int]int64{}
	case err != nil:
		// Not "not installed": a user without privileges, a lost
		// connection.
		return nil, err
	}
	return m.status(done), nil
}

// noTable tells whether err is the database's "no such table" for the
// migrations table (PostgreSQL, MySQL/MariaDB and SQLite say it so).
func (m *Migrator) noTable(err error) bool {
	s := err.Error()
	return strings.Contains(s, m.Prefix+"migrations") &&
		(strings.Contains(s, "does not exist") || strings.Contains(s, "doesn't exist") || strings.Contains(s, "no such table"))
}

// complete reports whether every migration is in done.
func (m *Migrator) complete(done map[int]int64) bool {
	for _, mig := range m.Migrations {
		if _, ok := done[mig.Version]; !ok {
			return false
		}
	}
	return true
}

func (m *Migrator) status(done map[int]int64) []driver.MigrationStatus {
	out := make([]driver.MigrationStatus, 0, len(m.Migrations))
	for _, mig := range m.Migrations {
		at, ok := done[mig.Version]
		st := driver.MigrationStatus{Version: mig.Version, Name: mig.Name, Applied: ok}
		if ok {
			st.AppliedAt = FromMicros(at)
		}
		out = append(out, st)
	}
	return out
}

// LockedInTx is a Migrator.Locked for dialects whose DDL is
// transactional: fn runs on one connection inside a transaction that the
// statements of begin open and lock (concurrent migrators queue behind
// it), committed when fn succeeds and rolled back otherwise.
func LockedInTx(db *sql.DB, begin ...driver.Statement) func(ctx context.Context, fn func(context.Context, *sql.Conn) error) error {
	return func(ctx context.Context, fn func(context.Context, *sql.Conn) error) error {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := beginLocked(ctx, c, begin); err != nil {
			return err
		}
		if err := fn(ctx, c); err != nil {
			rollback(c)
			return err
		}
		_, err = c.ExecContext(ctx, "COMMIT")
		return err
	}
}

// beginLocked runs the statements that open and lock the migrating
// transaction; when one after the first fails, it rolls back.
func beginLocked(ctx context.Context, c *sql.Conn, begin []driver.Statement) error {
	for i, st := range begin {
		if _, err := c.ExecContext(ctx, st.Query, st.Args...); err != nil {
			if i > 0 {
				rollback(c)
			}
			return err
		}
	}
	return nil
}

// rollback ends the migrating transaction on c, whatever became of the
// migration's context.
func rollback(c *sql.Conn) {
	_, _ = c.ExecContext(context.Background(), "ROLLBACK")
}
