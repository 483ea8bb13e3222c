package drivertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/claimrule"
)

// testClaimRules checks the dialect's claim statements against the one Go
// rule, internal/claimrule.Claimable, on random queues: priorities, keys,
// kinds, messages not yet due, some already in flight, some queues paused.
// Each queue is asked for its parallel candidates (with and without a kind
// filter), its per-key candidates, its ordered prefix, and finally claimed
// in one statement where the dialect can.
func testClaimRules(t *testing.T, d driver.Driver) {
	newSession(t, d, "w", "A", hour)
	seed := uint64(20261125)
	r := rand.New(rand.NewPCG(seed, seed))
	for round := range 40 {
		q := fmt.Sprintf("rules%d", round)
		model := randomQueue(t, d, r, q)
		limit := 1 + r.IntN(6)
		where := fmt.Sprintf("queue %s (seed %d, paused %v), limit %d, messages %+v", q, seed, model.paused, limit, model.msgs)
		checkParallelRule(t, d, model, limit, where)
		checkPerKeyRule(t, d, model, limit, where)
		checkOrderedRule(t, d, model, limit, where)
		checkClaimParallelRule(t, d, model, limit, where)
	}
}

// ruleQueue is a queue as the rule sees it.
type ruleQueue struct {
	name   string
	paused bool
	msgs   []claimrule.Message
}

// randomQueue fills queue q with 1 to 8 random messages, claims a random
// few of the due ones, pauses one queue in seven, and reads back what the
// rule needs (the stored serving order included).
func randomQueue(t *testing.T, d driver.Driver, r *rand.Rand, q string) ruleQueue {
	ctx := testCtx(t)
	tx := d.NoTx()
	must(t, tx.QueueRegister(ctx, q))
	due := map[int64]bool{}
	var all, claim []int64
	for range 1 + r.IntN(8) {
		m := driver.NewMessage{Queue: q, Payload: []byte("m"), Priority: r.IntN(3) - 1, MaxAttempts: 3,
			Key: []string{"", "a", "b"}[r.IntN(3)], Kind: []string{"", "k"}[r.IntN(2)]}
		m.HasKey = m.Key != ""
		if r.IntN(4) == 0 {
			m.Delay = hour
		}
		id, err := tx.MessageInsert(ctx, m)
		must(t, err)
		all, due[id] = append(all, id), m.Delay == 0
		if due[id] && r.IntN(4) == 0 {
			claim = append(claim, id)
		}
	}
	if len(claim) > 0 {
		n, err := tx.ClaimIDs(ctx, "other", int(claimrule.Parallel), hour, claim)
		must(t, err)
		failIf(t, n != len(claim), "ClaimIDs claimed %d of %v", n, claim)
	}
	model := ruleQueue{name: q, paused: r.IntN(7) == 0}
	if model.paused {
		ok, err := tx.QueuePause(ctx, q, true)
		failIf(t, !ok || err != nil, "QueuePause(%s): %v %v", q, ok, err)
	}
	model.msgs = readRuleMessages(ctx, t, tx, all, due)
	return model
}

func readRuleMessages(ctx context.Context, t *testing.T, tx driver.QueueTx, all []int64, due map[int64]bool) []claimrule.Message {
	ms, err := tx.MessageByIDs(ctx, all)
	must(t, err)
	failIf(t, len(ms) != len(all), "MessageByIDs(%v) found %d", all, len(ms))
	out := make([]claimrule.Message, len(ms))
	for i, m := range ms {
		out[i] = claimrule.Message{ID: m.ID, Priority: m.Priority, OrderAt: m.OrderAt, Key: m.Key, HasKey: m.HasKey,
			Kind: m.Kind, Claimed: m.State == driver.MessageClaimed, Due: due[m.ID]}
	}
	return out
}

func (q ruleQueue) want(mode claimrule.Mode, kind string, limit int) []int64 {
	return claimrule.Claimable(mode, q.paused, q.msgs, kind, limit)
}

func checkParallelRule(t *testing.T, d driver.Driver, q ruleQueue, limit int, where string) {
	for _, kind := range []string{"", "k"} {
		got, err := d.NoTx().ClaimCandidates(testCtx(t), q.name, kind, limit)
		must(t, err)
		want := q.want(claimrule.Parallel, kind, limit)
		if q.paused && len(got) > 0 {
			// A dialect may list a paused queue's candidates; claiming
			// them must then take none.
			want = claimrule.Claimable(claimrule.Parallel, false, q.msgs, kind, limit)
			n, err := d.NoTx().ClaimIDs(testCtx(t), "w", int(claimrule.Parallel), hour, got)
			failIf(t, n != 0 || err != nil, "ClaimIDs of a paused queue's candidates %v claimed %d (%v); %s", got, n, err, where)
		}
		failIf(t, !slices.Equal(got, want), "ClaimCandidates(kind %q) = %v, the rule says %v; %s", kind, got, want, where)
	}
}

func checkPerKeyRule(t *testing.T, d driver.Driver, q ruleQueue, limit int, where string) {
	inTx(t, d, func(tx driver.Tx) {
		ctx := testCtx(t)
		must(t, tx.QueueLock(ctx, q.name))
		got, err := tx.ClaimCandidatesPerKey(ctx, q.name, limit)
		must(t, err)
		want := q.want(claimrule.PerKey, "", limit)
		failIf(t, !slices.Equal(got, want), "ClaimCandidatesPerKey = %v, the rule says %v; %s", got, want, where)
	})
}

// checkOrderedRule: nothing while a message is in flight (ClaimInFlight),
// else the due prefix of the heads (ClaimHeads).
func checkOrderedRule(t *testing.T, d driver.Driver, q ruleQueue, limit int, where string) {
	inTx(t, d, func(tx driver.Tx) {
		ctx := testCtx(t)
		must(t, tx.QueueLock(ctx, q.name))
		n, err := tx.ClaimInFlight(ctx, q.name)
		must(t, err)
		inFlight := 0
		for _, m := range q.msgs {
			if m.Claimed {
				inFlight++
			}
		}
		failIf(t, n != inFlight, "ClaimInFlight = %d, want %d; %s", n, inFlight, where)
		heads, dueIn, err := tx.ClaimHeads(ctx, q.name, limit)
		must(t, err)
		got, _ := claimrule.DuePrefix(heads, dueIn)
		if n > 0 {
			got = nil
		}
		want := q.want(claimrule.Ordered, "", limit)
		failIf(t, !slices.Equal(got, want), "ordered claim (heads %v due in %v) = %v, the rule says %v; %s", heads, dueIn, got, want, where)
	})
}

// checkClaimParallelRule: the one-statement claim takes what the rule
// says (in any order).
func checkClaimParallelRule(t *testing.T, d driver.Driver, q ruleQueue, limit int, where string) {
	ms, ok, err := d.NoTx().ClaimParallel(testCtx(t), q.name, "", "w", hour, limit)
	must(t, err)
	if !ok {
		return
	}
	got := ids(ms)
	slices.Sort(got)
	want := slices.Sorted(slices.Values(q.want(claimrule.Parallel, "", limit)))
	failIf(t, !slices.Equal(got, want), "ClaimParallel claimed %v, the rule says %v; %s", got, want, where)
}
