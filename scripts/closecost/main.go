// Command closecost measures what a session's end and a lock call's
// withdrawal cost. Session.Close of a session that holds locks taken on
// the uncontended path: for 0, 1 and 3 write locks (three names of one
// namespace, or one name in each of three namespaces) it opens a
// session, takes them, closes the session, and reports the mean time of
// the open and of the close over -n rounds. Then a read lock call that
// waits behind another session's write lock and times out after 10 ms:
// the mean time it takes beyond its timeout (its request stored, and
// withdrawn when the timeout ends it). Run it on a database of its own
// (a scratch schema, database or file); it leaves the client's tables
// there (docs/benchmarks.md, "Scripts"):
//
//	go run ./scripts/closecost -dsn sqlite:/tmp/closecost.db
//	go run ./scripts/closecost -dsn 'postgres://postgres@127.0.0.1:5432/test?search_path=closecost'
//	go run ./scripts/closecost -dsn mysql://root@127.0.0.1:3306/closecost
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/batonhq/baton"
	_ "github.com/batonhq/baton/driver/mysql"
	_ "github.com/batonhq/baton/driver/postgres"
	_ "github.com/batonhq/baton/driver/sqlite"
)

func main() {
	dsn := flag.String("dsn", "", "the database (sqlite:, postgres://, mysql://)")
	n := flag.Int("n", 200, "rounds per line")
	flag.Parse()
	ctx := context.Background()
	c, err := baton.Open(ctx, *dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, shape := range []struct {
		label string
		ns    []string
		names []string
	}{
		{"none", nil, nil},
		{"1 lock", []string{"a"}, []string{"x"}},
		{"3 names, 1 namespace", []string{"a", "a", "a"}, []string{"x", "y", "z"}},
		{"3 namespaces", []string{"a", "b", "c"}, []string{"x", "x", "x"}},
	} {
		var open, closed time.Duration
		for i := 0; i < *n; i++ {
			t0 := time.Now()
			s, err := c.NewSession(ctx)
			if err != nil {
				log.Fatal(err)
			}
			open += time.Since(t0)
			for j, ns := range shape.ns {
				if _, err := s.Lock(ctx, ns, baton.Write, 0, shape.names[j]); err != nil {
					log.Fatal(err)
				}
			}
			t0 = time.Now()
			if err := s.Close(ctx); err != nil {
				log.Fatal(err)
			}
			closed += time.Since(t0)
		}
		fmt.Printf("%-22s open %8.0f µs   close %8.0f µs\n", shape.label,
			float64(open.Microseconds())/float64(*n), float64(closed.Microseconds())/float64(*n))
	}
	fmt.Printf("%-22s %8.0f µs beyond its timeout\n", "timed-out wait", float64(timedOut(ctx, c, *n).Microseconds()))
}

// timedOut is the mean time a read lock call waiting behind a write
// lock takes beyond its 10 ms timeout, over n calls.
func timedOut(ctx context.Context, c *baton.Client, n int) time.Duration {
	const wait = 10 * time.Millisecond
	holder, err := c.NewSession(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer holder.Close(ctx)
	waiter, err := c.NewSession(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer waiter.Close(ctx)
	if _, err := holder.Lock(ctx, "w", baton.Write, 0, "x"); err != nil {
		log.Fatal(err)
	}
	var over time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := waiter.Lock(ctx, "w", baton.Read, wait, "x"); !errors.Is(err, baton.ErrTimeout) {
			log.Fatalf("a wait behind a write lock: %v, want a timeout", err)
		}
		over += time.Since(t0) - wait
	}
	return over / time.Duration(n)
}
