package mysql

import (
	"context"
	"database/sql"
	"strings"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// Uninstall implements driver.Driver. MySQL commits each DDL statement by
// itself: a removal cut short leaves the rest listed (the migration
// tracking table last), and running it again finishes it.
func (d *Driver) Uninstall(ctx context.Context, p driver.UninstallParams) (driver.UninstallReport, error) {
	return d.migrator.Uninstall(ctx, sqlbase.Catalog{
		List: d.catalog,
		Drop: dropStatement,
		// A DROP waits for the tables' metadata locks a while (a
		// transaction that used one holds its lock), never for a year.
		Setup: []string{"SET SESSION lock_wait_timeout = 10"},
		Reset: []string{"SET SESSION lock_wait_timeout = DEFAULT"},
	}, p)
}

// tableKinds maps information_schema.TABLES.TABLE_TYPE to an object kind.
var tableKinds = map[string]string{"VIEW": driver.ObjView, "SEQUENCE": driver.ObjSequence}

// catalog lists the tables, views, sequences (MariaDB), routines and
// events of the DSN's database that carry the prefix, and its triggers
// that carry it: a trigger is baton's when the capture names it on its
// table (sqlbase.TriggerName), or when the migrations create it on one
// of their tables.
func (d *Driver) catalog(ctx context.Context, conn *sql.Conn, known func(string) bool) (ours, others []driver.Object, err error) {
	var db sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db); err != nil || !db.Valid {
		return nil, nil, err
	}
	look := func(q string, scan func(sqlbase.Scanner) (driver.Object, bool, error)) {
		if err != nil {
			return
		}
		err = sqlbase.EachRow(ctx, conn, q, nil, func(sc sqlbase.Scanner) error {
			o, mine, err := scan(sc)
			o.Schema = db.String
			if strings.HasPrefix(o.Name, d.prefix) || mine {
				sqlbase.Split(&ours, &others, o, mine || known(o.Name) && (o.Table == "" || known(o.Table)))
			}
			return err
		})
	}
	look(`SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`,
		func(sc sqlbase.Scanner) (driver.Object, bool, error) {
			var o driver.Object
			var typ string
			err := sc.Scan(&o.Name, &typ)
			if o.Kind = tableKinds[typ]; o.Kind == "" {
				o.Kind = driver.ObjTable
			}
			return o, false, err
		})
	look(`SELECT ROUTINE_NAME, LOWER(ROUTINE_TYPE) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()`,
		func(sc sqlbase.Scanner) (driver.Object, bool, error) {
			var o driver.Object
			err := sc.Scan(&o.Name, &o.Kind)
			return o, false, err
		})
	look(`SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()`,
		func(sc sqlbase.Scanner) (driver.Object, bool, error) {
			o := driver.Object{Kind: driver.ObjTrigger}
			err := sc.Scan(&o.Name, &o.Table)
			return o, sqlbase.IsCaptureTrigger(d.prefix, o.Name, o.Table), err
		})
	look(`SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE()`,
		func(sc sqlbase.Scanner) (driver.Object, bool, error) {
			o := driver.Object{Kind: driver.ObjEvent}
			err := sc.Scan(&o.Name)
			return o, false, err
		})
	return ours, others, err
}

// dropStatement removes o if it still exists.
func dropStatement(o driver.Object) string {
	return "DROP " + o.Kind + " IF EXISTS " + ident(o.Schema) + "." + ident(o.Name)
}
