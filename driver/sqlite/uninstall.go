package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

// Uninstall implements driver.Driver, in one immediate transaction.
func (d *Driver) Uninstall(ctx context.Context, p driver.UninstallParams) (driver.UninstallReport, error) {
	return d.migrator.Uninstall(ctx, sqlbase.Catalog{List: d.catalog, Drop: dropStatement}, p)
}

// catalog lists the tables, views and triggers of sqlite_master that carry
// the prefix (indexes go with their tables); a trigger is baton's when
// the capture names it on its table (sqlbase.TriggerName), or when its
// migrations create it on one of their tables.
func (d *Driver) catalog(ctx context.Context, conn *sql.Conn, known func(string) bool) (ours, others []driver.Object, err error) {
	err = sqlbase.EachRow(ctx, conn, `SELECT type, name, tbl_name FROM sqlite_master
		WHERE type IN ('table', 'view', 'trigger') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY type, name`, nil,
		func(sc sqlbase.Scanner) error {
			var o driver.Object
			var table string
			if err := sc.Scan(&o.Kind, &o.Name, &table); err != nil {
				return err
			}
			switch {
			case o.Kind == driver.ObjTrigger && sqlbase.IsCaptureTrigger(d.prefix, o.Name, table):
				o.Table = table
				ours = append(ours, o)
			case !strings.HasPrefix(o.Name, d.prefix):
			case o.Kind == driver.ObjTrigger:
				o.Table = table
				sqlbase.Split(&ours, &others, o, known(o.Name) && known(table))
			default:
				sqlbase.Split(&ours, &others, o, known(o.Name))
			}
			return nil
		})
	return ours, others, err
}

// dropStatement removes o if it still exists.
func dropStatement(o driver.Object) string {
	return "DROP " + o.Kind + " IF EXISTS " + ident(o.Name)
}
