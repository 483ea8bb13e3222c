package baton

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/events"
)

// Action is a kind of table change.
type Action string

// The actions a subscription can follow.
const (
	Insert Action = "insert"
	Update Action = "update"
	Delete Action = "delete"
)

var actionCodes = map[Action]string{Insert: "I", Update: "U", Delete: "D"}

// Subscription follows changes of one application table.
type Subscription struct {
	// Name identifies the subscription (the same rules as queue names, at
	// most 61 characters); its events form the queue EventQueue(Name).
	Name string
	// Table is the application table: "table", or "schema.table" on
	// PostgreSQL (each part bare or double-quoted). It must have a primary
	// key. Events, and Subscriptions, name it as given here (unquoted):
	// "people" on every backend, "app.people" when the schema was given.
	Table string
	// Actions are the changes to follow (default: all three).
	Actions []Action
	// MaxAttempts is each event's attempt limit (default
	// DefaultMaxAttempts).
	MaxAttempts int
	CreatedAt   time.Time
}

// ParseTable checks a table name as a user writes it: table or
// schema.table (PostgreSQL), each part either a bare identifier (letters,
// digits, '_') or a double-quoted one ("Mixed Case", "with-dash", with ""
// for a quote), and returns the canonical name baton stores: the parts,
// unquoted, joined by a dot. A quoted part may hold any valid UTF-8 of 1 to
// 63 bytes except a dot, a double quote and NUL, which would make the stored
// name ambiguous.
func ParseTable(table string) (string, error) { return events.ParseTable(table) }

// EventQueue is the queue that holds a subscription's events: work it with
// Work (or WorkEvents), Claim, Stats, DeadLetters like any queue.
func EventQueue(subscription string) string { return events.Queue(subscription) }

const eventQueuePrefix = events.QueuePrefix

// Subscribe creates a subscription. The first subscription on a table
// installs baton's triggers on it; they write one event per matching
// subscription in the same transaction as each change, whatever client
// makes it. All or nothing: bad input installs nothing.
func (c *Client) Subscribe(ctx context.Context, s Subscription) error {
	codes, err := s.normalize()
	if err != nil {
		return err
	}
	return c.events.Subscribe(ctx, driver.Subscription{Name: s.Name, SubscribedAs: s.Table, Actions: codes, MaxAttempts: s.MaxAttempts})
}

// normalize checks a subscription, fills its defaults and returns its
// actions' codes.
func (s *Subscription) normalize() (string, error) {
	if len(s.Name) > 61 {
		return "", fmt.Errorf("%w: subscription name %s is longer than 61 characters", ErrInvalid, errs.Quote(s.Name))
	}
	if err := ValidateQueue(s.Name); err != nil {
		return "", fmt.Errorf("%w: subscription name %s: use 1 to 61 letters, digits, '_', '.', ':' or '-'", ErrInvalid, errs.Quote(s.Name))
	}
	table, err := ParseTable(s.Table)
	if err != nil {
		return "", err
	}
	s.Table = table
	if s.MaxAttempts < 0 {
		return "", fmt.Errorf("%w: negative attempt limit %d", ErrInvalid, s.MaxAttempts)
	}
	if s.MaxAttempts == 0 {
		s.MaxAttempts = DefaultMaxAttempts
	}
	if len(s.Actions) == 0 {
		s.Actions = []Action{Insert, Update, Delete}
	}
	return codesOf(s.Actions)
}

// codesOf is the actions' codes, each once.
func codesOf(actions []Action) (string, error) {
	codes := ""
	for _, a := range actions {
		code, ok := actionCodes[a]
		if !ok {
			return "", fmt.Errorf("%w: unknown action %q (use insert, update or delete)", ErrInvalid, a)
		}
		if !strings.Contains(codes, code) {
			codes += code
		}
	}
	return codes, nil
}

// RefreshSubscriptions rewrites baton's triggers on a subscribed table for
// its columns as they are now: after an ALTER TABLE on SQLite or
// MariaDB, whose triggers list the table's columns (PostgreSQL's read
// them at every change; there it changes nothing). Every subscription on
// the table and every event already captured stay; no change made
// meanwhile goes uncaptured (SQLite replaces the triggers in a
// transaction, MariaDB with CREATE OR REPLACE TRIGGER). MySQL cannot
// replace a trigger in place: ErrInvalid there (unsubscribe and subscribe
// again, which drops the pending events, or keep the columns).
func (c *Client) RefreshSubscriptions(ctx context.Context, table string) error {
	table, err := ParseTable(table)
	if err != nil {
		return err
	}
	return c.events.Refresh(ctx, table)
}

// Unsubscribe removes a subscription and its events (pending, in flight
// and dead), so that a new subscription of the same name starts empty; the
// last subscription on a table removes baton's triggers from it.
func (c *Client) Unsubscribe(ctx context.Context, name string) error {
	return c.events.Unsubscribe(ctx, name)
}

// Subscriptions lists every subscription.
func (c *Client) Subscriptions(ctx context.Context) ([]Subscription, error) {
	rows, err := c.events.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Subscription, len(rows))
	for i, r := range rows {
		var acts []Action
		for _, a := range []Action{Insert, Update, Delete} {
			if strings.Contains(r.Actions, actionCodes[a]) {
				acts = append(acts, a)
			}
		}
		out[i] = Subscription{Name: r.Name, Table: r.SubscribedAs, Actions: acts, MaxAttempts: r.MaxAttempts, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// Event is one captured change. PK, New and Old are JSON objects (New is
// null for a delete, Old for an insert) in canonical form, the same bytes
// on every backend for the same table and row: compact, the columns in the
// table's order (the primary key's in key order), numbers in their
// shortest exact form, booleans as true and false, timestamps as RFC 3339
// in UTC with microseconds, binary as base64; docs/events.md has the
// details. The payload of an event message, and its Key (the primary key),
// are in the same form.
type Event struct {
	Subscription string          `json:"subscription"`
	Table        string          `json:"table"`
	Action       Action          `json:"action"`
	PK           json.RawMessage `json:"pk"`
	New          json.RawMessage `json:"new"`
	Old          json.RawMessage `json:"old"`
}

// ParseEvent reads the event a message of an event queue carries.
func ParseEvent(m *Message) (Event, error) {
	var e Event
	payload := m.Payload
	if !m.event {
		payload, _, _ = events.Canonical(EventQueue(""), payload, "")
	}
	if err := json.Unmarshal(payload, &e); err != nil {
		return e, fmt.Errorf("baton: message %d is not an event: %w", m.ID, err)
	}
	return e, nil
}

// WorkEvents runs handler on a subscription's events with the worker
// runtime: Ordered for one worker in order, PerKey for FIFO per primary key
// with different keys in parallel, Parallel for any order.
func (c *Client) WorkEvents(ctx context.Context, subscription string, handler func(ctx context.Context, e Event, m *Message) error, opts WorkerOptions) error {
	return c.Work(ctx, EventQueue(subscription), func(ctx context.Context, m *Message) error {
		e, err := ParseEvent(m)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrPermanent, err)
		}
		return handler(ctx, e, m)
	}, opts)
}
