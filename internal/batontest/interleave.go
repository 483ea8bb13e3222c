package batontest

import (
	"testing"
	"time"
)

// Interleave runs b.N calls of each loop, in turns of 50 calls of one
// loop then 50 of the next, so that the machine's drift between turns
// hits them alike, and reports each loop's calls per second (its name and
// unit) and its ratio to the first loop's (name/first). The bound
// benchmarks (docs/benchmarks.md, "The bounds, reproducible") read an
// engine's statements against the native primitive with it.
func Interleave(b *testing.B, unit string, names []string, loops map[string]func(call int64) error) {
	b.Helper()
	took := make([]time.Duration, len(names))
	var call int64
	b.ResetTimer()
	for left := b.N; left > 0; left -= min(left, 50) {
		for i, name := range names {
			st := time.Now()
			for j := range min(left, 50) {
				if err := loops[name](call + int64(j)); err != nil {
					b.Fatalf("%s: %v", name, err)
				}
			}
			took[i] += time.Since(st)
		}
		call += 50
	}
	for i, name := range names {
		b.ReportMetric(float64(b.N)/took[i].Seconds(), name+"-"+unit)
		if i > 0 {
			b.ReportMetric(took[0].Seconds()/took[i].Seconds(), name+"/"+names[0])
		}
	}
}
