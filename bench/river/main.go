// Command river compares baton's queue with River (riverqueue.com) on one
// PostgreSQL server, in the same run: drain of a backlog and enqueue→start
// latency with an idle consumer. It is a module of its own so that baton's
// module never depends on River.
//
//	cd bench/river && go run . --dsn postgres://postgres@127.0.0.1:5432/test --json
//
// Every system runs in a fresh schema of its own, created for the case and
// dropped after it. Output: one record per line (the format of `baton bench
// --json`, plus "system": "baton" or "river"); baton's records carry
// baseline "river" and ratio = baton ÷ River (ops/s for the drains, p50 for
// latency, where above 1 is slower).
//
// River runs with the settings of its own benchmark (`river bench`):
// FetchCooldown 2ms, FetchPollInterval 20ms; its workers are MaxWorkers of
// the default queue. baton runs with its defaults (Client.Work, poll
// interval 500ms).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/batonhq/baton"
	_ "github.com/batonhq/baton/driver/postgres" // the postgres:// scheme
	"github.com/batonhq/baton/internal/benchq"
	"github.com/batonhq/baton/internal/benchrec"
)

// record is benchrec.Record with the system measured.
type record struct {
	benchrec.Record
	System string `json:"system"`
}

type config struct {
	dsn      string
	messages int
	workers  []int
	rounds   int
	bound    time.Duration
	// insertMany is how many messages the insert cases enqueue, in
	// batches of 1000 (0: no insert case).
	insertMany int
}

func main() {
	def := os.Getenv("BATON_TEST_POSTGRES")
	if def == "" {
		def = benchrec.DefaultPostgres
	}
	var cfg config
	var asJSON bool
	var workers string
	flag.StringVar(&cfg.dsn, "dsn", def, "PostgreSQL server (a scratch schema per system and case is created in it and dropped)")
	flag.BoolVar(&asJSON, "json", false, "print one JSON record per line, and nothing else on stdout")
	flag.IntVar(&cfg.messages, "messages", 20000, "backlog of the drain cases")
	flag.StringVar(&workers, "workers", "1,4", "comma-separated worker counts of the drain cases (one drain_W case each)")
	flag.IntVar(&cfg.rounds, "rounds", 200, "rounds of the latency case")
	flag.IntVar(&cfg.insertMany, "insert-many", 100000, "messages of the insert cases, in batches of 1000, against River's InsertMany and InsertManyFast (COPY); 0: none")
	flag.DurationVar(&cfg.bound, "duration", 5*time.Second, "at most how long each measured part runs")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected argument %q", flag.Arg(0)))
	}
	for _, w := range splitInts(workers) {
		if w < 1 {
			fail(fmt.Errorf("--workers %q: give positive numbers separated by commas", workers))
		}
		cfg.workers = append(cfg.workers, w)
	}
	if cfg.messages < 1 || cfg.rounds < 5 || cfg.bound <= 0 || len(cfg.workers) == 0 {
		fail(errors.New("--messages ≥ 1, --rounds ≥ 5, --duration > 0 and --workers are required"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	recs, err := run(ctx, cfg, func(r record) {
		if asJSON {
			b, _ := json.Marshal(r)
			fmt.Println(string(b))
		}
	})
	if !asJSON && len(recs) > 0 {
		printTable(os.Stdout, recs)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/river: "+err.Error())
	os.Exit(1)
}

func splitInts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			n = -1
		}
		out = append(out, n)
	}
	return out
}

// run measures every case, River first then baton, and emits each record
// as soon as it is known.
func run(ctx context.Context, cfg config, emit func(record)) ([]record, error) {
	var out []record
	add := func(river, baton benchrec.Record, latency bool) {
		r := record{Record: river, System: "river"}
		b := record{Record: baton, System: "baton"}
		b.Baseline = "river"
		b.BaselineOpsPerSec = river.OpsPerSec
		if latency {
			b.BaselineP50us = river.P50us
			if river.P50us > 0 {
				b.Ratio = roundTo(baton.P50us / river.P50us)
			}
		} else if river.OpsPerSec > 0 {
			b.Ratio = roundTo(baton.OpsPerSec / river.OpsPerSec)
		}
		out = append(out, r, b)
		emit(r)
		emit(b)
	}
	for _, w := range cfg.workers {
		name := fmt.Sprintf("drain_%d", w)
		rr, err := riverDrain(ctx, cfg, w)
		if err != nil {
			return out, fmt.Errorf("river %s: %w", name, err)
		}
		br, err := batonDrain(ctx, cfg, w)
		if err != nil {
			return out, fmt.Errorf("baton %s: %w", name, err)
		}
		rr.Name, br.Name = name, name
		add(rr, br, false)
	}
	if cfg.insertMany > 0 {
		bi, err := batonInsertMany(ctx, cfg)
		if err != nil {
			return out, fmt.Errorf("baton insert_many: %w", err)
		}
		for _, fast := range []bool{false, true} {
			name := "insert_many"
			if fast {
				name = "insert_many_fast"
			}
			ri, err := riverInsertMany(ctx, cfg, fast)
			if err != nil {
				return out, fmt.Errorf("river %s: %w", name, err)
			}
			ri.Name, bi.Name = name, name
			add(ri, bi, false)
		}
	}
	rl, err := riverLatency(ctx, cfg)
	if err != nil {
		return out, fmt.Errorf("river latency: %w", err)
	}
	bl, err := batonLatency(ctx, cfg)
	if err != nil {
		return out, fmt.Errorf("baton latency: %w", err)
	}
	add(rl, bl, true)
	return out, nil
}

func roundTo(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// ---- scratch schemas ----

// schema creates a fresh schema and returns its name and a function that
// drops it.
func schema(ctx context.Context, dsn, prefix string) (string, func(), error) {
	var b [5]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", nil, err
	}
	return name, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
			_ = c.Close(ctx)
		}
	}, nil
}

// withSearchPath returns dsn with the schema as its search_path.
func withSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// ---- baton ----

// batonOpen opens n clients on a fresh schema (migrated once, untimed).
func batonOpen(ctx context.Context, cfg config, n int) ([]*baton.Client, func(), error) {
	name, drop, err := schema(ctx, cfg.dsn, "cmp_baton_")
	if err != nil {
		return nil, nil, err
	}
	dsn, err := withSearchPath(cfg.dsn, name)
	if err != nil {
		drop()
		return nil, nil, err
	}
	var cs []*baton.Client
	closeAll := func() {
		for _, c := range cs {
			_ = c.Close()
		}
		drop()
	}
	for range n {
		c, err := baton.Open(ctx, dsn, baton.Options{Name: "bench-river-cmp"})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cs = append(cs, c)
	}
	return cs, closeAll, nil
}

func batonDrain(ctx context.Context, cfg config, workers int) (benchrec.Record, error) {
	cs, closeAll, err := batonOpen(ctx, cfg, 1)
	if err != nil {
		return benchrec.Record{}, err
	}
	defer closeAll()
	n, elapsed, err := benchq.Drain(ctx, cs[0], "drain", cfg.messages, workers, cfg.bound)
	if err != nil {
		return benchrec.Record{}, err
	}
	return benchrec.NewThroughputRecord("", "postgres", n, elapsed), nil
}

func batonLatency(ctx context.Context, cfg config) (benchrec.Record, error) {
	cs, closeAll, err := batonOpen(ctx, cfg, 2)
	if err != nil {
		return benchrec.Record{}, err
	}
	defer closeAll()
	lat, _, err := benchq.EnqueueStartLatency(ctx, cs[0], cs[1], "latency", cfg.rounds, cfg.bound)
	if err != nil {
		return benchrec.Record{}, err
	}
	return benchrec.NewLatencyRecord("latency", "postgres", lat), nil
}

// batonInsertMany enqueues cfg.insertMany messages with EnqueueMany in
// batches of 1000, one transaction each, as fast as it can; the queue must
// then hold them all.
func batonInsertMany(ctx context.Context, cfg config) (benchrec.Record, error) {
	cs, closeAll, err := batonOpen(ctx, cfg, 1)
	if err != nil {
		return benchrec.Record{}, err
	}
	defer closeAll()
	batch := make([]baton.NewMessage, 0, 1000)
	start := time.Now()
	for i := 0; i < cfg.insertMany; {
		batch = batch[:0]
		for ; i < cfg.insertMany && len(batch) < 1000; i++ {
			batch = append(batch, baton.NewMessage{Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))})
		}
		if _, err := cs[0].EnqueueMany(ctx, "insert", batch); err != nil {
			return benchrec.Record{}, err
		}
	}
	elapsed := time.Since(start)
	st, err := cs[0].Stats(ctx, "insert")
	if err != nil {
		return benchrec.Record{}, fmt.Errorf("count the messages: %w", err)
	}
	if err := wantRows("messages", st.Ready+st.Scheduled, cfg.insertMany); err != nil {
		return benchrec.Record{}, err
	}
	return benchrec.NewThroughputRecord("", "postgres", cfg.insertMany, elapsed), nil
}

// wantRows fails a case whose rows, counted after its run (untimed), are
// not the n it inserted: a rate over rows that are not there measures
// nothing.
func wantRows(what string, got int64, n int) error {
	if got != int64(n) {
		return fmt.Errorf("%d %s after the run, want the %d inserted", got, what, n)
	}
	return nil
}

// ---- River ----

// riverInsertMany inserts cfg.insertMany jobs in batches of 1000 with
// InsertMany, or InsertManyFast (COPY) when fast; the job table must then
// hold them all.
func riverInsertMany(ctx context.Context, cfg config, fast bool) (benchrec.Record, error) {
	pool, name, cleanup, err := riverSetup(ctx, cfg)
	if err != nil {
		return benchrec.Record{}, err
	}
	defer cleanup()
	client, err := river.NewClient(riverpgxv5.New(pool), riverConfig(name, 0, nil))
	if err != nil {
		return benchrec.Record{}, err
	}
	batch := make([]river.InsertManyParams, 0, 1000)
	start := time.Now()
	for i := 0; i < cfg.insertMany; {
		batch = batch[:0]
		for ; i < cfg.insertMany && len(batch) < 1000; i++ {
			batch = append(batch, river.InsertManyParams{Args: benchArgs{N: i}})
		}
		if fast {
			_, err = client.InsertManyFast(ctx, batch)
		} else {
			_, err = client.InsertMany(ctx, batch)
		}
		if err != nil {
			return benchrec.Record{}, err
		}
	}
	elapsed := time.Since(start)
	var got int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{name, "river_job"}.Sanitize()).Scan(&got); err != nil {
		return benchrec.Record{}, fmt.Errorf("count the jobs: %w", err)
	}
	if err := wantRows("jobs", got, cfg.insertMany); err != nil {
		return benchrec.Record{}, err
	}
	return benchrec.NewThroughputRecord("", "postgres", cfg.insertMany, elapsed), nil
}

type benchArgs struct {
	N int `json:"n"`
}

func (benchArgs) Kind() string { return "bench" }

// riverSetup makes a fresh schema with River's migrations and a pool on
// it.
func riverSetup(ctx context.Context, cfg config) (*pgxpool.Pool, string, func(), error) {
	name, drop, err := schema(ctx, cfg.dsn, "cmp_river_")
	if err != nil {
		return nil, "", nil, err
	}
	dsn, err := withSearchPath(cfg.dsn, name)
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	cleanup := func() { pool.Close(); drop() }
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: name, Logger: quietLogger()})
	if err == nil {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		cleanup()
		return nil, "", nil, fmt.Errorf("river migrations: %w", err)
	}
	return pool, name, cleanup, nil
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// riverConfig is River's configuration as its own benchmark sets it; with
// w nil, an insert-only client (whose FetchCooldown also spaces the
// notifications its inserts send).
func riverConfig(schema string, workers int, w *river.Workers) *river.Config {
	cfg := &river.Config{
		Schema:            schema,
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            quietLogger(),
	}
	if w != nil {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}}
		cfg.Workers = w
	}
	return cfg
}

// riverDrain inserts the backlog with InsertMany in batches of 1000 (not
// timed), then starts a client with the given workers and counts completed
// jobs (as River's own benchmark does, through its event subscription, so
// that completion is counted, not just work) until all are done or the
// bound passes.
func riverDrain(ctx context.Context, cfg config, workers int) (benchrec.Record, error) {
	pool, name, cleanup, err := riverSetup(ctx, cfg)
	if err != nil {
		return benchrec.Record{}, err
	}
	defer cleanup()
	ws := river.NewWorkers()
	river.AddWorker(ws, river.WorkFunc(func(context.Context, *river.Job[benchArgs]) error { return nil }))
	client, err := river.NewClient(riverpgxv5.New(pool), riverConfig(name, workers, ws))
	if err != nil {
		return benchrec.Record{}, err
	}
	if err := riverBacklog(ctx, client, cfg.messages); err != nil {
		return benchrec.Record{}, err
	}
	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: cfg.messages + 1000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
	})
	defer cancelSub()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return benchrec.Record{}, err
	}
	done, failed, end := countFinished(ctx, events, cfg.messages, cfg.bound)
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return benchrec.Record{}, fmt.Errorf("stop: %w", err)
	}
	if ctx.Err() != nil {
		return benchrec.Record{}, ctx.Err()
	}
	if failed > 0 {
		return benchrec.Record{}, fmt.Errorf("%d jobs failed", failed)
	}
	return benchrec.NewThroughputRecord("", "postgres", done, end.Sub(start)), nil
}

// riverBacklog inserts n jobs with InsertMany in batches of 1000.
func riverBacklog(ctx context.Context, client *river.Client[pgx.Tx], n int) error {
	batch := make([]river.InsertManyParams, 0, 1000)
	for i := 0; i < n; {
		batch = batch[:0]
		for ; i < n && len(batch) < 1000; i++ {
			batch = append(batch, river.InsertManyParams{Args: benchArgs{N: i}})
		}
		if _, err := client.InsertMany(ctx, batch); err != nil {
			return fmt.Errorf("insert the backlog: %w", err)
		}
	}
	return nil
}

// countFinished counts completed and failed jobs from River's events until
// n have finished or the bound passes, and returns when the last one
// finished (or when it stopped counting, if not all did).
func countFinished(ctx context.Context, events <-chan *river.Event, n int, bound time.Duration) (done, failed int, end time.Time) {
	var last time.Time
	timeout := time.After(bound)
	for done+failed < n {
		select {
		case ev := <-events:
			if ev == nil {
				return done, failed, time.Now()
			}
			if ev.Kind == river.EventKindJobCompleted {
				done++
			} else {
				failed++
			}
			last = time.Now()
		case <-timeout:
			return done, failed, time.Now()
		case <-ctx.Done():
			return done, failed, time.Now()
		}
	}
	return done, failed, last
}

// riverLatency measures from Insert on one client to the worker of a
// second, idle client starting: as baton's latency case, rounds 10ms
// apart after 5 uncounted ones.
func riverLatency(ctx context.Context, cfg config) (benchrec.Record, error) {
	pool, name, cleanup, err := riverSetup(ctx, cfg)
	if err != nil {
		return benchrec.Record{}, err
	}
	defer cleanup()
	started := make(chan time.Time, 1)
	ws := river.NewWorkers()
	river.AddWorker(ws, river.WorkFunc(func(context.Context, *river.Job[benchArgs]) error {
		select {
		case started <- time.Now():
		default:
		}
		return nil
	}))
	consumer, err := river.NewClient(riverpgxv5.New(pool), riverConfig(name, 1, ws))
	if err != nil {
		return benchrec.Record{}, err
	}
	// The producer: an insert-only client on a pool of its own, as in
	// another process.
	pdsn, _ := withSearchPath(cfg.dsn, name)
	ppool, err := pgxpool.New(ctx, pdsn)
	if err != nil {
		return benchrec.Record{}, err
	}
	defer ppool.Close()
	producer, err := river.NewClient(riverpgxv5.New(ppool), riverConfig(name, 0, nil))
	if err != nil {
		return benchrec.Record{}, err
	}
	if err := consumer.Start(ctx); err != nil {
		return benchrec.Record{}, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = consumer.Stop(stopCtx)
	}()
	lat, err := latencyRounds(ctx, cfg, started, func(i int) error {
		_, err := producer.Insert(ctx, benchArgs{N: i}, nil)
		return err
	})
	if err != nil {
		return benchrec.Record{}, err
	}
	return benchrec.NewLatencyRecord("latency", "postgres", lat), nil
}

// latencyRounds runs insert rounds 10ms apart, 5 uncounted then up to
// cfg.rounds (at least 5, within cfg.bound), and returns from each insert
// to the job's start.
func latencyRounds(ctx context.Context, cfg config, started <-chan time.Time, insert func(i int) error) ([]time.Duration, error) {
	var lat []time.Duration
	var begin time.Time
	const warmup = 5
	for i := 0; ; i++ {
		counted := i - warmup
		if counted == 0 {
			begin = time.Now()
		}
		if counted >= cfg.rounds || (counted >= 5 && time.Since(begin) >= cfg.bound) {
			return lat, nil
		}
		time.Sleep(10 * time.Millisecond)
		t0 := time.Now()
		if err := insert(i); err != nil {
			return nil, err
		}
		select {
		case at := <-started:
			if counted >= 0 {
				lat = append(lat, at.Sub(t0))
			}
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("round %d: the job did not start within 10s", i+1)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func printTable(w io.Writer, recs []record) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tSYSTEM\tOPS\tOPS/S\tP50 µs\tP99 µs\tRATIO")
	num := func(v float64, prec int) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.*f", prec, v)
	}
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Name, r.System, r.Ops,
			num(r.OpsPerSec, 0), num(r.P50us, 0), num(r.P99us, 0), num(r.Ratio, 2))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "ratio (baton rows): drains = baton ops/s ÷ River ops/s (above 1: baton faster); latency = baton p50 ÷ River p50 (above 1: baton slower)")
}
