package bench

import (
	"context"
	"testing"
	"time"
)

// TestRunEventsSQLite: every captured insert is consumed exactly once in
// both consumption cases, and every record has its baseline.
func TestRunEventsSQLite(t *testing.T) {
	recs, err := RunEvents(context.Background(), EventsConfig{Backend: "sqlite", Rows: 300, Workers: 3, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(EventCases) {
		t.Fatalf("%d records, want %d", len(recs), len(EventCases))
	}
	for _, r := range recs {
		if r.Baseline == "" || r.BaselineOpsPerSec <= 0 || r.OpsPerSec <= 0 {
			t.Fatalf("record %+v without a baseline or a rate", r)
		}
		if r.Name != "writer_overhead" && r.Ops != 300 {
			t.Fatalf("%s consumed %d events, want 300", r.Name, r.Ops)
		}
	}
}
