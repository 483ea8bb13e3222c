package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestRunQueueSQLite runs every queue case briefly on SQLite. It checks
// the records' shape, never their timings.
func TestRunQueueSQLite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seen []string
	recs, err := RunQueue(ctx, QueueConfig{
		Backend:  "sqlite",
		Server:   "sqlite:" + t.TempDir() + "/named.db",
		Duration: 200 * time.Millisecond,
		Messages: 300,
		Progress: func(name string) { seen = append(seen, name) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// latency_commit comes from the latency case's run.
	runs := slices.DeleteFunc(slices.Clone(QueueCases), func(c string) bool { return c == CaseLatencyCommit })
	if len(recs) != len(QueueCases) || !slices.Equal(seen, runs) {
		t.Fatalf("got %d records and progress %v for %d cases: %+v", len(recs), seen, len(QueueCases), recs)
	}
	for i, r := range recs {
		ok := r.Name == QueueCases[i] && r.Backend == "sqlite" && r.OpsPerSec > 0 && r.Baseline == "" && r.Ratio == 0
		switch r.Name {
		case CaseDrain1, CaseDrainN, CaseDrainSubscribed, CaseDrainBatches:
			// Cut short by the duration or drained to the end.
			ok = ok && r.Ops > 0 && r.Ops <= 300
		case CaseDrainLimited, CaseDrainRated:
			// Against the unlimited drain of the same run.
			ok = r.Name == QueueCases[i] && r.OpsPerSec > 0 && r.Ops > 0 && r.Ops <= 300 &&
				r.Baseline == CaseDrainN && r.BaselineOpsPerSec > 0 && r.Ratio > 0
		case CaseLatencyCommit:
			// Timed from Enqueue's return: the handler may in principle
			// start first.
			ok = r.Name == QueueCases[i] && r.Ops >= minRounds && r.P50us != 0 && r.P99us >= r.P50us
		default:
			ok = ok && r.Ops >= minRounds && r.P50us > 0 && r.P99us >= r.P50us
		}
		if !ok {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	recs, err = RunQueue(ctx, QueueConfig{Backend: "sqlite", Duration: 100 * time.Millisecond, Only: []string{CaseLatencyCommit}})
	if err != nil || len(recs) != 1 || recs[0].Name != CaseLatencyCommit {
		t.Errorf("only latency_commit: %+v, %v", recs, err)
	}
	if _, err := RunQueue(ctx, QueueConfig{Backend: "sqlite", Only: []string{"drain_x"}}); err == nil {
		t.Error("RunQueue with an unknown case gave no error")
	}
}

// TestDrainPostgresBaseline drains a small backlog on PostgreSQL, baseline
// included.
func TestDrainPostgresBaseline(t *testing.T) {
	if !slices.ContainsFunc(batontest.All(), func(b batontest.Backend) bool { return b.Name == "postgres" }) {
		t.Skip("postgres not in BATON_TEST_BACKENDS")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := RunQueue(ctx, QueueConfig{
		Backend:  "postgres",
		Server:   batontest.PostgresDSN(),
		Duration: 20 * time.Second, // long enough to drain everything
		Messages: 250,
		Workers:  2,
		Only:     []string{CaseDrainN},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
	r := recs[0]
	if r.Name != CaseDrainN || r.Ops != 250 || r.OpsPerSec <= 0 || r.Baseline != "skip_locked_raw" ||
		r.BaselineOpsPerSec <= 0 || r.Ratio <= 0 {
		t.Fatalf("record %+v", r)
	}
}
