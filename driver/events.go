package driver

import (
	"context"
	"errors"
	"time"
)

// Events is the events slice of a backend. Change capture's
// subscriptions and triggers are changed in the engine's transactions
// (Tx's EventsTx); what is left here is what the backend can do.
type Events interface {
	// RefreshesInPlace reports whether CaptureRefresh replaces a table's
	// triggers with no moment when its changes go uncaptured (false:
	// MySQL, whose CaptureRefresh answers ErrNoRefresh).
	RefreshesInPlace() bool
}

// TableInfo describes an application table for change capture.
type TableInfo struct {
	// Name is the table as the registry stores it: "schema.table" on
	// PostgreSQL, "table" elsewhere.
	Name    string
	Columns []string
	// Types are the columns' declared types, as the backend names them
	// (empty where the backend's capture does not need them).
	Types []string
	PK    []string
}

// Subscription is one row of the subscription registry. Actions is a
// subset of "IUD".
type Subscription struct {
	Name string
	// Table is the registry's name of the table (TableInfo.Name), which
	// the triggers match; SubscribedAs is the table as the subscriber
	// named it, which events carry (Table when stored empty).
	Table        string
	SubscribedAs string
	Actions      string
	MaxAttempts  int
	CreatedAt    time.Time
}

// EventsTx is the subscription part of Tx.
type EventsTx interface {
	SubscriptionInsert(ctx context.Context, s Subscription) error
	SubscriptionDelete(ctx context.Context, name string) (bool, error)
	SubscriptionGet(ctx context.Context, name string) (Subscription, bool, error)
	SubscriptionList(ctx context.Context) ([]Subscription, error)
	SubscriptionCountTable(ctx context.Context, table string) (int, error)
	// TableDescribe finds a table (ok false when it does not exist) and its
	// columns and primary key.
	TableDescribe(ctx context.Context, table string) (info TableInfo, ok bool, err error)
	// CaptureInstall creates baton's triggers on the table; CaptureDrop
	// removes them. On MySQL they commit the transaction (DDL).
	CaptureInstall(ctx context.Context, t TableInfo) error
	CaptureDrop(ctx context.Context, t TableInfo) error
	// CaptureRefresh replaces baton's triggers on the table with ones for
	// its columns as they are now, with no moment when a change of the
	// table goes uncaptured: in the transaction where DDL is
	// transactional, on MariaDB with CREATE OR REPLACE TRIGGER. MySQL
	// cannot replace a trigger in place: ErrNoRefresh.
	CaptureRefresh(ctx context.Context, t TableInfo) error
}

// ErrNoRefresh: the backend cannot replace a table's triggers without a
// moment when changes go uncaptured (MySQL).
var ErrNoRefresh = errors.New("baton/driver: the server cannot replace a trigger in place")
