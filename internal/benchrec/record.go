// Package benchrec holds the records of baton's benchmarks: the figures of
// one case on one backend, as `baton bench` prints them and the peer
// benchmark modules (bench/river, bench/goqite) report theirs. It imports
// only the standard library, so that those modules can share it without
// the bench engine.
package benchrec

import (
	"math"
	"slices"
	"time"
)

// Default servers, the same as the test suite's.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test"
	DefaultMySQL    = "mysql://root@127.0.0.1:3306/test"
)

// Record is the result of one benchmark case on one backend. Baseline
// fields are empty when the case has no native counterpart on the backend.
type Record struct {
	// Name is the case: one of Cases (or of QueueCases, EventCases for
	// the queue's and the events' benchmarks).
	Name string `json:"name"`
	// Backend is sqlite, postgres or mysql.
	Backend string `json:"backend"`
	// Ops is how many operations (pairs, hand-offs, acquisitions, detected
	// deadlocks) were measured.
	Ops int `json:"ops"`
	// OpsPerSec is the throughput; for latency cases 1 ÷ mean latency.
	OpsPerSec float64 `json:"ops_per_sec"`
	// P50us and P99us are latency percentiles in microseconds; absent for
	// cases that measure throughput only (drains).
	P50us float64 `json:"p50_us,omitempty"`
	P99us float64 `json:"p99_us,omitempty"`
	// Baseline names the native primitive measured in the same run.
	Baseline string `json:"baseline,omitempty"`
	// BaselineOpsPerSec and BaselineP50us are the baseline's figures.
	BaselineOpsPerSec float64 `json:"baseline_ops_per_sec,omitempty"`
	BaselineP50us     float64 `json:"baseline_p50_us,omitempty"`
	// Ratio compares baton with the baseline: ops/s ÷ baseline ops/s for
	// throughput cases (lock_pair, multi10, try_held, reenter, contend8, readers8:
	// above 1 is faster), p50 ÷ baseline p50 for latency cases (handoff,
	// handoff_process, handoff_waited, handoff_table: above 1 is slower).
	Ratio float64 `json:"ratio,omitempty"`
}

// NewThroughputRecord is the record of ops operations in elapsed.
func NewThroughputRecord(name, backend string, ops int, elapsed time.Duration) Record {
	rec := Record{Name: name, Backend: backend, Ops: ops}
	if elapsed > 0 {
		rec.OpsPerSec = Round(float64(ops) / elapsed.Seconds())
	}
	return rec
}

// WithThroughputBaseline adds a throughput baseline: ratio = ops/s ÷
// baseline ops/s.
func (rec *Record) WithThroughputBaseline(name string, opsPerSec float64) {
	rec.Baseline = name
	rec.BaselineOpsPerSec = Round(opsPerSec)
	if opsPerSec > 0 {
		rec.Ratio = Round(rec.OpsPerSec / opsPerSec)
	}
}

// NewLatencyRecord is the record of latency samples: p50, p99 and 1 ÷ the
// mean as ops_per_sec.
func NewLatencyRecord(name, backend string, lat []time.Duration) Record {
	return *LatencyRecord(name, backend, Summarize(lat))
}

// Stats summarises latency samples.
type Stats struct {
	N        int
	P50, P99 float64 // µs
	Mean     float64 // µs
}

// Summarize returns the count, p50, p99 and mean of latency samples.
func Summarize(d []time.Duration) Stats {
	if len(d) == 0 {
		return Stats{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	return Stats{
		N:    len(s),
		P50:  us(percentile(s, 0.50)),
		P99:  us(percentile(s, 0.99)),
		Mean: us(sum) / float64(len(s)),
	}
}

// percentile returns the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Round keeps figures readable in JSON: 3 significant decimals.
func Round(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	return math.Round(v*1000) / 1000
}

// LatencyRecord builds the record of a latency case.
func LatencyRecord(name, backend string, st Stats) *Record {
	rec := &Record{Name: name, Backend: backend, Ops: st.N, P50us: Round(st.P50), P99us: Round(st.P99)}
	if st.Mean > 0 {
		rec.OpsPerSec = Round(1e6 / st.Mean)
	}
	return rec
}

// WithLatencyBaseline adds a latency baseline: ratio = p50 ÷ baseline p50.
func (rec *Record) WithLatencyBaseline(name string, st Stats) {
	rec.Baseline = name
	rec.BaselineP50us = Round(st.P50)
	if st.Mean > 0 {
		rec.BaselineOpsPerSec = Round(1e6 / st.Mean)
	}
	if st.P50 > 0 {
		rec.Ratio = Round(rec.P50us / st.P50)
	}
}
