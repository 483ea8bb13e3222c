package baton_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// uninstallDDL are a program's own objects, per backend: orders, a table
// it subscribes to, with a trigger of its own; baton_mine, a table that
// merely carries baton's prefix.
var uninstallDDL = map[string][]string{
	"sqlite": {
		`CREATE TABLE orders (id INTEGER PRIMARY KEY, v INTEGER)`,
		`CREATE TRIGGER keep_trg AFTER INSERT ON orders BEGIN SELECT 1; END`,
		`CREATE TABLE baton_mine (id INTEGER PRIMARY KEY)`,
	},
	"postgres": {
		`CREATE TABLE orders (id integer PRIMARY KEY, v integer)`,
		`CREATE FUNCTION keep_fn() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$`,
		`CREATE TRIGGER keep_trg BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION keep_fn()`,
		`CREATE TABLE baton_mine (id integer PRIMARY KEY)`,
	},
	"mysql": {
		`CREATE TABLE orders (id INT PRIMARY KEY, v INT)`,
		`CREATE TRIGGER keep_trg BEFORE INSERT ON orders FOR EACH ROW SET NEW.v = NEW.v`,
		`CREATE TABLE baton_mine (id INT PRIMARY KEY)`,
	},
}

// catalogNames lists, from the database's catalog, every object of the
// test's schema (or database, or file) whose name starts with baton_
// (indexes, sequences and PostgreSQL's row types included), as
// "kind name", and the triggers on orders.
func catalogNames(t *testing.T, b batontest.Backend, db *sql.DB) (prefixed, ordersTriggers []string) {
	t.Helper()
	q := map[string][2]string{
		"sqlite": {`SELECT type || ' ' || name FROM sqlite_master WHERE name LIKE 'baton\_%' ESCAPE '\'`,
			`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'orders'`},
		"postgres": {`SELECT 'rel ' || relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relname LIKE 'baton\_%'
			UNION ALL SELECT 'proc ' || proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace AND proname LIKE 'baton\_%'
			UNION ALL SELECT 'type ' || typname FROM pg_type WHERE typnamespace = current_schema()::regnamespace AND typname LIKE 'baton\_%'
			UNION ALL SELECT 'trigger ' || tgname FROM pg_trigger WHERE tgname LIKE 'baton\_%'
			  AND tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)`,
			`SELECT tgname FROM pg_trigger WHERE tgrelid = 'orders'::regclass AND NOT tgisinternal`},
		"mysql": {`SELECT CONCAT('table ', TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'baton\_%'
			UNION ALL SELECT CONCAT('routine ', ROUTINE_NAME) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME LIKE 'baton\_%'
			UNION ALL SELECT CONCAT('trigger ', TRIGGER_NAME) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE 'baton\_%'
			UNION ALL SELECT CONCAT('event ', EVENT_NAME) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE() AND EVENT_NAME LIKE 'baton\_%'`,
			`SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'orders'`},
	}[b.Name]
	strs := func(q string) []string {
		out := batontest.Strings(t, db, q)
		slices.Sort(out)
		return out
	}
	return strs(q[0]), strs(q[1])
}

// notMine drops from names the program's baton_mine table (and its index
// and row type).
func notMine(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.Contains(n, "baton_mine") })
}

// TestUninstall: with baton migrated, a program table subscribed to and
// locks and queues used, Uninstall lists baton's objects and removes
// nothing; refuses while a session lives; with Remove removes every baton
// object (the catalog, read independently, has none left) and leaves the
// program's tables, rows and own trigger; a table that merely carries the
// prefix is listed as kept; migrating again installs afresh.
func TestUninstall(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		db := batontest.SQLDB(t, dsn)
		ctx := ctxT(t)
		for _, q := range uninstallDDL[b.Name] {
			mustExec(t, db, q)
		}
		subscribe(t, c, baton.Subscription{Name: "order_changes", Table: "orders"})
		for i := 1; i <= 3; i++ {
			mustExec(t, db, sqlFor(b, "INSERT INTO orders (id, v) VALUES (?, ?)"), i, i*10)
		}
		mustExec(t, db, "INSERT INTO baton_mine (id) VALUES (7)")
		enqueue(t, c, "mail", "hello")
		s := session(t, c)
		mustLock(t, s, "ns", baton.Write, "job")
		before, trig := catalogNames(t, b, db)
		if len(trig) < 2 || len(notMine(before)) == 0 {
			t.Fatalf("before: baton objects %v, triggers on orders %v", before, trig)
		}

		// A dry run lists and removes nothing.
		r, err := c.Uninstall(ctx, baton.UninstallOptions{})
		if err != nil || r.Removed {
			t.Fatalf("dry run: %+v, %v", r, err)
		}
		checkListed(t, r)
		if len(r.Sessions) != 1 || r.Sessions[0].ID != s.ID() {
			t.Fatalf("live sessions %+v, want %s", r.Sessions, s.ID())
		}
		if now, _ := catalogNames(t, b, db); !slices.Equal(now, before) {
			t.Fatalf("the dry run changed the catalog: %v, was %v", now, before)
		}
		// A live session: refused, nothing removed.
		r, err = c.Uninstall(ctx, baton.UninstallOptions{Remove: true})
		if !errors.Is(err, baton.ErrSessionsAlive) || r.Removed || !strings.Contains(err.Error(), s.ID()) {
			t.Fatalf("removal beside a live session: removed %v, %v", r.Removed, err)
		}
		if now, _ := catalogNames(t, b, db); !slices.Equal(now, before) {
			t.Fatalf("a refused removal changed the catalog: %v, was %v", now, before)
		}

		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		r, err = c.Uninstall(ctx, baton.UninstallOptions{Remove: true})
		if err != nil || !r.Removed {
			t.Fatalf("removal: %+v, %v", r, err)
		}
		checkListed(t, r)
		c.Close()
		after, trig := catalogNames(t, b, db)
		if left := notMine(after); len(left) != 0 {
			t.Fatalf("baton objects left after uninstall: %v", left)
		}
		if !slices.Contains(after, map[string]string{"sqlite": "table baton_mine", "postgres": "rel baton_mine",
			"mysql": "table baton_mine"}[b.Name]) {
			t.Fatalf("the program's baton_mine table was removed: %v", after)
		}
		if !slices.Equal(trig, []string{"keep_trg"}) {
			t.Fatalf("triggers on orders after uninstall: %v, want only the program's keep_trg", trig)
		}
		var n, sum int
		if err := db.QueryRow("SELECT count(*), sum(v) FROM orders").Scan(&n, &sum); err != nil || n != 3 || sum != 60 {
			t.Fatalf("orders after uninstall: %d rows, sum %d, %v", n, sum, err)
		}
		if err := db.QueryRow("SELECT count(*) FROM baton_mine").Scan(&n); err != nil || n != 1 {
			t.Fatalf("baton_mine after uninstall: %d rows, %v", n, err)
		}
		mustExec(t, db, sqlFor(b, "INSERT INTO orders (id, v) VALUES (?, ?)"), 4, 40) // no trigger of baton's fires

		// Migrating again installs afresh, and everything works.
		c = openDSN(t, dsn, fastRetry)
		r, err = c.Uninstall(ctx, baton.UninstallOptions{})
		if err != nil || len(r.Objects) == 0 {
			t.Fatalf("after migrating again: %+v, %v", r, err)
		}
		subscribe(t, c, baton.Subscription{Name: "order_changes", Table: "orders"})
		mustExec(t, db, sqlFor(b, "INSERT INTO orders (id, v) VALUES (?, ?)"), 5, 50)
		oneEvent(t, c, "order_changes", "no event after migrating again")
		enqueue(t, c, "mail", "again")
		mustLock(t, session(t, c), "ns", baton.Write, "job")
	})
}

// checkListed checks a report's list: the migration tracking table, the
// sessions table, baton's trigger on orders; baton_mine kept, not listed.
func checkListed(t *testing.T, r baton.UninstallReport) {
	t.Helper()
	has := func(list []baton.DBObject, kind, name, table string) bool {
		return slices.ContainsFunc(list, func(o baton.DBObject) bool {
			return o.Kind == kind && o.Name == name && o.Table == table
		})
	}
	trigger := slices.ContainsFunc(r.Objects, func(o baton.DBObject) bool { return o.Kind == "trigger" && o.Table == "orders" })
	if !has(r.Objects, "table", "baton_migrations", "") || !has(r.Objects, "table", "baton_sessions", "") || !trigger ||
		!has(r.Kept, "table", "baton_mine", "") || has(r.Objects, "table", "baton_mine", "") {
		t.Fatalf("listed %v, kept %v", r.Objects, r.Kept)
	}
	if last := r.Objects[len(r.Objects)-1]; last.Name != "baton_migrations" {
		t.Fatalf("the migration tracking table is not removed last: %v", r.Objects)
	}
}

// TestUninstallDocumented: docs/operations.md's list of what baton
// installs names every table and view a fresh install has on each
// backend, and counts its routines right.
func TestUninstallDocumented(t *testing.T) {
	doc, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## What baton installs, and `baton uninstall`")
	section, _, _ = strings.Cut(section, "\n## ")
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _ := open(t, b)
		r, err := c.Uninstall(ctxT(t), baton.UninstallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, o := range r.Objects {
			n[o.Kind]++
			if (o.Kind == "table" || o.Kind == "view") && !strings.Contains(section, "`"+strings.TrimPrefix(o.Name, "baton_")+"`") {
				t.Errorf("docs/operations.md does not list the %s %s", o.Kind, o.Name)
			}
		}
		want := map[string]string{
			"sqlite":   "| routines | none |",
			"postgres": fmt.Sprintf("| %d functions (", n["function"]),
			"mysql":    fmt.Sprintf("| %d procedures and %d function (", n["procedure"], n["function"]),
		}[b.Name]
		if !strings.Contains(section, want) {
			t.Errorf("docs/operations.md does not count %s's routines as %q", b.Name, want)
		}
	})
}

// TestUninstallResumes: on MySQL/MariaDB, where each DROP commits by
// itself, a removal cut short halfway (here: its first half done by
// hand, in its order) is finished by running it again, and the
// migration tracking table, removed last, was still there to say so.
func TestUninstallResumes(t *testing.T) {
	t.Parallel()
	b := batontest.Backend{Name: "mysql", Label: "mysql"}
	dsn := batontest.NewDSN(t, b.Label)
	c := openDSN(t, dsn)
	db := batontest.SQLDB(t, dsn)
	mustExec(t, db, `CREATE TABLE orders (id INT PRIMARY KEY, v INT)`)
	subscribe(t, c, baton.Subscription{Name: "order_changes", Table: "orders"})
	r, err := c.Uninstall(ctxT(t), baton.UninstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	total, half := len(r.Objects), r.Objects[:len(r.Objects)/2]
	for _, o := range half {
		mustExec(t, db, "DROP "+o.Kind+" "+o.Schema+"."+o.Name)
	}
	if r, err = c.Uninstall(ctxT(t), baton.UninstallOptions{}); err != nil || len(r.Objects) != total-len(half) ||
		r.Objects[len(r.Objects)-1].Name != "baton_migrations" {
		t.Fatalf("after a removal cut short: %v, %v", r.Objects, err)
	}
	if r, err = c.Uninstall(ctxT(t), baton.UninstallOptions{Remove: true}); err != nil || !r.Removed {
		t.Fatalf("second removal: %+v, %v", r, err)
	}
	c.Close()
	if left, trig := catalogNames(t, b, db); len(left) != 0 || len(trig) != 0 {
		t.Fatalf("left after the second removal: %v, triggers on orders %v", left, trig)
	}
}

// TestUninstallOtherSchema: on PostgreSQL, baton's trigger on a table of
// another schema than baton's goes too; the table and its rows stay.
func TestUninstallOtherSchema(t *testing.T) {
	t.Parallel()
	dsn := batontest.NewDSN(t, "postgres")
	c := openDSN(t, dsn)
	db := batontest.SQLDB(t, dsn)
	var base string
	if err := db.QueryRow("SELECT current_schema()").Scan(&base); err != nil {
		t.Fatal(err)
	}
	app := base + "_app"
	t.Cleanup(func() { _, _ = db.Exec("DROP SCHEMA IF EXISTS " + app + " CASCADE") })
	mustExec(t, db, "CREATE SCHEMA "+app)
	mustExec(t, db, "CREATE TABLE "+app+".orders (id int PRIMARY KEY)")
	subscribe(t, c, baton.Subscription{Name: "app_orders", Table: app + ".orders"})
	mustExec(t, db, "INSERT INTO "+app+".orders VALUES (1)")
	r, err := c.Uninstall(ctxT(t), baton.UninstallOptions{Remove: true})
	if err != nil || !slices.ContainsFunc(r.Objects, func(o baton.DBObject) bool {
		return o.Kind == "trigger" && o.Schema == app && o.Table == "orders"
	}) {
		t.Fatalf("removal: %v, %v", r.Objects, err)
	}
	c.Close()
	var triggers, rows int
	if err := db.QueryRow("SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::regclass), (SELECT count(*) FROM "+app+".orders)",
		app+".orders").Scan(&triggers, &rows); err != nil || triggers != 0 || rows != 1 {
		t.Fatalf("%s.orders after uninstall: %d triggers, %d rows, %v", app, triggers, rows, err)
	}
}
