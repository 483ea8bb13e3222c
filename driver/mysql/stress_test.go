package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestStressCounters runs many sessions of several clients taking and
// releasing read and write locks on a few names, through both fast and slow
// paths, then checks that every lock row's counters equal its requests and
// that no write lock ever had two holders.
func TestStressCounters(t *testing.T) {
	dsn := batontest.NewDSN(t, "mysql")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	names := []string{"a", "b", "c"}
	var mu sync.Mutex
	writers := map[string]int{}
	readers := map[string]int{}
	var wg sync.WaitGroup
	var granted, grantedAfterWait atomic.Int32
	errs := make(chan error, 100)
	opts := baton.Options{PollInterval: 100 * time.Millisecond}
	for ci := 0; ci < 3; ci++ {
		c, err := baton.Open(ctx, dsn, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for si := 0; si < 3; si++ {
			s, err := c.NewSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(seed, seed))
				for k := 0; k < 60; k++ {
					call := []string{names[rnd.IntN(len(names))]}
					if rnd.IntN(3) == 0 {
						call = append(call, names[rnd.IntN(len(names))])
						if call[1] == call[0] {
							call = call[:1]
						}
					}
					m := baton.Read
					if rnd.IntN(2) == 0 {
						m = baton.Write
					}
					timeout := []time.Duration{0, 20 * time.Millisecond, 5 * time.Second}[rnd.IntN(3)]
					_, err := s.Lock(ctx, "stress", m, timeout, call...)
					if errors.Is(err, baton.ErrTimeout) || errors.Is(err, baton.ErrDeadlock) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					granted.Add(1)
					if timeout > 0 {
						grantedAfterWait.Add(1)
					}
					mu.Lock()
					for _, n := range call {
						if m == baton.Write {
							writers[n]++
						} else {
							readers[n]++
						}
						if writers[n] > 1 || (writers[n] == 1 && readers[n] > 0) {
							errs <- fmt.Errorf("%s: %d writers and %d readers at once", n, writers[n], readers[n])
						}
					}
					mu.Unlock()
					time.Sleep(time.Duration(rnd.IntN(300)) * time.Microsecond)
					mu.Lock()
					for _, n := range call {
						if m == baton.Write {
							writers[n]--
						} else {
							readers[n]--
						}
					}
					mu.Unlock()
					if _, err := s.Release(ctx, "stress"); err != nil {
						errs <- err
						return
					}
				}
			}(uint64(ci*10 + si))
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A run where (nearly) every call timed out or deadlocked checked
	// nothing: 540 calls, about half of them able to wait.
	if g, w := granted.Load(), grantedAfterWait.Load(); g < 150 || w < 50 {
		t.Fatalf("only %d of 540 calls were granted (%d after waiting): the counters were hardly exercised", g, w)
	}
	t.Logf("%d of 540 calls granted, %d of them after waiting", granted.Load(), grantedAfterWait.Load())
	u, _ := url.Parse(dsn)
	db, err := sql.Open("mysql", batontest.MySQLDriverDSN(u))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT i.name, i.n_r, i.n_w, i.n_p,
	       (SELECT COUNT(*) FROM baton_lock_requests r WHERE r.kind = i.kind AND r.ns = i.ns AND r.name = i.name AND r.status = 'G' AND r.mode = 'R'),
	       (SELECT COUNT(*) FROM baton_lock_requests r WHERE r.kind = i.kind AND r.ns = i.ns AND r.name = i.name AND r.status = 'G' AND r.mode = 'W'),
	       (SELECT COUNT(*) FROM baton_lock_requests r WHERE r.kind = i.kind AND r.ns = i.ns AND r.name = i.name AND r.status <> 'G')
	  FROM baton_lock_idents i`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var nr, nw, np, cr, cw, cp int
		if err := rows.Scan(&name, &nr, &nw, &np, &cr, &cw, &cp); err != nil {
			t.Fatal(err)
		}
		if nr != cr || nw != cw || np != cp {
			t.Errorf("%s: counters r=%d w=%d p=%d, requests r=%d w=%d p=%d", name, nr, nw, np, cr, cw, cp)
		}
		if nr != 0 || nw != 0 || np != 0 {
			t.Errorf("%s: still held after every release: r=%d w=%d p=%d; its request rows (a negative id is an adopted fast holder):%s",
				name, nr, nw, np, leftRows(t, db, name))
		}
	}
}

// leftRows describes the request rows of name, one per line.
func leftRows(t *testing.T, db *sql.DB, name string) string {
	var out strings.Builder
	for _, line := range batontest.Strings(t, db, "SELECT CONCAT_WS(' ', id, session_id, client_id, mode, status, call_id, token) FROM baton_lock_requests WHERE name = ? ORDER BY id", name) {
		out.WriteString("\n\t" + line)
	}
	return out.String()
}
