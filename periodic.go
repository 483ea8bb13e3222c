package baton

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	mq "github.com/batonhq/baton/internal/queue"
)

// MissedTicks says what a schedule does about ticks no process was there
// to enqueue (every process was down, or the database unreachable): a tick
// is missed when the next one came before it was enqueued.
type MissedTicks int

const (
	// RunOnce enqueues one message for the latest missed tick (the
	// default): a job that should run hourly runs once after a downtime.
	RunOnce MissedTicks = iota
	// SkipMissed enqueues nothing for missed ticks (nor for the tick due
	// when they are found); the next tick runs as usual.
	SkipMissed
)

// Schedule enqueues a message per tick: of a cron expression in a time
// zone, or every interval. Every process that adds the same schedule (by
// name) takes part, and each tick is enqueued exactly once among them: the
// message is inserted in the transaction that moves the schedule's last
// tick forward, which only one process can do.
type Schedule struct {
	// Name identifies the schedule across processes and hosts: 1 to 64
	// letters, digits, '_', '.', ':' or '-'.
	Name string
	// Queue receives the messages.
	Queue string
	// Cron is a cron expression of five fields (minute, hour, day of
	// month, month, day of week) or a descriptor (@hourly, @daily,
	// @weekly, @monthly, @yearly, @every 1h30m).
	Cron string
	// TimeZone is the IANA time zone the Cron fields are in (default UTC,
	// whatever the host's zone; not a CRON_TZ= prefix in Cron).
	// It is read from the host's time zone database (time.LoadLocation);
	// a program that runs where there is none (a scratch container, a
	// static binary on Windows) embeds one with import _ "time/tzdata".
	TimeZone string
	// Every, instead of Cron, ticks at every multiple of the interval since
	// the Unix epoch (at least a millisecond).
	Every time.Duration
	// Payload of each message: 1 byte to MaxMessagePayload, as Enqueue
	// takes. When neither it nor Args is set (nil, not empty), a JSON
	// object {"schedule": name, "tick": the tick in RFC 3339, "missed":
	// ticks missed before it}.
	Payload []byte
	// Args, instead of Payload, makes each message a job of Args' kind.
	Args JobArgs
	// Options of each message (UniqueKey excepted: each tick is unique
	// already).
	Options EnqueueOptions
	// Missed is what to do about missed ticks (default RunOnce).
	Missed MissedTicks
}

// AddSchedule registers a schedule in this client; the client's scheduler
// enqueues its ticks while the client is open. An invalid cron expression,
// time zone, interval, payload (empty or too long: what Enqueue refuses) or
// option is an error naming the field, and registers nothing; so is a
// kind that Options.Workers does not know (unless
// EnqueueOptions.AllowUnknownKind). Adding a schedule of the same name
// replaces it.
func (c *Client) AddSchedule(s Schedule) error {
	next, err := s.clock()
	if err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	if err := c.checkScheduleKind(s); err != nil {
		return err
	}
	c.mq.Scheduler().Add(mq.Schedule{Name: s.Name, Queue: s.Queue, Next: next, SkipMissed: s.Missed == SkipMissed, Message: s.message})
	return nil
}

// RemoveSchedule stops this client enqueuing the schedule's ticks. A tick
// this client is enqueuing at that moment still lands.
func (c *Client) RemoveSchedule(name string) { c.mq.Scheduler().Remove(name) }

// clock parses the schedule's timing into its next-tick function.
func (s Schedule) clock() (func(time.Time) time.Time, error) {
	return mq.Clock(s.Name, s.Cron, s.TimeZone, s.Every)
}

// check validates the schedule's name, queue, payload and options.
func (s Schedule) check() error {
	if err := ValidateKind(s.Name); err != nil {
		return fmt.Errorf("%w: schedule name %q: use 1 to 64 letters, digits, '_', '.', ':' or '-'", ErrInvalid, s.Name)
	}
	if err := ValidateQueue(s.Queue); err != nil {
		return err
	}
	if err := s.checkFields(); err != nil {
		return err
	}
	if err := s.checkPayload(); err != nil {
		return err
	}
	return s.Options.check()
}

// checkFields refuses fields that contradict each other or the schedule.
func (s Schedule) checkFields() error {
	switch {
	case s.Payload != nil && s.Args != nil:
		return fmt.Errorf("%w: schedule %q: give Payload or Args, not both", ErrInvalid, s.Name)
	case s.Options.UniqueKey != "":
		return fmt.Errorf("%w: schedule %q: no UniqueKey (each tick is enqueued once already)", ErrInvalid, s.Name)
	case s.Missed != RunOnce && s.Missed != SkipMissed:
		return fmt.Errorf("%w: schedule %q: unknown Missed policy %d", ErrInvalid, s.Name, s.Missed)
	}
	return nil
}

// checkPayload checks the payload every tick enqueues: refused here, not
// at every tick.
func (s Schedule) checkPayload() error {
	payload := s.Payload
	if s.Args != nil {
		m, err := JobMessage(s.Args, s.Options)
		if err != nil {
			return err
		}
		payload = m.Payload
	}
	switch {
	case payload != nil && len(payload) == 0:
		return fmt.Errorf("%w: schedule %q: empty Payload (leave it nil for the default payload)", ErrInvalid, s.Name)
	case len(payload) > MaxMessagePayload:
		return fmt.Errorf("%w: schedule %q: the payload is %d bytes, more than %d", ErrInvalid, s.Name, len(payload), MaxMessagePayload)
	}
	return nil
}

// message is the message of a tick.
func (s Schedule) message(tick time.Time, missed int) (driver.NewMessage, error) {
	payload, o := s.Payload, s.Options
	switch {
	case s.Args != nil:
		m, err := JobMessage(s.Args, o)
		if err != nil {
			return driver.NewMessage{}, err
		}
		payload, o = m.Payload, m.EnqueueOptions
	case payload == nil:
		payload, _ = json.Marshal(map[string]any{"schedule": s.Name, "tick": tick.UTC().Format(time.RFC3339Nano), "missed": missed})
	}
	return newMessage(s.Queue, payload, o)
}
