package sqlbase

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/batonhq/baton/driver"
)

// Catalog is a backend's look at its catalog for Driver.Uninstall.
type Catalog struct {
	// List reads the catalog on conn and returns the objects that carry
	// the prefix in baton's schema (or database, or file), and the
	// triggers that call baton's capture (or are named by its scheme on
	// their table): ours are those known names (the names baton's
	// migrations create) or the capture triggers, others the rest.
	List func(ctx context.Context, conn *sql.Conn, known func(name string) bool) (ours, others []driver.Object, err error)
	// Drop is the statement that removes o (IF EXISTS, never CASCADE).
	Drop func(o driver.Object) string
	// Setup runs on the connection before a removal (bounds on lock
	// waits); Reset after it, whatever happened.
	Setup, Reset []string
}

// created finds the names a migration gives to objects: CREATE ... name,
// ALTER TABLE ... RENAME TO name, RENAME TABLE ... TO name.
var created = regexp.MustCompile("(?i)\\b(?:CREATE\\s+(?:OR\\s+REPLACE\\s+)?(?:UNLOGGED\\s+|TEMP(?:ORARY)?\\s+|MATERIALIZED\\s+)?" +
	"(?:TABLE|VIEW|FUNCTION|PROCEDURE|TRIGGER|SEQUENCE|TYPE|EVENT)\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?|RENAME\\s+TO\\s+|RENAME\\s+TABLE\\s+\\S+\\s+TO\\s+)" +
	"[`\"]?([A-Za-z0-9_]+)")

// Known returns the names of the objects the migrations and the routine
// files create that carry the prefix, and the tracking tables': the
// objects Uninstall may remove. Read from the files themselves, it keeps
// up with them.
func (m *Migrator) Known() map[string]bool {
	out := map[string]bool{m.Prefix + "migrations": true}
	if len(m.Routines) > 0 {
		out[m.Prefix+"routines"] = true
	}
	add := func(src string) {
		for _, g := range created.FindAllStringSubmatch(src, -1) {
			if strings.HasPrefix(g[1], m.Prefix) {
				out[g[1]] = true
			}
		}
	}
	for _, mig := range m.Migrations {
		add(mig.Up)
	}
	for _, r := range m.Routines {
		add(r.Up)
	}
	return out
}

// removalOrder ranks object kinds so that nothing is removed before what
// depends on it: triggers before the functions they call, views before
// their tables, routines before the tables whose row types they use,
// sequences after the tables that own them, types last; the tracking
// tables (routines, then migrations) go after every other table and
// sequence,
// so that a removal cut short (MySQL, where DDL is not transactional) is
// still found by the next one.
func removalOrder(prefix string, o driver.Object) int {
	switch o.Kind {
	case driver.ObjTrigger:
		return 0
	case driver.ObjEvent:
		return 1
	case driver.ObjView:
		return 2
	case driver.ObjFunction, driver.ObjProcedure:
		return 3
	case driver.ObjTable:
		switch o.Name {
		case prefix + "routines":
			return 6
		case prefix + "migrations":
			return 7
		}
		return 4
	case driver.ObjSequence:
		return 5 // after its table, which owns it
	case driver.ObjType:
		return 8
	}
	return 9 // the schema
}

// Uninstall implements Driver.Uninstall for the backend's catalog c: it
// lists on a connection of its own, and removes under the migrators' lock
// (in their transaction where DDL is transactional), looking again there
// and refusing while sessions live unless p.Force.
func (m *Migrator) Uninstall(ctx context.Context, c Catalog, p driver.UninstallParams) (driver.UninstallReport, error) {
	var rep driver.UninstallReport
	if !p.Remove {
		conn, err := m.DB.Conn(ctx)
		if err != nil {
			return rep, err
		}
		defer conn.Close()
		return rep, m.look(ctx, conn, c, &rep)
	}
	err := m.Locked(ctx, func(ctx context.Context, conn *sql.Conn) error {
		defer func() {
			for _, q := range c.Reset {
				_, _ = conn.ExecContext(context.WithoutCancel(ctx), q)
			}
		}()
		for _, q := range c.Setup {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		if err := m.look(ctx, conn, c, &rep); err != nil {
			return err
		}
		if len(rep.Sessions) > 0 && !p.Force {
			return fmt.Errorf("%w: %s; stop them (or wait for their leases to run out), or force the removal", driver.ErrSessionsAlive, sessionList(rep.Sessions))
		}
		for _, o := range rep.Objects {
			if _, err := conn.ExecContext(ctx, c.Drop(o)); err != nil {
				return fmt.Errorf("remove %s %s: %w", o.Kind, o, err)
			}
		}
		return nil
	})
	rep.Removed = err == nil
	return rep, err
}

// look fills rep's objects, in the order of their removal, and its live
// sessions, from the catalog as conn sees it.
func (m *Migrator) look(ctx context.Context, conn *sql.Conn, c Catalog, rep *driver.UninstallReport) error {
	known := m.Known()
	ours, others, err := c.List(ctx, conn, func(n string) bool { return known[n] })
	if err != nil {
		return fmt.Errorf("read the catalog: %w", err)
	}
	slices.SortFunc(ours, func(a, b driver.Object) int {
		if d := removalOrder(m.Prefix, a) - removalOrder(m.Prefix, b); d != 0 {
			return d
		}
		return strings.Compare(a.String(), b.String())
	})
	rep.Objects, rep.Kept = ours, others
	rep.Sessions, err = m.liveSessions(ctx, conn, ours)
	return err
}

// sessionList names sessions for an error: id, host:pid/name.
func sessionList(ss []driver.Session) string {
	var b strings.Builder
	for i, s := range ss {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(ss)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "session %s of %s:%d/%s", s.ID, s.Host, s.PID, s.Name)
	}
	return fmt.Sprintf("%d session(s) hold a live lease: %s", len(ss), b.String())
}

// liveSessions lists the sessions whose lease has not run out, when the
// sessions table is among ours.
func (m *Migrator) liveSessions(ctx context.Context, conn *sql.Conn, ours []driver.Object) ([]driver.Session, error) {
	if !slices.ContainsFunc(ours, func(o driver.Object) bool {
		return o.Kind == driver.ObjTable && o.Name == m.Prefix+"sessions"
	}) {
		return nil, nil
	}
	rows, err := conn.QueryContext(ctx, `SELECT id, client_id, host, pid, name, created_at, expires_at FROM `+
		m.Prefix+`sessions WHERE expires_at > `+m.Now+` ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list live sessions: %w", err)
	}
	return ScanAll(rows, func(sc Scanner) (driver.Session, error) {
		var s driver.Session
		var host, name []byte
		var created, expires int64
		err := sc.Scan(&s.ID, &s.ClientID, &host, &s.PID, &name, &created, &expires)
		s.Host, s.Name, s.CreatedAt, s.ExpiresAt = string(host), string(name), FromMicros(created), FromMicros(expires)
		return s, err
	})
}

// IsCaptureTrigger reports whether a trigger on table is named as the
// change capture of dialects without multi-event triggers names its own
// (TriggerName).
func IsCaptureTrigger(prefix, name, table string) bool {
	return slices.ContainsFunc(CaptureActions, func(a CaptureAction) bool {
		return name == TriggerName(prefix, table, a.Code)
	})
}

// EachRow runs q on conn and hands each row to scan.
func EachRow(ctx context.Context, conn *sql.Conn, q string, args []any, scan func(Scanner) error) error {
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Split appends o to ours when mine, to others otherwise.
func Split(ours, others *[]driver.Object, o driver.Object, mine bool) {
	if mine {
		*ours = append(*ours, o)
	} else {
		*others = append(*others, o)
	}
}
