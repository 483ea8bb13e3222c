package benchrec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Microsecond)
	}
	st := Summarize(d)
	if st.N != 100 || st.P50 != 50 || st.P99 != 99 || st.Mean != 50.5 {
		t.Fatalf("Summarize(1..100µs) = %+v", st)
	}
	if st := Summarize([]time.Duration{7 * time.Microsecond}); st.P50 != 7 || st.P99 != 7 {
		t.Fatalf("one sample: %+v", st)
	}
	if st := Summarize(nil); st.N != 0 {
		t.Fatalf("no samples: %+v", st)
	}
}

func TestRecordJSONKeys(t *testing.T) {
	b, err := json.Marshal(Record{Name: "lock_pair", Backend: "postgres", Ops: 1, OpsPerSec: 2, P50us: 3, P99us: 4,
		Baseline: "pg_advisory_lock", BaselineOpsPerSec: 5, BaselineP50us: 6, Ratio: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"lock_pair","backend":"postgres","ops":1,"ops_per_sec":2,"p50_us":3,"p99_us":4,` +
		`"baseline":"pg_advisory_lock","baseline_ops_per_sec":5,"baseline_p50_us":6,"ratio":0.4}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(Record{Name: "contend8", Backend: "sqlite"})
	if strings.Contains(string(b), "baseline") || strings.Contains(string(b), "ratio") {
		t.Fatalf("empty baseline fields not omitted: %s", b)
	}
}
