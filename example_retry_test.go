package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton"
)

// receiptArgs is a kind with enqueue defaults, once named "receipt_email".
type receiptArgs struct {
	To string `json:"to"`
}

func (receiptArgs) Kind() string { return "receipt" }

func (r receiptArgs) JobDefaults() baton.JobDefaults {
	return baton.JobDefaults{Queue: "mail", EnqueueOptions: baton.EnqueueOptions{Priority: 2, MaxAttempts: 10}}
}

// A kind renamed keeps its old name as an alias, has its own retry
// policy and enqueue defaults, and the client refuses kinds it has no
// worker for.
func ExampleKindOptions() {
	ws := baton.NewWorkers()
	if err := baton.AddWorker(ws, func(ctx context.Context, j *baton.Job[receiptArgs]) error {
		fmt.Println(j.Kind, "to", j.Args.To)
		return nil
	}, baton.KindOptions{
		Aliases: []string{"receipt_email"},
		Retry:   baton.RetryPolicy{Base: time.Second, Max: time.Minute},
	}); err != nil {
		panic(err)
	}
	ctx, c := memClient(baton.Options{Workers: ws})
	defer c.Close()

	id, _ := c.EnqueueJob(ctx, "", receiptArgs{To: "ann@example.com"}) // queue, priority, attempts: the kind's
	m, _ := c.Message(ctx, id)
	fmt.Println(m.Queue, m.Priority, m.MaxAttempts)
	// A job enqueued under the old name by a program not yet updated
	// (priority 0: served first).
	old, _ := json.Marshal(receiptArgs{To: "bob@example.com"})
	_, _ = c.Enqueue(ctx, "mail", old, baton.EnqueueOptions{Kind: "receipt_email"})
	if err := c.WorkJobs(ctx, "mail", ws, baton.WorkerOptions{Drain: true}); err != nil {
		panic(err)
	}
	_, err := c.EnqueueJob(ctx, "mail", welcomeArgs{To: "cy@example.com"})
	fmt.Println(errors.Is(err, baton.ErrUnknownKind))
	// Output:
	// mail 2 10
	// receipt_email to bob@example.com
	// receipt to ann@example.com
	// true
}

// The default policy waits attempt⁴ seconds (±20%) after a failed attempt.
func ExampleRetryPolicy() {
	p := baton.RetryPolicy{Jitter: -1} // the default without its jitter
	for _, attempt := range []int{1, 2, 3, 10, 24} {
		fmt.Println(attempt, p.Delay(&baton.Message{Attempt: attempt}))
	}
	// Output:
	// 1 1s
	// 2 16s
	// 3 1m21s
	// 10 2h46m40s
	// 24 92h9m36s
}
