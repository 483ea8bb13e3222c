package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
}

// SubscriptionInsert implements driver.EventsTx.
func (t *Tx) SubscriptionInsert(ctx context.Context, s driver.Subscription) error {
	_, err := t.exec(ctx, "subscription_insert", s.Name, s.Table, s.Actions, s.MaxAttempts)
	return err
}

// SubscriptionDelete implements driver.EventsTx.
func (t *Tx) SubscriptionDelete(ctx context.Context, name string) (bool, error) {
	return affected(t.exec(ctx, "subscription_delete", name))
}

func scanSubscription(sc interface{ Scan(...any) error }) (driver.Subscription, error) {
	var s driver.Subscription
	var created int64
	err := sc.Scan(&s.Name, &s.Table, &s.Actions, &s.MaxAttempts, &created)
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
	defer rows.Close()
	var out []driver.Subscription
	for rows.Next() {
		s, err := scanSubscription(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
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

// Query runs a query in the transaction (drivers' describe functions).
func (t *Tx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.q().QueryContext(ctx, q, args...)
}
