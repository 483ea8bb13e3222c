package baton_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
)

// A workflow of three steps, inserted in one transaction: "resize" waits
// for "fetch" and "publish" for "resize"; a draining worker runs each
// step once its parent completed.
func ExampleClient_EnqueueWorkflow() {
	ctx, c := memClient()
	defer c.Close()
	_, err := c.EnqueueWorkflow(ctx, []baton.WorkflowStep{
		{Name: "fetch", Queue: "images", Payload: []byte("fetch")},
		{Name: "resize", Queue: "images", Payload: []byte("resize"), After: []string{"fetch"}},
		{Name: "publish", Queue: "images", Payload: []byte("publish"), After: []string{"resize"}},
	})
	if err != nil {
		panic(err)
	}
	err = c.Work(ctx, "images", func(ctx context.Context, m *baton.Message) error {
		fmt.Println("ran", string(m.Payload))
		return nil
	}, baton.WorkerOptions{Concurrency: 4, Drain: true})
	fmt.Println("drained:", err)
	// Output:
	// ran fetch
	// ran resize
	// ran publish
	// drained: <nil>
}
