package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/claimrule"
	"github.com/batonhq/baton/internal/jobevents"
	"github.com/batonhq/baton/internal/txn"
)

// Holds is what one session knows it holds: the claims its calls of Claim
// delivered and it has not settled yet, and those calls in flight.
//
// A claim that committed but whose reply was lost (the connection dropped
// during the call: a failover, a network blip, a proxy restart) leaves
// messages claimed by the session that no caller received. They would stay
// claimed until the claim's visibility runs out and then count an attempt
// that never ran. Once a claim fails, the session's next statements settle
// the unknown (Engine.Settle): every claim of the session that it does not
// know it holds goes back to its queue at once, as a claim that never
// started (its attempt taken back, no error recorded).
type Holds struct {
	mu       sync.Mutex
	held     map[int64]int // message id -> attempt of its claim
	claiming int           // calls of Claim in flight
	claims   uint64        // calls of Claim begun
	unsure   bool          // a claim failed: its outcome is unknown
	settling bool          // a Settle runs
	pruneAt  int           // a Settle prunes held once it has this many
}

// pruneFloor is the size of held from which a Settle runs to prune it,
// when claims are settled by paths that cannot tell the session (a
// caller's transaction: CompleteTx and the like).
const pruneFloor = 4096

func (h *Holds) begin() {
	h.mu.Lock()
	h.claiming++
	h.claims++
	h.mu.Unlock()
}

// end records the end of a call of Claim: what it delivered, or whether
// it failed.
func (h *Holds) end(ms []*driver.Message, failed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claiming--
	if failed {
		h.unsure = true
	}
	if len(ms) == 0 {
		return
	}
	if h.held == nil {
		h.held = map[int64]int{}
	}
	for _, m := range ms {
		h.held[m.ID] = m.Attempt
	}
}

// Settled records that claims of the session are settled (acknowledged,
// retried, failed, given back) or are no longer its own.
func (h *Holds) Settled(claims ...driver.Claim) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range claims {
		if a, ok := h.held[c.ID]; ok && a == c.Attempt {
			delete(h.held, c.ID)
		}
	}
}

// due reports whether Settle has work: a claim's outcome is unknown, or
// held is to be pruned.
func (h *Holds) due() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unsure || len(h.held) >= max(h.pruneAt, pruneFloor)
}

// errClaimsMoved: a call of Claim began or was in flight while Settle
// looked; what it looked at may be that call's, so it looks again later.
var errClaimsMoved = errors.New("a claim of the session was in flight")

// ClaimKnown is Claim for a session that knows what it holds (h): it
// records what the claim delivers, and settles a claim whose outcome is
// unknown (Settle) first and after a failure.
func (e *Engine) ClaimKnown(ctx context.Context, h *Holds, sessionID, queue string, mode claimrule.Mode, kind string, visibility time.Duration, limit int) ([]*driver.Message, time.Duration, error) {
	if h.due() {
		// A failure leaves the unknown for the next call.
		sctx, cancel := context.WithTimeout(ctx, e.cfg.Lease)
		_ = e.Settle(sctx, h, sessionID)
		cancel()
	}
	h.begin()
	ms, dueIn, err := e.Claim(ctx, sessionID, queue, mode, kind, visibility, limit)
	if err == nil && len(ms) > 0 && e.dropReply() {
		ms, err = nil, errReplyDropped
	}
	h.end(ms, err != nil)
	if err != nil && ctx.Err() == nil {
		e.settleFailed(ctx, h, sessionID)
	}
	return ms, dueIn, err
}

// settleFailed settles after a failed claim: at once, then again, since a
// connection that the failure cut may be idle in the pool, and the first
// statement on it fails. Within a lease: an unreachable database leaves
// it to the next claim.
func (e *Engine) settleFailed(ctx context.Context, h *Holds, sessionID string) {
	sctx, cancel := context.WithTimeout(ctx, e.cfg.Lease)
	defer cancel()
	for try := 0; try < 3 && sctx.Err() == nil; try++ {
		if e.Settle(sctx, h, sessionID) == nil {
			break
		}
	}
}

// Settle settles the unknown outcome of a session's failed claims: the
// claims of the session that it does not know it holds go back to their
// queues at once, as claims that never started (their attempts taken
// back, no error recorded; a message cancelled meanwhile ends
// cancelled), and their consumers are woken. It also forgets the claims
// held records that are no longer the session's. It does nothing while a
// call of Claim of the session is in flight (the claims it looks at may
// be that call's): the session's next claim settles then.
func (e *Engine) Settle(ctx context.Context, h *Holds, sessionID string) error {
	h.mu.Lock()
	if h.settling || h.claiming > 0 {
		h.mu.Unlock()
		return errClaimsMoved
	}
	h.settling = true
	began, wasUnsure := h.claims, h.unsure
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.settling = false
		h.mu.Unlock()
	}()
	queues, err := e.giveBackUnknown(ctx, h, sessionID, began)
	if err != nil {
		return err
	}
	h.mu.Lock()
	if h.claims == began && wasUnsure {
		h.unsure = false
	}
	h.pruneAt = 2 * len(h.held)
	h.mu.Unlock()
	for _, q := range queues {
		e.Wake(q)
	}
	return nil
}

// giveBackUnknown gives back the session's claims that h does not know
// it holds (see unknown) and returns their queues.
func (e *Engine) giveBackUnknown(ctx context.Context, h *Holds, sessionID string, began uint64) ([]string, error) {
	var queues []string
	var evs []jobevents.Event
	err := txn.InTx(ctx, e.drv, func(tx driver.Tx) error {
		queues, evs = nil, nil
		refs, err := tx.ClaimsBySession(ctx, sessionID)
		if err != nil {
			return err
		}
		unknown, err := h.unknown(refs, began)
		if err != nil || len(unknown) == 0 {
			return err
		}
		queues, evs, err = recovered(ctx, tx, unknown, "its claim's reply was lost")
		return err
	})
	if err == nil {
		e.recoveredDone(nil, evs) // the caller wakes the queues
	}
	return queues, err
}

// unknown returns the claims of refs (all of the session's) that it does
// not know it holds, as claims that never started, and forgets those it
// records that refs no longer has; errClaimsMoved when a call of Claim
// began since began.
func (h *Holds) unknown(refs []driver.ClaimRef, began uint64) ([]driver.ClaimRef, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.claims != began || h.claiming > 0 {
		return nil, errClaimsMoved
	}
	current := make(map[int64]bool, len(refs))
	var unknown []driver.ClaimRef
	for _, r := range refs {
		current[r.ID] = true
		if a, ok := h.held[r.ID]; ok && a == r.Attempt {
			continue
		}
		r.Mode = driver.ClaimHeld // never started: given back untouched
		unknown = append(unknown, r)
	}
	for id := range h.held {
		if !current[id] {
			delete(h.held, id)
		}
	}
	return unknown, nil
}

// errReplyDropped is the error of a claim whose reply DropClaimReplies
// dropped.
var errReplyDropped = errors.New("the claim's reply was dropped (DropClaimReplies)")

// DropClaimReplies makes the next n claims that claim something fail
// after they committed, as if their replies were lost: for tests, where
// no network can drop them (SQLite).
func (e *Engine) DropClaimReplies(n int32) { e.dropReplies.Store(n) }

// dropReply reports whether to drop this claim's reply (DropClaimReplies).
func (e *Engine) dropReply() bool {
	for {
		n := e.dropReplies.Load()
		if n <= 0 {
			return false
		}
		if e.dropReplies.CompareAndSwap(n, n-1) {
			return true
		}
	}
}
