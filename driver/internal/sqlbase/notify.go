package sqlbase

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// GapWait is how long a notification id missing below the highest id seen
// is looked for again before it is taken as rolled back. Ids are allocated
// before commit on MySQL: a notification that commits after a later one
// fills its gap late, and must still be delivered.
const GapWait = 10 * time.Second

// maxGap bounds how many missing ids one jump records; a larger jump is an
// allocator skipping ahead, not transactions in flight.
const maxGap = 10000

// NotifyReader reads committed notifications of a table-backed backend
// (notify_max, notify_read) after a cursor, without skipping
// the ones that commit late. It is used by one goroutine at a time.
type NotifyReader struct {
	DB     *DB
	mu     sync.Mutex
	cursor int64
	gaps   map[int64]time.Time
	ready  bool
}

// Start places the cursor after the newest notification: a listener gets
// what commits from now on.
func (r *NotifyReader) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var max sql.NullInt64
	if err := r.DB.RowNamed(ctx, nil, "notify_max").Scan(&max); err != nil {
		return fmt.Errorf("notify_max: %w", err)
	}
	r.cursor, r.gaps, r.ready = max.Int64, map[int64]time.Time{}, true
	return nil
}

// Read delivers every notification committed since the last call. The
// rows after the cursor and the missing ids that committed since are read
// together (notify_read), from one snapshot and in id order: a sender's
// notification that committed late is delivered before its sender's next
// one, which it committed before.
func (r *NotifyReader) Read(ctx context.Context, deliver func(channel, payload string)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ready {
		return nil
	}
	for {
		n, err := r.readBatch(ctx, deliver)
		if err != nil || n < notifyBatch {
			return err
		}
	}
}

// notifyBatch is how many rows after the cursor notify_read returns at
// most: a full batch means more may follow.
const notifyBatch = 1000

// readBatch runs notify_read once, delivers what it returns and says how
// many of its rows were after the cursor.
func (r *NotifyReader) readBatch(ctx context.Context, deliver func(channel, payload string)) (int, error) {
	gaps := r.gapIDs()
	q := expandList(r.DB.Q("notify_read"), r.DB.D.Numbered, 2, len(gaps))
	rows, err := (&Tx{db: r.DB}).listed(ctx, q, len(gaps)).QueryContext(ctx, q, append([]any{r.cursor}, int64Args(gaps)...)...)
	if err != nil {
		return 0, fmt.Errorf("notify_read: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var ch, payload string
		if err := rows.Scan(&id, &ch, &payload); err != nil {
			return 0, err
		}
		send, after := r.place(id)
		if after {
			n++
		}
		if send {
			deliver(ch, payload)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("notify_read: %w", err)
	}
	return n, nil
}

// place takes notification id into account: after the cursor, the cursor
// moves to it (recording the ids it skips as missing); at or below it, it
// is a missing id committed late, or one delivered already. send says
// whether to deliver it, after whether it was after the cursor.
func (r *NotifyReader) place(id int64) (send, after bool) {
	if id <= r.cursor {
		_, missing := r.gaps[id]
		delete(r.gaps, id)
		return missing, false
	}
	r.recordGaps(id)
	r.cursor = id
	return true, true
}

// recordGaps records the ids between the cursor and id as missing, unless
// the jump is too large to be transactions in flight.
func (r *NotifyReader) recordGaps(id int64) {
	if id <= r.cursor+1 || id-r.cursor > maxGap {
		return
	}
	now := time.Now()
	for g := r.cursor + 1; g < id; g++ {
		r.gaps[g] = now
	}
}

// gapIDs forgets the missing ids looked for longer than GapWait and
// returns up to 500 of the others.
func (r *NotifyReader) gapIDs() []int64 {
	ids := make([]int64, 0, min(len(r.gaps), 500))
	for id, since := range r.gaps {
		if time.Since(since) > GapWait {
			delete(r.gaps, id)
			continue
		}
		if len(ids) < 500 {
			ids = append(ids, id)
		}
	}
	return ids
}

// Notify inserts a notification in its own transaction.
func (db *DB) Notify(ctx context.Context, channel, payload string) error {
	_, err := db.ExecNamed(ctx, nil, "notify_insert", channel, payload)
	return err
}

// NotifyStatement implements driver.Driver for table-backed backends.
func (db *DB) NotifyStatement(channel, payload string) (string, []any) {
	return db.Q("notify_insert"), []any{channel, payload}
}

// Maintain implements driver.Driver: notifications older than a minute are
// deleted (listeners read them within a poll interval), and, where the
// dialect has lock_waits, the marks of
// contenders whose sessions are gone.
func (db *DB) Maintain(ctx context.Context) error {
	if _, ok := db.D.Queries["notify_purge"]; ok {
		if _, err := db.ExecNamed(ctx, nil, "notify_purge", int64(time.Minute/time.Microsecond)); err != nil {
			return err
		}
	}
	if _, ok := db.D.Queries["turnstile_waits_purge"]; ok {
		if _, err := db.ExecNamed(ctx, nil, "turnstile_waits_purge"); err != nil {
			return err
		}
	}
	return nil
}

// NotifyPump reads a client's notifications when poked, while it is on, on
// a goroutine of its own (so that a wake-up never waits for the read).
type NotifyPump struct {
	reader  NotifyReader
	deliver func(channel, payload string)
	on      atomic.Bool
	failed  atomic.Bool // the last read failed
	poke    chan struct{}
	quit    chan struct{}
	done    chan struct{}
}

// StartPump starts a pump that hands notifications to deliver.
func StartPump(db *DB, deliver func(channel, payload string)) *NotifyPump {
	p := &NotifyPump{reader: NotifyReader{DB: db}, deliver: deliver,
		poke: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *NotifyPump) run() {
	defer close(p.done)
	for {
		select {
		case <-p.quit:
			return
		case <-p.poke:
		}
		if !p.on.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p.failed.Store(p.reader.Read(ctx, p.deliver) != nil)
		cancel()
	}
}

// SetOn turns reading on (from the newest notification on) or off.
func (p *NotifyPump) SetOn(on bool) {
	if on == p.on.Load() {
		return
	}
	if on {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = p.reader.Start(ctx)
		cancel()
	}
	p.on.Store(on)
}

// On reports whether the pump reads.
func (p *NotifyPump) On() bool { return p.on.Load() }

// Failed reports whether the pump's last read failed: what it was to
// deliver is still to be read.
func (p *NotifyPump) Failed() bool { return p.failed.Load() }

// Poke asks for a read; it never blocks.
func (p *NotifyPump) Poke() {
	if !p.on.Load() {
		return
	}
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// Stop ends the pump.
func (p *NotifyPump) Stop() {
	close(p.quit)
	<-p.done
}
