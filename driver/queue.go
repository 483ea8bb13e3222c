package driver

import (
	"context"
	"database/sql"
	"slices"
	"time"
)

// Queue is the queue slice of a backend, outside any transaction (QueueTx
// has the statements inside one, CallerQueueTx those in the program's).
type Queue interface {
	// QueuesReady returns which of queues (registered, not paused) have
	// a waiting message due now, outside any transaction, whatever the
	// mode or kind of their consumers: a consumer it wakes may still find
	// nothing it may claim. It is the poll of a client's waiting consumers
	// (one statement for all of them, every five poll intervals while any
	// waits), so it reads at most one index entry per queue that has one
	// due.
	QueuesReady(ctx context.Context, queues []string) ([]string, error)

	// CallerQueueTx returns the queue control statements that run in the
	// program's own transaction c.
	CallerQueueTx(c CallerStatements) CallerQueueTx

	// QueueRegisterStatement registers a queue inside the caller's
	// transaction.
	QueueRegisterStatement(name string) (query string, args []any)

	// EnqueueStatement is the statement that inserts a message inside the
	// caller's transaction, with its arguments; returnsID says whether it
	// returns the new id as a row (otherwise: the result's LastInsertId).
	EnqueueStatement(m NewMessage) (query string, args []any, returnsID bool)

	// UniqueStatements are the statements that reserve the unique key of
	// queue (expiring at expiresAt, microseconds; 0 for none) inside the
	// caller's transaction.
	UniqueStatements(queue, key string, expiresAt int64) UniqueStatements

	// WaitingStatement is the statement that lists the waiting messages of
	// a kind in a queue inside the caller's transaction: rows of id and
	// payload, in claim order.
	WaitingStatement(queue, kind string) (query string, args []any)

	// CompleteStatements are the statements that complete a claim inside
	// the caller's transaction: to the history when keep is set, deleted
	// otherwise. The last one affects one row when the claim was current,
	// none otherwise.
	CompleteStatements(c Claim, keep bool) []Statement

	// MessageInsertUnique enqueues a message with a unique key nobody
	// holds in one statement, outside any transaction: it inserts m
	// (m.UniqueKey set, for a registered queue) and takes its key when the
	// key is new; inserted is false, with nothing done, when the key
	// exists: whether it still holds is then UniqueReserve's to decide.
	MessageInsertUnique(ctx context.Context, m NewMessage) (id int64, inserted bool, err error)
}

// CallerStatements runs statements in the program's own transaction: a
// *sql.Tx, or an adapter of another driver's (postgres.PgxTx). ScanRow
// reports no row with an error that matches sql.ErrNoRows.
type CallerStatements interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	ScanRow(ctx context.Context, query string, args []any, dest ...any) error
}

// CallerQueueTx is the part of QueueTx that runs in the program's own
// transaction (Queue.CallerQueueTx): the client's ...Tx variants of the
// queue control calls and of a claimed message's operations.
type CallerQueueTx interface {
	QueueExists(ctx context.Context, name string) (bool, error)
	QueuePause(ctx context.Context, name string, paused bool) (bool, error)
	// QueueSetLimits is LimitsTx's.
	QueueSetLimits(ctx context.Context, name, limits string) (bool, error)
	MessageRetryNow(ctx context.Context, queue string, id int64) (done bool, state MessageState, err error)
	MessageDelete(ctx context.Context, queue string, id int64) (done bool, state MessageState, err error)
	MessageCancel(ctx context.Context, id int64) (state MessageState, err error)
	// MessageGet is QueueTx's (a cancelled message's event reads it).
	MessageGet(ctx context.Context, id int64) (Message, bool, error)
	DeadPurge(ctx context.Context, queue string) (int, error)
	// DeadRedriveAll re-drives every dead letter of queue at once (in
	// batches DeadRedrive reads their ids first, which the caller's
	// transaction cannot): it marks them, copies the marked ones to the
	// queue, ready now, and deletes them, so that a message that dies
	// meanwhile is neither copied nor deleted.
	DeadRedriveAll(ctx context.Context, queue string) (int, error)
	// The claimed message's operations (QueueTx's).
	MessageRetry(ctx context.Context, c Claim, delay time.Duration, moveBack bool, e AttemptError) (bool, error)
	MessageFinish(ctx context.Context, c Claim, state MessageState, e *AttemptError) (bool, error)
	MessageExtend(ctx context.Context, c Claim, d time.Duration) (bool, error)
	// Dependencies and workflows of messages enqueued in that transaction.
	DepsTx
	DataTx
}

// Message states as stored: a message waits (ready, or scheduled when its
// run-at is in the future) or runs in the messages table; once finished it
// is in the history.
type MessageState string

// The states.
const (
	MessageReady     MessageState = "R"
	MessageClaimed   MessageState = "C"
	MessageCompleted MessageState = "K"
	MessageCancelled MessageState = "X"
	MessageDead      MessageState = "D"
)

// AttemptError is the record of one failed attempt, kept with the message
// as an element of its JSON array of errors.
type AttemptError struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	// Stack is the handler's stack when the attempt panicked.
	Stack string `json:"stack,omitempty"`
	// Snoozed: the attempt did not fail but was put off (MessageSnooze),
	// its attempt taken back; Error says for how long.
	Snoozed bool `json:"snoozed,omitempty"`
}

// ListFilter selects a page of waiting or running messages of one queue
// and state (MessageReady or MessageClaimed), in claim order; messages not
// yet due (Due false) by due time, their position's OrderAt a run_at.
type ListFilter struct {
	Queue string
	State MessageState
	// Due: only those whose run_at has come (true) or not (false); nil: both.
	Due *bool
	// Retried: only those attempted before (true) or never (false); nil: both.
	Retried *bool
	// Kind: only this kind ("" for any).
	Kind  string
	After ListPos
	Limit int
	DataFilter
}

// Message is one row of the messages table.
type Message struct {
	ID          int64
	Queue       string
	Payload     []byte
	Priority    int
	Key         string // "" for none
	HasKey      bool
	RunAt       time.Time
	OrderAt     time.Time
	Attempt     int
	MaxAttempts int
	State       MessageState
	ClaimedBy   string
	ClaimMode   int
	ClaimUntil  time.Time
	LastError   string
	CreatedAt   time.Time
	// Meta is the message's metadata, a JSON object ("" for none).
	Meta string
	// Kind names the message's worker ("" for none).
	Kind string
	// Errors is the JSON array of AttemptError of its failed attempts
	// ("" for none).
	Errors string
	// CancelRequested: a running message was asked to stop.
	CancelRequested bool
	// FinishedAt is when a finished message (in the history) finished.
	FinishedAt time.Time
}

// ListPos is a position in claim order.
type ListPos struct {
	Priority int
	OrderAt  int64 // microseconds
	ID       int64
}

// NewMessage is what MessageInsert stores.
type NewMessage struct {
	Queue       string
	Payload     []byte
	Priority    int
	Key         string
	HasKey      bool
	Delay       time.Duration
	MaxAttempts int
	// Meta is the message's metadata, a JSON object ("" for none).
	Meta string
	// Kind names the message's worker ("" for none).
	Kind string
	// UniqueKey, when set, is the unique key the message must reserve
	// (its period's start appended when it has one), held until
	// UniqueExpires (microseconds; 0: while the message exists).
	UniqueKey     string
	UniqueExpires int64
	// UniqueStates are the states in which the key's holder keeps it (see
	// QueueTx.UniqueReserve); empty for the default.
	UniqueStates []string
}

// Claim identifies one claim of a message: the message, the session and
// the attempt (a message claimed again is a new claim, which a stale
// handle of the old one cannot acknowledge).
type Claim struct {
	ID        int64
	SessionID string
	Attempt   int
}

// ClaimHeld is the claim mode of a message a worker claimed behind the
// head of an in-order batch (Ordered mode) and has not started: the
// attempt its claim counted is provisional. MessageStart makes it a
// running claim; a recovery (its session ended, its lease ran out) gives
// it back with that attempt taken back (MessageRelease), since no run of
// it started.
const ClaimHeld = 9

// ClaimRef identifies a claim for recovery.
type ClaimRef struct {
	ID          int64
	SessionID   string
	Attempt     int
	MaxAttempts int
	Mode        int
}

// DeadLetter is one row of the dead letters.
type DeadLetter struct {
	ID          int64
	Queue       string
	Payload     []byte
	Priority    int
	Key         string
	HasKey      bool
	Attempt     int
	MaxAttempts int
	LastError   string
	CreatedAt   time.Time
	FailedAt    time.Time
	Meta        string
}

// QueueStats are the counts of one queue.
type QueueStats struct {
	// Ready, Scheduled (due later, never attempted), Retrying (due later,
	// after a failed attempt), Claimed, and in the history Dead, Completed
	// and Cancelled.
	Ready, Scheduled, Retrying, Claimed, Dead, Completed, Cancelled int64
	// Estimated: a state had more entries than the driver counts; its
	// count is the planner's estimate.
	Estimated bool
	// Paused: no claim takes the queue's messages.
	Paused bool
	// Limits are the queue's limits as stored ("" for none).
	Limits      string
	OldestReady time.Duration
	// RecentAcked and RecentDead count the messages finished in Window.
	RecentAcked, RecentDead int64
	Window                  time.Duration
}

// QueueTx is the queue part of Tx: one statement per method.
type QueueTx interface {
	DepsTx
	DepsRead
	QueueRegister(ctx context.Context, name string) error
	QueueExists(ctx context.Context, name string) (bool, error)
	QueueList(ctx context.Context) ([]string, error)
	// QueueLock serializes ordered and per-key claims of one queue.
	QueueLock(ctx context.Context, name string) error
	MessageInsert(ctx context.Context, m NewMessage) (int64, error)
	// MessageInsertMany inserts messages of one queue, none with a unique
	// key, in as few statements as the backend allows; the ids are in the
	// messages' order and rise in that order (the serving order of
	// messages enqueued together).
	MessageInsertMany(ctx context.Context, queue string, ms []NewMessage) ([]int64, error)
	// UniqueReserve reserves a unique key of the queue for a message about
	// to be inserted (expiresAt: microseconds, 0 for no period), or, when
	// the key still holds, returns the message holding it (reserved
	// false). A key holds until its period is over and, within it, while
	// its message is in one of states (public state names: "scheduled",
	// "ready", "retrying", "running", "completed", "cancelled", "dead");
	// with no states, whatever became of the message if the key has a
	// period, and while the message waits or runs if not. Its row stays
	// locked until the transaction ends.
	UniqueReserve(ctx context.Context, queue, key string, expiresAt int64, states []string) (holder int64, reserved bool, err error)
	// UniqueSet names the message that holds a reserved key.
	UniqueSet(ctx context.Context, queue, key string, id, expiresAt int64) error
	// UniquePurge deletes keys whose period is over.
	UniquePurge(ctx context.Context) (int, error)
	// MessageRetryNow makes a waiting message of the queue due now (one in
	// its history, dead, completed or cancelled, moves back ready now
	// under its id, with one more attempt if it had used them all), and
	// MessageDelete deletes a waiting one or one in the history; the
	// state is the message's when nothing was done ("" when there is no
	// such message; MessageClaimed when it runs).
	MessageRetryNow(ctx context.Context, queue string, id int64) (done bool, state MessageState, err error)
	MessageDelete(ctx context.Context, queue string, id int64) (done bool, state MessageState, err error)
	// MessagesBulk applies a bulk action to messages of queue by id: ones
	// listed waiting or running (finished false), or in the history
	// (finished true). A message that has left that table since, or that
	// has started running (delete, retry), is skipped; cancel asks a
	// running one to stop, as MessageCancel does; retry makes a waiting
	// one due now and moves a finished one back as MessageRetryNow does.
	// It returns how many it acted on and the running ones asked to stop.
	MessagesBulk(ctx context.Context, action BulkAction, queue string, ids []int64, finished bool) (n int, running []int64, err error)
	// QueuePause pauses or resumes a queue; false when it does not exist.
	QueuePause(ctx context.Context, name string, paused bool) (bool, error)
	// QueuePaused reports whether a queue is paused (false for an unknown
	// one).
	QueuePaused(ctx context.Context, name string) (bool, error)
	// ClaimCandidates lists up to limit ready, due messages of the kind (""
	// for any) in serving order, skipping rows other transactions have
	// locked. Of a paused queue it lists none, or ClaimIDs claims none of
	// them (MySQL: the pause is read by the claim, as a skip-locked read of
	// the queue row would lock it). internal/claimrule states the rules;
	// the conformance suite checks every dialect against it.
	ClaimCandidates(ctx context.Context, queue, kind string, limit int) ([]int64, error)
	// ClaimCandidatesPerKey lists the heads of keys with nothing in flight
	// and messages without a key; the caller holds QueueLock.
	ClaimCandidatesPerKey(ctx context.Context, queue string, limit int) ([]int64, error)
	ClaimInFlight(ctx context.Context, queue string) (int, error)
	// ClaimHeads returns the next limit messages of the queue in serving
	// order, due or not, and how long until each is due (zero or less: due).
	ClaimHeads(ctx context.Context, queue string, limit int) (ids []int64, dueIn []time.Duration, err error)
	// ClaimParallel claims up to limit ready messages in serving order in
	// one statement, when the dialect can; ok is false when it cannot (the
	// engine then uses ClaimCandidates and ClaimIDs).
	// kind ("" for any) restricts it to messages of that kind.
	ClaimParallel(ctx context.Context, queue, kind, sessionID string, lease time.Duration, limit int) (ms []Message, ok bool, err error)
	// ClaimIDs claims ready messages for a session and counts the attempt.
	ClaimIDs(ctx context.Context, sessionID string, mode int, lease time.Duration, ids []int64) (int, error)
	MessageByIDs(ctx context.Context, ids []int64) ([]Message, error)
	// QueueNextDue returns how long until the next delayed waiting message
	// (enqueued with a delay, or retried later) is due; ok is false when
	// none waits or the queue is paused. A message enqueued to run at once
	// does not count: it is due already, and the claim that did not take it
	// waits for a wake-up or the poll whatever this returns.
	QueueNextDue(ctx context.Context, queue string) (time.Duration, bool, error)
	MessageAck(ctx context.Context, c Claim) (bool, error)
	// MessageAckMany acknowledges claims of one session in one statement
	// and returns how many it deleted.
	MessageAckMany(ctx context.Context, sessionID string, claims []Claim) (int, error)
	// MessageRetry gives a claim back for another attempt after delay,
	// recording the attempt's error; false when the claim is not current or
	// its message was asked to stop (cancel: MessageFinish it instead).
	MessageRetry(ctx context.Context, c Claim, delay time.Duration, moveBack bool, e AttemptError) (bool, error)
	MessageExtend(ctx context.Context, c Claim, d time.Duration) (bool, error)
	// MessageRelease gives back a claim that was never handled, taking
	// back the attempt it counted; false when the claim is not current or
	// its message was asked to stop (cancel: MessageFinish it instead).
	MessageRelease(ctx context.Context, c Claim) (bool, error)
	// MessageSnooze gives a claim back to run after delay, taking back the
	// attempt it counted and recording e (a snooze, not a failure: the
	// last error stays); false when the claim is not current or its
	// message was asked to stop (cancel: MessageFinish it instead).
	MessageSnooze(ctx context.Context, c Claim, delay time.Duration, moveBack bool, e AttemptError) (bool, error)
	// MessageStart starts a held claim (ClaimHeld): its claim mode becomes
	// mode and its lease runs for d from now; false when the claim is not
	// current or its message was asked to stop.
	MessageStart(ctx context.Context, c Claim, mode int, d time.Duration) (bool, error)
	// MessageFinish moves a claimed message to the history in the state
	// (MessageCompleted, MessageCancelled or MessageDead), recording e as
	// its attempt's error when not nil. On a Tx that runs statements on
	// their own it runs in a transaction of its own.
	MessageFinish(ctx context.Context, c Claim, state MessageState, e *AttemptError) (bool, error)
	// MessageFinishMany moves claims of one session to the history as
	// completed, in as few statements as the backend allows, and returns
	// how many it moved; like MessageFinish, atomically.
	MessageFinishMany(ctx context.Context, sessionID string, claims []Claim) (int, error)
	// MessageCancel cancels a message: a waiting one moves to the history
	// as cancelled; a running one is flagged (its worker stops it). It
	// returns the state the message had ("" when there is none); a
	// finished message is left as it is.
	MessageCancel(ctx context.Context, id int64) (state MessageState, err error)
	// MessageGet reads a message by id, waiting, running or finished.
	MessageGet(ctx context.Context, id int64) (m Message, found bool, err error)
	// HistoryList lists a queue's finished messages of one state, newest
	// first, with ids below before (0: from the newest), of the kind
	// ("" for any).
	// d selects by user data.
	HistoryList(ctx context.Context, queue string, state MessageState, kind string, d DataFilter, before int64, limit int) ([]Message, error)
	// HistoryPrune deletes up to limit finished messages of the state that
	// finished longer than age ago, oldest first, and says how many.
	HistoryPrune(ctx context.Context, state MessageState, age time.Duration, limit int) (int, error)
	ClaimsStale(ctx context.Context, limit int) ([]ClaimRef, error)
	ClaimsBySession(ctx context.Context, sessionID string) ([]ClaimRef, error)
	DeadList(ctx context.Context, queue string, limit int) ([]DeadLetter, error)
	// MessageList lists a queue's messages of one state (MessageReady or
	// MessageClaimed) in claim order (priority, order_at, id), after the
	// filter's position (zero: from the start).
	MessageList(ctx context.Context, f ListFilter) ([]Message, error)
	// DeadRedrive moves up to 500 dead letters back to the queue.
	DeadRedrive(ctx context.Context, queue string) (int, error)
	DeadPurge(ctx context.Context, queue string) (int, error)
	// QueueDeleteMessages deletes every message of a queue, whatever its
	// state (dead letters excepted: DeadPurge).
	QueueDeleteMessages(ctx context.Context, queue string) (int, error)
	QueueStats(ctx context.Context, queue string) (QueueStats, error)
	// ThroughputAdd adds a process's counts to the current minute's
	// roll-up row.
	ThroughputAdd(ctx context.Context, queue string, c Throughput) error
	// ScheduleEnsure creates a schedule's row with its last tick
	// (microseconds) unless it exists; ScheduleLast reads the last tick.
	ScheduleEnsure(ctx context.Context, name string, lastTick int64) error
	ScheduleLast(ctx context.Context, name string) (lastTick int64, found bool, err error)
	// ScheduleAdvance moves a schedule's last tick forward to tick; false
	// when it is there already (another process enqueued that tick).
	ScheduleAdvance(ctx context.Context, name string, tick int64) (bool, error)
	// ThroughputPurge deletes roll-up rows older than a day and an hour.
	ThroughputPurge(ctx context.Context) error
	DataTx
	LimitsTx
	// ThroughputBacklog records a queue's backlog in the current minute's
	// roll-up row (a later sample of the minute replaces it);
	// ThroughputSampled counts the queues whose backlog the current
	// minute has.
	ThroughputBacklog(ctx context.Context, queue string, ready, scheduled, retrying int64) error
	ThroughputSampled(ctx context.Context) (int, error)
	// ThroughputHistory reads a queue's roll-up rows of the last minutes
	// (the current one included), oldest first, and the current minute.
	ThroughputHistory(ctx context.Context, queue string, minutes int) (rows []RollupRow, now int64, err error)
}

// BulkAction is what QueueTx.MessagesBulk does to each message.
type BulkAction string

// The bulk actions.
const (
	BulkCancel BulkAction = "cancel"
	BulkDelete BulkAction = "delete"
	BulkRetry  BulkAction = "retry"
)

// UniqueHolds is QueueTx.UniqueReserve's rule: whether a unique key still
// holds, given whether it has a period and whether that is over, its
// message's state by public name ("" when the message is gone) and the
// states the colliding enqueue names.
func UniqueHolds(period, over bool, state string, states []string) bool {
	switch {
	case over:
		return false
	case len(states) > 0:
		return slices.Contains(states, state)
	case period:
		return true
	}
	return state == "scheduled" || state == "ready" || state == "retrying" || state == "running"
}

// UniqueStatements are the statements that reserve a unique key inside the
// caller's transaction, as QueueTx.UniqueReserve and UniqueSet do in
// baton's: Insert takes a new key (one row affected) or changes nothing;
// Get reads an existing key's holder, whether it has a period, whether
// that is over and the holder's state (locking the key's row); Set names
// the message that holds the key.
type UniqueStatements struct {
	Insert, Get Statement
	Set         func(id int64) Statement
}
