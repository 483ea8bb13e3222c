package jobtest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton"
	_ "github.com/batonhq/baton/driver/sqlite"
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
}

func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}

func TestRequireEnqueuedAndWork(t *testing.T) {
	ctx := context.Background()
	c, err := baton.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
