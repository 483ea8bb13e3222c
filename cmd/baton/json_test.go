package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// shape describes a JSON value's structure: object keys with their
// shapes, an array's element shape, or a scalar's type.
func shape(v any) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + shape(x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		return "[" + shape(x[0]) + "]"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", x)
	}
}

// TestJSONSameOnEveryBackend: every --json output has one shape on every
// backend (the Go types' field names), for the same state: a queue with a
// ready message and a dead letter, a held lock and a waiting request, a
// subscription.
func TestJSONSameOnEveryBackend(t *testing.T) {
	var mu sync.Mutex
	shapes := map[string]map[string]string{} // command -> backend -> shape
	t.Run("run", func(t *testing.T) {
		batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
			c, s := client(t, dsn)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, p := range []string{"a", "b"} {
				if _, err := c.Enqueue(ctx, "jq", []byte(p), baton.EnqueueOptions{MaxAttempts: 1}); err != nil {
					t.Fatal(err)
				}
			}
			ms, err := s.Claim(ctx, "jq", baton.ClaimOptions{Max: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Fail(ctx, ms[0], "boom"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Lock(ctx, "jns", baton.Write, 0, "x"); err != nil {
				t.Fatal(err)
			}
			s2, err := c.NewSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = s2.Lock(ctx, "jns", baton.Read, 20*time.Second, "x") }()
			db := batontest.SQLDB(t, dsn)
			if _, err := db.Exec("CREATE TABLE jt (id integer PRIMARY KEY, v integer)"); err != nil {
				t.Fatal(err)
			}
			if err := c.Subscribe(ctx, baton.Subscription{Name: "js", Table: "jt"}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				ls, err := c.Locks(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(ls) == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the waiting request never showed: %+v", ls)
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, cmd := range [][]string{
				{"queue", "stats", "--json"},
				{"queue", "stats", "jq", "--json"},
				{"queue", "dead", "jq", "--json"},
				{"locks", "--json"},
				{"events", "list", "--json"},
				{"queue", "list", "--json"},
				{"queue", "get", fmt.Sprint(ms[0].ID), "--json"},
			} {
				out := runOK(t, dsn, cmd...)
				var v any
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("%v: %v: %q", cmd, err, out)
				}
				key := strings.Replace(strings.Join(cmd, " "), fmt.Sprint(ms[0].ID), "ID", 1)
				mu.Lock()
				if shapes[key] == nil {
					shapes[key] = map[string]string{}
				}
				shapes[key][b.Label] = shape(v)
				mu.Unlock()
			}
		})
	})
	for cmd, byBackend := range shapes {
		var first, firstShape string
		for be, sh := range byBackend {
			if first == "" {
				first, firstShape = be, sh
				continue
			}
			if sh != firstShape {
				t.Errorf("baton %s --json differs:\n%s: %s\n%s: %s", cmd, first, firstShape, be, sh)
			}
		}
	}
	for be, sh := range shapes["queue get ID --json"] {
		if !strings.Contains(sh, "errors:[{at:string,attempt:float64,error:string}]") || !strings.Contains(sh, "state:string") {
			t.Errorf("%s: queue get --json is not baton.MessageInfo with its errors: %s", be, sh)
		}
	}
	if st := shapes["queue stats jq --json"]; st != nil {
		for be, sh := range st {
			if !strings.Contains(sh, "oldest_ready_ns:") || !strings.Contains(sh, "throughput:") {
				t.Errorf("%s: queue stats --json is not baton.QueueStats: %s", be, sh)
			}
		}
	}
}
