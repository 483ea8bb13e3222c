package baton

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/txn"
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

var bareIdentRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
})

// ParseTable checks a table name as a user writes it: table or
// schema.table (PostgreSQL), each part either a bare identifier (letters,
// digits, '_') or a double-quoted one ("Mixed Case", "with-dash", with ""
// for a quote), and returns the canonical name baton stores: the parts,
// unquoted, joined by a dot. A quoted part may hold any valid UTF-8 of 1 to
// 63 bytes except a dot, a double quote and NUL, which would make the stored
// name ambiguous.
func ParseTable(table string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: table %s: %s (write table, schema.table, or \"Quoted Name\")", ErrInvalid, errs.Quote(table), why)
	}
	if !utf8.ValidString(table) {
		return "", bad("not valid UTF-8")
	}
	var parts []string
	rest := table
	for {
		part, after, why := tablePart(rest)
		if why != "" {
			return "", bad(why)
		}
		parts, rest = append(parts, part), after
		if rest == "" {
			break
		}
		if rest[0] != '.' || len(parts) == 2 {
			return "", bad("at most schema.table")
		}
		rest = rest[1:]
	}
	return strings.Join(parts, "."), nil
}

// tablePart reads one part of a table name (quoted or bare) off the front
// of s; why says what is wrong with it.
func tablePart(s string) (part, rest, why string) {
	if !strings.HasPrefix(s, `"`) {
		end := strings.IndexByte(s, '.')
		if end < 0 {
			end = len(s)
		}
		if !bareIdentRE().MatchString(s[:end]) {
			return "", "", "use letters, digits and '_', or quote the name"
		}
		return s[:end], s[end:], ""
	}
	part, rest, ok := unquote(s)
	switch {
	case !ok:
		return "", "", "unterminated quote"
	case part == "" || len(part) > 63 || strings.ContainsAny(part, ".\"\x00"):
		return "", "", "a quoted name must be 1 to 63 bytes without '.', '\"' or NUL"
	}
	return part, rest, ""
}

// unquote reads a double-quoted identifier ("" for a quote) off the front
// of s; ok is false when its closing quote is missing.
func unquote(s string) (name, rest string, ok bool) {
	var b strings.Builder
	i := 1
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return "", "", false
		}
		b.WriteString(s[i : i+j])
		i += j + 1
		if !strings.HasPrefix(s[i:], `"`) {
			return b.String(), s[i:], true
		}
		b.WriteByte('"')
		i++
	}
}

// EventQueue is the queue that holds a subscription's events: work it with
// Work (or WorkEvents), Claim, Stats, DeadLetters like any queue.
func EventQueue(subscription string) string { return eventQueuePrefix + subscription }

const eventQueuePrefix = "ev:"

// Subscribe creates a subscription. The first subscription on a table
// installs baton's triggers on it; they write one event per matching
// subscription in the same transaction as each change, whatever client
// makes it. All or nothing: bad input installs nothing.
func (c *Client) Subscribe(ctx context.Context, s Subscription) error {
	codes, err := s.normalize()
	if err != nil {
		return err
	}
	var installed *driver.TableInfo
	err = txn.InTx(ctx, c.drv, func(tx driver.Tx) error {
		var err error
		installed, err = c.subscribeTx(ctx, tx, s, codes)
		return err
	})
	if err != nil {
		// DDL commits on MySQL: take back whatever got in.
		if installed != nil {
			c.log.Err("take back the triggers of a failed subscription "+s.Name, c.undoSubscribe(context.WithoutCancel(ctx), s.Name, *installed))
		}
		if errors.Is(err, ErrInvalid) || errors.Is(err, ErrSubscriptionExists) {
			return err
		}
		return fmt.Errorf("baton: subscribe: %w", err)
	}
	return nil
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
	codes := ""
	for _, a := range s.Actions {
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

// subscribeTx stores a subscription and, for the first one on its table,
// installs the triggers, which it returns (nil when none were installed).
func (c *Client) subscribeTx(ctx context.Context, tx driver.Tx, s Subscription, codes string) (*driver.TableInfo, error) {
	if _, exists, err := tx.SubscriptionGet(ctx, s.Name); err != nil || exists {
		if err == nil {
			err = fmt.Errorf("%w: %q", ErrSubscriptionExists, s.Name)
		}
		return nil, err
	}
	info, err := capturable(ctx, tx, s.Table)
	if err != nil {
		return nil, err
	}
	if err := c.mq.Register(ctx, tx, EventQueue(s.Name)); err != nil {
		return nil, err
	}
	n, err := tx.SubscriptionCountTable(ctx, info.Name)
	if err != nil {
		return nil, err
	}
	sub := driver.Subscription{Name: s.Name, Table: info.Name, SubscribedAs: s.Table, Actions: codes, MaxAttempts: s.MaxAttempts}
	if err := tx.SubscriptionInsert(ctx, sub); err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, nil
	}
	return &info, tx.CaptureInstall(ctx, info)
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
	err = txn.InTx(ctx, c.drv, func(tx driver.Tx) error {
		info, err := capturable(ctx, tx, table)
		if err != nil {
			return err
		}
		n, err := tx.SubscriptionCountTable(ctx, info.Name)
		switch {
		case err != nil:
			return err
		case n == 0:
			return fmt.Errorf("%w: table %q has no subscription", ErrInvalid, table)
		}
		return tx.CaptureRefresh(ctx, info)
	})
	switch {
	case errors.Is(err, driver.ErrNoRefresh):
		return fmt.Errorf("%w: MySQL cannot replace the triggers on %q without a moment when changes go uncaptured (MariaDB can): unsubscribe and subscribe again, which drops the pending events", ErrInvalid, table)
	case err != nil && !errors.Is(err, ErrInvalid):
		return fmt.Errorf("baton: refresh subscriptions: %w", err)
	}
	return err
}

// capturable describes a table whose changes triggers can capture: one
// that exists and has a primary key.
func capturable(ctx context.Context, tx driver.Tx, table string) (driver.TableInfo, error) {
	info, ok, err := tx.TableDescribe(ctx, table)
	switch {
	case err != nil:
		return info, err
	case !ok:
		return info, fmt.Errorf("%w: table %q does not exist", ErrInvalid, table)
	case len(info.PK) == 0:
		return info, fmt.Errorf("%w: table %q has no primary key", ErrInvalid, table)
	}
	return info, nil
}

// undoSubscribe deletes a subscription whose transaction failed after its
// triggers were installed (DDL commits on MySQL), and the triggers unless
// another subscription uses them.
func (c *Client) undoSubscribe(ctx context.Context, name string, info driver.TableInfo) error {
	return txn.InTx(ctx, c.drv, func(tx driver.Tx) error {
		if _, err := tx.SubscriptionDelete(ctx, name); err != nil {
			return err
		}
		n, err := tx.SubscriptionCountTable(ctx, info.Name)
		if err != nil || n > 0 {
			return err
		}
		return tx.CaptureDrop(ctx, info)
	})
}

// Unsubscribe removes a subscription and its events (pending, in flight
// and dead), so that a new subscription of the same name starts empty; the
// last subscription on a table removes baton's triggers from it.
func (c *Client) Unsubscribe(ctx context.Context, name string) error {
	return txn.InTx(ctx, c.drv, func(tx driver.Tx) error {
		sub, ok, err := tx.SubscriptionGet(ctx, name)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %q", ErrUnknownSubscription, name)
		}
		if _, err := tx.SubscriptionDelete(ctx, name); err != nil {
			return err
		}
		if _, err := tx.QueueDeleteMessages(ctx, EventQueue(name)); err != nil {
			return err
		}
		if _, err := tx.DeadPurge(ctx, EventQueue(name)); err != nil {
			return err
		}
		n, err := tx.SubscriptionCountTable(ctx, sub.Table)
		if err != nil || n > 0 {
			return err
		}
		return tx.CaptureDrop(ctx, driver.TableInfo{Name: sub.Table})
	})
}

// Subscriptions lists every subscription.
func (c *Client) Subscriptions(ctx context.Context) ([]Subscription, error) {
	rows, err := txn.InTxV(ctx, c.drv, func(tx driver.Tx) ([]driver.Subscription, error) { return tx.SubscriptionList(ctx) })
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
		payload, _, _ = eventPayload(EventQueue(""), payload, "")
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
