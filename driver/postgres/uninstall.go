package postgres

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// schemaMarker is the comment `baton migrate` puts on a schema it
// creates: Uninstall removes only such a schema, once nothing else is in
// it.
const schemaMarker = "created by baton migrate"

// Uninstall implements driver.Driver. baton's schema is the connection's
// current_schema(), the first schema of the search_path that exists.
func (d *Driver) Uninstall(ctx context.Context, p driver.UninstallParams) (driver.UninstallReport, error) {
	return d.migrator.Uninstall(ctx, sqlbase.Catalog{
		List: d.catalog,
		Drop: dropStatement,
		// A removal waits for locks a while, never for ever: a long
		// transaction on one of the tables fails it.
		Setup: []string{"SET LOCAL lock_timeout = '10s'"},
	}, p)
}

// relKinds maps pg_class.relkind to an object kind.
var relKinds = map[string]string{"r": driver.ObjTable, "p": driver.ObjTable, "f": driver.ObjTable,
	"v": driver.ObjView, "m": "materialized view", "S": driver.ObjSequence}

// catalog lists the objects of baton's schema that carry the prefix
// (relations, routines, types), the triggers named and made as baton's
// capture trigger on any table, and the schema itself when `baton
// migrate` created it and nothing else would be left in it.
func (d *Driver) catalog(ctx context.Context, conn *sql.Conn, known func(string) bool) (ours, others []driver.Object, err error) {
	var schema sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil || !schema.Valid {
		return nil, nil, err // no schema of the search_path exists: nothing is installed
	}
	add := func(o driver.Object, mine bool) { sqlbase.Split(&ours, &others, o, mine) }
	for _, look := range []func(context.Context, *sql.Conn, string, func(string) bool, func(driver.Object, bool)) error{
		d.relations, d.routines, d.triggers, d.types,
	} {
		if err := look(ctx, conn, schema.String, known, add); err != nil {
			return nil, nil, err
		}
	}
	if len(others) == 0 {
		err = d.ownSchema(ctx, conn, schema.String, ours, add)
	}
	return ours, others, err
}

// ns is baton's schema's oid.
const ns = "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"

// relations finds the tables, views and sequences; a sequence that a
// table owns is baton's when the table is.
func (d *Driver) relations(ctx context.Context, conn *sql.Conn, schema string, known func(string) bool, add func(driver.Object, bool)) error {
	return sqlbase.EachRow(ctx, conn, `SELECT c.relname, c.relkind::text, coalesce(o.relname, '') FROM pg_class c
		LEFT JOIN pg_depend dep ON c.relkind = 'S' AND dep.classid = 'pg_class'::regclass AND dep.objid = c.oid
			AND dep.refclassid = 'pg_class'::regclass AND dep.deptype IN ('a', 'i')
		LEFT JOIN pg_class o ON o.oid = dep.refobjid
		WHERE c.relnamespace = `+ns+` AND c.relkind IN ('r', 'p', 'f', 'v', 'm', 'S') AND starts_with(c.relname, $1)`,
		[]any{d.prefix}, func(sc sqlbase.Scanner) error {
			var name, kind, owner string
			err := sc.Scan(&name, &kind, &owner)
			add(driver.Object{Kind: relKinds[kind], Schema: schema, Name: name}, known(name) || owner != "" && known(owner))
			return err
		})
}

// routines finds the functions and procedures, with their argument
// types.
func (d *Driver) routines(ctx context.Context, conn *sql.Conn, schema string, known func(string) bool, add func(driver.Object, bool)) error {
	return sqlbase.EachRow(ctx, conn, `SELECT p.proname, p.prokind::text, pg_get_function_identity_arguments(p.oid) FROM pg_proc p
		WHERE p.pronamespace = `+ns+` AND starts_with(p.proname, $1)`, []any{d.prefix}, func(sc sqlbase.Scanner) error {
		o := driver.Object{Kind: driver.ObjFunction, Schema: schema}
		var kind string
		err := sc.Scan(&o.Name, &kind, &o.Args)
		if kind == "p" {
			o.Kind = driver.ObjProcedure
		}
		add(o, known(o.Name))
		return err
	})
}

// triggers finds the triggers that carry the prefix or call a routine
// of baton's schema that does, on any table: baton's capture trigger is
// {p}capture calling baton's {p}capture(); clones of a partitioned
// table's trigger (tgparentid) go with it.
func (d *Driver) triggers(ctx context.Context, conn *sql.Conn, _ string, known func(string) bool, add func(driver.Object, bool)) error {
	capture := d.prefix + "capture"
	return sqlbase.EachRow(ctx, conn, `SELECT t.tgname, n.nspname, c.relname, p.proname, p.pronamespace = `+ns+`,
		c.relnamespace = `+ns+` FROM pg_trigger t
		JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_proc p ON p.oid = t.tgfoid
		WHERE NOT t.tgisinternal AND t.tgparentid = 0
		  AND (starts_with(t.tgname, $1) OR p.pronamespace = `+ns+` AND starts_with(p.proname, $1))`,
		[]any{d.prefix}, func(sc sqlbase.Scanner) error {
			o := driver.Object{Kind: driver.ObjTrigger}
			var fn string
			var fnOurs, tableOurs bool
			err := sc.Scan(&o.Name, &o.Schema, &o.Table, &fn, &fnOurs, &tableOurs)
			isCapture := o.Name == capture && fn == capture && fnOurs
			add(o, isCapture && known(fn) || tableOurs && known(o.Table) && known(o.Name))
			return err
		})
}

// types finds the types made by CREATE TYPE or CREATE DOMAIN (not the
// row types of tables, which go with them).
func (d *Driver) types(ctx context.Context, conn *sql.Conn, schema string, known func(string) bool, add func(driver.Object, bool)) error {
	return sqlbase.EachRow(ctx, conn, `SELECT t.typname FROM pg_type t LEFT JOIN pg_class c ON c.oid = t.typrelid
		WHERE t.typnamespace = `+ns+` AND starts_with(t.typname, $1)
		  AND (t.typtype IN ('e', 'd', 'r', 'm') OR t.typtype = 'c' AND c.relkind = 'c')`,
		[]any{d.prefix}, func(sc sqlbase.Scanner) error {
			o := driver.Object{Kind: driver.ObjType, Schema: schema}
			err := sc.Scan(&o.Name)
			add(o, known(o.Name))
			return err
		})
}

// ownSchema adds baton's schema to ours when `baton migrate` created it
// (its comment says so) and ours are all that is in it.
func (d *Driver) ownSchema(ctx context.Context, conn *sql.Conn, schema string, ours []driver.Object, add func(driver.Object, bool)) error {
	var comment sql.NullString
	var n int
	err := conn.QueryRowContext(ctx, `SELECT obj_description(oid, 'pg_namespace'),
		(SELECT count(*) FROM pg_class c WHERE c.relnamespace = ns.oid AND c.relkind IN ('r', 'p', 'f', 'v', 'm', 'S', 'c'))
		+ (SELECT count(*) FROM pg_proc p WHERE p.pronamespace = ns.oid)
		+ (SELECT count(*) FROM pg_type t WHERE t.typnamespace = ns.oid AND t.typtype IN ('e', 'd', 'r', 'm'))
		FROM pg_namespace ns WHERE nspname = $1`, schema).Scan(&comment, &n)
	if err != nil || comment.String != schemaMarker {
		return err
	}
	mine := 0
	for _, o := range ours {
		if o.Kind != driver.ObjTrigger {
			mine++
		}
	}
	add(driver.Object{Kind: driver.ObjSchema, Name: schema}, n == mine)
	return nil
}

// dropStatement removes o if it still exists, and nothing that depends on
// it: a program's view on a baton table fails the removal instead.
func dropStatement(o driver.Object) string {
	id := func(parts ...string) string { return pgx.Identifier(parts).Sanitize() }
	switch o.Kind {
	case driver.ObjTrigger:
		return "DROP TRIGGER IF EXISTS " + id(o.Name) + " ON " + id(o.Schema, o.Table)
	case driver.ObjFunction, driver.ObjProcedure:
		return "DROP " + o.Kind + " IF EXISTS " + id(o.Schema, o.Name) + "(" + o.Args + ")"
	case driver.ObjSchema:
		return "DROP SCHEMA IF EXISTS " + id(o.Name)
	}
	return "DROP " + o.Kind + " IF EXISTS " + id(o.Schema, o.Name)
}
