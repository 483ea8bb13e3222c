// Command goqite compares baton's queue on SQLite with goqite
// (maragu.dev/goqite), a small SQLite queue, in the same run: the
// one-message path (take one message, acknowledge it) and the one-message
// enqueue. It is a module of its own so that baton's module never depends
// on goqite.
//
//	cd bench/goqite && go run . [--messages 2000] [--rounds 3] [--json]
//
// Both run on the same pure-Go SQLite driver (modernc.org/sqlite, baton's
// default), each on a fresh file of its own in a temporary directory, in
// WAL mode with synchronous=NORMAL (baton's settings). Cases, each run
// --rounds times with the systems alternating:
//
//   - one_message: --messages messages are enqueued (not timed), then taken
//     and acknowledged one at a time on one goroutine: baton's
//     Session.Claim (Max 1) and Session.Ack; goqite's Receive and Delete.
//   - send: --messages single-message enqueues: baton's Client.Enqueue;
//     goqite's Send.
//
// Output: one record per line with --json (the format of `baton bench
// --json`, plus "system"); baton's records carry baseline "goqite" and
// ratio = baton ops/s ÷ goqite ops/s (above 1: baton faster).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"maragu.dev/goqite"
	_ "modernc.org/sqlite"

	"github.com/batonhq/baton"
	_ "github.com/batonhq/baton/driver/sqlite" // the sqlite: scheme
	"github.com/batonhq/baton/internal/benchrec"
)

type record struct {
	benchrec.Record
	System string `json:"system"`
	Round  int    `json:"round"`
}

// system is one queue under test, set up on a fresh file.
type system interface {
	enqueue(ctx context.Context, payload []byte) error
	// takeAndAck takes one message and acknowledges it.
	takeAndAck(ctx context.Context) error
	close()
}

// goqiteSchema is goqite's own SQLite schema (schema_sqlite.sql in its
// module, which its users apply themselves), read from the module cache.
var goqiteSchema string

func loadGoqiteSchema() error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "maragu.dev/goqite").Output()
	if err != nil {
		return fmt.Errorf("find goqite's module (run this from bench/goqite): %w", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "schema_sqlite.sql"))
	goqiteSchema = string(b)
	return err
}

func main() {
	var n, rounds int
	var asJSON bool
	flag.IntVar(&n, "messages", 2000, "messages per case")
	flag.IntVar(&rounds, "rounds", 3, "rounds of each case (systems alternate)")
	flag.BoolVar(&asJSON, "json", false, "print one JSON record per line, and nothing else on stdout")
	flag.Parse()
	if n < 10 || rounds < 1 || flag.NArg() > 0 {
		fail(errors.New("--messages ≥ 10 and --rounds ≥ 1, and no arguments"))
	}
	if err := loadGoqiteSchema(); err != nil {
		fail(err)
	}
	dir, err := os.MkdirTemp("", "baton-goqite-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	var recs []record
	for round := 1; round <= rounds; round++ {
		for _, c := range []string{"one_message", "send"} {
			pair, err := runCase(ctx, dir, c, n, round)
			if err != nil {
				fail(fmt.Errorf("%s: %w", c, err))
			}
			for _, r := range pair {
				if asJSON {
					b, _ := json.Marshal(r)
					fmt.Println(string(b))
				}
			}
			recs = append(recs, pair...)
		}
	}
	if !asJSON {
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE\tROUND\tSYSTEM\tOPS/S\tP50 µs\tP99 µs\tRATIO")
		for _, r := range recs {
			ratio := "-"
			if r.Ratio > 0 {
				ratio = strconv.FormatFloat(r.Ratio, 'f', 2, 64)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%.0f\t%s\n", r.Name, r.Round, r.System, r.OpsPerSec, r.P50us, r.P99us, ratio)
		}
		tw.Flush()
		fmt.Println("ratio (baton rows) = baton ops/s ÷ goqite ops/s; above 1: baton faster")
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/goqite: "+err.Error())
	os.Exit(1)
}

// runCase runs one case on both systems, the first one alternating with
// the round, and returns goqite's record then baton's.
func runCase(ctx context.Context, dir, name string, n, round int) ([]record, error) {
	order := []string{"goqite", "baton"}
	if round%2 == 0 {
		order = []string{"baton", "goqite"}
	}
	got := map[string]benchrec.Record{}
	for _, sys := range order {
		path := filepath.Join(dir, fmt.Sprintf("%s-%s-%d.db", sys, name, round))
		s, err := open(ctx, sys, path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sys, err)
		}
		lat, err := measure(ctx, s, name, n)
		s.close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sys, err)
		}
		got[sys] = benchrec.NewLatencyRecord(name, "sqlite", lat)
	}
	q, b := got["goqite"], got["baton"]
	b.Baseline, b.BaselineOpsPerSec, b.BaselineP50us = "goqite", q.OpsPerSec, q.P50us
	if q.OpsPerSec > 0 {
		b.Ratio = float64(int64(b.OpsPerSec/q.OpsPerSec*1000+0.5)) / 1000
	}
	return []record{{q, "goqite", round}, {b, "baton", round}}, nil
}

// measure runs a case and returns each operation's latency.
func measure(ctx context.Context, s system, name string, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	payload := []byte(`{"n":1}`)
	if name == "one_message" {
		for range n {
			if err := s.enqueue(ctx, payload); err != nil {
				return nil, fmt.Errorf("enqueue the backlog: %w", err)
			}
		}
	}
	for range n {
		t0 := time.Now()
		var err error
		if name == "one_message" {
			err = s.takeAndAck(ctx)
		} else {
			err = s.enqueue(ctx, payload)
		}
		if err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, nil
}

func open(ctx context.Context, sys, path string) (system, error) {
	if sys == "baton" {
		return openBaton(ctx, path)
	}
	return openGoqite(ctx, path)
}

type batonSystem struct {
	c *baton.Client
	s *baton.Session
}

func openBaton(ctx context.Context, path string) (*batonSystem, error) {
	c, err := baton.Open(ctx, "sqlite:"+path, baton.Options{Name: "bench-goqite"})
	if err != nil {
		return nil, err
	}
	s, err := c.NewSession(ctx)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &batonSystem{c: c, s: s}, nil
}

func (b *batonSystem) enqueue(ctx context.Context, payload []byte) error {
	_, err := b.c.Enqueue(ctx, "q", payload)
	return err
}

func (b *batonSystem) takeAndAck(ctx context.Context) error {
	ms, err := b.s.Claim(ctx, "q", baton.ClaimOptions{Max: 1})
	if err != nil {
		return err
	}
	if len(ms) != 1 {
		return fmt.Errorf("claimed %d messages, want 1", len(ms))
	}
	return b.s.Ack(ctx, ms[0])
}

func (b *batonSystem) close() { b.c.Close() }

type goqiteSystem struct {
	db *sql.DB
	q  *goqite.Queue
}

func openGoqite(ctx context.Context, path string) (*goqiteSystem, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, goqiteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("goqite schema: %w", err)
	}
	return &goqiteSystem{db: db, q: goqite.New(goqite.NewOpts{DB: db, Name: "q"})}, nil
}

func (g *goqiteSystem) enqueue(ctx context.Context, payload []byte) error {
	return g.q.Send(ctx, goqite.Message{Body: payload})
}

func (g *goqiteSystem) takeAndAck(ctx context.Context) error {
	m, err := g.q.Receive(ctx)
	if err != nil {
		return err
	}
	if m == nil {
		return errors.New("received no message")
	}
	return g.q.Delete(ctx, m.ID)
}

func (g *goqiteSystem) close() { g.db.Close() }
