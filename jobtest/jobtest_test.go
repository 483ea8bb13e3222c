package jobtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
	_ "github.com/batonhq/baton/driver/mysql"
	"github.com/batonhq/baton/driver/postgres"
	_ "github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/jobtest"
)

type welcome struct {
	To   string   `json:"to"`
	Tags []string `json:"tags,omitempty"`
}

func (welcome) Kind() string { return "welcome" }

type other struct{}

func (other) Kind() string { return "other" }

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Fatalf(format string, a ...any) { r.failed, r.msg = true, fmt.Sprintf(format, a...) }
func (r *recorder) Helper()                        {}

// open opens a client of the database dsn names, closed when the test
// ends.
func open(t *testing.T, dsn string) *baton.Client {
	t.Helper()
	c, err := baton.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRequireEnqueuedAndWork(t *testing.T) {
	batontest.EachDSN(t, testRequireEnqueuedAndWork)
}

func testRequireEnqueuedAndWork(t *testing.T, _ batontest.Backend, dsn string) {
	ctx := context.Background()
	c := open(t, dsn)
	id, err := c.EnqueueJob(ctx, "mail", welcome{To: "ann@example.com", Tags: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := jobtest.RequireEnqueued(t, c, "mail", welcome{To: "ann@example.com"}); got != id {
		t.Fatalf("RequireEnqueued returned %d, want %d", got, id)
	}
	r := &recorder{TB: t}
	jobtest.RequireEnqueued(r, c, "mail", welcome{To: "bob@example.com"})
	if !r.failed {
		t.Fatal("RequireEnqueued passed for arguments nobody enqueued")
	}
	r = &recorder{TB: t}
	jobtest.RequireNotEnqueued[welcome](r, c, "mail")
	if !r.failed {
		t.Fatal("RequireNotEnqueued passed with a message waiting")
	}
	jobtest.RequireNotEnqueued[other](t, c, "mail")

	ws := baton.NewWorkers()
	var sent []string
	if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[welcome]) error {
		sent = append(sent, j.Args.To)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	jobtest.Work(t, c, "mail", ws)
	if len(sent) != 1 || sent[0] != "ann@example.com" {
		t.Fatalf("sent %v", sent)
	}
	jobtest.RequireNotEnqueued[welcome](t, c, "mail")
}

// TestRequireEnqueuedTx: a message enqueued in the caller's transaction
// passes RequireEnqueuedTx in that transaction before it commits (and
// RequireEnqueued outside it only after), on every backend, with a
// *sql.Tx and, on PostgreSQL, a pgx transaction.
func TestRequireEnqueuedTx(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		ctx := context.Background()
		dsn := b.NewDSN(t)
		c := open(t, dsn)
		// The queue exists before the transactions: on SQLite the
		// client's own connection then reads beside the writing one.
		if _, err := c.Enqueue(ctx, "mail", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		db := batontest.SQLDB(t, dsn)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkInTx(t, c, tx, "ann@example.com")
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		jobtest.RequireEnqueued(t, c, "mail", welcome{To: "ann@example.com"})
		if b.Label != "postgres" {
			return
		}
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		ptx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ptx.Rollback(ctx) }()
		checkInTx(t, c, postgres.PgxTx{Tx: ptx}, "bob@example.com")
	})
}

// checkInTx enqueues a welcome to `to` in tx and checks that tx sees it and
// that nothing outside it does yet.
func checkInTx(t *testing.T, c *baton.Client, tx baton.Execer, to string) {
	t.Helper()
	ctx := context.Background()
	id, err := c.EnqueueJobTx(ctx, tx, "mail", welcome{To: to})
	if err != nil {
		t.Fatal(err)
	}
	if got := jobtest.RequireEnqueuedTx(t, c, tx, "mail", welcome{To: to}); got != id {
		t.Fatalf("RequireEnqueuedTx returned %d, want %d", got, id)
	}
	r := &recorder{TB: t}
	jobtest.RequireEnqueuedTx(r, c, tx, "mail", welcome{To: "nobody@example.com"})
	if !r.failed {
		t.Fatal("RequireEnqueuedTx passed for arguments nobody enqueued")
	}
	r = &recorder{TB: t}
	jobtest.RequireEnqueued(r, c, "mail", welcome{To: to})
	if !r.failed {
		t.Fatal("RequireEnqueued saw a message of a transaction that has not committed")
	}
}

// TestWorkFailsOnFailedJobs: Work fails the test when a job's handler
// fails or its kind has no worker, naming each message, its kind and its
// error; the user's own OnError hook still sees every failure, on every
// backend.
func TestWorkFailsOnFailedJobs(t *testing.T) {
	batontest.EachDSN(t, testWorkFailsOnFailedJobs)
}

func testWorkFailsOnFailedJobs(t *testing.T, _ batontest.Backend, dsn string) {
	ctx := context.Background()
	c := open(t, dsn)
	ws := baton.NewWorkers()
	if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[welcome]) error {
		if j.Args.To == "bad" {
			return errors.New("smtp down")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	enqueue := func(args baton.JobArgs) int64 {
		t.Helper()
		id, err := c.EnqueueJob(ctx, "mail", args, baton.EnqueueOptions{MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	enqueue(welcome{To: "ann@example.com"})
	r := &recorder{TB: t}
	jobtest.Work(r, c, "mail", ws)
	if r.failed {
		t.Fatalf("Work failed though every job succeeded: %s", r.msg)
	}

	bad, orphan := enqueue(welcome{To: "bad"}), enqueue(other{})
	var hooked atomic.Int32
	r = &recorder{TB: t}
	jobtest.Work(r, c, "mail", ws, baton.WorkerOptions{OnError: func(*baton.Message, baton.AttemptError) { hooked.Add(1) }})
	if !r.failed {
		t.Fatal("Work passed though a job failed and another had no worker")
	}
	for _, want := range []string{fmt.Sprintf("message %d of kind welcome", bad), "smtp down",
		fmt.Sprintf("message %d of kind other", orphan), "no worker"} {
		if !strings.Contains(r.msg, want) {
			t.Errorf("Work's failure %q does not say %q", r.msg, want)
		}
	}
	if n := hooked.Load(); n != 2 {
		t.Errorf("the test's OnError hook saw %d failures, want 2", n)
	}
}
