package baton

import (
	"context"
	"time"

	mq "github.com/batonhq/baton/internal/queue"
)

// QueueLimits are a queue's concurrency and rate limits
// (Client.SetQueueLimits). They bind every process and host: the
// parallel consumers of a limited queue (Work and Claim in the default
// Parallel mode) claim in a transaction that holds the queue's row lock
// and counts what runs and what started. The zero value is no limit; a
// zero field is no limit of that kind.
//
// A running message holds its slot until it is settled (acknowledged,
// retried, failed, snoozed, released or cancelled) or its claim is
// recovered (its session ended, its lease ran out: a killed worker's
// slot comes back with its session). While messages wait, the whole
// limit is used: a partition that is full never holds back the messages
// of other partitions behind it. Consumers in Ordered or PerKey mode keep
// their own rule (one in flight; one per key) and are not bound by the
// limits, though what they run counts as running.
type QueueLimits struct {
	// Concurrency bounds how many of the queue's messages run at once,
	// in all.
	Concurrency int `json:"concurrency,omitempty"`
	// PartitionBy splits the queue into partitions for
	// PartitionConcurrency and PartitionRate: "key" (the message's key),
	// "kind" (its kind) or "arg:NAME" (the value of the payload's
	// top-level JSON field NAME). Messages without one (no key, a payload
	// without the field) share one partition.
	PartitionBy string `json:"partition_by,omitempty"`
	// PartitionConcurrency bounds how many messages of one partition run
	// at once.
	PartitionConcurrency int `json:"partition_concurrency,omitempty"`
	// Rate bounds how many of the queue's messages start (are claimed to
	// run) in any window of length Per: at most Rate, shared by every
	// process. PartitionRate is the same bound per partition.
	Rate          int `json:"rate,omitempty"`
	PartitionRate int `json:"partition_rate,omitempty"`
	// Per is the rate's period, from a millisecond to a week (nanoseconds
	// in JSON).
	Per time.Duration `json:"per_ns,omitempty"`
}

// IsZero reports whether l is no limit at all.
func (l QueueLimits) IsZero() bool { return mq.Limits(l).IsZero() }

// Check validates the limits; the error wraps ErrInvalid.
func (l QueueLimits) Check() error { return mq.Limits(l).Check() }

// SetQueueLimits sets a queue's concurrency and rate limits for every
// process, replacing the ones it had; the zero QueueLimits clears them.
// Running messages go on; lowered limits bind the next claims, raised or
// cleared ones wake the queue's consumers. ErrInvalid for limits that do
// not hold together (QueueLimits.Check), ErrUnknownQueue if nothing was
// ever enqueued to the queue.
func (c *Client) SetQueueLimits(ctx context.Context, queue string, l QueueLimits) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	return c.mq.SetLimits(ctx, queue, mq.Limits(l))
}

// QueueLimits returns a queue's limits (the zero value: none);
// ErrUnknownQueue if nothing was ever enqueued to it.
func (c *Client) QueueLimits(ctx context.Context, queue string) (QueueLimits, error) {
	if err := ValidateQueue(queue); err != nil {
		return QueueLimits{}, err
	}
	l, err := c.mq.Limits(ctx, queue)
	return QueueLimits(l), err
}

// SetQueueLimitsTx is SetQueueLimits in the caller's transaction tx: the
// limits bind the claims of every process once tx commits (nothing if it
// rolls back), and the queue's consumers wake then.
func (c *Client) SetQueueLimitsTx(ctx context.Context, tx Execer, queue string, l QueueLimits) error {
	cq, err := callerQueue(c.mq, tx, "SetQueueLimitsTx", queue)
	if err != nil {
		return err
	}
	return cq.SetLimits(ctx, queue, mq.Limits(l))
}
