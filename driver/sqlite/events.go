package sqlite

import (
	"context"
	"strings"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func lit(s string) string   { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// events is SQLite's change capture: three triggers per table (SQLite has
// no multi-event triggers), each listing the table's columns. Each row is
// written as [name, value, kind] columns for baton to put in canonical form
// (see baton's eventjson.go): a blob, in any column, as hex digits (JSON
// cannot hold one), and the kind named after the declared type.
func events(prefix string) *sqlbase.EventsDialect {
	return sqlbase.RowTriggers(prefix, describe, captureTrigger, ident)
}

// tableColumn is a row of pragma_table_info: a column's name, declared
// type and position in the primary key (0: not in it).
type tableColumn struct {
	name, typ string
	pk        int
}

// describe finds a table: its columns and their declared types, in the
// table's order, and its primary key.
func describe(ctx context.Context, t *sqlbase.Tx, table string) (driver.TableInfo, bool, error) {
	rows, err := t.Query(ctx, "SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		return driver.TableInfo{}, false, err
	}
	cols, err := sqlbase.ScanAll(rows, func(sc sqlbase.Scanner) (tableColumn, error) {
		var c tableColumn
		err := sc.Scan(&c.name, &c.typ, &c.pk)
		return c, err
	})
	info := driver.TableInfo{Name: table}
	pks := map[int]string{}
	for _, c := range cols {
		info.Columns, info.Types = append(info.Columns, c.name), append(info.Types, c.typ)
		if c.pk > 0 {
			pks[c.pk] = c.name
		}
	}
	for i := 1; i <= len(pks); i++ {
		info.PK = append(info.PK, pks[i])
	}
	return info, len(info.Columns) > 0, err
}

// captureTrigger is the row trigger of one action on a table: it enqueues
// the change for every subscription of the table that captures the
// action.
func captureTrigger(prefix string, ti driver.TableInfo, a sqlbase.CaptureAction) string {
	obj := func(cols []string, row string) string {
		return sqlbase.RowArray("json_array", ti, cols, func(c, typ string) string { return entry(c, typ, row) })
	}
	newRow, oldRow := "NULL", "NULL"
	if a.Code != "D" {
		newRow = "json(" + obj(ti.Columns, "NEW") + ")"
	}
	if a.Code != "I" {
		oldRow = "json(" + obj(ti.Columns, "OLD") + ")"
	}
	pk := obj(ti.PK, a.Row)
	return "CREATE TRIGGER " + ident(sqlbase.TriggerName(prefix, ti.Name, a.Code)) +
		" AFTER " + a.Event + " ON " + ident(ti.Name) + " BEGIN\n" +
		"INSERT INTO " + prefix + "messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at)\n" +
		"SELECT 'ev:' || s.name, CAST(json_object('subscription', s.name, 'table', " + lit(ti.Name) + ", 'action', '" + a.Action + "', " +
		"'pk', json(" + pk + "), 'new', " + newRow + ", 'old', " + oldRow + ") AS BLOB), 0, " + pk + ", " + Now + ", " + Now + ", 0, s.max_attempts, 'R', '', " + Now + "\n" +
		"  FROM " + prefix + "subscriptions s WHERE s.table_name = " + lit(ti.Name) + " AND instr(s.actions, '" + a.Code + "') > 0;\n" +
		"END"
}

// entry renders a capture trigger's [name, value] or [name, value, kind]
// entry for a column of ROW (NEW or OLD): a blob, in any column, as hex
// digits, other values with the kind of the column's declared type.
func entry(c, typ, row string) string {
	v := row + "." + ident(c)
	plain := "json_array(" + lit(c) + ", " + v + ")"
	if k := kind(typ); k != "" {
		plain = "json_array(" + lit(c) + ", " + v + ", '" + k + "')"
	}
	return "CASE WHEN typeof(" + v + ") = 'blob' THEN json_array(" + lit(c) + ", hex(" + v + "), 'b') ELSE " + plain + " END"
}

// kind is how baton reads the values of a column of a declared type, SQLite
// types being names: a BOOL type as booleans, TIMESTAMP or DATETIME as
// timestamps, JSON as JSON text.
func kind(declared string) string {
	t := strings.ToUpper(declared)
	switch {
	case strings.Contains(t, "BOOL"):
		return "bool"
	case strings.Contains(t, "TIMESTAMP"), strings.Contains(t, "DATETIME"):
		return "t"
	case strings.Contains(t, "JSON"):
		return "j"
	}
	return ""
}

// Events implements driver.Driver: the driver itself.
func (d *Driver) Events() driver.Events { return d }

// RefreshesInPlace implements driver.Events: the triggers are replaced
// in a transaction.
func (d *Driver) RefreshesInPlace() bool { return true }
