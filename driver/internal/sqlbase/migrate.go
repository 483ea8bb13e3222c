package sqlbase

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
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
	var out []Migration
	err := readFiles(fsys, dir, migName.MatchString, func(file string, body []byte) {
		m := migName.FindStringSubmatch(file)
		v, _ := strconv.Atoi(m[1])
		out = append(out, Migration{Version: v, Name: m[2], Up: strings.ReplaceAll(string(body), "{p}", prefix)})
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		// Versions start at 1 and increase; a gap is allowed (branches
		// number their migrations apart until they are merged).
		if (i == 0 && m.Version != 1) || (i > 0 && m.Version == out[i-1].Version) {
			return nil, fmt.Errorf("migration versions must start at 1 and differ: found %03d at position %d", m.Version, i+1)
		}
	}
	return out, nil
}

// Routine is one stored procedure or function, defined in a file of its
// own (sql/routines/NAME.sql) whose statements (re)create it: they run
// whenever the file's checksum differs from the one the database recorded.
type Routine struct {
	Name string
	Up   string // the file, {p} expanded
	Sum  string // hex SHA-256 of the file before expansion
}

// LoadRoutines reads NAME.sql files from dir in fsys and expands the {p}
// prefix macro.
func LoadRoutines(fsys fs.FS, dir, prefix string) ([]Routine, error) {
	var out []Routine
	isSQL := func(file string) bool { return strings.HasSuffix(file, ".sql") }
	err := readFiles(fsys, dir, isSQL, func(file string, body []byte) {
		sum := sha256.Sum256(body)
		out = append(out, Routine{Name: strings.TrimSuffix(file, ".sql"), Up: strings.ReplaceAll(string(body), "{p}", prefix), Sum: hex.EncodeToString(sum[:])})
	})
	if err != nil {
		return nil, err
	}
	return callsFirst(out, prefix), nil
}

// readFiles calls f with the name and the contents of each file in dir
// whose name match accepts, in the order of their names.
func readFiles(fsys fs.FS, dir string, match func(file string) bool, f func(file string, body []byte)) error {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !match(e.Name()) {
			continue
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		f(e.Name(), body)
	}
	return nil
}

// callsFirst orders routines so that each comes after the routines its
// file calls (PostgreSQL checks a LANGUAGE sql body's calls when it is
// created), and otherwise by name.
func callsFirst(rs []Routine, prefix string) []Routine {
	var out []Routine
	state := map[string]int{} // 1: being placed, 2: placed
	var place func(r Routine)
	place = func(r Routine) {
		if state[r.Name] != 0 {
			return // placed, or a cycle: left to the order by name
		}
		state[r.Name] = 1
		for _, dep := range rs {
			if dep.Name != r.Name && strings.Contains(r.Up, prefix+dep.Name+"(") {
				place(dep)
			}
		}
		state[r.Name] = 2
		out = append(out, r)
	}
	for _, r := range rs {
		place(r)
	}
	return out
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

// Migrator applies migrations, and (re)creates the stored routines whose
// files changed, under a backend's cross-process lock.
type Migrator struct {
	DB         *sql.DB
	Prefix     string
	Migrations []Migration
	// Routines are created after the migrations; their checksums are
	// recorded in the routines table.
	Routines []Routine
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

// ensureRoutinesTable creates the table of the routines' checksums.
func (m *Migrator) ensureRoutinesTable(ctx context.Context, conn *sql.Conn) error {
	if len(m.Routines) == 0 {
		return nil
	}
	_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+m.Prefix+`routines (
		name VARCHAR(200) NOT NULL PRIMARY KEY,
		checksum VARCHAR(64) NOT NULL,
		applied_at BIGINT NOT NULL)`)
	return err
}

type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// applied is what the migrations table records.
type applied struct {
	at   map[int]int64  // version -> applied_at
	name map[int]string // version -> name
}

func (m *Migrator) applied(ctx context.Context, q querier) (applied, error) {
	done := applied{at: map[int]int64{}, name: map[int]string{}}
	rows, err := q.QueryContext(ctx, `SELECT version, name, applied_at FROM `+m.Prefix+`migrations`)
	if err != nil {
		return done, err
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		var name string
		var at int64
		if err := rows.Scan(&v, &name, &at); err != nil {
			return done, err
		}
		done.at[v], done.name[v] = at, name
	}
	return done, rows.Err()
}

// sums reads the routines' recorded checksums.
func (m *Migrator) sums(ctx context.Context, q querier) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, checksum FROM `+m.Prefix+`routines`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, sum string
		if err := rows.Scan(&name, &sum); err != nil {
			return nil, err
		}
		out[name] = sum
	}
	return out, rows.Err()
}

// stale lists the routines whose recorded checksum is not their file's.
func (m *Migrator) stale(sums map[string]string) []Routine {
	var out []Routine
	for _, r := range m.Routines {
		if sums[r.Name] != r.Sum {
			out = append(out, r)
		}
	}
	return out
}

// routinesCurrent tells, without a lock, whether every routine is as its
// file says.
func (m *Migrator) routinesCurrent(ctx context.Context) bool {
	if len(m.Routines) == 0 {
		return true
	}
	sums, err := m.sums(ctx, m.DB)
	return err == nil && len(m.stale(sums)) == 0
}

// ErrSchemaNewer: the database has migrations this program does not know.
var ErrSchemaNewer = errors.New("the database schema is newer than this program")

// newer refuses a database with migrations this program does not know: a
// later version may have changed what the lock state means (a lock's
// first holder kept in a new place, which an earlier program would not
// see), so running beside it is not safe.
func (m *Migrator) newer(done applied) error {
	known := 0
	for _, mig := range m.Migrations {
		known = max(known, mig.Version)
	}
	for v := range done.at {
		if v > known {
			return fmt.Errorf("%w: it has migration %03d, this baton knows up to %03d; upgrade baton", ErrSchemaNewer, v, known)
		}
	}
	return nil
}

// ErrPreRelease: the database has a schema made by baton's migrations
// from before its first release, which the baseline does not upgrade.
var ErrPreRelease = errors.New("this database has a pre-release baton schema: run `baton uninstall --yes` and then `baton migrate`")

// preRelease refuses a database whose first migration is not this
// program's: the pre-release numbering recorded 001 as "locks" and went
// on to 044, which the baseline (001) replaces. Nothing is applied to it.
func (m *Migrator) preRelease(done applied) error {
	if len(m.Migrations) == 0 {
		return nil
	}
	first := m.Migrations[0]
	if name, ok := done.name[first.Version]; ok && name != first.Name {
		return fmt.Errorf("%w (its migration %03d is %q, this baton's is %q)", ErrPreRelease, first.Version, name, first.Name)
	}
	return nil
}

// Up applies every pending migration, (re)creates every routine whose file
// changed, and returns the full status. When nothing is to do, that is two
// queries (one without routines) and no lock.
func (m *Migrator) Up(ctx context.Context) ([]driver.MigrationStatus, error) {
	done, err := m.applied(ctx, m.DB)
	switch {
	case err == nil:
		if err := m.preRelease(done); err != nil {
			return nil, err
		}
		if m.complete(done) && m.routinesCurrent(ctx) {
			return m.status(done), m.newer(done)
		}
	case !m.noTable(err):
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
// database does not have yet, then (re)creates the routines whose
// checksum changed.
func (m *Migrator) applyPending(ctx context.Context, conn *sql.Conn) error {
	if err := m.ensureTable(ctx, conn); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	done, err := m.applied(ctx, conn)
	if err != nil {
		return err
	}
	// A pre-release schema, or a newer one, is refused before anything
	// is created.
	if err := m.preRelease(done); err != nil {
		return err
	}
	if err := m.newer(done); err != nil {
		return err
	}
	if err := m.ensureRoutinesTable(ctx, conn); err != nil {
		return fmt.Errorf("create routines table: %w", err)
	}
	for _, mig := range m.Migrations {
		if _, ok := done.at[mig.Version]; ok {
			continue
		}
		if err := m.apply(ctx, conn, mig); err != nil {
			return err
		}
	}
	if len(m.Routines) == 0 {
		return nil
	}
	sums, err := m.sums(ctx, conn)
	if err != nil {
		return err
	}
	for _, r := range m.stale(sums) {
		if err := m.create(ctx, conn, r); err != nil {
			return err
		}
	}
	return nil
}

// create runs a routine's statements and records its checksum.
func (m *Migrator) create(ctx context.Context, conn *sql.Conn, r Routine) error {
	for _, stmt := range Statements(r.Up) {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("routine %s: %w", r.Name, err)
		}
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM `+m.Prefix+`routines WHERE name = `+m.bind(1), r.Name); err != nil {
		return fmt.Errorf("record routine %s: %w", r.Name, err)
	}
	_, err := conn.ExecContext(ctx, `INSERT INTO `+m.Prefix+`routines (name, checksum, applied_at) VALUES (`+
		m.bind(1)+`, `+m.bind(2)+`, `+m.Now+`)`, r.Name, r.Sum)
	if err != nil {
		return fmt.Errorf("record routine %s: %w", r.Name, err)
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
	case err != nil:
		// Not "not installed": a user without privileges, a lost
		// connection.
		return nil, err
	}
	if err := m.preRelease(done); err != nil {
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
func (m *Migrator) complete(done applied) bool {
	for _, mig := range m.Migrations {
		if _, ok := done.at[mig.Version]; !ok {
			return false
		}
	}
	return true
}

func (m *Migrator) status(done applied) []driver.MigrationStatus {
	out := make([]driver.MigrationStatus, 0, len(m.Migrations))
	for _, mig := range m.Migrations {
		at, ok := done.at[mig.Version]
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
