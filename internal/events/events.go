// Package events is the engine of table-change events: subscriptions, and
// the capture triggers that write one event per matching subscription in
// the same transaction as each change of a subscribed table. The events
// of a subscription are the messages of its queue (Queue).
package events

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/eventjson"
	"github.com/batonhq/baton/internal/txn"
)

// QueuePrefix starts the name of every subscription's queue.
const QueuePrefix = "ev:"

// Queue is the queue that holds a subscription's events.
func Queue(subscription string) string { return QueuePrefix + subscription }

// Config configures a Service.
type Config struct {
	Driver driver.Driver
	// Register registers a new subscription's queue in tx.
	Register func(ctx context.Context, tx driver.Tx, queue string) error
	// Log reports what no caller hears of.
	Log func(what string, err error)
}

// Service creates, lists and removes subscriptions and their triggers.
type Service struct{ cfg Config }

// New makes the service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

func (s *Service) inTx(ctx context.Context, fn func(tx driver.Tx) error) error {
	return txn.InTx(ctx, s.cfg.Driver, fn)
}

// Subscribe stores a subscription whose input is checked (Name,
// SubscribedAs the canonical table name, Actions, MaxAttempts) and, for
// the first one on its table, installs the triggers. All or nothing: the
// triggers a failed transaction installed anyway (DDL commits on MySQL)
// are taken back.
func (s *Service) Subscribe(ctx context.Context, sub driver.Subscription) error {
	var installed *driver.TableInfo
	err := s.inTx(ctx, func(tx driver.Tx) error {
		var err error
		installed, err = s.subscribeTx(ctx, tx, sub)
		return err
	})
	if err != nil {
		if installed != nil {
			s.cfg.Log("take back the triggers of a failed subscription "+sub.Name, s.undoSubscribe(context.WithoutCancel(ctx), sub.Name, *installed))
		}
		if errors.Is(err, errs.ErrInvalid) || errors.Is(err, errs.ErrSubscriptionExists) {
			return err
		}
		return fmt.Errorf("baton: subscribe: %w", err)
	}
	return nil
}

// subscribeTx stores a subscription and, for the first one on its table,
// installs the triggers, which it returns (nil when none were installed).
func (s *Service) subscribeTx(ctx context.Context, tx driver.Tx, sub driver.Subscription) (*driver.TableInfo, error) {
	if err := checkNew(ctx, tx, sub.Name); err != nil {
		return nil, err
	}
	info, err := capturable(ctx, tx, sub.SubscribedAs)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Register(ctx, tx, Queue(sub.Name)); err != nil {
		return nil, err
	}
	n, err := tx.SubscriptionCountTable(ctx, info.Name)
	if err != nil {
		return nil, err
	}
	sub.Table = info.Name
	if err := tx.SubscriptionInsert(ctx, sub); err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, nil
	}
	return &info, tx.CaptureInstall(ctx, info)
}

// checkNew is ErrSubscriptionExists when the subscription name is taken.
func checkNew(ctx context.Context, tx driver.Tx, name string) error {
	_, exists, err := tx.SubscriptionGet(ctx, name)
	if err == nil && exists {
		err = fmt.Errorf("%w: %q", errs.ErrSubscriptionExists, name)
	}
	return err
}

// undoSubscribe deletes a subscription whose transaction failed after its
// triggers were installed (DDL commits on MySQL), and the triggers unless
// another subscription uses them.
func (s *Service) undoSubscribe(ctx context.Context, name string, info driver.TableInfo) error {
	return s.inTx(ctx, func(tx driver.Tx) error {
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

// Refresh rewrites the triggers on a subscribed table (its canonical
// name) for its columns as they are now.
func (s *Service) Refresh(ctx context.Context, table string) error {
	err := s.inTx(ctx, func(tx driver.Tx) error {
		info, err := capturable(ctx, tx, table)
		if err != nil {
			return err
		}
		n, err := tx.SubscriptionCountTable(ctx, info.Name)
		switch {
		case err != nil:
			return err
		case n == 0:
			return fmt.Errorf("%w: table %q has no subscription", errs.ErrInvalid, table)
		}
		return tx.CaptureRefresh(ctx, info)
	})
	switch {
	case errors.Is(err, driver.ErrNoRefresh):
		return fmt.Errorf("%w: MySQL cannot replace the triggers on %q without a moment when changes go uncaptured (MariaDB can): unsubscribe and subscribe again, which drops the pending events", errs.ErrInvalid, table)
	case err != nil && !errors.Is(err, errs.ErrInvalid):
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
		return info, fmt.Errorf("%w: table %q does not exist", errs.ErrInvalid, table)
	case len(info.PK) == 0:
		return info, fmt.Errorf("%w: table %q has no primary key", errs.ErrInvalid, table)
	}
	return info, nil
}

// deleteSubscription deletes a subscription's row and its events
// (pending, in flight and dead).
func deleteSubscription(ctx context.Context, tx driver.Tx, name string) error {
	if _, err := tx.SubscriptionDelete(ctx, name); err != nil {
		return err
	}
	if _, err := tx.QueueDeleteMessages(ctx, Queue(name)); err != nil {
		return err
	}
	_, err := tx.DeadPurge(ctx, Queue(name))
	return err
}

// Unsubscribe removes a subscription and its events (pending, in flight
// and dead); the last subscription on a table removes the triggers.
func (s *Service) Unsubscribe(ctx context.Context, name string) error {
	return s.inTx(ctx, func(tx driver.Tx) error {
		sub, ok, err := tx.SubscriptionGet(ctx, name)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %q", errs.ErrUnknownSubscription, name)
		}
		if err := deleteSubscription(ctx, tx, name); err != nil {
			return err
		}
		n, err := tx.SubscriptionCountTable(ctx, sub.Table)
		if err != nil || n > 0 {
			return err
		}
		return tx.CaptureDrop(ctx, driver.TableInfo{Name: sub.Table})
	})
}

// List lists every subscription.
func (s *Service) List(ctx context.Context) ([]driver.Subscription, error) {
	var rows []driver.Subscription
	err := s.inTx(ctx, func(tx driver.Tx) error {
		var err error
		rows, err = tx.SubscriptionList(ctx)
		return err
	})
	return rows, err
}

// Canonical puts a message of an event queue in canonical form: the
// payload (see internal/eventjson) and, as its key, the event's primary
// key. Other messages come back as they are, event false.
func Canonical(queue string, payload []byte, key string) (_ []byte, _ string, event bool) {
	if !strings.HasPrefix(queue, QueuePrefix) {
		return payload, key, false
	}
	canon, pk, ok := eventjson.Event(payload)
	if !ok {
		return payload, key, false
	}
	if pk != "" {
		key = pk
	}
	return canon, key, true
}
