package baton_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/batonhq/baton"
)

// Two sessions compete for one write lock; the second one tries once and is
// told the lock is busy.
func Example() {
	ctx := context.Background()
	c, err := baton.Open(ctx, "sqlite::memory:")
	if err != nil {
		panic(err)
	}
	defer c.Close()

	alice, _ := c.NewSession(ctx, baton.SessionOptions{Name: "alice"})
	bob, _ := c.NewSession(ctx, baton.SessionOptions{Name: "bob"})

	if _, err := alice.Lock(ctx, "reports", baton.Write, 0, "nightly"); err != nil {
		panic(err)
	}
	_, err = bob.Lock(ctx, "reports", baton.Write, 0, "nightly")
	fmt.Println("bob:", errors.Is(err, baton.ErrTimeout))

	n, _ := alice.Release(ctx, "reports")
	fmt.Println("alice released", n)
	_, err = bob.Lock(ctx, "reports", baton.Write, 0, "nightly")
	fmt.Println("bob:", err)
	// Output:
	// bob: true
	// alice released 1
	// bob: <nil>
}

// The GET_LOCK family: re-entrant, counted, case-insensitive names.
func ExampleSession_GetLock() {
	ctx, c := memClient()
	defer c.Close()
	s, _ := c.NewSession(ctx)
	other, _ := c.NewSession(ctx)

	ok, _ := s.GetLock(ctx, "civimail.job.1.7", 0)
	fmt.Println("get:", ok)
	ok, _ = s.GetLock(ctx, "CiviMail.Job.1.7", 0)
	fmt.Println("again:", ok)
	ok, _ = other.GetLock(ctx, "civimail.job.1.7", 0)
	fmt.Println("other session:", ok)
	free, _ := c.IsFreeLock(ctx, "civimail.job.1.7")
	fmt.Println("free:", free)
	r, _ := other.ReleaseLock(ctx, "civimail.job.1.7")
	fmt.Println("other releases:", r)
	n, _ := s.ReleaseAllLocks(ctx)
	fmt.Println("released instances:", n)
	r, _ = s.ReleaseLock(ctx, "civimail.job.1.7")
	fmt.Println("release again:", r)
	// Output:
	// get: true
	// again: true
	// other session: false
	// free: false
	// other releases: held by another session
	// released instances: 2
	// release again: not held
}

// Fencing tokens strictly increase for each grant of one lock.
func ExampleGrant_token() {
	ctx, c := memClient()
	defer c.Close()
	s, _ := c.NewSession(ctx)
	g1, _ := s.Lock(ctx, "ns", baton.Write, 0, "resource")
	_, _ = s.Release(ctx, "ns")
	g2, _ := s.Lock(ctx, "ns", baton.Write, 0, "resource")
	fmt.Println(g2[0].Token > g1[0].Token)
	// Output: true
}

// A mail queue worked the cron way: each run drains what is ready and
// stops; a message that keeps failing ends as a dead letter after its
// attempt limit while the rest are sent.
func ExampleClient_Work() {
	ctx, c := memClient(baton.Options{Retry: baton.RetryPolicy{Base: time.Millisecond, Max: time.Millisecond}})
	defer c.Close()
	for _, to := range []string{"ann", "bob", "nobody"} {
		if _, err := c.Enqueue(ctx, "mail", []byte(to), baton.EnqueueOptions{MaxAttempts: 3}); err != nil {
			panic(err)
		}
	}
	var sent []string
	send := func(ctx context.Context, m *baton.Message) error {
		if string(m.Payload) == "nobody" {
			return errors.New("550 no such user")
		}
		sent = append(sent, string(m.Payload))
		return nil
	}
	for {
		if err := c.Work(ctx, "mail", send, baton.WorkerOptions{Drain: true}); err != nil {
			panic(err)
		}
		st, _ := c.Stats(ctx, "mail")
		if st.Unfinished() == 0 { // nothing left but dead letters
			break
		}
		time.Sleep(5 * time.Millisecond) // the next cron run
	}
	sort.Strings(sent)
	fmt.Println("sent:", sent)
	dead, _ := c.DeadLetters(ctx, "mail", 10)
	fmt.Printf("dead: %s after %d attempts\n", dead[0].Payload, dead[0].Attempts)
	// Output:
	// sent: [ann bob]
	// dead: nobody after 3 attempts
}

// Table-change events: baton's triggers write one event per change of the
// application's table, in the writer's own transaction, whatever client
// wrote it; a worker takes them in order.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "baton-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "app.db")
	c, err := baton.Open(ctx, "sqlite://"+path)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	// The application's own connection and table.
	app, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		panic(err)
	}
	defer app.Close()
	if _, err := app.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)`); err != nil {
		panic(err)
	}
	err = c.Subscribe(ctx, baton.Subscription{Name: "shipping", Table: "orders",
		Actions: []baton.Action{baton.Insert, baton.Update}})
	if err != nil {
		panic(err)
	}
	for _, stmt := range []string{
		`INSERT INTO orders (item) VALUES ('book')`,
		`UPDATE orders SET item = 'two books' WHERE id = 1`,
		`DELETE FROM orders`, // not subscribed: no event
	} {
		if _, err := app.Exec(stmt); err != nil {
			panic(err)
		}
	}
	err = c.WorkEvents(ctx, "shipping", func(ctx context.Context, e baton.Event, m *baton.Message) error {
		var row struct {
			ID   int    `json:"id"`
			Item string `json:"item"`
		}
		if err := json.Unmarshal(e.New, &row); err != nil {
			return err
		}
		fmt.Printf("%s order %d: %s\n", e.Action, row.ID, row.Item)
		return nil
	}, baton.WorkerOptions{Mode: baton.Ordered, Drain: true})
	if err != nil {
		panic(err)
	}
	// Output:
	// insert order 1: book
	// update order 1: two books
}

// Notifications reach every listener of a channel, in any process, once
// the notifying transaction commits.
func ExampleClient_Listen() {
	ctx, c := memClient()
	defer c.Close()
	l, err := c.Listen(ctx, "cache")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	if err := c.Notify(ctx, "cache", "invalidate users:42"); err != nil {
		panic(err)
	}
	n := <-l.C()
	fmt.Printf("%s: %s\n", n.Channel, n.Payload)
	// Output: cache: invalidate users:42
}

type welcomeArgs struct {
	To string `json:"to"`
}

func (welcomeArgs) Kind() string { return "welcome" }

// Jobs: a worker per kind with typed arguments, a message read by id
// whatever its state, and a cancellation.
func ExampleAddWorker() {
	ctx, c := memClient()
	defer c.Close()
	ws := baton.NewWorkers()
	if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[welcomeArgs]) error {
		fmt.Println("welcome", j.Args.To)
		return nil
	}); err != nil {
		panic(err)
	}
	ann, _ := c.EnqueueJob(ctx, "mail", welcomeArgs{To: "ann@example.com"})
	bob, _ := c.EnqueueJob(ctx, "mail", welcomeArgs{To: "bob@example.com"}, baton.EnqueueOptions{Delay: time.Hour})
	if err := c.CancelMessage(ctx, bob); err != nil {
		panic(err)
	}
	if err := c.WorkJobs(ctx, "mail", ws, baton.WorkerOptions{Drain: true}); err != nil {
		panic(err)
	}
	for _, id := range []int64{ann, bob} {
		m, _ := c.Message(ctx, id)
		fmt.Println(m.Kind, m.State)
	}
	// Output:
	// welcome ann@example.com
	// welcome completed
	// welcome cancelled
}

// memClient opens a client the way Example does, on a private in-memory
// SQLite database: baton.Open(ctx, "sqlite::memory:", opts...) with a
// background context.
func memClient(opts ...baton.Options) (context.Context, *baton.Client) {
	ctx := context.Background()
	c, err := baton.Open(ctx, "sqlite::memory:", opts...)
	if err != nil {
		panic(err)
	}
	return ctx, c
}
