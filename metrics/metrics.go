// Package metrics exposes baton's Prometheus metrics.
//
// A Metrics is a baton.Observer (what this process's clients do: handler
// outcomes and durations, lock waits, deadlocks, lost sessions) and a
// prometheus.Collector; Watch adds the database-wide gauges (messages per
// queue and state, locks held per namespace and mode), read from the
// database at each scrape:
//
//	m := metrics.New()
//	c, err := baton.Open(ctx, dsn, baton.Options{Observer: m})
//	...
//	m.Watch(c)
//	http.Handle("/metrics", m.Handler())
//
// Metric names:
//
//	baton_queue_messages{queue,state}                 gauge (state: ready, scheduled, retrying, claimed, completed, cancelled, dead, pending)
//	baton_messages_processed_total{queue,kind,outcome} counter (outcome: completed, retried, dead, lost, cancelled)
//	baton_handler_duration_seconds{queue,kind}         histogram
//	baton_lock_wait_seconds{namespace}                 histogram (namespace "" for user-level locks)
//	baton_locks_held{namespace,mode}                   gauge (mode: read, write)
//	baton_deadlocks_total                              counter
//	baton_sessions_lost_total                          counter
//	baton_scrape_errors_total                          counter (a gauge's query failed)
//
// The kind label is the message's kind ("" for a message without one).
package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/batonhq/baton"
)

// Metrics collects baton's metrics; the zero value is not usable, call New.
type Metrics struct {
	processed *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	lockWait  *prometheus.HistogramVec
	deadlocks prometheus.Counter
	lost      prometheus.Counter
	scrapeErr prometheus.Counter
	queueDesc *prometheus.Desc
	locksDesc *prometheus.Desc

	mu      sync.Mutex
	clients []*baton.Client

	regOnce sync.Once
	reg     *prometheus.Registry
}

var _ baton.Observer = (*Metrics)(nil)
var _ prometheus.Collector = (*Metrics)(nil)

// New returns an empty Metrics.
func New() *Metrics {
	return &Metrics{
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_messages_processed_total", Help: "Messages whose handler ran, by outcome (completed, retried, dead, lost).",
		}, []string{"queue", "kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baton_handler_duration_seconds", Help: "How long handlers ran.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"queue", "kind"}),
		lockWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baton_lock_wait_seconds", Help: "How long lock calls took, granted or not (namespace empty for user-level locks).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 11),
		}, []string{"namespace"}),
		deadlocks: prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_deadlocks_total", Help: "Lock calls chosen as a deadlock's victim."}),
		lost:      prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_sessions_lost_total", Help: "Sessions this process lost (lease not renewed in time)."}),
		scrapeErr: prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_scrape_errors_total", Help: "Scrapes whose database query for a gauge failed."}),
		queueDesc: prometheus.NewDesc("baton_queue_messages", "Messages in each queue by state (ready, scheduled, retrying, claimed, completed, cancelled, dead, pending), from the database.", []string{"queue", "state"}, nil),
		locksDesc: prometheus.NewDesc("baton_locks_held", "Granted lock instances by namespace and mode, from the database (namespace empty for user-level locks).", []string{"namespace", "mode"}, nil),
	}
}

// HandlerDone implements baton.Observer.
func (m *Metrics) HandlerDone(queue, kind, outcome string, d time.Duration) {
	m.processed.WithLabelValues(queue, kind, outcome).Inc()
	m.duration.WithLabelValues(queue, kind).Observe(d.Seconds())
}

// LockWaited implements baton.Observer.
func (m *Metrics) LockWaited(namespace string, d time.Duration, _ bool) {
	m.lockWait.WithLabelValues(namespace).Observe(d.Seconds())
}

// Deadlock implements baton.Observer.
func (m *Metrics) Deadlock() { m.deadlocks.Inc() }

// SessionLost implements baton.Observer.
func (m *Metrics) SessionLost() { m.lost.Inc() }

// Watch adds the database-wide gauges of c's database (queues and locks),
// queried at each scrape. Watch one client per database.
func (m *Metrics) Watch(c *baton.Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clients = append(m.clients, c)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.processed.Describe(ch)
	m.duration.Describe(ch)
	m.lockWait.Describe(ch)
	ch <- m.deadlocks.Desc()
	ch <- m.lost.Desc()
	ch <- m.scrapeErr.Desc()
	ch <- m.queueDesc
	ch <- m.locksDesc
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	clients := append([]*baton.Client(nil), m.clients...)
	m.mu.Unlock()
	for _, c := range clients {
		if err := m.collectDB(ch, c); err != nil {
			m.scrapeErr.Inc()
		}
	}
	m.processed.Collect(ch)
	m.duration.Collect(ch)
	m.lockWait.Collect(ch)
	ch <- m.deadlocks
	ch <- m.lost
	ch <- m.scrapeErr
}

// collectDB sends the gauges of c's database: the queues', then the
// locks'.
func (m *Metrics) collectDB(ch chan<- prometheus.Metric, c *baton.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.collectQueues(ctx, ch, c); err != nil {
		return err
	}
	return m.collectLocks(ctx, ch, c)
}

// collectQueues sends the messages of each queue by state.
func (m *Metrics) collectQueues(ctx context.Context, ch chan<- prometheus.Metric, c *baton.Client) error {
	queues, err := c.Queues(ctx)
	if err != nil {
		return err
	}
	for _, q := range queues {
		st, err := c.Stats(ctx, q)
		if err != nil {
			return err
		}
		for _, v := range []struct {
			state string
			n     int64
		}{{"ready", st.Ready}, {"scheduled", st.Scheduled}, {"retrying", st.Retrying}, {"claimed", st.Claimed},
			{"completed", st.Completed}, {"cancelled", st.Cancelled}, {"dead", st.Dead}, {"pending", st.Pending}} {
			ch <- prometheus.MustNewConstMetric(m.queueDesc, prometheus.GaugeValue, float64(v.n), q, v.state)
		}
	}
	return nil
}

// heldKey is the labels of a granted lock instance: its namespace ("" for
// a user-level lock) and mode (read or write).
type heldKey struct{ ns, mode string }

func heldKeyOf(l baton.LockInfo) heldKey {
	k := heldKey{l.Namespace, "read"}
	if l.Mode == "EXCLUSIVE" {
		k.mode = "write"
	}
	if l.Type == "USER LEVEL LOCK" {
		k.ns = ""
	}
	return k
}

// collectLocks sends the granted lock instances by namespace and mode.
func (m *Metrics) collectLocks(ctx context.Context, ch chan<- prometheus.Metric, c *baton.Client) error {
	locks, err := c.Locks(ctx)
	if err != nil {
		return err
	}
	held := map[heldKey]int{}
	for _, l := range locks {
		if l.Status == "GRANTED" {
			held[heldKeyOf(l)]++
		}
	}
	for k, n := range held {
		ch <- prometheus.MustNewConstMetric(m.locksDesc, prometheus.GaugeValue, float64(n), k.ns, k.mode)
	}
	return nil
}

// Handler serves the metrics in Prometheus' text format (a registry of its
// own holding m and nothing else).
func (m *Metrics) Handler() http.Handler {
	m.regOnce.Do(func() {
		m.reg = prometheus.NewRegistry()
		m.reg.MustRegister(m)
	})
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
