package sqlbase

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/driver"
)

// EventsDialect is what a backend supplies for change capture.
type EventsDialect struct {
	// Describe finds a table and its columns and primary key.
	Describe func(ctx context.Context, t *Tx, table string) (driver.TableInfo, bool, error)
	// Install and Drop return the DDL statements that create and remove
	// baton's triggers on a table.
	Install func(t driver.TableInfo) []string
	Drop    func(t driver.TableInfo) []string
	// Refresh returns the statements that replace the triggers in place
	// (nil: Drop's and then Install's, in the transaction, where DDL is
	// transactional).
	Refresh func(t driver.TableInfo) ([]string, error)
}

// SubscriptionInsert implements driver.EventsTx.
func (t *Tx) SubscriptionInsert(ctx context.Context, s driver.Subscription) error {
	_, err := t.exec(ctx, "subscription_insert", s.Name, s.Table, s.SubscribedAs, s.Actions, s.MaxAttempts)
	return err
}

// SubscriptionDelete implements driver.EventsTx.
func (t *Tx) SubscriptionDelete(ctx context.Context, name string) (bool, error) {
	return affected(t.exec(ctx, "subscription_delete", name))
}

func scanSubscription(sc Scanner) (driver.Subscription, error) {
	var s driver.Subscription
	var created int64
	err := sc.Scan(&s.Name, &s.Table, &s.SubscribedAs, &s.Actions, &s.MaxAttempts, &created)
	s.CreatedAt = FromMicros(created)
	return s, err
}

// SubscriptionGet implements driver.EventsTx.
func (t *Tx) SubscriptionGet(ctx context.Context, name string) (driver.Subscription, bool, error) {
	s, err := scanSubscription(t.row(ctx, "subscription_get", name))
	if errors.Is(err, sql.ErrNoRows) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("subscription_get: %w", err)
	}
	return s, true, nil
}

// SubscriptionList implements driver.EventsTx.
func (t *Tx) SubscriptionList(ctx context.Context) ([]driver.Subscription, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "subscription_list")
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, scanSubscription)
}

// SubscriptionCountTable implements driver.EventsTx.
func (t *Tx) SubscriptionCountTable(ctx context.Context, table string) (int, error) {
	n, err := t.count(ctx, "subscription_count_table", table)
	return int(n), err
}

// TableDescribe implements driver.EventsTx.
func (t *Tx) TableDescribe(ctx context.Context, table string) (driver.TableInfo, bool, error) {
	if t.db.D.Events == nil {
		return driver.TableInfo{}, false, errors.New("change capture is not supported by this backend")
	}
	return t.db.D.Events.Describe(ctx, t, table)
}

// CaptureInstall implements driver.EventsTx.
func (t *Tx) CaptureInstall(ctx context.Context, ti driver.TableInfo) error {
	for _, stmt := range t.db.D.Events.Install(ti) {
		if _, err := t.q().ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("install triggers on %s: %w", ti.Name, err)
		}
	}
	return nil
}

// CaptureDrop implements driver.EventsTx.
func (t *Tx) CaptureDrop(ctx context.Context, ti driver.TableInfo) error {
	for _, stmt := range t.db.D.Events.Drop(ti) {
		if _, err := t.q().ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("drop triggers on %s: %w", ti.Name, err)
		}
	}
	return nil
}

// CaptureRefresh implements driver.EventsTx.
func (t *Tx) CaptureRefresh(ctx context.Context, ti driver.TableInfo) error {
	ev := t.db.D.Events
	var stmts []string
	if ev.Refresh == nil {
		stmts = append(ev.Drop(ti), ev.Install(ti)...)
	} else {
		var err error
		if stmts, err = ev.Refresh(ti); err != nil {
			return err
		}
	}
	for _, stmt := range stmts {
		if _, err := t.q().ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("replace the triggers on %s: %w", ti.Name, err)
		}
	}
	return nil
}

// Query runs a query in the transaction (drivers' describe functions).
func (t *Tx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.q().QueryContext(ctx, q, args...)
}

// CaptureAction is one kind of change a row trigger captures.
type CaptureAction struct {
	Code   string // as stored in the registry's actions: I, U or D
	Event  string // the trigger event: INSERT, UPDATE or DELETE
	Action string // as events name it: insert, update or delete
	Row    string // the row that holds the primary key: NEW or OLD
}

// CaptureActions are the three row triggers of dialects without
// multi-event triggers.
var CaptureActions = []CaptureAction{
	{"I", "INSERT", "insert", "NEW"}, {"U", "UPDATE", "update", "NEW"}, {"D", "DELETE", "delete", "OLD"},
}

// RowArray renders fn(entry, ...) for the columns of a row, in order: a
// capture trigger's row, each entry the column's [name, value] or [name,
// value, kind] array as the dialect's entry renders it from the column's
// name and declared type (from t.Types; "" when unknown).
func RowArray(fn string, t driver.TableInfo, cols []string, entry func(col, typ string) string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		typ := ""
		for j, tc := range t.Columns {
			if tc == c && j < len(t.Types) {
				typ = t.Types[j]
			}
		}
		parts[i] = entry(c, typ)
	}
	return fn + "(" + strings.Join(parts, ", ") + ")"
}

// RowTriggers is change capture by three row triggers per table, one per
// CaptureActions (dialects without multi-event triggers): describe finds a
// table, trigger renders the trigger of one action on it, ident quotes a
// name.
func RowTriggers(prefix string, describe func(ctx context.Context, t *Tx, table string) (driver.TableInfo, bool, error),
	trigger func(prefix string, ti driver.TableInfo, a CaptureAction) string, ident func(string) string) *EventsDialect {
	return &EventsDialect{
		Describe: describe,
		Install: func(ti driver.TableInfo) []string {
			out := make([]string, 0, len(CaptureActions))
			for _, a := range CaptureActions {
				out = append(out, trigger(prefix, ti, a))
			}
			return out
		},
		Drop: func(ti driver.TableInfo) []string {
			return DropTriggers(prefix, ti.Name, ident)
		},
	}
}

// TriggerName is baton's trigger for one action on a table.
func TriggerName(prefix, table, code string) string {
	return prefix + "ev_" + table + "_" + strings.ToLower(code)
}

// DropTriggers returns the statements that drop baton's three row triggers
// on a table.
func DropTriggers(prefix, table string, ident func(string) string) []string {
	out := make([]string, 0, len(CaptureActions))
	for _, a := range CaptureActions {
		out = append(out, "DROP TRIGGER IF EXISTS "+ident(TriggerName(prefix, table, a.Code)))
	}
	return out
}

// QueryStrings runs a query in the transaction and returns its rows' one
// text column (drivers' describe functions).
func (t *Tx) QueryStrings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := t.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, ScanString)
}
