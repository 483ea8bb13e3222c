// Command depcost counts the client statements that jobs cost a
// MySQL/MariaDB server to enqueue and to drain (Questions, less the
// status queries' own), per job, for two backlogs of the same size:
//
//   - plain: EnqueueMany in batches of 1,000, drained by Work;
//   - batches: batches of 100 (baton.Batch: 99 jobs and a callback pending
//     until they all finished), one EnqueueWorkflow each, drained by Work,
//     which releases the callbacks by the dependency sweep;
//   - lone: one Enqueue a job, drained by Work;
//   - chained: the same, every other job enqueued after the one before it
//     (EnqueueOptions.After).
//
// Batches against plain, and chained against lone, are what dependencies
// cost per job. It works in a scratch
// database of its own, dropped at the end; nothing else should run
// against the server meanwhile (docs/benchmarks.md, "Scripts"):
//
//	go run ./scripts/depcost -dsn mysql://root@127.0.0.1:3306/test -messages 6000
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/benchq"
	"github.com/batonhq/baton/scripts/internal/scratch"
)

func main() {
	dsn := flag.String("dsn", "mysql://root@127.0.0.1:3306/test", "the MySQL/MariaDB server (mysql://)")
	n := flag.Int("messages", 6000, "jobs in each backlog (a multiple of 100)")
	workers := flag.Int("workers", 4, "the drain's concurrency")
	flag.Parse()
	ctx := context.Background()
	admin, target, drop := scratch.MySQL(*dsn, "depcost")
	defer admin.Close()
	defer drop()
	c, err := baton.Open(ctx, target)
	if err != nil {
		log.Print(err)
		return
	}
	defer c.Close()
	enqueuePlain := func(ctx context.Context, c *baton.Client, q string, n int) (int, error) {
		return n, benchq.EnqueueBacklog(ctx, c, q, n)
	}
	// One Enqueue a job; chained: every other job comes after the one
	// enqueued before it.
	enqueueOne := func(chained bool) func(context.Context, *baton.Client, string, int) (int, error) {
		return func(ctx context.Context, c *baton.Client, q string, n int) (int, error) {
			var last int64
			for i := range n {
				var o baton.EnqueueOptions
				if chained && i%2 == 1 {
					o.After = []int64{last}
				}
				id, err := c.Enqueue(ctx, q, benchq.Payload(i), o)
				if err != nil {
					return 0, err
				}
				last = id
			}
			return n, nil
		}
	}
	fmt.Printf("%-8s %6s %22s %22s\n", "backlog", "jobs", "enqueue statements/job", "drain statements/job")
	runs := []struct {
		name    string
		enqueue func(context.Context, *baton.Client, string, int) (int, error)
	}{{"plain", enqueuePlain}, {"batches", benchq.EnqueueBatches}, {"lone", enqueueOne(false)}, {"chained", enqueueOne(true)}}
	per := make([][2]float64, len(runs))
	for i, run := range runs {
		before := questions(admin)
		jobs, err := run.enqueue(ctx, c, run.name, *n)
		if err != nil {
			log.Print(run.name, ": ", err)
			return
		}
		mid := questions(admin)
		h, _, err := benchq.DrainBacklog(ctx, c, run.name, jobs, *workers, 10*time.Minute)
		if err != nil {
			log.Print(run.name, ": ", err)
			return
		}
		after := questions(admin)
		// Less the status queries' own (one each).
		per[i] = [2]float64{float64(mid-before-1) / float64(jobs), float64(after-mid-1) / float64(h)}
		fmt.Printf("%-8s %6d %22.2f %22.2f\n", run.name, jobs, per[i][0], per[i][1])
	}
	for _, d := range [][2]int{{1, 0}, {3, 2}} {
		a, b := per[d[0]], per[d[1]]
		fmt.Printf("%s against %s, per job: %.2f statements more to enqueue, %.2f to drain, %.2f in all\n",
			runs[d[0]].name, runs[d[1]].name, a[0]-b[0], a[1]-b[1], a[0]+a[1]-b[0]-b[1])
	}
}

// questions reads the server's count of client statements.
func questions(admin *sql.DB) int64 { return scratch.Status(admin, "Questions")["Questions"] }
