package mysql

import (
	"context"
	"strings"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/sqldriver"
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
func events(prefix string) *sqldriver.EventsDialect {
	return &sqldriver.EventsDialect{
		Describe: func(ctx context.Context, t *sqldriver.Tx, table string) (driver.TableInfo, bool, error) {
			info := driver.TableInfo{Name: table}
			rows, err := t.Query(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS
				WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
			if err != nil {
				return info, false, err
			}
			for rows.Next() {
				var c, typ string
				if err := rows.Scan(&c, &typ); err != nil {
					rows.Close()
					return info, false, err
				}
				info.Columns = append(info.Columns, c)
				info.Types = append(info.Types, typ)
			}
			rows.Close()
			if len(info.Columns) == 0 {
				return info, false, rows.Err()
			}
			rows, err = t.Query(ctx, `SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
				WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION`, table)
			if err != nil {
				return info, false, err
			}
			defer rows.Close()
			for rows.Next() {
				var c string
				if err := rows.Scan(&c); err != nil {
					return info, false, err
				}
				info.PK = append(info.PK, c)
			}
			return info, true, rows.Err()
		},
		Install: func(ti driver.TableInfo) []string {
			var out []string
			for _, a := range sqldriver.CaptureActions {
				obj := func(cols []string, row string) string {
					return sqldriver.RowArray("JSON_ARRAY", ti, cols, func(c, typ string) string {
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
				out = append(out, "CREATE TRIGGER "+ident(sqldriver.TriggerName(prefix, ti.Name, a.Code))+
					" AFTER "+a.Event+" ON "+ident(ti.Name)+" FOR EACH ROW BEGIN\n"+
					"INSERT INTO "+prefix+"messages (queue, payload, priority, msg_key, run_at, order_at, attempt, max_attempts, state, last_error, created_at)\n"+
					"SELECT CONCAT('ev:', s.name), CONVERT(JSON_OBJECT('subscription', s.name, 'table', "+lit(ti.Name)+", 'action', '"+a.Action+"', "+
					"'pk', "+pk+", 'new', "+newRow+", 'old', "+oldRow+") USING utf8mb4), 0, CONVERT("+pk+" USING utf8mb4), "+Now+", "+Now+", 0, s.max_attempts, 'R', '', "+Now+"\n"+
					where+
					"INSERT INTO "+prefix+"notifications (channel, payload, created_at) SELECT CONCAT('#q#ev:', s.name), '', "+Now+where+
					"END")
			}
			return out
		},
		Drop: func(ti driver.TableInfo) []string {
			return sqldriver.DropTriggers(prefix, ti.Name, ident)
		},
	}
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
	v := row + "." + ident(c)
	typ = strings.ToLower(typ)
	base := typ
	if i := strings.IndexAny(base, "( "); i >= 0 {
		base = base[:i]
	}
	const micros = "'%Y-%m-%d %H:%i:%s.%f'"
	switch {
	case strings.HasPrefix(typ, "tinyint(1)"):
		return "JSON_ARRAY(" + lit(c) + ", " + v + ", 'bool')"
	case typ == "bit(1)":
		return "JSON_ARRAY(" + lit(c) + ", " + v + " + 0, 'bool')"
	case base == "bit":
		return "JSON_ARRAY(" + lit(c) + ", " + v + " + 0)"
	case base == "binary" || base == "varbinary" || strings.HasSuffix(base, "blob"):
		return "JSON_ARRAY(" + lit(c) + ", HEX(" + v + "), 'b')"
	case spatial[base]:
		return "JSON_ARRAY(" + lit(c) + ", ST_AsGeoJSON(" + v + "), 'j')"
	case base == "datetime":
		return "JSON_ARRAY(" + lit(c) + ", DATE_FORMAT(" + v + ", " + micros + "), 't')"
	case base == "timestamp":
		return "JSON_ARRAY(" + lit(c) + ", DATE_FORMAT(TIMESTAMPADD(MICROSECOND, UNIX_TIMESTAMP(" + v + ") * 1000000, '1970-01-01'), " + micros + "), 't')"
	}
	return "JSON_ARRAY(" + lit(c) + ", " + v + ")"
}

var spatial = map[string]bool{"geometry": true, "point": true, "linestring": true, "polygon": true,
	"multipoint": true, "multilinestring": true, "multipolygon": true, "geometrycollection": true, "geomcollection": true}
