package baton

import (
	"context"
	"encoding/json"
	"time"

	"github.com/batonhq/baton/driver"
	mq "github.com/batonhq/baton/internal/queue"
)

// The states of a message's life.
const (
	StatePending   MessageState = "pending"   // waiting for its parents (EnqueueOptions.After)
	StateScheduled MessageState = "scheduled" // waiting for its run-at, never attempted
	StateReady     MessageState = "ready"     // claimable now
	StateRunning   MessageState = "running"   // claimed by a worker
	StateRetrying  MessageState = "retrying"  // waiting out its backoff after a failed attempt
	StateCompleted MessageState = "completed" // handled (kept for Retention.Completed)
	StateCancelled MessageState = "cancelled" // cancelled (kept for Retention.Cancelled)
	StateDead      MessageState = "dead"      // failed for good (kept for Retention.Dead)
	// StateClaimed is StateRunning under another name.
	StateClaimed = StateRunning
)

// MessageStates lists every state, in the order of a message's life.
var MessageStates = []MessageState{StatePending, StateScheduled, StateReady, StateRunning, StateRetrying, StateCompleted, StateCancelled, StateDead}

// ParseMessageState checks a state name.
func ParseMessageState(s string) (MessageState, error) {
	st, err := mq.ParseState(s)
	return MessageState(st), err
}

// AttemptError records one failed attempt of a message, or one snooze.
type AttemptError struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	// Stack is the handler's stack when the attempt panicked.
	Stack string `json:"stack,omitempty"`
	// Snoozed: the run did not fail but was put off (Snooze), its
	// attempt taken back; Error says for how long.
	Snoozed bool `json:"snoozed,omitempty"`
}

// Retention is how long finished messages stay in the history before the
// history pruner deletes them. Zero means the default; a negative duration
// keeps none (completed messages are then deleted as they complete, the
// fastest setting; cancelled and dead ones at the pruner's next run).
type Retention struct {
	Completed time.Duration // default 24h
	Cancelled time.Duration // default 24h
	Dead      time.Duration // default 7 days
}

func (r *Retention) fill() { *r = Retention(mq.Retention(*r).Filled()) }

// infoOf converts a stored message to what monitoring shows.
func infoOf(m driver.Message, now time.Time) MessageInfo {
	return MessageInfo(mq.InfoOf[MessageState](m, now, func(err error) AttemptError {
		return AttemptError{Error: "unreadable error record: " + err.Error()}
	}))
}

// Message reads a message by id, whatever its state (a finished one while
// its history is kept). ErrNotFound when there is none.
func (c *Client) Message(ctx context.Context, id int64) (MessageInfo, error) {
	m, err := c.mq.Get(ctx, id)
	if err != nil {
		return MessageInfo{}, err
	}
	return infoOf(m, time.Now()), nil
}

// CancelMessage cancels a message. A waiting one is cancelled at once; a
// running one has its handler's context cancelled (cause ErrCancelled) on
// whatever process runs it, and ends cancelled rather than retried. A
// finished message is left as it is: ErrFinished. ErrNotFound when there
// is no such message.
func (c *Client) CancelMessage(ctx context.Context, id int64) error {
	running, err := c.mq.Cancel(ctx, id)
	if running {
		c.workers.Cancelled(id)
	} else if err == nil {
		c.jobCancelledWaiting(ctx, id)
	}
	return err
}

// announce sends an internal notification to every process, after the
// change it announces committed, within the lease whatever the caller's
// context; a failure is logged as what, with attrs (the listeners' polls
// stand in).
func (c *Client) announce(channel, payload, what string, attrs ...any) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Lease)
	defer cancel()
	if err := c.drv.Notifier().Notify(ctx, channel, payload); err != nil {
		c.opts.Logger.Warn(what, append(attrs, "error", err)...)
	}
}

// ListOptions select messages for ListMessages.
type ListOptions struct {
	// Queue to list ("" for every queue, in name order).
	Queue string
	// State to list ("" for every state, in the order of MessageStates).
	State MessageState
	// Kind: only messages of this kind ("" for any).
	Kind string
	// Tag: only messages that carry this tag ("" for any).
	Tag string
	// MetaKey and MetaValue: only messages whose metadata's top-level key
	// MetaKey (like a queue name) holds MetaValue, a string, or a number
	// or boolean as JSON writes it ("" for any key).
	MetaKey, MetaValue string
	// After is the position to go on from ("" for the start): the second
	// result of an earlier call with the same options.
	After string
	// Limit is the page size, 1 to 1000 (default 50).
	Limit int
}

// ListMessages lists a page of messages: for each queue and state in turn,
// ready and running messages in the order workers claim them, scheduled
// and retrying ones by due time, finished ones newest first. It returns the position after the page, "" when
// there is no more. Every page is read along an index: a page deep into
// millions of messages costs what the first one does.
func (c *Client) ListMessages(ctx context.Context, o ListOptions) ([]MessageInfo, string, error) {
	if o.Limit == 0 {
		o.Limit = 50
	}
	if err := o.check(); err != nil {
		return nil, "", err
	}
	queues := []string{o.Queue}
	if o.Queue == "" {
		var err error
		if queues, err = c.Queues(ctx); err != nil {
			return nil, "", err
		}
	}
	states := MessageStates
	if o.State != "" {
		states = []MessageState{o.State}
	}
	d := driver.DataFilter{Tag: o.Tag, MetaKey: o.MetaKey, MetaValue: o.MetaValue}
	rows, next, err := c.mq.List(ctx, mq.Segments(queues, states), o.Kind, d, o.After, o.Limit)
	return infos(rows), next, err
}

func (o ListOptions) check() error {
	if err := mq.CheckListing(o.Queue, string(o.State), o.Limit); err != nil {
		return err
	}
	return mq.CheckDataFilter(o.Tag, o.MetaKey, o.MetaValue)
}

func infos(rows []driver.Message) []MessageInfo {
	now := time.Now()
	out := make([]MessageInfo, len(rows))
	for i, m := range rows {
		out[i] = infoOf(m, now)
	}
	return out
}

// MarshalJSON implements json.Marshaler.
func (m MessageInfo) MarshalJSON() ([]byte, error) { return json.Marshal(messageInfoJSON(m)) }

// UnmarshalJSON implements json.Unmarshaler.
func (m *MessageInfo) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, (*messageInfoJSON)(m)) }

// messageInfoJSON has MessageInfo's JSON form: the payload as text when
// it is UTF-8, otherwise in base64 under payload_base64.
type messageInfoJSON = mq.Info[MessageState, AttemptError]

// CompleteTx completes a claimed message inside the caller's transaction
// (a *sql.Tx, or a pgx transaction through postgres.PgxTx), on the same
// database as the client: the message is completed if and only if that
// transaction commits, so a handler that does its database work in tx and
// completes its message there has its effects happen exactly once. A
// claim that is no longer current (its lease ran out and another worker
// may have it, or it was cancelled) is ErrNotClaimed: roll tx back. The
// worker's own acknowledgement afterwards finds nothing to do. The output
// recorded by SetOutput before the call is kept with the message.
func (c *Client) CompleteTx(ctx context.Context, tx Execer, m *Message) error {
	if err := claimedCheck(m, "CompleteTx"); err != nil {
		return err
	}
	if err := c.mq.CompleteTx(ctx, tx, claimOf(m), m.Queue, m.output); err != nil {
		return err
	}
	m.completedTx = true
	return c.jobEventIn(ctx, tx, m, JobCompleted, "")
}
