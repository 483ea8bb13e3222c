package jobtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/jobtest"
)

// Welcome is a job: a welcome mail to send.
type Welcome struct {
	To string `json:"to"`
}

func (Welcome) Kind() string { return "welcome" }

var errNoMailbox = errors.New("no such mailbox")

// exampleTB stands for the test's *testing.T in the example.
type exampleTB struct{ testing.TB }

func (exampleTB) Helper()                           {}
func (exampleTB) Fatalf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }

// A test of a program's jobs: what it enqueued, then how one job's
// handler fares, run by the real worker runtime.
func ExampleWorkOne() {
	var t testing.TB = exampleTB{} // in a test: its *testing.T
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "jobtest")
	defer os.RemoveAll(dir)
	c, err := baton.Open(ctx, "sqlite:"+filepath.Join(dir, "app.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// The program enqueues...
	for _, to := range []string{"ann@example.com", "bob@example.com"} {
		if _, err := c.EnqueueJob(ctx, "mail", Welcome{To: to}, baton.EnqueueOptions{Priority: 1}); err != nil {
			fmt.Println(err)
			return
		}
	}
	// ...and the test checks what, in order, and with which options.
	jobtest.RequireManyEnqueued(t, c, "mail", Welcome{To: "ann@example.com"}, Welcome{To: "bob@example.com"})
	jobtest.RequireEnqueuedWith(t, c, "mail", Welcome{To: "bob@example.com"}, jobtest.Opts{State: baton.StateReady, Priority: new(1)})

	// The handler, run once on a job of the test's own.
	ws := baton.NewWorkers()
	_ = baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[Welcome]) error {
		if j.Args.To == "nobody@example.com" {
			return fmt.Errorf("%w: %w", baton.ErrPermanent, errNoMailbox)
		}
		return nil
	})
	out := jobtest.WorkOne(t, c, ws, Welcome{To: "ann@example.com"})
	fmt.Println(out.State, out.Attempt, out.Err)
	out = jobtest.WorkOne(t, c, ws, Welcome{To: "nobody@example.com"})
	fmt.Println(out.State, out.Attempt, errors.Is(out.Err, errNoMailbox))

	// The queue's own jobs are still there for jobtest.Work.
	jobtest.Work(t, c, "mail", ws)
	jobtest.RequireNotEnqueued[Welcome](t, c, "mail")
	// Output:
	// completed 1 <nil>
	// dead 1 true
}
