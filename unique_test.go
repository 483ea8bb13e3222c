package baton_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// enqueueUnique enqueues one message (in tx, if not nil) and says whether
// it was a duplicate: ErrDuplicate, the id its holder's.
func enqueueUnique(ctx context.Context, c *baton.Client, tx baton.Execer, queue string, payload []byte, o baton.EnqueueOptions) (int64, bool, error) {
	var id int64
	var err error
	if tx != nil {
		id, err = c.EnqueueTx(ctx, tx, queue, payload, o)
	} else {
		id, err = c.Enqueue(ctx, queue, payload, o)
	}
	if errors.Is(err, baton.ErrDuplicate) {
		return id, true, nil
	}
	return id, false, err
}

// TestUniqueMessages: a unique key holds while its message waits or runs;
// with a period, until the period ends, whatever became of the message;
// with states, while its message is in one of them.
func TestUniqueMessages(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		ctx := ctxT(t)
		u := baton.EnqueueOptions{UniqueKey: "report:42"}
		id1, dup, err := enqueueUnique(ctx, c, nil, "uq", []byte("a"), u)
		if err != nil || dup || id1 == 0 {
			t.Fatalf("first: %d %v %v", id1, dup, err)
		}
		id2, dup, err := enqueueUnique(ctx, c, nil, "uq", []byte("b"), u)
		if err != nil || !dup || id2 != id1 {
			t.Fatalf("second: %d %v %v, want the first's id %d and a duplicate", id2, dup, err, id1)
		}
		if id, err := c.Enqueue(ctx, "uq", []byte("c"), u); !errors.Is(err, baton.ErrDuplicate) || id != id1 {
			t.Fatalf("Enqueue of the key: %d %v, want %d with ErrDuplicate", id, err, id1)
		}
		ids, err := c.EnqueueMany(ctx, "uq", []baton.NewMessage{{Payload: []byte("d"), EnqueueOptions: u}, {Payload: []byte("e"), EnqueueOptions: baton.EnqueueOptions{UniqueKey: "other"}}})
		if err != nil || ids[0] != id1 || ids[1] == id1 {
			t.Fatalf("EnqueueMany: %v %v", ids, err)
		}
		s := session(t, c)
		ms := claim(t, s, "uq", baton.ClaimOptions{Max: 10})
		if strings.Join(payloads(ms), ",") != "a,e" {
			t.Fatalf("queue holds %v, want a,e", payloads(ms))
		}
		// Running: the key still holds.
		if _, dup, _ := enqueueUnique(ctx, c, nil, "uq", []byte("f"), u); !dup {
			t.Fatal("a running message's key did not hold")
		}
		ack(t, s, ms...)
		// Gone: the key is free again.
		id3, dup, err := enqueueUnique(ctx, c, nil, "uq", []byte("g"), u)
		if err != nil || dup || id3 == id1 {
			t.Fatalf("after the holder finished: %d %v %v", id3, dup, err)
		}
		// With a period, or with StateCompleted among its states, a key
		// outlives its message (into the history).
		first := map[string]int64{}
		for _, k := range []struct {
			what, q string
			o       baton.EnqueueOptions
		}{
			{"period", "up", baton.EnqueueOptions{UniqueKey: "daily", UniquePeriod: 24 * time.Hour}},
			{"states with StateCompleted", "uc", baton.EnqueueOptions{UniqueKey: "once", UniqueStates: []baton.MessageState{baton.StateCompleted, baton.StateReady, baton.StateRunning}}},
		} {
			id, dup, err := enqueueUnique(ctx, c, nil, k.q, []byte("first"), k.o)
			if err != nil || dup {
				t.Fatalf("%s: %d %v %v", k.what, id, dup, err)
			}
			first[k.q] = id
			ack(t, s, claim(t, s, k.q, baton.ClaimOptions{})...)
			if again, dup, err := enqueueUnique(ctx, c, nil, k.q, []byte("again"), k.o); err != nil || !dup || again != id {
				t.Fatalf("%s, after the message finished: %d %v %v, want a duplicate of %d", k.what, again, dup, err, id)
			}
		}
		// An enqueue under the default states does not see the completed
		// holder.
		cid := first["uc"]
		if id, dup, err := enqueueUnique(ctx, c, nil, "uc", []byte("l"), baton.EnqueueOptions{UniqueKey: "once"}); err != nil || dup || id == cid {
			t.Fatalf("a completed holder under the default states: %d %v %v, want a new message", id, dup, err)
		}
		for _, bad := range []baton.EnqueueOptions{{UniquePeriod: time.Hour}, {UniqueKey: strings.Repeat("k", 256)}, {UniqueKey: "k", UniquePeriod: -time.Second},
			{UniqueKey: "k", UniqueStates: []baton.MessageState{"finished"}}, {UniqueStates: []baton.MessageState{baton.StateReady}}} {
			_, _, err := enqueueUnique(ctx, c, nil, "uq", []byte("x"), bad)
			wantErr(t, err, baton.ErrInvalid)
		}
		checkUniqueInTx(t, c, batontest.SQLDB(t, dsn))
	})
}

// TestUniqueWhileScheduledOrRetrying: a unique key holds while its holder
// is scheduled (enqueued with a delay) and while it is retrying (waiting
// out a Retry's backoff), the two waiting states besides ready: a second
// enqueue of the key is a duplicate of the holder, under the default
// states and under states naming the holder's; states that leave it out
// let a new message in.
func TestUniqueWhileScheduledOrRetrying(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		// A backoff of an hour: the retried message stays retrying.
		dsn := b.NewDSN(t)
		c := openDSN(t, dsn, baton.Options{Retry: baton.RetryPolicy{Base: time.Hour, Max: time.Hour}})
		db := batontest.SQLDB(t, dsn)
		ctx := ctxT(t)
		state := func(id int64) baton.MessageState {
			t.Helper()
			m, err := c.Message(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return m.State
		}
		dupOf := func(what, q string, id int64, o baton.EnqueueOptions) {
			t.Helper()
			got, dup, err := enqueueUnique(ctx, c, nil, q, []byte("again"), o)
			if err != nil || !dup || got != id {
				t.Fatalf("%s: enqueue of its key gave %d, duplicate %v, %v; want a duplicate of %d", what, got, dup, err, id)
			}
			if got, err := c.Enqueue(ctx, q, []byte("again"), o); !errors.Is(err, baton.ErrDuplicate) || got != id {
				t.Fatalf("%s: Enqueue of its key gave %d, %v; want the holder %d with ErrDuplicate", what, got, err, id)
			}
			// In the caller's transaction (the key's state is read
			// there by the dialect's own statement).
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if got, dup, err := enqueueUnique(ctx, c, tx, q, []byte("again"), o); err != nil || !dup || got != id {
				t.Fatalf("%s: EnqueueTx of its key gave %d, duplicate %v, %v; want a duplicate of %d", what, got, dup, err, id)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
		}

		// Scheduled.
		later := baton.EnqueueOptions{UniqueKey: "later", Delay: time.Hour}
		id, dup, err := enqueueUnique(ctx, c, nil, "us", []byte("first"), later)
		if err != nil || dup {
			t.Fatalf("first: %d %v %v", id, dup, err)
		}
		if st := state(id); st != baton.StateScheduled {
			t.Fatalf("the delayed holder is %s, want scheduled", st)
		}
		dupOf("a scheduled holder", "us", id, baton.EnqueueOptions{UniqueKey: "later"})
		dupOf("a scheduled holder, delayed enqueue", "us", id, later)
		dupOf("a scheduled holder, states naming scheduled", "us", id,
			baton.EnqueueOptions{UniqueKey: "later", UniqueStates: []baton.MessageState{baton.StateScheduled}})

		// Retrying.
		id, dup, err = enqueueUnique(ctx, c, nil, "ur", []byte("first"), baton.EnqueueOptions{UniqueKey: "again"})
		if err != nil || dup {
			t.Fatalf("first: %d %v %v", id, dup, err)
		}
		s := session(t, c)
		ms := claim(t, s, "ur", baton.ClaimOptions{})
		if len(ms) != 1 || ms[0].ID != id {
			t.Fatalf("claimed %v, want message %d", payloads(ms), id)
		}
		if err := s.Retry(ctx, ms[0], errors.New("try later")); err != nil {
			t.Fatal(err)
		}
		if st := state(id); st != baton.StateRetrying {
			t.Fatalf("the retried holder is %s, want retrying", st)
		}
		dupOf("a retrying holder", "ur", id, baton.EnqueueOptions{UniqueKey: "again"})
		dupOf("a retrying holder, states naming retrying", "ur", id,
			baton.EnqueueOptions{UniqueKey: "again", UniqueStates: []baton.MessageState{baton.StateRetrying}})

		// States that leave the holder's out: a new message.
		for q, key := range map[string]string{"us": "later", "ur": "again"} {
			o := baton.EnqueueOptions{UniqueKey: key, UniqueStates: []baton.MessageState{baton.StateReady, baton.StateRunning}}
			got, dup, err := enqueueUnique(ctx, c, nil, q, []byte("new"), o)
			if err != nil || dup || got == 0 {
				t.Fatalf("queue %s, states ready and running beside a waiting holder: %d %v %v, want a new message", q, got, dup, err)
			}
		}
	})
}

// checkUniqueInTx: unique keys in the caller's transaction: a new key is
// taken there (a second enqueue of it in the same transaction is a
// duplicate), nothing is left of it after a rollback, and after the commit
// enqueues outside see its holder.
func checkUniqueInTx(t *testing.T, c *baton.Client, db *sql.DB) {
	t.Helper()
	ctx := ctxT(t)
	u := baton.EnqueueOptions{UniqueKey: "in-tx"}
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.EnqueueTx(ctx, tx, "utx", []byte("a"), u)
		if err != nil || id == 0 {
			t.Fatalf("EnqueueTx with a new unique key: %d %v", id, err)
		}
		ids, err := c.EnqueueManyTx(ctx, tx, "utx", []baton.NewMessage{{Payload: []byte("b"), EnqueueOptions: u}, {Payload: []byte("c")}})
		if err != nil || ids[0] != id || ids[1] == id {
			t.Fatalf("EnqueueManyTx of the key again in the transaction: %v %v, want %d first", ids, err, id)
		}
		// EnqueueTx says which (ErrDuplicate): a duplicate of the key's holder,
		// and a new message for a new key.
		if got, dup, err := enqueueUnique(ctx, c, tx, "utx", []byte("b2"), u); err != nil || !dup || got != id {
			t.Fatalf("EnqueueTx of the key again: %d %v %v, want a duplicate of %d", got, dup, err, id)
		}
		other := baton.EnqueueOptions{UniqueKey: fmt.Sprint("other-", commit)}
		if got, dup, err := enqueueUnique(ctx, c, tx, "utx", []byte("e"), other); err != nil || dup || got == 0 || got == id {
			t.Fatalf("EnqueueTx of a new key: %d %v %v, want a new message", got, dup, err)
		}
		if !commit {
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if got, dup, err := enqueueUnique(ctx, c, nil, "utx", []byte("d"), u); err != nil || !dup || got != id {
			t.Fatalf("Enqueue after the commit: %d %v %v, want a duplicate of %d", got, dup, err, id)
		}
	}
	st, err := c.Stats(ctx, "utx")
	if err != nil || st.Ready != 3 {
		t.Fatalf("the queue holds %+v (%v), want the committed a, c and e", st, err)
	}
}

// childUnique enqueues the keys 0 to 999 of queue "many", in an order of its
// own, and prints how many it added.
func childUnique(dsn, seed string) {
	ctx := context.Background()
	c, err := baton.Open(ctx, dsn)
	childMust(err)
	defer c.Close()
	n, _ := strconv.ParseInt(seed, 10, 64)
	keys := rand.New(rand.NewSource(n)).Perm(1000)
	added := 0
	for _, k := range keys {
		_, dup, err := enqueueUnique(ctx, c, nil, "many", []byte(strconv.Itoa(k)), baton.EnqueueOptions{UniqueKey: strconv.Itoa(k)})
		childMust(err)
		if !dup {
			added++
		}
	}
	fmt.Println(added)
}

// TestUniqueAcrossProcesses: 8 processes enqueue the same 1,000 unique keys
// at once, each in its own order: exactly 1,000 messages, one per key.
func TestUniqueAcrossProcesses(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, dsn := openQ(t, b)
		added := make([]int, 8) // by each process
		batontest.Concurrently(t, len(added), func(i int) error {
			child := exec.Command(os.Args[0], "-test.run=^$")
			child.Env = append(os.Environ(), "BATON_TEST_CHILD=unique", "BATON_TEST_DSN="+dsn, "BATON_TEST_SEED="+strconv.Itoa(i))
			out, err := child.Output()
			n, perr := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil || perr != nil {
				return fmt.Errorf("child %d: %v %q", i, err, out)
			}
			added[i] = n
			return nil
		})
		total := 0
		for _, n := range added {
			total += n
		}
		st := stats(t, c, "many")
		if total != 1000 || st.Ready != 1000 {
			t.Fatalf("8 processes added %d messages (the queue holds %d), want exactly 1000", total, st.Ready)
		}
		seen := map[string]bool{}
		// A client of its own with a long lease: on SQLite a claim's
		// transaction holds the write lock and the lease renewal waits
		// behind it; under the race detector on a busy machine the
		// claims held it off for the whole 3 s default lease (CI, once
		// with batches of 500 and once with 100). The test is about
		// unique keys, not leases.
		s := session(t, openDSN(t, dsn, baton.Options{Lease: 30 * time.Second}))
		for len(seen) < 1000 {
			// Batches of 100, as above.
			ms := claim(t, s, "many", baton.ClaimOptions{Max: 100})
			if len(ms) == 0 {
				break
			}
			for _, m := range ms {
				if seen[string(m.Payload)] {
					t.Fatalf("key %s enqueued twice", m.Payload)
				}
				seen[string(m.Payload)] = true
			}
		}
		if len(seen) != 1000 {
			t.Fatalf("%d distinct keys, want 1000", len(seen))
		}
	})
}
