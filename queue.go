package baton

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/claimrule"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/eventjson"
	"github.com/batonhq/baton/internal/mq"
	"github.com/batonhq/baton/internal/tracing"
	"github.com/batonhq/baton/internal/txn"
)

// MaxMessagePayload is the largest message payload, in bytes.
const MaxMessagePayload = 1 << 20

// DefaultMaxAttempts is a message's attempt limit when none is given.
const DefaultMaxAttempts = 25

// QueueMode says how a queue's messages are handed out.
type QueueMode int

const (
	// Parallel hands out any ready messages, many in flight at once.
	Parallel = QueueMode(claimrule.Parallel)
	// Ordered hands out one message at a time, strictly in order: the next
	// is claimed only once the one in flight is done; a retry keeps its
	// place and holds the queue back.
	Ordered = QueueMode(claimrule.Ordered)
	// PerKey never has two messages with the same key in flight, and
	// serves each key in order; different keys (and messages without a
	// key) run in parallel. A retry holds back only its own key.
	PerKey = QueueMode(claimrule.PerKey)
)

// String is the mode's name: parallel, ordered or per-key.
func (m QueueMode) String() string { return claimrule.Mode(m).String() }

var queueRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`) })

// ValidateQueue checks a queue name: 1 to 64 letters, digits, '_', '.',
// ':' or '-'.
func ValidateQueue(q string) error {
	if !queueRE().MatchString(q) {
		return fmt.Errorf("%w: queue %s: use 1 to 64 letters, digits, '_', '.', ':' or '-'", ErrInvalid, errs.Quote(q))
	}
	return nil
}

// EnqueueOptions qualify one message.
type EnqueueOptions struct {
	// Delay before the message may be claimed; not negative.
	Delay time.Duration
	// Priority: lower numbers are served first (default 0).
	Priority int
	// Key groups messages for PerKey queues ("" for none).
	Key string
	// MaxAttempts before the message goes to the dead letters (default
	// DefaultMaxAttempts).
	MaxAttempts int
	// UniqueKey makes the message unique in its queue: while a message
	// enqueued with the same key waits or runs (with UniquePeriod: until
	// the period in which it was enqueued ends, whatever became of it),
	// enqueuing the key again adds nothing and returns that message's id
	// (EnqueueUnique also says it was a duplicate). At most 255 bytes.
	UniqueKey string
	// UniquePeriod holds UniqueKey for the period (aligned on the Unix
	// epoch, by the enqueuer's clock) in which the message was enqueued;
	// 0: while the message exists.
	UniquePeriod time.Duration
	// UniqueStates are the states in which the message holding UniqueKey
	// keeps it (within UniquePeriod, if one is given): with StateCompleted
	// a key stays taken while its completed message is in the history.
	// Empty: whatever became of the message when UniquePeriod is set, and
	// while it waits or runs (scheduled, ready, retrying, running) when
	// not. The enqueue that collides decides, with its own states.
	// Completed and cancelled messages are kept as long as
	// Options.Retention says (not at all when it is negative).
	UniqueStates []MessageState
	// Kind names the worker that handles the message (see AddWorker; ""
	// for none, an untyped message any handler of its queue takes).
	Kind string
	// Timeout bounds each handler run of the message (Work cancels the
	// handler's context after it; the attempt then fails and is retried);
	// it overrides WorkerOptions.Timeout. 0: none. At least a millisecond.
	Timeout time.Duration
}

// NewMessage is a message to enqueue with EnqueueMany.
type NewMessage struct {
	Payload []byte
	EnqueueOptions
}

// Message is a claimed message.
type Message struct {
	ID          int64
	Queue       string
	Payload     []byte
	Priority    int
	Key         string
	Attempt     int // this attempt, from 1
	MaxAttempts int
	// Kind names the message's worker ("" for none).
	Kind string
	// LastError is the error recorded by the previous attempt, if any.
	LastError string
	// Errors are the records of the failed attempts before this one.
	Errors    []AttemptError
	CreatedAt time.Time
	// ClaimedUntil is when the claim's lease runs out unless extended.
	ClaimedUntil time.Time

	mode      QueueMode
	sessionID string    // the claim's session
	claimedAt time.Time // local clock
	// claimBegan is when the worker's claim that brought it began (local
	// clock): a claim that began after a pause was known saw the queue
	// resumed (worker.Registry).
	claimBegan time.Time
	meta       messageMeta // the enqueuer's trace context, the handler timeout
	event      bool        // Payload is an event in canonical form
	// held: claimed behind the head of a worker's in-order batch and not
	// started (driver.ClaimHeld); Session.start starts it.
	held bool
}

func (c *Client) newMessage(queue string, payload []byte, o EnqueueOptions) (driver.NewMessage, error) {
	if err := ValidateQueue(queue); err != nil {
		return driver.NewMessage{}, err
	}
	if err := checkPayload(payload); err != nil {
		return driver.NewMessage{}, err
	}
	if err := o.check(); err != nil {
		return driver.NewMessage{}, err
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	m := driver.NewMessage{Queue: queue, Payload: payload, Priority: o.Priority, Key: o.Key, HasKey: o.Key != "",
		Delay: o.Delay, MaxAttempts: o.MaxAttempts, UniqueKey: o.UniqueKey, Kind: o.Kind,
		Meta: encodeMeta(messageMeta{TimeoutMS: o.Timeout.Milliseconds()})}
	if o.UniquePeriod > 0 {
		now := time.Now().UnixMicro()
		p := o.UniquePeriod.Microseconds()
		start := now - now%p
		m.UniqueKey = fmt.Sprintf("%s@%d", o.UniqueKey, start)
		m.UniqueExpires = start + p
	}
	for _, st := range o.UniqueStates {
		m.UniqueStates = append(m.UniqueStates, string(st))
	}
	return m, nil
}

func checkPayload(payload []byte) error {
	switch {
	case len(payload) == 0:
		return fmt.Errorf("%w: empty payload", ErrInvalid)
	case len(payload) > MaxMessagePayload:
		return fmt.Errorf("%w: payload is %d bytes, more than %d", ErrInvalid, len(payload), MaxMessagePayload)
	}
	return nil
}

// check validates the options of one message.
func (o EnqueueOptions) check() error {
	switch {
	case o.Delay < 0:
		return fmt.Errorf("%w: negative delay %v", ErrInvalid, o.Delay)
	case o.MaxAttempts < 0:
		return fmt.Errorf("%w: negative attempt limit %d", ErrInvalid, o.MaxAttempts)
	case o.Priority < math.MinInt32 || o.Priority > math.MaxInt32:
		// The column is a 32-bit integer on every backend.
		return fmt.Errorf("%w: priority %d: give a number from %d to %d", ErrInvalid, o.Priority, math.MinInt32, math.MaxInt32)
	case len(o.Key) > 255:
		return fmt.Errorf("%w: key is %d bytes, more than 255", ErrInvalid, len(o.Key))
	case o.Timeout < 0 || (o.Timeout > 0 && o.Timeout < time.Millisecond):
		return fmt.Errorf("%w: timeout %v: give 0 (none) or at least 1ms", ErrInvalid, o.Timeout)
	}
	if err := o.checkUnique(); err != nil {
		return err
	}
	if o.Kind != "" {
		return ValidateKind(o.Kind)
	}
	return nil
}

// checkUnique validates the unique key's options.
func (o EnqueueOptions) checkUnique() error {
	switch {
	case len(o.UniqueKey) > 255:
		return fmt.Errorf("%w: unique key is %d bytes, more than 255", ErrInvalid, len(o.UniqueKey))
	case o.UniquePeriod < 0:
		return fmt.Errorf("%w: negative unique period %v", ErrInvalid, o.UniquePeriod)
	case o.UniquePeriod > 0 && o.UniqueKey == "":
		return fmt.Errorf("%w: a unique period needs a unique key", ErrInvalid)
	case len(o.UniqueStates) > 0 && o.UniqueKey == "":
		return fmt.Errorf("%w: unique states need a unique key", ErrInvalid)
	}
	for _, st := range o.UniqueStates {
		if !slices.Contains(MessageStates, st) {
			return fmt.Errorf("%w: unique state %q: give one of %v", ErrInvalid, st, MessageStates)
		}
	}
	return nil
}

// ValidateKind checks a kind name: like a queue name, 1 to 64 letters,
// digits, '_', '.', ':' or '-'.
func ValidateKind(kind string) error {
	if !queueRE().MatchString(kind) {
		return fmt.Errorf("%w: kind %s: use 1 to 64 letters, digits, '_', '.', ':' or '-'", ErrInvalid, errs.Quote(kind))
	}
	return nil
}

// Enqueue adds one message to a queue and returns its id. Consumers waiting
// on the queue, in any process, wake once it commits.
func (c *Client) Enqueue(ctx context.Context, queue string, payload []byte, opts ...EnqueueOptions) (int64, error) {
	var o EnqueueOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	ids, err := c.EnqueueMany(ctx, queue, []NewMessage{{Payload: payload, EnqueueOptions: o}})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueMany adds messages to a queue in one transaction, all or none.
func (c *Client) EnqueueMany(ctx context.Context, queue string, msgs []NewMessage) ([]int64, error) {
	ids, _, err := c.enqueue(ctx, queue, msgs)
	return ids, err
}

// EnqueueUnique enqueues one message with a unique key (opts.UniqueKey)
// and says whether it was a duplicate: then nothing was added and id is the
// message that holds the key.
func (c *Client) EnqueueUnique(ctx context.Context, queue string, payload []byte, opts EnqueueOptions) (int64, bool, error) {
	if opts.UniqueKey == "" {
		return 0, false, fmt.Errorf("%w: EnqueueUnique needs a unique key", ErrInvalid)
	}
	ids, dups, err := c.enqueue(ctx, queue, []NewMessage{{Payload: payload, EnqueueOptions: opts}})
	if err != nil {
		return 0, false, err
	}
	return ids[0], dups[0], nil
}

// enqueue checks the messages, then inserts them under an enqueue span
// whose trace context they carry.
func (c *Client) enqueue(ctx context.Context, queue string, msgs []NewMessage) (ids []int64, dups []bool, err error) {
	ctx, span, rows, err := c.newMessages(ctx, queue, msgs)
	if err != nil {
		return nil, nil, err
	}
	defer func() { tracing.End(span, err) }()
	return c.mq.Insert(ctx, queue, rows)
}

// newMessages checks messages to enqueue and starts the enqueue's span;
// the rows carry its trace context. The caller ends the span.
func (c *Client) newMessages(ctx context.Context, queue string, msgs []NewMessage) (context.Context, trace.Span, []driver.NewMessage, error) {
	if len(msgs) == 0 {
		return ctx, nil, nil, fmt.Errorf("%w: no message to enqueue", ErrInvalid)
	}
	rows := make([]driver.NewMessage, len(msgs))
	for i, m := range msgs {
		var err error
		if rows[i], err = c.newMessage(queue, m.Payload, m.EnqueueOptions); err != nil {
			return ctx, nil, nil, err
		}
	}
	ctx, span, meta := c.spans.StartEnqueue(ctx, queue, len(rows))
	for i := range rows {
		rows[i].Meta = withTrace(rows[i].Meta, meta)
	}
	return ctx, span, rows, nil
}

// rowQuerier is what EnqueueTx uses, when the caller's transaction has it
// (*sql.Tx does), to read the new id.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// EnqueueTx adds a message inside the caller's transaction, on the same
// database as the client: the message exists if and only if that
// transaction commits. Waiting consumers wake after the commit: at once on
// PostgreSQL (a NOTIFY rides in the transaction, which costs it
// PostgreSQL's notification lock at commit), within a millisecond or so on
// SQLite, and within the consumers' poll interval on MySQL/MariaDB. It
// returns the new id (0 if tx can only execute statements and the backend
// reports ids in rows).
func (c *Client) EnqueueTx(ctx context.Context, tx Execer, queue string, payload []byte, opts ...EnqueueOptions) (int64, error) {
	var o EnqueueOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	ids, err := c.EnqueueManyTx(ctx, tx, queue, []NewMessage{{Payload: payload, EnqueueOptions: o}})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// rowsQuerier reads rows: *sql.Tx has it.
type rowsQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// payloadsQuerier reads rows of an id and a payload: the adapters of other
// transaction types (postgres.PgxTx) have it.
type payloadsQuerier interface {
	QueryIDPayloads(ctx context.Context, query string, args ...any) ([]int64, [][]byte, error)
}

// WaitingTx lists the waiting messages (scheduled, ready or retrying) of
// one kind in queue as the caller's transaction sees them, ids and
// payloads in claim order: what the transaction enqueued is there before
// it commits. tx is a *sql.Tx, or a pgx transaction through
// postgres.PgxTx. For tests (the jobtest package) and checks; it reads
// every such message.
func (c *Client) WaitingTx(ctx context.Context, tx Execer, queue, kind string) (ids []int64, payloads [][]byte, err error) {
	if err := ValidateQueue(queue); err != nil {
		return nil, nil, err
	}
	if err := ValidateKind(kind); err != nil {
		return nil, nil, err
	}
	q, args := c.drv.Queue().WaitingStatement(queue, kind)
	switch t := tx.(type) {
	case payloadsQuerier:
		return t.QueryIDPayloads(ctx, q, args...)
	case rowsQuerier:
		rows, err := t.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, nil, fmt.Errorf("baton: waiting messages: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var p []byte
			if err := rows.Scan(&id, &p); err != nil {
				return nil, nil, fmt.Errorf("baton: waiting messages: %w", err)
			}
			ids, payloads = append(ids, id), append(payloads, p)
		}
		return ids, payloads, rows.Err()
	}
	return nil, nil, fmt.Errorf("%w: %T %w (give a *sql.Tx or postgres.PgxTx)", ErrInvalid, tx, errNoRows)
}

// EnqueueManyTx adds messages inside the caller's transaction, all of them
// if and only if it commits (see EnqueueTx); tx is a *sql.Tx, or a pgx
// transaction through postgres.PgxTx. It returns their ids (0s if tx can
// only execute statements and the backend reports ids in rows). A message
// whose unique key holds is not added: its id is the holder's, and the
// key's row stays locked until tx ends.
func (c *Client) EnqueueManyTx(ctx context.Context, tx Execer, queue string, msgs []NewMessage) ([]int64, error) {
	ids, _, err := c.enqueueTx(ctx, tx, queue, msgs)
	return ids, err
}

// EnqueueUniqueTx is EnqueueUnique in the caller's transaction (see
// EnqueueTx): it enqueues one message with a unique key (opts.UniqueKey)
// and says whether it was a duplicate: then nothing was added and id is
// the message that holds the key.
func (c *Client) EnqueueUniqueTx(ctx context.Context, tx Execer, queue string, payload []byte, opts EnqueueOptions) (int64, bool, error) {
	if opts.UniqueKey == "" {
		return 0, false, fmt.Errorf("%w: EnqueueUniqueTx needs a unique key", ErrInvalid)
	}
	ids, dups, err := c.enqueueTx(ctx, tx, queue, []NewMessage{{Payload: payload, EnqueueOptions: opts}})
	if err != nil {
		return 0, false, err
	}
	return ids[0], dups[0], nil
}

// enqueueTx inserts messages in the caller's transaction and says which
// were duplicates of a unique key's holder.
func (c *Client) enqueueTx(ctx context.Context, tx Execer, queue string, msgs []NewMessage) (ids []int64, dups []bool, err error) {
	ctx, span, rows, err := c.newMessages(ctx, queue, msgs)
	if err != nil {
		return nil, nil, err
	}
	defer func() { tracing.End(span, err) }()
	if !c.mq.Known(queue) {
		// In the caller's transaction: on SQLite it holds the only write
		// lock, so baton's own connection could not register the queue.
		rq, rargs := c.drv.Queue().QueueRegisterStatement(queue)
		if _, err := tx.ExecContext(ctx, rq, rargs...); err != nil {
			return nil, nil, fmt.Errorf("baton: enqueue: register queue: %w", err)
		}
	}
	ids, dups = make([]int64, len(rows)), make([]bool, len(rows))
	for i, m := range rows {
		if ids[i], dups[i], err = c.insertUniqueTx(ctx, tx, queue, m); err != nil {
			return nil, nil, fmt.Errorf("baton: enqueue: %w", err)
		}
	}
	nq, nargs := c.drv.Notifier().NotifyStatement(mq.Channel(queue), "")
	if _, err := tx.ExecContext(ctx, nq, nargs...); err != nil {
		return nil, nil, fmt.Errorf("baton: enqueue: wake-up: %w", err)
	}
	return ids, dups, nil
}

// insertUniqueTx inserts m in the caller's transaction, taking its unique
// key first if it has one: when the key holds, it inserts nothing and
// returns the holder's id, dup true (the key's row stays locked until tx
// ends, so concurrent enqueues of the key wait for it).
func (c *Client) insertUniqueTx(ctx context.Context, tx Execer, queue string, m driver.NewMessage) (id int64, dup bool, err error) {
	if m.UniqueKey == "" {
		id, err = c.insertTx(ctx, tx, m)
		return id, false, err
	}
	st := c.drv.Queue().UniqueStatements(queue, m.UniqueKey, m.UniqueExpires)
	res, err := tx.ExecContext(ctx, st.Insert.Query, st.Insert.Args...)
	if err != nil {
		return 0, false, fmt.Errorf("unique key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, false, err
	} else if n != 1 {
		var holder int64
		var period, over int
		var state string
		if err := scanRow(ctx, tx, st.Get, &holder, &period, &over, &state); err != nil {
			return 0, false, fmt.Errorf("unique key: %w", err)
		}
		if driver.UniqueHolds(period == 1, over == 1, state, m.UniqueStates) {
			return holder, true, nil
		}
	}
	if id, err = c.insertTx(ctx, tx, m); err != nil {
		return 0, false, err
	}
	if id == 0 {
		return 0, false, fmt.Errorf("%w: a unique key in the caller's transaction needs the new id: give a *sql.Tx or postgres.PgxTx", ErrInvalid)
	}
	set := st.Set(id)
	_, err = tx.ExecContext(ctx, set.Query, set.Args...)
	return id, false, err
}

// rowScanner reads one row: the adapters of other transaction types
// (postgres.PgxTx) have it.
type rowScanner interface {
	ScanRow(ctx context.Context, query string, args []any, dest ...any) error
}

// scanRow runs a statement that returns one row in the caller's
// transaction and scans it into dest.
func scanRow(ctx context.Context, tx Execer, st driver.Statement, dest ...any) error {
	switch t := tx.(type) {
	case rowScanner:
		return t.ScanRow(ctx, st.Query, st.Args, dest...)
	case rowQuerier:
		return t.QueryRowContext(ctx, st.Query, st.Args...).Scan(dest...)
	}
	return fmt.Errorf("%w: %T %w (give a *sql.Tx or postgres.PgxTx)", ErrInvalid, tx, errNoRows)
}

// errNoRows: the caller's transaction type can execute statements but not
// read rows.
var errNoRows = errors.New("cannot read rows")

// insertTx inserts one message in the caller's transaction and returns its
// id when the transaction type can say it.
func (c *Client) insertTx(ctx context.Context, tx Execer, m driver.NewMessage) (int64, error) {
	q, args, returnsID := c.drv.Queue().EnqueueStatement(m)
	var id int64
	switch {
	case returnsID:
		err := scanRow(ctx, tx, driver.Statement{Query: q, Args: args}, &id)
		if errors.Is(err, errNoRows) {
			_, err = tx.ExecContext(ctx, q, args...) // an Execer that reads nothing
		}
		return id, err
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	id, _ = res.LastInsertId()
	return id, nil
}

// ClaimOptions qualify a claim.
type ClaimOptions struct {
	// Max is how many messages to claim at most (default 1).
	Max int
	// Wait is how long to wait for a message when none is ready: 0 tries
	// once, Forever waits until ctx ends.
	Wait time.Duration
	// Mode is how the queue hands out messages; every consumer of a queue
	// must use the same mode.
	Mode QueueMode
	// Visibility is the claim's lease (default 30s): unless extended,
	// acknowledged, retried or failed by then, the message goes back to the
	// queue with its attempt counted.
	Visibility time.Duration
	// Kind claims only messages of this kind ("" for any); Parallel mode
	// only (an ordered or per-key queue is served in its order, whatever
	// the kinds).
	Kind string

	// inOrderBatch lets the worker claim the head of an Ordered queue in
	// a batch that it runs one message at a time, in order.
	inOrderBatch bool
}

func (o ClaimOptions) check() error {
	switch {
	case !claimrule.Mode(o.Mode).Valid():
		return fmt.Errorf("%w: unknown queue mode %d", ErrInvalid, o.Mode)
	case o.Kind != "" && o.Mode != Parallel:
		return fmt.Errorf("%w: a kind filter needs parallel mode (%s queues are served in their order)", ErrInvalid, o.Mode)
	case o.Kind != "":
		return ValidateKind(o.Kind)
	}
	return nil
}

// Claim claims up to opts.Max ready messages of a queue for the session,
// in serving order (priority, then time, then id). It returns at once when
// there are some; otherwise it waits up to opts.Wait for one to arrive, and
// returns ErrEmpty if none did.
func (s *Session) Claim(ctx context.Context, queue string, opts ClaimOptions) ([]*Message, error) {
	opts, err := opts.fill(queue)
	if err != nil {
		return nil, err
	}
	if err := s.ls.Check(); err != nil {
		return nil, err
	}
	c := s.c
	if opts.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opts.Wait, ErrEmpty)
		defer cancel()
	}
	var wake chan struct{}
	for {
		c.claimTries.Add(1)
		rows, dueIn, err := c.mq.ClaimKnown(ctx, &s.holds, s.id, queue, claimrule.Mode(opts.Mode), opts.Kind, opts.Visibility, opts.Max)
		if err != nil {
			txn.SettleDeadline(ctx)
			return nil, emptyOr(ctx, fmt.Errorf("baton: claim: %w", err))
		}
		if len(rows) > 0 {
			return s.messages(rows, opts.Mode), nil
		}
		if c.rescuer.Rescue(ctx) {
			continue // a dead worker's messages may be ready now
		}
		if opts.Wait == 0 {
			return nil, ErrEmpty
		}
		if wake == nil {
			// Wait only once registered, and try again right after
			// registering: a message committed between the attempt and
			// the registration is not missed. Claims that find work at
			// once never register (registering can cost a query).
			if err := c.bus.Listening(ctx); err != nil {
				return nil, emptyOr(ctx, err)
			}
			wake = c.queueWaits.Add(queue)
			c.notifyUsers.In()
			defer c.notifyUsers.Out()
			defer c.queueWaits.Remove(queue, wake)
			continue
		}
		if err := s.awaitWork(ctx, wake, dueIn); err != nil {
			return nil, err
		}
	}
}

// fill validates the options of a claim on queue and fills in defaults.
func (o ClaimOptions) fill(queue string) (ClaimOptions, error) {
	if err := ValidateQueue(queue); err != nil {
		return o, err
	}
	if o.Max <= 0 || (o.Mode == Ordered && !o.inOrderBatch) {
		o.Max = 1
	}
	if o.Visibility <= 0 {
		o.Visibility = 30 * time.Second
	}
	return o, o.check()
}

// emptyOr is ErrEmpty when ctx ended because a claim's wait ran out, err
// otherwise.
func emptyOr(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrEmpty) {
		return ErrEmpty
	}
	return err
}

// awaitWork waits for a wake-up of the queue: a notification, the
// client's poll of its waiting consumers (pollQueues), which covers a lost
// one, or the time its next message is due (dueIn, when known).
func (s *Session) awaitWork(ctx context.Context, wake chan struct{}, dueIn time.Duration) error {
	var due <-chan time.Time
	if dueIn > 0 {
		t := time.NewTimer(dueIn)
		defer t.Stop()
		due = t.C
	}
	select {
	case <-wake:
	case <-due:
	case <-s.Done():
		return s.Err()
	case <-ctx.Done():
		return emptyOr(ctx, ctx.Err())
	}
	return nil
}

// pollQueues is the poll of this client's waiting consumers, every
// consumerPoll poll intervals while any waits: one statement for all of
// their queues (QueuesReady), whatever the number of consumers, and a
// wake-up for the consumers of each queue that has a message due. A
// wake-up is a hint (DESIGN, Notifications): this is the path that covers
// a lost one.
func (c *Client) pollQueues(ctx context.Context) error {
	names := c.queueWaits.Names()
	if len(names) == 0 {
		return nil
	}
	c.queuePolls.Add(1)
	ready, err := c.drv.Queue().QueuesReady(ctx, names)
	if err != nil {
		return fmt.Errorf("poll the queues of waiting consumers: %w", err)
	}
	for _, q := range c.queuePoll.due(ready) {
		c.queueWaits.Wake(q)
	}
	return nil
}

// consumerPoll is how many poll intervals apart pollQueues runs: a lost
// wake-up costs a consumer at most that many, as when each waiting Claim
// looked again on its own that often. Every interval cost an idle SQLite
// worker a fifth more CPU: a read after another connection's commit (the
// lease renewal's, every second) reads the pages it changed again.
const consumerPoll = 5

// queuePoll is what pollQueues remembers between its polls: for how many
// polls in a row each queue has had a message due while consumers waited
// on it. A queue that stays so is one whose due messages its consumers may
// not take yet (an ordered queue whose head runs, keys in flight, another
// kind): its consumers are woken on the first poll of such a run and then
// on every pollRetake-th, so that they claim again (in case the end of
// what held them back sent a wake-up that was lost) without claiming on
// every poll for nothing.
type queuePoll struct{ runs map[string]int }

// pollRetake is how many polls apart pollQueues wakes the consumers of a
// queue that stays due while they wait.
const pollRetake = 2

// due takes the queues found due by a poll and returns those whose
// consumers to wake.
func (p *queuePoll) due(ready []string) []string {
	runs := make(map[string]int, len(ready))
	var wake []string
	for _, q := range ready {
		n := p.runs[q] + 1
		runs[q] = n
		if (n-1)%pollRetake == 0 {
			wake = append(wake, q)
		}
	}
	p.runs = runs
	return wake
}

// messages converts claimed rows to Messages in serving order.
func (s *Session) messages(order []*driver.Message, mode QueueMode) []*Message {
	now := time.Now()
	msgs := make([]*Message, len(order))
	for i, m := range order {
		payload, key, event := eventPayload(m.Queue, m.Payload, m.Key)
		msgs[i] = &Message{ID: m.ID, Queue: m.Queue, Payload: payload, Priority: m.Priority, Key: key, meta: decodeMeta(m.Meta),
			Attempt: m.Attempt, MaxAttempts: m.MaxAttempts, LastError: m.LastError, CreatedAt: m.CreatedAt,
			ClaimedUntil: m.ClaimUntil, mode: mode, claimedAt: now, event: event, Kind: m.Kind, sessionID: s.id,
			held: m.ClaimMode == driver.ClaimHeld}
		if m.Errors != "" {
			_ = json.Unmarshal([]byte(m.Errors), &msgs[i].Errors) // best effort: the record is informative
		}
	}
	return msgs
}

// eventPayload puts a message of an event queue in canonical form: the
// payload (see internal/eventjson) and, as its key, the event's primary key.
// Other messages come back as they are, event false.
func eventPayload(queue string, payload []byte, key string) ([]byte, string, bool) {
	if !strings.HasPrefix(queue, eventQueuePrefix) {
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

func (s *Session) claim(m *Message) driver.Claim {
	return driver.Claim{ID: m.ID, SessionID: s.id, Attempt: m.Attempt}
}

// claimOf is the claim m was delivered with.
func claimOf(m *Message) driver.Claim {
	return driver.Claim{ID: m.ID, SessionID: m.sessionID, Attempt: m.Attempt}
}

func notClaimed(m *Message) error {
	return fmt.Errorf("%w: message %d of queue %q", ErrNotClaimed, m.ID, m.Queue)
}

// Ack marks a claimed message done: it moves to the history as completed
// (or is deleted when Retention.Completed is negative). A message cancelled
// while it was claimed (CancelMessage) ends cancelled instead: ErrCancelled.
func (s *Session) Ack(ctx context.Context, m *Message) error {
	n, err := s.c.mq.Complete(ctx, s.id, []driver.Claim{s.claim(m)})
	if err != nil {
		return fmt.Errorf("baton: ack: %w", err)
	}
	s.holds.Settled(s.claim(m))
	if n == 0 {
		// Cancelled while it was claimed: it ends cancelled, if the
		// claim is still this session's.
		if s.cancelled(ctx, m, fmt.Errorf("%w while it was claimed", ErrCancelled)) == nil {
			return fmt.Errorf("%w: message %d of queue %q was cancelled while it was claimed; it ends cancelled", ErrCancelled, m.ID, m.Queue)
		}
		return notClaimed(m)
	}
	s.c.mq.CountFinished(m.Queue, 1, 0)
	return nil
}

// attemptError records the failure of a message's attempt.
func attemptError(m *Message, cause error) driver.AttemptError {
	e := driver.AttemptError{At: time.Now().UTC(), Attempt: m.Attempt}
	var p *panicError
	switch {
	case errors.As(cause, &p):
		e.Error, e.Stack = p.Error(), p.stack
	case cause != nil:
		e.Error = cause.Error()
	}
	return e
}

// panicError is a handler's panic, with the stack where it happened.
type panicError struct {
	value any
	stack string
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// RetryPolicy is the backoff between attempts: Base × 2^(attempt-1), at
// most Max, spread by ±Jitter (a fraction).
type RetryPolicy struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
}

// fill sets the defaults: 1 s base, 10 min at most, ±20% jitter.
func (p *RetryPolicy) fill() {
	if p.Base <= 0 {
		p.Base = time.Second
	}
	if p.Max <= 0 {
		p.Max = 10 * time.Minute
	}
	if p.Jitter == 0 {
		p.Jitter = 0.2
	}
}

func (p RetryPolicy) delay(attempt int) time.Duration {
	d := p.Base
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if p.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + p.Jitter*(2*rand.Float64()-1)))
	}
	return max(d, 0)
}

// Retry gives a claimed message back for another attempt after the
// client's backoff, recording cause; at its attempt limit it goes to the
// dead letters instead. In a Parallel queue it goes to the back of the
// queue; in Ordered and PerKey queues it keeps its place and holds back the
// queue or its key.
func (s *Session) Retry(ctx context.Context, m *Message, cause error) error {
	return s.RetryAfter(ctx, m, s.c.opts.Retry.delay(m.Attempt), cause)
}

// RetryAfter is Retry with an explicit delay. A message that was cancelled
// while it ran ends cancelled instead.
func (s *Session) RetryAfter(ctx context.Context, m *Message, delay time.Duration, cause error) error {
	e, dead := retryError(m, cause)
	if dead {
		return s.finish(ctx, m, driver.MessageDead, &e)
	}
	ok, err := s.c.drv.Relaxed().MessageRetry(ctx, s.claim(m), max(delay, 0), m.mode == Parallel, e)
	if err != nil {
		return fmt.Errorf("baton: retry: %w", err)
	}
	s.holds.Settled(s.claim(m))
	if !ok {
		// Not ours any more, or cancelled: only then can it be finished.
		return s.finish(ctx, m, driver.MessageCancelled, &e)
	}
	if delay <= 0 {
		s.c.mq.Wake(m.Queue)
	}
	return nil
}

// retryError is the record of m's failed attempt, for a retry, and
// whether m is at its attempt limit: then it is a dead letter instead.
func retryError(m *Message, cause error) (e driver.AttemptError, dead bool) {
	e = attemptError(m, cause)
	if m.Attempt >= m.MaxAttempts {
		e.Error = fmt.Sprintf("attempt limit %d reached: %s", m.MaxAttempts, e.Error)
		return e, true
	}
	return e, false
}

// claimedCheck is the error of a call on m that needs a claimed message
// (what names the call), nil when m is one.
func claimedCheck(m *Message, what string) error {
	if m == nil || m.sessionID == "" {
		return fmt.Errorf("%w: %s: not a claimed message", ErrInvalid, what)
	}
	return nil
}

// giveBack returns a claimed message that was never handled to its queue at
// once, keeping its place; the attempt its claim counted is taken back.
func (s *Session) giveBack(ctx context.Context, m *Message) error {
	ok, err := s.c.drv.Relaxed().MessageRelease(ctx, s.claim(m))
	if err == nil {
		s.holds.Settled(s.claim(m))
	}
	if err == nil && !ok {
		err = notClaimed(m)
	}
	s.c.mq.Wake(m.Queue)
	return err
}

// start starts a held claim (Message.held) with a fresh lease of d:
// ErrNotClaimed when it is no longer this session's or was cancelled.
func (s *Session) start(ctx context.Context, m *Message, d time.Duration) error {
	ok, err := s.c.drv.Relaxed().MessageStart(ctx, s.claim(m), int(m.mode), d)
	if err != nil {
		return fmt.Errorf("baton: start: %w", err)
	}
	if !ok {
		return notClaimed(m)
	}
	m.held = false
	m.ClaimedUntil = time.Now().Add(d)
	m.claimedAt = time.Now()
	return nil
}

// Fail sends a claimed message to the dead letters at once.
func (s *Session) Fail(ctx context.Context, m *Message, reason string) error {
	return s.finishDead(ctx, m, errors.New(reason))
}

// finishDead sends a claimed message to the dead letters for cause.
func (s *Session) finishDead(ctx context.Context, m *Message, cause error) error {
	e := attemptError(m, cause)
	return s.finish(ctx, m, driver.MessageDead, &e)
}

// cancelled finishes a claimed message that was cancelled while it ran.
func (s *Session) cancelled(ctx context.Context, m *Message, cause error) error {
	e := attemptError(m, cause)
	return s.finish(ctx, m, driver.MessageCancelled, &e)
}

// finish moves a claimed message to the history in the stored state.
func (s *Session) finish(ctx context.Context, m *Message, state driver.MessageState, e *driver.AttemptError) error {
	ok, err := txn.InTxV(ctx, s.c.drv, func(tx driver.Tx) (bool, error) { return tx.MessageFinish(ctx, s.claim(m), state, e) })
	if err != nil {
		return fmt.Errorf("baton: finish message: %w", err)
	}
	s.holds.Settled(s.claim(m))
	if !ok {
		return notClaimed(m)
	}
	if state == driver.MessageDead {
		s.c.mq.CountFinished(m.Queue, 0, 1)
	}
	// The next message of an ordered queue or of this key may go now.
	s.c.mq.Wake(m.Queue)
	return nil
}

// Extend renews a claim's lease for d from now.
func (s *Session) Extend(ctx context.Context, m *Message, d time.Duration) error {
	ok, err := s.c.drv.Relaxed().MessageExtend(ctx, s.claim(m), d)
	if err != nil {
		return fmt.Errorf("baton: extend: %w", err)
	}
	if !ok {
		return notClaimed(m)
	}
	m.ClaimedUntil = time.Now().Add(d)
	m.claimedAt = time.Now()
	return nil
}

// DeadLetter is a message that reached its attempt limit or failed.
type DeadLetter struct {
	ID          int64
	Queue       string
	Payload     []byte
	Priority    int
	Key         string
	Attempts    int
	MaxAttempts int
	Error       string
	CreatedAt   time.Time
	FailedAt    time.Time
}

// DeadLetters lists a queue's dead letters, oldest first, at most limit
// (default 100).
func (c *Client) DeadLetters(ctx context.Context, queue string, limit int) ([]DeadLetter, error) {
	if err := ValidateQueue(queue); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := txn.InTxV(ctx, c.drv, func(tx driver.Tx) ([]driver.DeadLetter, error) {
		if err := c.mustExist(ctx, tx, queue); err != nil {
			return nil, err
		}
		return tx.DeadList(ctx, queue, limit)
	})
	if err != nil {
		return nil, err
	}
	out := make([]DeadLetter, len(rows))
	for i, d := range rows {
		payload, key, _ := eventPayload(d.Queue, d.Payload, d.Key)
		out[i] = DeadLetter{ID: d.ID, Queue: d.Queue, Payload: payload, Priority: d.Priority, Key: key,
			Attempts: d.Attempt, MaxAttempts: d.MaxAttempts, Error: d.LastError, CreatedAt: d.CreatedAt, FailedAt: d.FailedAt}
	}
	return out, nil
}

func (c *Client) mustExist(ctx context.Context, tx driver.Tx, queue string) error {
	ok, err := tx.QueueExists(ctx, queue)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %q", ErrUnknownQueue, queue)
	}
	return err
}

// Redrive moves every dead letter of a queue back to it, with its attempts
// reset, and returns how many.
func (c *Client) Redrive(ctx context.Context, queue string) (int, error) {
	if err := ValidateQueue(queue); err != nil {
		return 0, err
	}
	total := 0
	for {
		n, err := txn.InTxV(ctx, c.drv, func(tx driver.Tx) (int, error) {
			if err := c.mustExist(ctx, tx, queue); err != nil {
				return 0, err
			}
			return tx.DeadRedrive(ctx, queue)
		})
		if err != nil {
			return total, err
		}
		total += n
		if n == 0 {
			break
		}
	}
	if total > 0 {
		c.mq.Wake(queue)
	}
	return total, nil
}

// PurgeDead deletes every dead letter of a queue and returns how many.
func (c *Client) PurgeDead(ctx context.Context, queue string) (int, error) {
	if err := ValidateQueue(queue); err != nil {
		return 0, err
	}
	n, err := txn.InTxV(ctx, c.drv, func(tx driver.Tx) (int, error) {
		if err := c.mustExist(ctx, tx, queue); err != nil {
			return 0, err
		}
		return tx.DeadPurge(ctx, queue)
	})
	return n, err
}

// QueueStats are the counts of one queue.
type QueueStats struct {
	Queue     string `json:"queue"`
	Ready     int64  `json:"ready"`     // claimable now
	Scheduled int64  `json:"scheduled"` // due later, never attempted yet
	Retrying  int64  `json:"retrying"`  // waiting out the backoff after a failed attempt
	Claimed   int64  `json:"claimed"`   // in flight (running)
	Dead      int64  `json:"dead"`
	// Completed and Cancelled count the history kept
	// (Options.Retention).
	Completed int64 `json:"completed"`
	Cancelled int64 `json:"cancelled"`
	// OldestReady is how long the oldest claimable message has waited
	// (nanoseconds in JSON); over 10,000 ready messages, the oldest of the
	// first 10,000 in claim order.
	OldestReady time.Duration `json:"oldest_ready_ns"`
	// Estimated: a state holds more than 10,000 messages; its count is the
	// database planner's estimate (PostgreSQL, MySQL/MariaDB), so that
	// stats cost the same for a queue of millions. SQLite counts exactly.
	Estimated bool `json:"estimated,omitempty"`
	// Paused: the queue is paused (PauseQueue); its messages wait.
	Paused bool `json:"paused,omitempty"`
	// Throughput is messages finished (acknowledged or dead-lettered) per
	// second over the last five minutes or so, as processes report them
	// (every few seconds).
	Throughput float64 `json:"throughput"`
}

// Unfinished is how many of the queue's messages are not finished yet:
// ready, scheduled, retrying and claimed.
func (s QueueStats) Unfinished() int64 { return s.Ready + s.Scheduled + s.Retrying + s.Claimed }

// Stats returns the counts of a queue; ErrUnknownQueue if nothing was ever
// enqueued to it.
func (c *Client) Stats(ctx context.Context, queue string) (QueueStats, error) {
	if err := ValidateQueue(queue); err != nil {
		return QueueStats{}, err
	}
	st, err := txn.InTxV(ctx, c.drv, func(tx driver.Tx) (driver.QueueStats, error) {
		if err := c.mustExist(ctx, tx, queue); err != nil {
			return driver.QueueStats{}, err
		}
		return tx.QueueStats(ctx, queue)
	})
	if err != nil {
		return QueueStats{}, err
	}
	out := QueueStats{Queue: queue, Ready: st.Ready, Scheduled: st.Scheduled, Retrying: st.Retrying, Claimed: st.Claimed,
		Dead: st.Dead, Completed: st.Completed, Cancelled: st.Cancelled,
		OldestReady: st.OldestReady, Estimated: st.Estimated, Paused: st.Paused}
	if st.Window > 0 {
		out.Throughput = float64(st.RecentAcked+st.RecentDead) / st.Window.Seconds()
	}
	return out, nil
}

// Queues lists every queue.
func (c *Client) Queues(ctx context.Context) ([]string, error) {
	return txn.InTxV(ctx, c.drv, func(tx driver.Tx) ([]string, error) { return tx.QueueList(ctx) })
}

// MessageState names a state of a message's life (see MessageStates).
type MessageState string

// MessageInfo is one message as monitoring shows it; its JSON is the same
// on every backend.
type MessageInfo struct {
	ID    int64        `json:"id"`
	Queue string       `json:"queue"`
	Kind  string       `json:"kind,omitempty"`
	State MessageState `json:"state"`
	// Payload is in JSON as text (payload) when it is UTF-8, otherwise in
	// base64 (payload_base64).
	Payload     []byte `json:"-"`
	Priority    int    `json:"priority"`
	Key         string `json:"key,omitempty"`
	Attempt     int    `json:"attempt"` // attempts made (the running one included)
	MaxAttempts int    `json:"max_attempts"`
	LastError   string `json:"last_error,omitempty"`
	// Errors are the records of its failed attempts, oldest first.
	Errors    []AttemptError `json:"errors,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	RunAt     time.Time      `json:"run_at,omitzero"` // when it is (or was) due; waiting and running messages
	// ClaimedBy is the session handling it and ClaimedUntil when that
	// claim runs out unless renewed (running messages only).
	ClaimedBy    string    `json:"claimed_by,omitempty"`
	ClaimedUntil time.Time `json:"claimed_until,omitzero"`
	// CancelRequested: a running message was cancelled; its handler is
	// being stopped.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// FinishedAt is when a finished message finished.
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// Messages lists up to limit (1 to 1000) messages of a queue in one state
// from the position after ("" for the start; the second result of an
// earlier call): ready and running ones in the order workers claim them
// (priority, then age), scheduled and retrying ones by due time, finished
// ones newest first. It returns the position
// after the last message listed, "" when there is no more. Pages are read
// along an index: a page deep in a queue of millions costs what the first
// one does. ListMessages lists across queues, states and kinds.
func (c *Client) Messages(ctx context.Context, queue string, state MessageState, after string, limit int) ([]MessageInfo, string, error) {
	if err := ValidateQueue(queue); err != nil {
		return nil, "", err
	}
	if _, err := ParseMessageState(string(state)); err != nil {
		return nil, "", err
	}
	if limit < 1 || limit > 1000 {
		return nil, "", fmt.Errorf("%w: limit %d: give 1 to 1000", ErrInvalid, limit)
	}
	if err := txn.Retrying(ctx, c.drv, func() error { return c.mustExist(ctx, c.drv.NoTx(), queue) }); err != nil {
		return nil, "", err
	}
	return c.listOne(ctx, segment{queue, state}, "", after, limit)
}

// PauseQueue pauses a queue for every process: its messages stay, waiting
// and running ones alike, but no claim takes one until ResumeQueue. Running
// handlers finish; a message whose claim raced the pause goes back to the
// queue unstarted, once its worker's process hears of the pause (a
// notification). ErrUnknownQueue if nothing was ever enqueued to it.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	return c.pause(ctx, queue, true)
}

// ResumeQueue resumes a paused queue; its consumers wake at once.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	if err := c.pause(ctx, queue, false); err != nil {
		return err
	}
	c.mq.Wake(queue)
	return nil
}

func (c *Client) pause(ctx context.Context, queue string, paused bool) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	found, err := txn.InTxV(ctx, c.drv, func(tx driver.Tx) (bool, error) { return tx.QueuePause(ctx, queue, paused) })
	if err := pauseResult(queue, found, err); err != nil {
		return err
	}
	c.workers.SetPaused(queue, paused)
	c.announce(pauseChannel, queue, "baton: announcing a queue's pause or resumption", "queue", queue)
	return nil
}

// pauseChannel is the internal channel on which a queue's pause and
// resumption are announced (the payload is the queue), so that every
// process's workers stop starting the messages whose claims raced it.
const pauseChannel = bus.Pause

// RetryNow makes a waiting message (delayed, or backing off before a retry)
// due at once. ErrRunning while it is being handled, ErrNoMessage when the
// queue has no such message.
func (c *Client) RetryNow(ctx context.Context, queue string, id int64) error {
	if err := c.onWaiting(ctx, queue, id, driver.QueueTx.MessageRetryNow); err != nil {
		return err
	}
	c.mq.Wake(queue)
	return nil
}

// DeleteMessage deletes a waiting message. ErrRunning while it is being
// handled, ErrNoMessage when the queue has no such message.
func (c *Client) DeleteMessage(ctx context.Context, queue string, id int64) error {
	return c.onWaiting(ctx, queue, id, driver.QueueTx.MessageDeleteWaiting)
}

func (c *Client) onWaiting(ctx context.Context, queue string, id int64, op func(driver.QueueTx, context.Context, string, int64) (bool, driver.MessageState, error)) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	var done bool
	var state driver.MessageState
	err := txn.InTx(ctx, c.drv, func(tx driver.Tx) error {
		var err error
		done, state, err = op(tx, ctx, queue, id)
		return err
	})
	return onWaitingResult(queue, id, done, state, err)
}
