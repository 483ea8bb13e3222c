package baton

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/txn"
)

// The states of a message's life.
const (
	StateScheduled MessageState = "scheduled" // waiting for its run-at, never attempted
	StateReady     MessageState = "ready"     // claimable now
	StateRunning   MessageState = "running"   // claimed by a worker
	StateRetrying  MessageState = "retrying"  // waiting out its backoff after a failed attempt
	StateCompleted MessageState = "completed" // handled (kept for Retention.Completed)
	StateCancelled MessageState = "cancelled" // cancelled (kept for Retention.Cancelled)
	StateDead      MessageState = "dead"      // failed for good (kept for Retention.Dead)
	// StateClaimed is the former name of StateRunning.
	StateClaimed = StateRunning
)

// MessageStates lists every state, in the order of a message's life.
var MessageStates = []MessageState{StateScheduled, StateReady, StateRunning, StateRetrying, StateCompleted, StateCancelled, StateDead}

// finishedStates maps the history's states to the stored ones.
var finishedStates = map[MessageState]driver.MessageState{
	StateCompleted: driver.MessageCompleted, StateCancelled: driver.MessageCancelled, StateDead: driver.MessageDead,
}

// ParseMessageState checks a state name.
func ParseMessageState(s string) (MessageState, error) {
	for _, st := range MessageStates {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("%w: message state %q: use scheduled, ready, running, retrying, completed, cancelled or dead", ErrInvalid, s)
}

// AttemptError records one failed attempt of a message.
type AttemptError struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	// Stack is the handler's stack when the attempt panicked.
	Stack string `json:"stack,omitempty"`
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

func (r *Retention) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&r.Completed, 24*time.Hour)
	def(&r.Cancelled, 24*time.Hour)
	def(&r.Dead, 7*24*time.Hour)
}

// keepCompleted says whether completed messages go to the history.
func (c *Client) keepCompleted() bool { return c.opts.Retention.Completed > 0 }

// infoOf converts a stored message to what monitoring shows.
func infoOf(m driver.Message, now time.Time) MessageInfo {
	payload, key, _ := eventPayload(m.Queue, m.Payload, m.Key)
	info := MessageInfo{ID: m.ID, Queue: m.Queue, Kind: m.Kind, State: stateOf(m, now), Payload: payload, Priority: m.Priority,
		Key: key, Attempt: m.Attempt, MaxAttempts: m.MaxAttempts, LastError: m.LastError, CreatedAt: m.CreatedAt,
		RunAt: m.RunAt, FinishedAt: m.FinishedAt, CancelRequested: m.CancelRequested}
	if m.State == driver.MessageClaimed {
		info.ClaimedBy, info.ClaimedUntil = m.ClaimedBy, m.ClaimUntil
	}
	if m.Errors != "" {
		if err := json.Unmarshal([]byte(m.Errors), &info.Errors); err != nil {
			info.Errors = []AttemptError{{Error: "unreadable error record: " + err.Error()}}
		}
	}
	return info
}

// stateOf names a stored message's state.
func stateOf(m driver.Message, now time.Time) MessageState {
	switch m.State {
	case driver.MessageClaimed:
		return StateRunning
	case driver.MessageCompleted:
		return StateCompleted
	case driver.MessageCancelled:
		return StateCancelled
	case driver.MessageDead:
		return StateDead
	}
	switch {
	case !m.RunAt.After(now):
		return StateReady
	case m.Attempt > 0:
		return StateRetrying
	}
	return StateScheduled
}

// Message reads a message by id, whatever its state (a finished one while
// its history is kept). ErrNotFound when there is none.
func (c *Client) Message(ctx context.Context, id int64) (MessageInfo, error) {
	var m driver.Message
	var found bool
	// Outside any transaction, like the listings: a message only ever moves
	// from the queue to the history, and MessageGet reads the queue first.
	err := txn.Retrying(ctx, c.drv, func() (err error) {
		m, found, err = c.drv.NoTx().MessageGet(ctx, id)
		return err
	})
	if err != nil {
		return MessageInfo{}, fmt.Errorf("baton: message %d: %w", id, err)
	}
	if !found {
		return MessageInfo{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	return infoOf(m, time.Now()), nil
}

// CancelMessage cancels a message. A waiting one is cancelled at once; a
// running one has its handler's context cancelled (cause ErrCancelled) on
// whatever process runs it, and ends cancelled rather than retried. A
// finished message is left as it is: ErrFinished. ErrNotFound when there
// is no such message.
func (c *Client) CancelMessage(ctx context.Context, id int64) error {
	state, err := txn.InTxV(ctx, c.drv, func(tx driver.Tx) (driver.MessageState, error) { return tx.MessageCancel(ctx, id) })
	running, err := cancelled(id, state, err)
	if running {
		c.workers.Cancelled(id)
	}
	return err
}

// cancelChannel is the internal channel on which cancellations of running
// messages are announced (the payload is the id).
const cancelChannel = bus.Cancel

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
	var segs []segment
	for _, q := range queues {
		for _, s := range states {
			segs = append(segs, segment{q, s})
		}
	}
	return c.listSegments(ctx, segs, o)
}

func (o ListOptions) check() error {
	if o.Queue != "" {
		if err := ValidateQueue(o.Queue); err != nil {
			return err
		}
	}
	if o.State != "" {
		if _, err := ParseMessageState(string(o.State)); err != nil {
			return err
		}
	}
	if o.Limit < 1 || o.Limit > 1000 {
		return fmt.Errorf("%w: limit %d: give 1 to 1000", ErrInvalid, o.Limit)
	}
	return nil
}

// segment is one queue and state of a listing.
type segment struct {
	queue string
	state MessageState
}

// listSegments reads pages from the segments in turn, from the one the
// position names, until the page is full.
func (c *Client) listSegments(ctx context.Context, segs []segment, o ListOptions) ([]MessageInfo, string, error) {
	start, pos, err := parsePosition(segs, o.After)
	if err != nil {
		return nil, "", err
	}
	var out []MessageInfo
	for i := start; i < len(segs); i++ {
		page, next, err := c.listOne(ctx, segs[i], o.Kind, pos, o.Limit-len(out))
		if err != nil {
			return nil, "", err
		}
		out = append(out, page...)
		pos = ""
		switch {
		case next != "":
			return out, segs[i].queue + "/" + string(segs[i].state) + "/" + next, nil
		case len(out) == o.Limit && i+1 < len(segs):
			return out, segs[i+1].queue + "/" + string(segs[i+1].state) + "/", nil
		}
	}
	return out, "", nil
}

// parsePosition finds the segment a position names and the position in it.
func parsePosition(segs []segment, after string) (int, string, error) {
	if after == "" {
		return 0, "", nil
	}
	parts := strings.SplitN(after, "/", 3)
	if len(parts) == 3 {
		for i, s := range segs {
			if s.queue == parts[0] && string(s.state) == parts[1] {
				return i, parts[2], nil
			}
		}
	}
	return 0, "", fmt.Errorf("%w: position %q is not one this listing returned", ErrInvalid, after)
}

// listOne reads up to limit messages of one queue and state after pos.
func (c *Client) listOne(ctx context.Context, s segment, kind, pos string, limit int) ([]MessageInfo, string, error) {
	if stored, ok := finishedStates[s.state]; ok {
		return c.listHistory(ctx, s.queue, stored, kind, pos, limit)
	}
	f := driver.ListFilter{Queue: s.queue, State: driver.MessageReady, Kind: kind, Limit: limit + 1}
	yes, no := true, false
	switch s.state {
	case StateRunning:
		f.State = driver.MessageClaimed
	case StateReady:
		f.Due = &yes
	case StateScheduled:
		f.Due, f.Retried = &no, &no
	case StateRetrying:
		f.Due, f.Retried = &no, &yes
	}
	if pos != "" {
		if _, err := fmt.Sscanf(pos, "%d.%d.%d", &f.After.Priority, &f.After.OrderAt, &f.After.ID); err != nil {
			return nil, "", fmt.Errorf("%w: position %q is not one this listing returned", ErrInvalid, pos)
		}
	}
	return c.readPage(ctx, limit, func(tx driver.Tx) ([]driver.Message, error) { return tx.MessageList(ctx, f) },
		func(last driver.Message) string {
			if f.Due != nil && !*f.Due { // by due time
				return fmt.Sprintf("0.%d.%d", last.RunAt.UnixMicro(), last.ID)
			}
			return fmt.Sprintf("%d.%d.%d", last.Priority, last.OrderAt.UnixMicro(), last.ID)
		})
}

// readPage reads a page of limit messages (read asks for one more, which
// says whether there is a next page) and the position after it.
func (c *Client) readPage(ctx context.Context, limit int, read func(driver.Tx) ([]driver.Message, error),
	position func(last driver.Message) string) ([]MessageInfo, string, error) {
	var rows []driver.Message
	// One statement, outside any transaction: a listing never waits for
	// SQLite's write lock (a program's open transaction may hold it).
	err := txn.Retrying(ctx, c.drv, func() (err error) {
		rows, err = read(c.drv.NoTx())
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("baton: list messages: %w", err)
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = position(rows[limit-1])
	}
	return infos(rows), next, nil
}

// listHistory reads up to limit finished messages, newest first.
func (c *Client) listHistory(ctx context.Context, queue string, state driver.MessageState, kind, pos string, limit int) ([]MessageInfo, string, error) {
	var before int64
	if pos != "" {
		var err error
		if before, err = strconv.ParseInt(pos, 10, 64); err != nil || before <= 0 {
			return nil, "", fmt.Errorf("%w: position %q is not one this listing returned", ErrInvalid, pos)
		}
	}
	return c.readPage(ctx, limit, func(tx driver.Tx) ([]driver.Message, error) {
		return tx.HistoryList(ctx, queue, state, kind, before, limit+1)
	}, func(last driver.Message) string { return strconv.FormatInt(last.ID, 10) })
}

func infos(rows []driver.Message) []MessageInfo {
	now := time.Now()
	out := make([]MessageInfo, len(rows))
	for i, m := range rows {
		out[i] = infoOf(m, now)
	}
	return out
}

// pruneBatch is how many finished messages one prune statement deletes.
const pruneBatch = 1000

// pruneHistory is the history pruner: it deletes finished messages past
// their retention, in batches, at most 50 batches a run (the next run goes
// on), so that it never holds locks long.
func (c *Client) pruneHistory(ctx context.Context) error {
	r := c.opts.Retention
	for _, p := range []struct {
		state driver.MessageState
		keep  time.Duration
	}{{driver.MessageCompleted, r.Completed}, {driver.MessageCancelled, r.Cancelled}, {driver.MessageDead, r.Dead}} {
		keep := max(p.keep, 0)
		for range 50 {
			n, err := c.drv.NoTx().HistoryPrune(ctx, p.state, keep, pruneBatch)
			if err != nil {
				return err
			}
			if n < pruneBatch {
				break
			}
		}
	}
	return nil
}

// messageInfoJSON is MessageInfo's JSON form: the payload as text when it
// is UTF-8, otherwise in base64 under payload_base64.
type messageInfoJSON struct {
	messageInfoFields
	Payload   *string `json:"payload,omitempty"`
	Payload64 string  `json:"payload_base64,omitempty"`
}

type messageInfoFields MessageInfo

// MarshalJSON implements json.Marshaler.
func (m MessageInfo) MarshalJSON() ([]byte, error) {
	j := messageInfoJSON{messageInfoFields: messageInfoFields(m)}
	j.messageInfoFields.Payload = nil
	if utf8.Valid(m.Payload) {
		s := string(m.Payload)
		j.Payload = &s
	} else {
		j.Payload64 = base64.StdEncoding.EncodeToString(m.Payload)
	}
	return json.Marshal(j)
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *MessageInfo) UnmarshalJSON(b []byte) error {
	var j messageInfoJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = MessageInfo(j.messageInfoFields)
	switch {
	case j.Payload != nil:
		m.Payload = []byte(*j.Payload)
	case j.Payload64 != "":
		p, err := base64.StdEncoding.DecodeString(j.Payload64)
		if err != nil {
			return fmt.Errorf("payload_base64: %w", err)
		}
		m.Payload = p
	}
	return nil
}

// CompleteTx completes a claimed message inside the caller's transaction
// (a *sql.Tx, or a pgx transaction through postgres.PgxTx), on the same
// database as the client: the message is completed if and only if that
// transaction commits, so a handler that does its database work in tx and
// completes its message there has its effects happen exactly once. A
// claim that is no longer current (its lease ran out and another worker
// may have it, or it was cancelled) is ErrNotClaimed: roll tx back. The
// worker's own acknowledgement afterwards finds nothing to do.
func (c *Client) CompleteTx(ctx context.Context, tx Execer, m *Message) error {
	if err := claimedCheck(m, "CompleteTx"); err != nil {
		return err
	}
	stmts := c.drv.Queue().CompleteStatements(claimOf(m), c.keepCompleted())
	var n int64
	for _, st := range stmts {
		res, err := tx.ExecContext(ctx, st.Query, st.Args...)
		if err != nil {
			return fmt.Errorf("baton: complete: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("baton: complete: %w", err)
		}
	}
	if n != 1 {
		return notClaimed(m)
	}
	return nil
}
