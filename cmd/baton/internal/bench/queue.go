package bench

// The queue benchmarks (`baton bench queue`). Each case runs in a scratch
// database of its own, so a backlog one case leaves behind never slows the
// next one down.
//
//   - drain_1, drain_N: a backlog of QueueConfig.Messages messages is
//     enqueued with EnqueueMany in batches of 1000 (not timed), then
//     drained by Client.Work with Drain set, with concurrency 1 and
//     QueueConfig.Workers (default 4); ops is the messages handled and
//     ops_per_sec messages per second, from Work's start to its return. A
//     drain still running after Duration is stopped there (gracefully) and
//     counted as far as it got. Baseline on PostgreSQL: skip_locked_raw, a
//     loop of `DELETE FROM t WHERE id IN (SELECT id FROM t ORDER BY id
//     LIMIT 100 FOR UPDATE SKIP LOCKED) RETURNING id` on as many
//     connections as workers, over the same number of rows; ratio = baton
//     ÷ baseline.
//   - drain_batches: drain_N over a backlog of batches (99 jobs and a
//     callback after them, pending until they finished; enqueued with
//     EnqueueWorkflow, not timed): what dependencies cost a drain.
//   - enqueue_consume: one client enqueues one message per call (one
//     transaction each) for Duration while a second client's Work
//     (concurrency 1) consumes them; ops is the messages, ops_per_sec is
//     messages ÷ the time from the first enqueue until the last message
//     was handled; p50/p99 are the latencies of the Enqueue calls.
//   - latency: a second client's Work (concurrency 1) waits on an empty
//     queue; from the producer calling Enqueue to the handler starting,
//     up to 200 rounds 10 ms apart (so the consumer is idle each time).
//     Two clients in one process: on PostgreSQL and MySQL/MariaDB the
//     wake-up goes through the database as between processes.
//   - latency_commit: the same rounds, timed from Enqueue's return (the
//     commit) instead of its call; the latency case's run yields both.
//   - latency_local: the same with producer and consumer on one client
//     (the in-process wake-up).
//   - notify_latency: from Notify on one client to the notification
//     arriving on a Listener of a second client, up to 200 rounds 2 ms
//     apart.
//   - drain_limited, drain_rated: drain_N on a queue with a concurrency
//     limit of 1000 (drain_limited) or a rate of 10,000,000 starts a
//     second (drain_rated), limits that are not the bottleneck,
//     alternated three times with the same drain without limits (in a
//     scratch database of its own); the medians, ratio = limited ÷
//     unlimited (the cost of the limited claim path, benchmarks.md).
//
// For the latency cases ops_per_sec is 1 ÷ the mean latency.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/benchq"
	"github.com/batonhq/baton/internal/benchrec"
)

// Queue case names, in the order RunQueue runs them.
const (
	CaseDrain1         = "drain_1"
	CaseDrainN         = "drain_N"
	CaseDrainBatches   = "drain_batches"
	CaseEnqueueConsume = "enqueue_consume"
	CaseLatency        = "latency"
	CaseLatencyCommit  = "latency_commit"
	CaseLatencyLocal   = "latency_local"
	CaseNotifyLatency  = "notify_latency"
	CaseDrainLimited   = "drain_limited"
	CaseDrainRated     = "drain_rated"
	// CaseDrainSubscribed is drain_N while a second client subscribes to
	// every job event (SubscribeJobs) and reads them: what job events
	// cost the workers.
	CaseDrainSubscribed = "drain_N_subscribed"
)

// QueueCases lists every queue case name in run order.
var QueueCases = []string{CaseDrain1, CaseDrainN, CaseDrainBatches, CaseEnqueueConsume, CaseLatency, CaseLatencyCommit, CaseLatencyLocal, CaseNotifyLatency, CaseDrainSubscribed,
	CaseDrainLimited, CaseDrainRated}

// QueueConfig says what RunQueue measures and where.
type QueueConfig struct {
	// Backend is sqlite, postgres or mysql.
	Backend string
	// Server is as Config.Server.
	Server string
	// Duration bounds each case's measured part (default 3s): a drain is
	// stopped there, enqueue_consume enqueues for that long, the latency
	// cases stop early at it (after at least 5 rounds).
	Duration time.Duration
	// Messages is the backlog of the drain cases (default 20000).
	Messages int
	// Workers is N, the concurrency of drain_N (default 4).
	Workers int
	// Only, when not empty, restricts the run to these case names.
	Only []string
	// Progress, when set, is called with a case's name as it starts.
	Progress func(caseName string)
}

// latencyRounds is how many rounds the latency cases aim for.
const latencyRounds = 200

// RunQueue runs the queue cases on the backend and returns their records,
// like Run.
func RunQueue(ctx context.Context, cfg QueueConfig) ([]Record, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	want := func(name string) bool { return len(cfg.Only) == 0 || slices.Contains(cfg.Only, name) }
	return runCases(ctx, cfg.Backend, cfg.toRun(want), cfg.Progress, func(name string) ([]Record, error) {
		recs, err := runQueueCase(ctx, cfg, name)
		return slices.DeleteFunc(recs, func(r Record) bool { return !want(r.Name) }), err
	})
}

// fill checks the configuration and sets its defaults.
func (cfg *QueueConfig) fill() error {
	if !slices.Contains(Backends, cfg.Backend) {
		return fmt.Errorf("bench: unknown backend %q (use sqlite, postgres or mysql)", cfg.Backend)
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	if cfg.Messages <= 0 {
		cfg.Messages = 20000
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	for _, c := range cfg.Only {
		if !slices.Contains(QueueCases, c) {
			return fmt.Errorf("bench: unknown case %q", c)
		}
	}
	if err := CheckServer(cfg.Backend, cfg.Server); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// toRun lists the cases to run, in order: one latency run measures
// latency and latency_commit.
func (cfg *QueueConfig) toRun(want func(string) bool) []string {
	var out []string
	for _, name := range QueueCases {
		switch {
		case name == CaseLatencyCommit:
		case name == CaseLatency && (want(name) || want(CaseLatencyCommit)):
			out = append(out, name)
		case want(name):
			out = append(out, name)
		}
	}
	return out
}

// runQueueCase runs one case in a scratch database of its own and returns
// its records (the latency case yields latency_commit too).
func runQueueCase(ctx context.Context, cfg QueueConfig, name string) ([]Record, error) {
	sc, err := migratedScratch(ctx, cfg.Backend, cfg.Server) // migrations are not timed
	if err != nil {
		return nil, err
	}
	defer sc.drop()
	run, ok := queueCaseFuncs[name]
	if !ok {
		return nil, fmt.Errorf("unknown case %q", name)
	}
	return run(ctx, cfg, sc, name)
}

// queueCase runs one queue case on a scratch database.
type queueCase func(ctx context.Context, cfg QueueConfig, sc *scratch, name string) ([]Record, error)

var queueCaseFuncs = map[string]queueCase{
	CaseDrain1:          drainCase,
	CaseDrainN:          drainCase,
	CaseDrainBatches:    drainBatchesCase,
	CaseEnqueueConsume:  enqueueConsumeCase,
	CaseLatency:         latencyCase,
	CaseLatencyLocal:    latencyCase,
	CaseNotifyLatency:   notifyLatencyCase,
	CaseDrainSubscribed: drainSubscribedCase,
	CaseDrainLimited:    drainLimitedCase,
	CaseDrainRated:      drainLimitedCase,
}

// withClients opens n clients on the scratch database, runs fn and closes
// them.
func withClients(ctx context.Context, sc *scratch, n int, fn func(cs []*baton.Client) ([]Record, error)) ([]Record, error) {
	cs, closeAll, err := openClients(ctx, sc.dsn, n)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	return fn(cs)
}

func drainCase(ctx context.Context, cfg QueueConfig, sc *scratch, name string) ([]Record, error) {
	workers := 1
	if name == CaseDrainN {
		workers = cfg.Workers
	}
	recs, err := withClients(ctx, sc, 1, func(cs []*baton.Client) ([]Record, error) {
		n, elapsed, err := benchq.Drain(ctx, cs[0], "drain", cfg.Messages, workers, cfg.Duration)
		if err != nil {
			return nil, err
		}
		return []Record{benchrec.NewThroughputRecord(name, cfg.Backend, n, elapsed)}, nil
	})
	if err != nil || cfg.Backend != "postgres" {
		return recs, err
	}
	rn, relapsed, err := skipLockedRaw(ctx, sc.dsn, cfg.Messages, workers, cfg.Duration)
	if err != nil {
		return recs, fmt.Errorf("baseline skip_locked_raw: %w", err)
	}
	recs[0].WithThroughputBaseline("skip_locked_raw", benchrec.NewThroughputRecord("", "", rn, relapsed).OpsPerSec)
	return recs, nil
}

func enqueueConsumeCase(ctx context.Context, cfg QueueConfig, sc *scratch, _ string) ([]Record, error) {
	return withClients(ctx, sc, 2, func(cs []*baton.Client) ([]Record, error) {
		rec, err := enqueueConsume(ctx, cfg.Backend, cs[0], cs[1], cfg.Duration)
		if err != nil {
			return nil, err
		}
		return []Record{*rec}, nil
	})
}

// latencyCase yields latency and latency_commit, or latency_local (the
// producer and the consumer on one client).
func latencyCase(ctx context.Context, cfg QueueConfig, sc *scratch, name string) ([]Record, error) {
	n := 2
	if name == CaseLatencyLocal {
		n = 1
	}
	return withClients(ctx, sc, n, func(cs []*baton.Client) ([]Record, error) {
		fromCall, fromCommit, err := benchq.EnqueueStartLatency(ctx, cs[0], cs[len(cs)-1], "latency", latencyRounds, cfg.Duration)
		if err != nil {
			return nil, err
		}
		recs := []Record{benchrec.NewLatencyRecord(name, cfg.Backend, fromCall)}
		if name == CaseLatency {
			recs = append(recs, benchrec.NewLatencyRecord(CaseLatencyCommit, cfg.Backend, fromCommit))
		}
		return recs, nil
	})
}

func notifyLatencyCase(ctx context.Context, cfg QueueConfig, sc *scratch, name string) ([]Record, error) {
	return withClients(ctx, sc, 2, func(cs []*baton.Client) ([]Record, error) {
		lat, err := notifyLatency(ctx, cs[0], cs[1], cfg.Duration)
		if err != nil {
			return nil, err
		}
		return []Record{benchrec.NewLatencyRecord(name, cfg.Backend, lat)}, nil
	})
}

// enqueueConsume enqueues one message per call on producer for d while
// consumer's Work handles them.
func enqueueConsume(ctx context.Context, backend string, producer, consumer *baton.Client, d time.Duration) (*Record, error) {
	const queue = "flow"
	var (
		mu       sync.Mutex
		consumed int
		lastAt   time.Time
	)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	werr := make(chan error, 1)
	go func() {
		werr <- consumer.Work(wctx, queue, func(context.Context, *baton.Message) error {
			mu.Lock()
			consumed++
			lastAt = time.Now()
			mu.Unlock()
			return nil
		}, baton.WorkerOptions{Name: "baton-bench consumer"})
	}()
	var lat []time.Duration
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		t0 := time.Now()
		if _, err := producer.Enqueue(ctx, queue, benchq.Payload(i)); err != nil {
			cancel()
			<-werr
			return nil, fmt.Errorf("enqueue: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	n := len(lat)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		c, at := consumed, lastAt
		mu.Unlock()
		if c >= n {
			cancel()
			if err := <-werr; err != nil {
				return nil, fmt.Errorf("work: %w", err)
			}
			st := benchrec.Summarize(lat)
			rec := benchrec.NewThroughputRecord(CaseEnqueueConsume, backend, n, at.Sub(start))
			rec.P50us, rec.P99us = benchrec.Round(st.P50), benchrec.Round(st.P99)
			return &rec, nil
		}
		if time.Now().After(deadline) {
			cancel()
			<-werr
			return nil, fmt.Errorf("%d of %d messages consumed 30s after the last enqueue", c, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// warmUpListener notifies until one arrives (the first may be sent before
// the listener is wired up on every path), then drains late copies.
func warmUpListener(ctx context.Context, a *baton.Client, l *baton.Listener, channel string) error {
	deadline := time.Now().Add(10 * time.Second)
	for got := false; !got; {
		if err := a.Notify(ctx, channel, "warm-up"); err != nil {
			return err
		}
		select {
		case <-l.C():
			got = true
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				return errors.New("no notification arrived within 10s")
			}
		}
	}
	for {
		select {
		case <-l.C():
		case <-time.After(50 * time.Millisecond):
			return nil
		}
	}
}

// notifyLatency measures Notify on a to the notification arriving on a
// listener of b.
func notifyLatency(ctx context.Context, a, b *baton.Client, d time.Duration) ([]time.Duration, error) {
	const channel = "bench"
	l, err := b.Listen(ctx, channel)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if err := warmUpListener(ctx, a, l, channel); err != nil {
		return nil, err
	}
	var lat []time.Duration
	begin := time.Now()
	for i := 0; i < latencyRounds && (i < minRounds || time.Since(begin) < d); i++ {
		time.Sleep(2 * time.Millisecond)
		payload := strconv.Itoa(i)
		t0 := time.Now()
		if err := a.Notify(ctx, channel, payload); err != nil {
			return nil, err
		}
		select {
		case n := <-l.C():
			at := time.Now()
			if n.Payload != payload {
				return nil, fmt.Errorf("round %d: got payload %q, want %q", i+1, n.Payload, payload)
			}
			lat = append(lat, at.Sub(t0))
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("round %d: no notification within 10s", i+1)
		}
	}
	return lat, nil
}

// drainSubscribedCase is drain_N while a second client receives every job
// event.
func drainSubscribedCase(ctx context.Context, cfg QueueConfig, sc *scratch, name string) ([]Record, error) {
	return withClients(ctx, sc, 2, func(cs []*baton.Client) ([]Record, error) {
		sub, err := cs[1].SubscribeJobs(ctx, baton.JobFilter{})
		if err != nil {
			return nil, err
		}
		defer sub.Close()
		go func() {
			for range sub.C() {
			}
		}()
		n, elapsed, err := benchq.Drain(ctx, cs[0], "drain", cfg.Messages, cfg.Workers, cfg.Duration)
		if err != nil {
			return nil, err
		}
		return []Record{benchrec.NewThroughputRecord(name, cfg.Backend, n, elapsed)}, nil
	})
}

// drainBatchesCase is drain_N over a backlog of batches.
func drainBatchesCase(ctx context.Context, cfg QueueConfig, sc *scratch, name string) ([]Record, error) {
	return withClients(ctx, sc, 1, func(cs []*baton.Client) ([]Record, error) {
		n, elapsed, err := benchq.DrainBatches(ctx, cs[0], "drain", cfg.Messages, cfg.Workers, cfg.Duration)
		if err != nil {
			return nil, err
		}
		return []Record{benchrec.NewThroughputRecord(name, cfg.Backend, n, elapsed)}, nil
	})
}
