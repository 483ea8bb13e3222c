package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/internal/sqlbase"
)

func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// quoted turns "table" or "schema.table" (validated identifiers) into a
// quoted name.
func quoted(table string) string {
	return pgx.Identifier(strings.Split(table, ".")).Sanitize()
}

// events is PostgreSQL's change capture: one trigger per table on the
// generic {p}capture function, with the primary key columns as arguments.
func events(prefix string) *sqlbase.EventsDialect {
	return &sqlbase.EventsDialect{
		Describe: describe,
		Install: func(ti driver.TableInfo) []string {
			args := make([]string, len(ti.PK))
			for i, c := range ti.PK {
				args[i] = lit(c)
			}
			return []string{"CREATE TRIGGER " + prefix + "capture AFTER INSERT OR UPDATE OR DELETE ON " + quoted(ti.Name) +
				" FOR EACH ROW EXECUTE FUNCTION " + prefix + "capture(" + strings.Join(args, ", ") + ")"}
		},
		Drop: func(ti driver.TableInfo) []string {
			return []string{"DROP TRIGGER IF EXISTS " + prefix + "capture ON " + quoted(ti.Name)}
		},
	}
}

// describe finds a table (or a partitioned one) by its name on the
// search_path, and its primary key in the key's order; the table's name
// comes back qualified by its schema.
func describe(ctx context.Context, t *sqlbase.Tx, table string) (driver.TableInfo, bool, error) {
	var info driver.TableInfo
	rows, err := t.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p')`, quoted(table))
	if err != nil {
		return info, false, err
	}
	names, err := sqlbase.ScanAll(rows, func(sc sqlbase.Scanner) (string, error) {
		var schema, name string
		err := sc.Scan(&schema, &name)
		return schema + "." + name, err
	})
	if err != nil || len(names) == 0 {
		return info, false, err
	}
	info.Name = names[0]
	info.PK, err = t.QueryStrings(ctx, `SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = to_regclass($1) AND i.indisprimary
		ORDER BY array_position(i.indkey::int2[], a.attnum)`, quoted(info.Name))
	return info, err == nil, err
}

// Events implements driver.Driver: the driver itself.
func (d *Driver) Events() driver.Events { return d }

// RefreshesInPlace implements driver.Events: the triggers are replaced
// in the transaction.
func (d *Driver) RefreshesInPlace() bool { return true }
