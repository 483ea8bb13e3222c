package mysql

import (
	"context"
	"strings"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

func ident(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
func lit(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// events is MySQL's change capture: three row triggers per table, each
// listing the table's columns. A trigger cannot interrupt a listener after
// commit, so it also writes a notification row that listeners read at their
// next wake-up. Each row is written as [name, value, kind] columns for
// baton to put in canonical form (see baton's eventjson.go), in the table's
// order (MySQL's JSON objects would sort their keys).
func events(prefix string, mariadb bool) *sqlbase.EventsDialect {
	ev := sqlbase.RowTriggers(prefix, describe, captureTrigger, ident)
	ev.Refresh = func(ti driver.TableInfo) ([]string, error) {
		if !mariadb {
			// DDL commits: a drop and a create would leave a moment
			// when changes go uncaptured.
			return nil, driver.ErrNoRefresh
		}
		stmts := ev.Install(ti)
		for i, s := range stmts {
			stmts[i] = "CREATE OR REPLACE TRIGGER" + strings.TrimPrefix(s, "CREATE TRIGGER")
		}
		return stmts, nil
	}
	return ev
}

// describe finds a table of the current database: its columns and their
// types in the table's order, and its primary key.
func describe(ctx context.Context, t *sqlbase.Tx, table string) (driver.TableInfo, bool, error) {
	info := driver.TableInfo{Name: table}
	rows, err := t.Query(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
	if err != nil {
		return info, false, err
	}
	cols, err := sqlbase.ScanAll(rows, scanColumn)
	if err != nil || len(cols) == 0 {
		return info, false, err
	}
	for _, c := range cols {
		info.Columns, info.Types = append(info.Columns, c[0]), append(info.Types, c[1])
	}
	info.PK, err = t.QueryStrings(ctx, `SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION`, table)
	return info, err == nil, err
}

// scanColumn reads a column's name and type.
func scanColumn(sc sqlbase.Scanner) ([2]string, error) {
	var c [2]string
	err := sc.Scan(&c[0], &c[1])
	return c, err
}

// captureTrigger is the row trigger of one action on a table: it enqueues
// the change for every subscription of the table that captures the
// action, and writes the notification row that wakes its consumers.
func captureTrigger(prefix string, ti driver.TableInfo, a sqlbase.CaptureAction) string {
	obj := func(cols []string, row string) string {
		return sqlbase.RowArray("JSON_ARRAY", ti, cols, func(c, typ string) string {
			return column(c, typ, row)
		})
	}
	newRow, oldRow := "NULL", "NULL"
	if a.Code != "D" {
		newRow = obj(ti.Columns, "NEW")
	}
	if a.Code != "I" {
		oldRow = obj(ti.Columns, "OLD")
	}
	pk := obj(ti.PK, a.Row)
	where := " FROM " + prefix + "subscriptions s WHERE s.table_name = " + lit(ti.Name) + " AND LOCATE('" + a.Code + "', s.actions) > 0;\n"
	return "CREATE TRIGGER " + ident(sqlbase.TriggerName(prefix, ti.Name, a.Code)) +
		" AFTER " + a.Event + " ON " + ident(ti.Name) + " FOR EACH ROW BEGIN\n" +
		"INSERT INTO " + prefix + "messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at)\n" +
		"SELECT CONCAT('ev:', s.name), CONVERT(JSON_OBJECT('subscription', s.name, 'table', " + lit(ti.Name) + ", 'action', '" + a.Action + "', " +
		"'pk', " + pk + ", 'new', " + newRow + ", 'old', " + oldRow + ") USING utf8mb4), 0, CONVERT(" + pk + " USING utf8mb4), " + Now + ", " + Now + ", 0, s.max_attempts, 'R', '', " + Now + "\n" +
		where +
		"INSERT INTO " + prefix + "notifications (channel, payload, created_at) SELECT CONCAT('#q#ev:', s.name), '', " + Now + where +
		"END"
}

// column renders a capture trigger's [name, value, kind] entry for a column
// of ROW (NEW or OLD) by its type: TINYINT(1), which BOOLEAN stands for, and
// BIT(1) as booleans, other BITs as numbers; binary strings as hex digits;
// spatial types as GeoJSON (as PostGIS's to_json writes them); DATETIME and
// TIMESTAMP as text with microseconds, a TIMESTAMP in UTC whatever the
// session's time zone. (MariaDB's JSON functions write the bytes of BITs,
// binary strings and geometries as they are, which is neither JSON nor
// always UTF-8: the write would fail.)
func column(c, typ, row string) string {
	r := columnRule(strings.ToLower(typ))
	entry := "JSON_ARRAY(" + lit(c) + ", " + strings.ReplaceAll(r.value, "{v}", row+"."+ident(c))
	if r.kind != "" {
		entry += ", '" + r.kind + "'"
	}
	return entry + ")"
}

// valueRule is how a capture trigger writes a column's value: an
// expression of the column ({v}) and the kind baton reads it as ("" for
// JSON's own).
type valueRule struct{ value, kind string }

// columnRule is the rule for a column of a type (in lower case): by the
// type itself for TINYINT(1) and BIT(1), else by its base name.
func columnRule(typ string) valueRule {
	base := typ
	if i := strings.IndexAny(base, "( "); i >= 0 {
		base = base[:i]
	}
	switch {
	case strings.HasPrefix(typ, "tinyint(1)"):
		return valueRule{"{v}", "bool"}
	case typ == "bit(1)":
		return valueRule{"{v} + 0", "bool"}
	case strings.HasSuffix(base, "blob"):
		base = "blob"
	}
	if r, ok := baseRules[base]; ok {
		return r
	}
	return valueRule{"{v}", ""}
}

const micros = "'%Y-%m-%d %H:%i:%s.%f'"

// baseRules are the value rules by base type name; types not listed are
// written as they are.
var baseRules = map[string]valueRule{
	"bit":       {"{v} + 0", ""},
	"binary":    {"HEX({v})", "b"},
	"varbinary": {"HEX({v})", "b"},
	"blob":      {"HEX({v})", "b"},
	"datetime":  {"DATE_FORMAT({v}, " + micros + ")", "t"},
	"timestamp": {"DATE_FORMAT(TIMESTAMPADD(MICROSECOND, UNIX_TIMESTAMP({v}) * 1000000, '1970-01-01'), " + micros + ")", "t"},
	// Spatial types.
	"geometry": geoJSON, "point": geoJSON, "linestring": geoJSON, "polygon": geoJSON,
	"multipoint": geoJSON, "multilinestring": geoJSON, "multipolygon": geoJSON,
	"geometrycollection": geoJSON, "geomcollection": geoJSON,
}

var geoJSON = valueRule{"ST_AsGeoJSON({v})", "j"}

// Events implements driver.Driver: the driver itself.
func (d *Driver) Events() driver.Events { return d }

// RefreshesInPlace implements driver.Events: MariaDB replaces a trigger
// in place (CREATE OR REPLACE TRIGGER); MySQL cannot.
func (d *Driver) RefreshesInPlace() bool { return d.mariadb }
