package driver

import (
	"context"
	"time"
)

// LimitsTx is the part of QueueTx for a queue's concurrency and rate
// limits (migration 002): their configuration, and the statements of a
// claim of a limited queue, which runs in a transaction under the queue's
// row lock (QueueLimitsLock).
type LimitsTx interface {
	// QueueSetLimits sets a queue's limits, a JSON object ("" clears
	// them); false when the queue does not exist.
	QueueSetLimits(ctx context.Context, name, limits string) (bool, error)
	// ClaimLimitedOne claims, in one round trip serialized with the
	// claims under QueueLimitsLock, up to limit ready messages (of the
	// kind, "" for any) of a queue whose limits are a concurrency and/or
	// a rate without partitions, as many as they allow, and counts their
	// starts, in claim mode ClaimLimited; none when the queue is paused,
	// has no such limits or no room (the engine's locked claim then
	// decides). A dialect with a routine for it (PostgreSQL, MySQL/MariaDB,
	// whose procedure commits its own transaction) claims only outside a
	// transaction, one without (SQLite: a write's counts are never stale)
	// only in one; ok is false where the dialect cannot.
	ClaimLimitedOne(ctx context.Context, queue, kind, sessionID string, lease time.Duration, limit int) (ms []Message, ok bool, err error)
	// QueueLimits reads a queue's limits ("" for none); found is false
	// when the queue does not exist.
	QueueLimits(ctx context.Context, name string) (limits string, found bool, err error)
	// QueueLimitsLock reads a queue's limits and the database clock
	// (microseconds), holding the queue's row lock (QueueLock's) until
	// the transaction ends.
	QueueLimitsLock(ctx context.Context, name string) (limits string, now int64, found bool, err error)
	// ClaimLimitedFlight lists the queue's running messages (their key,
	// kind and, when payload is set, payload).
	ClaimLimitedFlight(ctx context.Context, queue string, payload bool) ([]LimitedRow, error)
	// ClaimLimitedPage lists up to limit ready, due messages of the queue
	// (of the kind, "" for any) in serving order after position after;
	// none of a paused queue.
	ClaimLimitedPage(ctx context.Context, queue, kind string, payload bool, after ListPos, limit int) ([]LimitedRow, error)
	// ClaimLimitedDirect claims up to limit ready messages of the queue
	// (of the kind, "" for any) in serving order in one statement, in
	// claim mode ClaimLimited, whatever the queue's limits (the caller
	// holds QueueLimitsLock and decided limit); ok is false when the
	// dialect cannot (the engine then uses ClaimCandidates and ClaimIDs).
	ClaimLimitedDirect(ctx context.Context, queue, kind, sessionID string, lease time.Duration, limit int) (ms []Message, ok bool, err error)
	// QueueStarts lists a queue's start counts (rate limits).
	QueueStarts(ctx context.Context, queue string) ([]StartBucket, error)
	// QueueStartsAdd adds n starts to a partition's bucket.
	QueueStartsAdd(ctx context.Context, queue, part string, bucketEnd int64, n int) error
	// QueueStartsPrune deletes a queue's buckets that ended at or before
	// the time (microseconds).
	QueueStartsPrune(ctx context.Context, queue string, before int64) error
}

// ClaimLimited is the claim mode of a message claimed by a parallel
// consumer of a queue with limits (the limited path): ClaimIDs in any
// other mode than 0 claims it; a parallel claim (mode 0) refuses a queue
// with limits.
const ClaimLimited = 3

// LimitedRow is what a limited claim reads of a message.
type LimitedRow struct {
	ID      int64
	Pos     ListPos
	Key     string
	HasKey  bool
	Kind    string
	Payload []byte // when asked for
}

// StartBucket counts the starts of one partition ("" for the whole
// queue) in the bucket of time that ends at End (microseconds).
type StartBucket struct {
	Part string
	End  int64
	N    int64
}
