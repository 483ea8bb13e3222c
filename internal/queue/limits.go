package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/bus"
	"github.com/batonhq/baton/internal/claimrule"
	"github.com/batonhq/baton/internal/errs"
	"github.com/batonhq/baton/internal/txn"
)

// Limits are a queue's concurrency and rate limits (baton.QueueLimits,
// which converts to and from it); the zero value is none. Stored as its
// JSON in the queue's row (migration 002).
type Limits struct {
	Concurrency          int           `json:"concurrency,omitempty"`
	PartitionBy          string        `json:"partition_by,omitempty"`
	PartitionConcurrency int           `json:"partition_concurrency,omitempty"`
	Rate                 int           `json:"rate,omitempty"`
	PartitionRate        int           `json:"partition_rate,omitempty"`
	Per                  time.Duration `json:"per_ns,omitempty"`
}

// The bounds of the limits.
const (
	// MinPer and MaxPer bound a rate's period; the rate is counted in
	// buckets of Per/rateBuckets.
	MinPer = time.Millisecond
	MaxPer = 7 * 24 * time.Hour
	// maxArgName bounds the name of a partition's argument.
	maxArgName = 128
	// maxScan bounds how many waiting messages one limited claim reads
	// looking for partitions that are not full.
	maxScan = 5000
	// rateBuckets is how many buckets a rate's period spans.
	rateBuckets = 16
)

// Check validates the limits; the error wraps errs.ErrInvalid.
func (l Limits) Check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: queue limits: %s", errs.ErrInvalid, fmt.Sprintf(format, a...))
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"concurrency", l.Concurrency}, {"partition concurrency", l.PartitionConcurrency},
		{"rate", l.Rate}, {"partition rate", l.PartitionRate}} {
		if v.n < 0 || v.n > math.MaxInt32 {
			return bad("%s %d: give a number from 0 (none) to %d", v.name, v.n, math.MaxInt32)
		}
	}
	switch by := l.PartitionBy; {
	case by == "" || by == "key" || by == "kind":
	case strings.HasPrefix(by, "arg:"):
		name := strings.TrimPrefix(by, "arg:")
		if name == "" || len(name) > maxArgName {
			return bad("partition by %q: name a top-level field of the payload (1 to %d bytes) after arg:", by, maxArgName)
		}
	default:
		return bad("partition by %q: give key, kind or arg:NAME", by)
	}
	partitioned := l.PartitionConcurrency > 0 || l.PartitionRate > 0
	switch {
	case l.PartitionBy == "" && partitioned:
		return bad("a partition concurrency or rate needs a partition (key, kind or arg:NAME)")
	case l.PartitionBy != "" && !partitioned:
		return bad("partition by %q without a partition concurrency or rate", l.PartitionBy)
	case (l.Rate > 0 || l.PartitionRate > 0) && (l.Per < MinPer || l.Per > MaxPer):
		return bad("a rate's period %v: give one from %v to %v", l.Per, MinPer, MaxPer)
	case l.Rate == 0 && l.PartitionRate == 0 && l.Per != 0:
		return bad("a period (%v) without a rate", l.Per)
	}
	return nil
}

// IsZero reports whether the limits are none.
func (l Limits) IsZero() bool { return l == Limits{} }

// rated reports whether a rate applies.
func (l Limits) rated() bool { return l.Rate > 0 || l.PartitionRate > 0 }

// partition is the partition of a message: its key, its kind or the
// value (JSON) of its payload's top-level field; "" for none (a message
// without a key, a payload that is not an object or lacks the field).
// A value longer than 64 bytes is replaced by its hash.
func (l Limits) partition(r driver.LimitedRow) string {
	var p string
	switch {
	case l.PartitionBy == "key":
		p = r.Key
	case l.PartitionBy == "kind":
		p = r.Kind
	case strings.HasPrefix(l.PartitionBy, "arg:"):
		p = argValue(r.Payload, strings.TrimPrefix(l.PartitionBy, "arg:"))
	}
	if len(p) > 64 {
		h := sha256.Sum256([]byte(p))
		p = "~" + hex.EncodeToString(h[:])[:63]
	}
	return p
}

// argValue is the compact JSON of a payload's top-level field ("" when
// there is none).
func argValue(payload []byte, name string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(payload, &obj) != nil {
		return ""
	}
	v, ok := obj[name]
	if !ok {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return ""
	}
	return b.String()
}

// limitState is what this process remembers of a queue's limits, as a
// speed-up only (the SQL decides): whether it has any, and whether the
// last limited claim here left it at a concurrency limit (its settles then
// wake the consumers of other processes too).
type limitState struct {
	limited, full atomic.Bool
	// direct: its limits have no partitions (ClaimLimitedOne).
	direct atomic.Bool
}

// limitOf is the queue's limitState, made on first use.
func (e *Engine) limitOf(queue string) *limitState {
	if v, ok := e.limited.Load(queue); ok {
		return v.(*limitState)
	}
	v, _ := e.limited.LoadOrStore(queue, &limitState{})
	return v.(*limitState)
}

// ParseLimits reads stored limits ("" is none).
func ParseLimits(s string) (Limits, error) {
	var l Limits
	if s == "" {
		return l, nil
	}
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return l, fmt.Errorf("baton: a queue's stored limits %q: %w", s, err)
	}
	return l, nil
}

// SetLimits sets a queue's limits for every process (the zero value
// clears them); ErrUnknownQueue when the queue does not exist. The
// queue's consumers wake everywhere: raised or cleared limits may let
// them claim.
func (e *Engine) SetLimits(ctx context.Context, queue string, l Limits) error {
	stored, err := storedLimits(l)
	if err != nil {
		return err
	}
	var found bool
	err = txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		var err error
		found, err = tx.QueueSetLimits(ctx, queue, stored)
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("baton: set queue limits: %w", err)
	case !found:
		return fmt.Errorf("%w: %q", errs.ErrUnknownQueue, queue)
	}
	st := e.limitOf(queue)
	st.direct.Store(l.PartitionBy == "")
	st.limited.Store(!l.IsZero())
	e.Wake(queue)
	return nil
}

// storedLimits checks l and returns what the queue's row stores: its
// JSON ("" for none).
func storedLimits(l Limits) (string, error) {
	if err := l.Check(); err != nil || l.IsZero() {
		return "", err
	}
	b, err := json.Marshal(l)
	return string(b), err
}

// SetLimits sets a queue's limits in the caller's transaction; its
// consumers everywhere wake once it commits. Which queues have limits is
// learned by the claims (the SQL refuses a limited queue to a process
// that did not know).
func (c Caller) SetLimits(ctx context.Context, queue string, l Limits) error {
	stored, err := storedLimits(l)
	if err != nil {
		return err
	}
	found, err := c.q.QueueSetLimits(ctx, queue, stored)
	switch {
	case err != nil:
		return fmt.Errorf("baton: set queue limits: %w", err)
	case !found:
		return fmt.Errorf("%w: %q", errs.ErrUnknownQueue, queue)
	}
	return c.Notify(ctx, bus.QueueChannel(queue), "")
}

// Limits reads a queue's limits; ErrUnknownQueue when the queue does not
// exist.
func (e *Engine) Limits(ctx context.Context, queue string) (Limits, error) {
	s, found, err := e.drv.NoTx().QueueLimits(ctx, queue)
	switch {
	case err != nil:
		return Limits{}, fmt.Errorf("baton: queue limits: %w", err)
	case !found:
		return Limits{}, fmt.Errorf("%w: %q", errs.ErrUnknownQueue, queue)
	}
	return ParseLimits(s)
}

// Settled tells the engine that a claim of the queue was settled in this
// process. A slot of a limited queue is free: this process's consumers
// wake, and those of other processes too (a notification) when the last
// claim here left the queue at its concurrency limit; otherwise their
// poll finds the slot. Sending a notification at every settle would cost
// a drain whose limits are not reached a statement per acknowledgement.
func (e *Engine) Settled(queue string) {
	v, ok := e.limited.Load(queue)
	if !ok || !v.(*limitState).limited.Load() {
		return
	}
	if v.(*limitState).full.Load() {
		e.Wake(queue)
		return
	}
	e.cfg.Waits.Wake(queue)
}

// Claim claims what the mode allows now for the session, in serving order;
// with nothing, dueIn is how long until the next message is due, or a
// rate limit lets one start (0: unknown). A parallel claim of a queue with
// limits takes the limited path (claimLimited). Which queues have limits
// is remembered as a speed-up only: the one-statement claims refuse a
// limited queue in their SQL, and an empty parallel claim reads whether
// the queue has limits.
func (e *Engine) Claim(ctx context.Context, sessionID, queue string, mode claimrule.Mode, kind string, visibility time.Duration, limit int) ([]*driver.Message, time.Duration, error) {
	c := claim{e: e, session: sessionID, queue: queue, mode: mode, kind: kind, visibility: visibility, limit: limit}
	if mode != claimrule.Parallel {
		return e.claimAny(ctx, c)
	}
	st := e.limitOf(queue)
	if st.limited.Load() {
		return e.claimLimited(ctx, c)
	}
	ms, dueIn, err := e.claimAny(ctx, c)
	if err != nil || len(ms) > 0 {
		return ms, dueIn, err
	}
	s, _, err := e.drv.NoTx().QueueLimits(ctx, queue)
	if err != nil {
		return nil, 0, err
	}
	st.limited.Store(s != "")
	if s == "" {
		return ms, dueIn, nil
	}
	return e.claimLimited(ctx, c)
}

// claimLimited claims what the queue's limits allow: when they have no
// partitions, in one round trip where the dialect can (ClaimLimitedOne: a
// routine), else in a short transaction (SQLite); otherwise, and when
// that found no room (it does not say why, nor until when), in a
// transaction under the queue's row lock.
func (e *Engine) claimLimited(ctx context.Context, c claim) ([]*driver.Message, time.Duration, error) {
	st := e.limitOf(c.queue)
	if st.direct.Load() {
		ms, ok, err := e.drv.Relaxed().ClaimLimitedOne(ctx, c.queue, c.kind, c.session, c.visibility, c.limit)
		if err == nil && !ok {
			err = txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
				ms, _, err = tx.ClaimLimitedOne(ctx, c.queue, c.kind, c.session, c.visibility, c.limit)
				return err
			})
		}
		if err != nil {
			return nil, 0, err
		}
		if len(ms) > 0 {
			// Fewer than asked: perhaps at the limit (the settles then
			// wake the other processes too).
			st.full.Store(len(ms) < c.limit)
			return ServingOrder(ms), 0, nil
		}
	}
	var out []driver.Message
	var dueIn time.Duration
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		var err error
		out, dueIn, err = c.limitedIn(ctx, tx)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return ServingOrder(out), dueIn, nil
}

// limitedIn is claimLimited's transaction: the queue's row locked (every
// limited claim of the queue, in any process, waits for it), it counts
// what runs and what started in the rate's window, reads the waiting
// messages in serving order (page by page, so that a full partition does
// not hide the others behind it) and claims those every limit allows.
func (c claim) limitedIn(ctx context.Context, tx driver.Tx) ([]driver.Message, time.Duration, error) {
	stored, now, found, err := tx.QueueLimitsLock(ctx, c.queue)
	if err != nil || !found {
		return nil, 0, err
	}
	l, err := ParseLimits(stored)
	if err != nil {
		return nil, 0, err
	}
	c.e.limitOf(c.queue).direct.Store(l.PartitionBy == "")
	if l.IsZero() {
		// Cleared meanwhile: an ordinary claim, in this transaction.
		c.e.limitOf(c.queue).limited.Store(false)
		return c.in(ctx, tx)
	}
	return c.limitedUnder(ctx, tx, l, now)
}

// limitedUnder is limitedIn's claim under the row lock, of a queue with
// limits l, at now (microseconds, the database clock).
func (c claim) limitedUnder(ctx context.Context, tx driver.Tx, l Limits, now int64) ([]driver.Message, time.Duration, error) {
	var err error
	byArg := strings.HasPrefix(l.PartitionBy, "arg:")
	partitioned := l.PartitionBy != ""

	// What runs now, in all and per partition.
	var flight []driver.LimitedRow
	inFlight := 0
	if partitioned {
		if flight, err = tx.ClaimLimitedFlight(ctx, c.queue, byArg); err != nil {
			return nil, 0, err
		}
		inFlight = len(flight)
	} else if l.Concurrency > 0 {
		if inFlight, err = tx.ClaimInFlight(ctx, c.queue); err != nil {
			return nil, 0, err
		}
	}
	w := startWindow{now: now, per: l.Per.Microseconds()}
	if l.rated() {
		buckets, err := tx.QueueStarts(ctx, c.queue)
		if err != nil {
			return nil, 0, err
		}
		w.count(buckets)
		if w.stale {
			if err := tx.QueueStartsPrune(ctx, c.queue, w.now-w.per); err != nil {
				return nil, 0, err
			}
		}
	}

	budget := c.limit
	if l.Concurrency > 0 {
		budget = min(budget, l.Concurrency-inFlight)
	}
	rateBound := false
	if l.Rate > 0 && l.Rate-int(w.total) < budget {
		budget, rateBound = l.Rate-int(w.total), true
	}
	st := c.e.limitOf(c.queue)
	if budget <= 0 {
		st.full.Store(l.Concurrency > 0 && inFlight >= l.Concurrency)
		return nil, c.limitedDue(ctx, tx, w, rateBound), nil
	}
	var ms []driver.Message
	parts := map[int64]string{}
	if partitioned {
		ids, partRateBound, full, err := c.partitionPick(ctx, tx, l, flight, w, budget, parts)
		st.full.Store(full)
		if err != nil || len(ids) == 0 {
			return nil, c.limitedDue(ctx, tx, w, rateBound || partRateBound), err
		}
		if ms, err = c.claimLimitedIDs(ctx, tx, ids); err != nil {
			return nil, 0, err
		}
	} else {
		direct, ok, err := tx.ClaimLimitedDirect(ctx, c.queue, c.kind, c.session, c.visibility, budget)
		if err != nil {
			return nil, 0, err
		}
		ms = direct
		if !ok {
			ids, err := tx.ClaimCandidates(ctx, c.queue, c.kind, budget)
			if err != nil {
				return nil, 0, err
			}
			if ms, err = c.claimLimitedIDs(ctx, tx, ids); err != nil {
				return nil, 0, err
			}
		}
	}
	if l.Concurrency > 0 && inFlight+len(ms) >= l.Concurrency {
		st.full.Store(true)
	} else if !partitioned {
		st.full.Store(false)
	}
	if len(ms) == 0 {
		return nil, c.limitedDue(ctx, tx, w, rateBound), nil
	}
	if l.rated() {
		// Each claim is a start, counted in the bucket of now (the
		// clock read under the row lock) under its partition ("" when
		// only the whole queue has a rate).
		started := map[string]int{}
		for _, m := range ms {
			p := ""
			if l.PartitionRate > 0 {
				p = parts[m.ID]
			}
			started[p]++
		}
		end := w.bucketEnd()
		for p, n := range started {
			if err := tx.QueueStartsAdd(ctx, c.queue, p, end, n); err != nil {
				return nil, 0, err
			}
		}
	}
	return ms, 0, nil
}

// partitionPick reads the waiting messages in serving order, page by
// page (so that a full partition does not hide the others behind it, up
// to maxScan messages), and picks up to budget that their partition's
// limits allow, recording each one's partition in parts; partRateBound
// says a partition's rate held one back, full that a partition is at its
// concurrency limit.
func (c claim) partitionPick(ctx context.Context, tx driver.Tx, l Limits, flight []driver.LimitedRow, w startWindow, budget int, parts map[int64]string) (ids []int64, partRateBound, full bool, err error) {
	byArg := strings.HasPrefix(l.PartitionBy, "arg:")
	running := map[string]int{}
	for _, r := range flight {
		running[l.partition(r)]++
	}
	picked := map[string]int{}
	page := max(2*budget, 100)
	after := driver.ListPos{Priority: math.MinInt32, OrderAt: math.MinInt64, ID: math.MinInt64}
	for scanned := 0; scanned < maxScan; {
		rows, err := tx.ClaimLimitedPage(ctx, c.queue, c.kind, byArg, after, page)
		if err != nil {
			return nil, false, false, err
		}
		for _, r := range rows {
			p := l.partition(r)
			switch {
			case l.PartitionConcurrency > 0 && running[p]+picked[p] >= l.PartitionConcurrency:
				full = true
				continue
			case l.PartitionRate > 0 && int(w.parts[p])+picked[p] >= l.PartitionRate:
				partRateBound = true
				continue
			}
			ids = append(ids, r.ID)
			parts[r.ID] = p
			picked[p]++
			full = full || l.PartitionConcurrency > 0 && running[p]+picked[p] >= l.PartitionConcurrency
			if len(ids) == budget {
				return ids, partRateBound, full, nil
			}
		}
		scanned += len(rows)
		if len(rows) < page {
			break
		}
		after = rows[len(rows)-1].Pos
	}
	return ids, partRateBound, full, nil
}

// claimLimitedIDs claims the ids (ClaimLimited) and returns the messages
// the session now holds.
func (c claim) claimLimitedIDs(ctx context.Context, tx driver.Tx, ids []int64) ([]driver.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if _, err := tx.ClaimIDs(ctx, c.session, driver.ClaimLimited, c.visibility, ids); err != nil {
		return nil, err
	}
	return c.held(ctx, tx, ids)
}

// limitedDue is how long a limited claim that took nothing waits at most:
// until the rate's window lets a start in when a rate held it back, or
// the next delayed message is due; 0 (a wake-up: a settle of the queue's
// messages wakes its consumers) when neither is known.
func (c claim) limitedDue(ctx context.Context, tx driver.Tx, w startWindow, rateBound bool) time.Duration {
	var due time.Duration
	if rateBound {
		due = w.next
	}
	if d, ok, err := tx.QueueNextDue(ctx, c.queue); err == nil && ok && d > 0 && (due == 0 || d < due) {
		due = d
	}
	return due
}

// startWindow counts the starts of a rate-limited queue in the window of
// length per that ends now (microseconds, the database clock read under
// the queue's row lock).
//
// Starts are counted in buckets of per/16 (bucketEnd: the bucket of now).
// A claim counts every bucket that overlaps the window (now-per, now],
// that is whose end is after now-per, and takes a start only while that
// count is below N. Then no window of length per ever holds more than N
// starts. Proof: take any window W = (s, s+per] and, of the starts in W,
// the one admitted last (claims of the queue are serialized by its row
// lock); it was admitted at t, its own stamp, t in W, so t-per <= s. Each
// earlier start in W has a stamp t' > s >= t-per and lies in a bucket
// that ends after t' (a bucket (e-per/16, e] holds the stamps up to e), so
// its bucket ended after t-per and was counted at t (stamps need not be
// monotonic: a later bucket counts as well). So at t the count was at
// least the number of earlier starts in W, and the claim kept it within N
// with its own starts. Counting whole buckets is conservative: a start
// is counted for up to per + per/16, so a rate that is the bottleneck
// reaches at least 16/17 of N starts per period.
type startWindow struct {
	now, per int64
	// total counts the starts in the window, parts those per partition.
	total int64
	parts map[string]int64
	// next is how long until the earliest counted bucket leaves the
	// window (0: none counted).
	next time.Duration
	// stale: a bucket can no longer overlap any window (to prune).
	stale bool
}

// count adds the buckets that overlap the window.
func (w *startWindow) count(buckets []driver.StartBucket) {
	w.parts = map[string]int64{}
	for _, b := range buckets {
		if b.End <= w.now-w.per {
			w.stale = true
			continue
		}
		w.total += b.N
		w.parts[b.Part] += b.N
		// The bucket overlaps the windows ending before b.End+per.
		d := time.Duration(b.End+w.per-w.now)*time.Microsecond + time.Millisecond
		if w.next == 0 || d < w.next {
			w.next = d
		}
	}
}

// bucketEnd is the end of the bucket of now.
func (w *startWindow) bucketEnd() int64 {
	width := max(w.per/rateBuckets, 1)
	return (w.now/width + 1) * width
}
