package baton

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/claimrule"
	"github.com/batonhq/baton/internal/events"
	mq "github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/tracing"
)

// MaxMessagePayload is the largest message payload, in bytes.
const MaxMessagePayload = mq.MaxPayload

// DefaultMaxAttempts is a message's attempt limit when none is given.
const DefaultMaxAttempts = mq.DefaultMaxAttempts

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

// ValidateQueue checks a queue name: 1 to 64 letters, digits, '_', '.',
// ':' or '-'.
func ValidateQueue(q string) error { return mq.ValidateName("queue", q) }

// EnqueueOptions qualify one message.
type EnqueueOptions struct {
	// Delay before the message may be claimed; not negative.
	Delay time.Duration
	// RunAt is when the message may be claimed, instead of a Delay (not
	// both); a time in the past (or zero, with no Delay) is now. It is
	// read on this process's clock: baton turns it into a delay from this
	// clock's now, which the database adds to its own clock, so that the
	// message is due when this process's clock reads RunAt whatever the
	// skew between the clocks (MessageInfo.RunAt, the database's time,
	// shows it shifted by that skew).
	RunAt time.Time
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
	// (with ErrDuplicate from Enqueue and EnqueueTx). At most 255 bytes.
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
	// AllowUnknownKind enqueues a Kind that Options.Workers does not know
	// (a kind another program works); without it such an enqueue is
	// refused with ErrUnknownKind. Without Options.Workers every kind is
	// allowed.
	AllowUnknownKind bool
	// After lists messages (by id: waiting, running or still in the
	// history) that must complete before this one may run: until then it
	// is pending, and no claim takes it. A parent that completed already
	// counts at once; one that is unknown (never was, or pruned from the
	// history) makes the enqueue fail with ErrInvalid, inserting nothing.
	// A parent that dies, is cancelled or deleted cancels this message
	// (and, in turn, its own dependants), unless AfterAnyOutcome is set.
	// At most 1000 parents; not with UniqueKey. See docs/guarantees.md,
	// "Dependencies, workflows and batches".
	After []int64
	// AfterAnyOutcome: the message runs once every parent in After has
	// finished, whatever became of it (completed, dead, cancelled or
	// deleted), and its handler reads their outcomes with Message.Batch
	// (a batch's callback).
	AfterAnyOutcome bool
	// Metadata is the message's user metadata: a JSON object of at most
	// MaxMetadata bytes, kept through retries and in the history, shown
	// by Message and the dashboard, changed by UpdateMessage (nil: none).
	Metadata json.RawMessage
	// Tags label the message, a set (duplicates dropped, sorted): at most
	// MaxTags, each like a queue name (1 to 64 letters, digits, '_', '.',
	// ':' or '-'). ListOptions.Tag lists the messages that carry one.
	Tags []string
	// UniqueByArgs makes the message unique by its arguments, as
	// UniqueKey does by a key given (not both): the key is derived from
	// the kind and the payload, its JSON in canonical form (objects' keys
	// sorted), hashed (SHA-256), so equal arguments of one kind collide
	// and different ones do not. For typed jobs (JobMessage), the fields
	// of the arguments' struct tagged `baton:"unique"`, if any, are the
	// arguments that count. UniquePeriod and UniqueStates apply.
	UniqueByArgs bool
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
	// Metadata and Tags are the message's user metadata and tags
	// (EnqueueOptions), as they were when it was claimed.
	Metadata json.RawMessage
	Tags     []string
	// ClaimedUntil is when the claim's lease runs out unless extended.
	ClaimedUntil time.Time

	mode      QueueMode
	sessionID string    // the claim's session
	claimedAt time.Time // local clock
	// claimBegan is when the worker's claim that brought it began (local
	// clock): a claim that began after a pause was known saw the queue
	// resumed (pausedQueues.givesBack).
	claimBegan time.Time
	meta       mq.Meta // the enqueuer's trace context, the handler timeout
	event      bool    // Payload is an event in canonical form
	// held: claimed behind the head of a worker's in-order batch and not
	// started (driver.ClaimHeld); Session.start starts it.
	held bool
	// retry is its kind's retry policy (KindOptions.Retry; nil: the
	// client's).
	retry func(*Message) time.Duration
	// completedTx: CompleteTx completed it in the caller's transaction,
	// which sent its event (if that transaction rolls back, the
	// worker's acknowledgement completes it).
	completedTx bool
	// output is what the handler recorded (SetOutput), JSON; nil: none.
	output json.RawMessage
}

// newMessage checks one message to enqueue and converts it to a row.
func newMessage(queue string, payload []byte, o EnqueueOptions) (driver.NewMessage, error) {
	return mq.NewMessage(queue, payload, mq.Options[MessageState](o))
}

// check validates the options of one message.
func (o EnqueueOptions) check() error { return mq.Options[MessageState](o).Check() }

// ValidateKind checks a kind name: like a queue name, 1 to 64 letters,
// digits, '_', '.', ':' or '-'.
func ValidateKind(kind string) error { return mq.ValidateName("kind", kind) }

// Enqueue adds one message to a queue and returns its id. Consumers waiting
// on the queue, in any process, wake once it commits. When the message's
// unique key holds (EnqueueOptions.UniqueKey), nothing is added: the id is
// the holder's, with ErrDuplicate.
func (c *Client) Enqueue(ctx context.Context, queue string, payload []byte, opts ...EnqueueOptions) (int64, error) {
	return mq.First(c.enqueue(ctx, nil, queue, []NewMessage{{Payload: payload, EnqueueOptions: mq.Optional(opts)}}))
}

// EnqueueMany adds messages to a queue in one transaction, all or none. A
// message whose unique key holds is not added: its id is the holder's.
func (c *Client) EnqueueMany(ctx context.Context, queue string, msgs []NewMessage) ([]int64, error) {
	ids, _, err := c.enqueue(ctx, nil, queue, msgs)
	return ids, err
}

// enqueue checks the messages, then inserts them (in the caller's
// transaction tx, if not nil) under an enqueue span whose trace context
// they carry, and says which were duplicates of a unique key's holder.
func (c *Client) enqueue(ctx context.Context, tx Execer, queue string, msgs []NewMessage) (ids []int64, dups []bool, err error) {
	rows, err := newMessages(queue, msgs)
	if err == nil {
		err = c.checkKinds(msgs)
	}
	if err != nil {
		return nil, nil, err
	}
	ctx, span, meta := c.spans.StartEnqueue(ctx, queue, len(rows))
	defer func() { tracing.End(span, err) }()
	for i := range rows {
		rows[i].Meta = mq.WithTrace(rows[i].Meta, meta)
	}
	if hasAfter(msgs) {
		return c.enqueueAfter(ctx, tx, msgs, rows)
	}
	if tx != nil {
		return c.mq.InsertTx(ctx, tx, queue, rows)
	}
	return c.mq.Insert(ctx, queue, rows)
}

// newMessages checks messages to enqueue and converts them to rows.
func newMessages(queue string, msgs []NewMessage) ([]driver.NewMessage, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: no message to enqueue", ErrInvalid)
	}
	rows := make([]driver.NewMessage, len(msgs))
	for i, m := range msgs {
		var err error
		if rows[i], err = newMessage(queue, m.Payload, m.EnqueueOptions); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// EnqueueTx adds a message inside the caller's transaction, on the same
// database as the client: the message exists if and only if that
// transaction commits. Waiting consumers wake after the commit: at once on
// PostgreSQL (a NOTIFY rides in the transaction, which costs it
// PostgreSQL's notification lock at commit), within a millisecond or so on
// SQLite, and within the consumers' poll interval on MySQL/MariaDB. It
// returns the new id (0 if tx can only execute statements and the backend
// reports ids in rows). When the message's unique key holds, nothing is
// added: the id is the holder's, with ErrDuplicate, and the key's row
// stays locked until tx ends.
func (c *Client) EnqueueTx(ctx context.Context, tx Execer, queue string, payload []byte, opts ...EnqueueOptions) (int64, error) {
	return mq.First(c.enqueue(ctx, tx, queue, []NewMessage{{Payload: payload, EnqueueOptions: mq.Optional(opts)}}))
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
	return c.mq.WaitingTx(ctx, tx, queue, kind)
}

// EnqueueManyTx adds messages inside the caller's transaction, all of them
// if and only if it commits (see EnqueueTx); tx is a *sql.Tx, or a pgx
// transaction through postgres.PgxTx. It returns their ids (0s if tx can
// only execute statements and the backend reports ids in rows). A message
// whose unique key holds is not added: its id is the holder's, and the
// key's row stays locked until tx ends.
func (c *Client) EnqueueManyTx(ctx context.Context, tx Execer, queue string, msgs []NewMessage) ([]int64, error) {
	ids, _, err := c.enqueue(ctx, tx, queue, msgs)
	return ids, err
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
	// aliases are kinds claimed as Kind too (KindOptions.Aliases).
	aliases []string
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
	rows, err := s.c.mq.ClaimWaiting(ctx, &s.holds, s, mq.Request{Session: s.id, Queue: queue, Mode: claimrule.Mode(opts.Mode),
		Kind: opts.Kind, Aliases: opts.aliases, Visibility: opts.Visibility, Max: opts.Max, Wait: opts.Wait})
	if err != nil {
		return nil, err
	}
	return s.messages(rows, opts.Mode), nil
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

// messages converts claimed rows to Messages in serving order.
func (s *Session) messages(order []*driver.Message, mode QueueMode) []*Message {
	now := time.Now()
	msgs := make([]*Message, len(order))
	for i, m := range order {
		payload, key, event := events.Canonical(m.Queue, m.Payload, m.Key)
		msgs[i] = &Message{ID: m.ID, Queue: m.Queue, Payload: payload, Priority: m.Priority, Key: key, meta: mq.DecodeMeta(m.Meta),
			Attempt: m.Attempt, MaxAttempts: m.MaxAttempts, LastError: m.LastError, CreatedAt: m.CreatedAt,
			ClaimedUntil: m.ClaimUntil, mode: mode, claimedAt: now, event: event, Kind: m.Kind, sessionID: s.id,
			held: m.ClaimMode == driver.ClaimHeld}
		msgs[i].Metadata, msgs[i].Tags = msgs[i].meta.Metadata, msgs[i].meta.Tags
		if m.Errors != "" {
			_ = json.Unmarshal([]byte(m.Errors), &msgs[i].Errors) // best effort: the record is informative
		}
	}
	return msgs
}

func (s *Session) claim(m *Message) driver.Claim {
	return driver.Claim{ID: m.ID, SessionID: s.id, Attempt: m.Attempt}
}

// claimOf is the claim m was delivered with.
func claimOf(m *Message) driver.Claim {
	return driver.Claim{ID: m.ID, SessionID: m.sessionID, Attempt: m.Attempt}
}

func notClaimed(m *Message) error { return mq.NotClaimed(m.ID, m.Queue) }

// Ack marks a claimed message done: it moves to the history as completed,
// with the output recorded by SetOutput (or is deleted when
// Retention.Completed is negative). A message cancelled
// while it was claimed (CancelMessage) ends cancelled instead: ErrCancelled.
func (s *Session) Ack(ctx context.Context, m *Message) error {
	done, err := s.c.mq.Ack(ctx, &s.holds, s.claim(m), m.Queue, m.output)
	if err != nil {
		return err
	}
	if done {
		s.c.jobEvent(m, JobCompleted, "")
	} else {
		// Cancelled while it was claimed: it ends cancelled, if the
		// claim is still this session's.
		if s.cancelled(ctx, m, fmt.Errorf("%w while it was claimed", ErrCancelled)) == nil {
			return fmt.Errorf("%w: message %d of queue %q was cancelled while it was claimed; it ends cancelled", ErrCancelled, m.ID, m.Queue)
		}
		return notClaimed(m)
	}
	return nil
}

// attemptError records the failure of a message's attempt.
func attemptError(m *Message, cause error) driver.AttemptError {
	return mq.AttemptError(m.Attempt, cause)
}

// Retry gives a claimed message back for another attempt after the
// retry policy's wait (its kind's, KindOptions.Retry, when a worker of
// WorkJobs claimed it; else the client's, Options.Retry), recording cause; at its attempt limit it goes to the
// dead letters instead. In a Parallel queue it goes to the back of the
// queue; in Ordered and PerKey queues it keeps its place and holds back the
// queue or its key.
func (s *Session) Retry(ctx context.Context, m *Message, cause error) error {
	return s.RetryAfter(ctx, m, s.c.retryDelay(m), cause)
}

// RetryAfter is Retry with an explicit delay. A message that was cancelled
// while it ran ends cancelled instead.
func (s *Session) RetryAfter(ctx context.Context, m *Message, delay time.Duration, cause error) error {
	e, dead := mq.RetryError(m.Attempt, m.MaxAttempts, cause)
	if dead {
		return s.finish(ctx, m, driver.MessageDead, &e)
	}
	ok, err := s.c.mq.Retry(ctx, &s.holds, s.claim(m), m.Queue, delay, m.mode == Parallel, e)
	if ok {
		s.c.jobEvent(m, JobFailed, e.Error)
	}
	if err != nil || ok {
		return err
	}
	// Not ours any more, or cancelled: only then can it be finished.
	return s.finish(ctx, m, driver.MessageCancelled, &e)
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
	return s.c.mq.Release(ctx, &s.holds, s.claim(m), m.Queue)
}

// start starts a held claim (Message.held) with a fresh lease of d:
// ErrNotClaimed when it is no longer this session's or was cancelled.
func (s *Session) start(ctx context.Context, m *Message, d time.Duration) error {
	if err := s.c.mq.Start(ctx, s.claim(m), m.Queue, int(m.mode), d); err != nil {
		return err
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
	err := s.c.mq.Finish(ctx, &s.holds, s.claim(m), m.Queue, state, e)
	if err == nil {
		s.c.jobEvent(m, finishedEvent(state), e.Error)
	}
	return err
}

// Extend renews a claim's lease for d from now.
func (s *Session) Extend(ctx context.Context, m *Message, d time.Duration) error {
	if err := s.c.mq.Extend(ctx, s.claim(m), m.Queue, d); err != nil {
		return err
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
	rows, err := c.mq.DeadLetters(ctx, queue, limit)
	if err != nil {
		return nil, err
	}
	out := make([]DeadLetter, len(rows))
	for i, d := range rows {
		out[i] = DeadLetter{ID: d.ID, Queue: d.Queue, Payload: d.Payload, Priority: d.Priority, Key: d.Key,
			Attempts: d.Attempt, MaxAttempts: d.MaxAttempts, Error: d.LastError, CreatedAt: d.CreatedAt, FailedAt: d.FailedAt}
	}
	return out, nil
}

// Redrive moves every dead letter of a queue back to it under its own id
// (Message finds it waiting again), with its attempts reset, and returns
// how many.
func (c *Client) Redrive(ctx context.Context, queue string) (int, error) {
	if err := ValidateQueue(queue); err != nil {
		return 0, err
	}
	return c.mq.Redrive(ctx, queue)
}

// PurgeDead deletes every dead letter of a queue and returns how many.
func (c *Client) PurgeDead(ctx context.Context, queue string) (int, error) {
	if err := ValidateQueue(queue); err != nil {
		return 0, err
	}
	return c.mq.PurgeDead(ctx, queue)
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
	// Paused: the queue is paused (SetQueuePaused); its messages wait.
	Paused bool `json:"paused,omitempty"`
	// Throughput is messages finished (acknowledged or dead-lettered) per
	// second over the last five minutes or so, as processes report them
	// (every few seconds).
	Throughput float64 `json:"throughput"`
	// Pending counts the messages waiting for their parents
	// (EnqueueOptions.After), at most 10,000.
	Pending int64 `json:"pending"`
	// Limits are the queue's limits (SetQueueLimits); absent from the
	// JSON when it has none.
	Limits QueueLimits `json:"limits,omitzero"`
}

// Unfinished is how many of the queue's messages are not finished yet:
// ready, scheduled, retrying, claimed and pending.
func (s QueueStats) Unfinished() int64 {
	return s.Ready + s.Scheduled + s.Retrying + s.Claimed + s.Pending
}

// Stats returns the counts of a queue; ErrUnknownQueue if nothing was ever
// enqueued to it.
func (c *Client) Stats(ctx context.Context, queue string) (QueueStats, error) {
	if err := ValidateQueue(queue); err != nil {
		return QueueStats{}, err
	}
	st, err := c.mq.Stats(ctx, queue)
	return QueueStats{Queue: st.Queue, Ready: st.Ready, Scheduled: st.Scheduled, Retrying: st.Retrying,
		Claimed: st.Claimed, Dead: st.Dead, Completed: st.Completed, Cancelled: st.Cancelled,
		OldestReady: st.OldestReady, Estimated: st.Estimated, Paused: st.Paused, Throughput: st.Throughput,
		Pending: st.Pending, Limits: QueueLimits(st.Limits)}, err
}

// Queues lists every queue.
func (c *Client) Queues(ctx context.Context) ([]string, error) { return c.mq.Queues(ctx) }

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
	// Metadata and Tags are the message's user metadata and tags
	// (EnqueueOptions, UpdateMessage); Output is what its handler
	// recorded (Message.SetOutput), on a completed message.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Tags     []string        `json:"tags,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
}

// SetQueuePaused pauses (paused true) or resumes a queue for every
// process. A paused queue's messages stay, waiting and running ones alike,
// but no claim takes one until it is resumed. Running handlers finish; a
// message whose claim raced the pause goes back to the queue unstarted,
// once its worker's process hears of the pause (a notification). A
// resumed queue's consumers wake at once. ErrUnknownQueue if nothing was
// ever enqueued to it.
func (c *Client) SetQueuePaused(ctx context.Context, queue string, paused bool) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	if err := c.mq.SetPaused(ctx, queue, paused); err != nil {
		return err
	}
	c.workers.SetPaused(queue, paused)
	c.announce(bus.Pause, queue, "baton: announcing a queue's pause or resumption", "queue", queue)
	if !paused {
		c.mq.Wake(queue)
	}
	return nil
}

// RetryNow makes a waiting message (delayed, or backing off before a retry)
// due at once. A finished message still in the history (dead, completed or
// cancelled) goes back to its queue ready now under the same id, its
// attempts kept: one at its attempt limit gets one more attempt.
// ErrRunning while it is being handled, ErrNoMessage when the queue has no
// such message.
func (c *Client) RetryNow(ctx context.Context, queue string, id int64) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	return c.mq.RetryNow(ctx, queue, id)
}

// DeleteMessage deletes a message that is not running: a waiting one
// (scheduled, ready or retrying) or a finished one still in the history
// (completed, cancelled or dead). Nothing of it is kept, and a unique key
// it held no longer holds by its state (a key with a UniquePeriod and no
// UniqueStates still holds until its period ends). ErrRunning while it is
// being handled (cancel it first), ErrNoMessage when the queue has no such
// message.
func (c *Client) DeleteMessage(ctx context.Context, queue string, id int64) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	return c.mq.Delete(ctx, queue, id)
}
