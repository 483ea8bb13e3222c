package batontest

import (
	"testing"
	"time"
)

// Interleave runs b.N calls of each loop, in turns of 50 calls of one
// loop then 50 of the next, so that the machine's drift between turns
// hits them alike, and reports each loop's calls per second (its name and
// unit) and its ratio to the first loop's (name/first). The bound
// benchmarks (docs/benchmarks.md, "Go benchmarks") read an engine's
// statements against the native primitive with it.
func Interleave(b *testing.B, unit string, names []string, loops map[string]func(call int64) error) {
	b.Helper()
	turns := make(map[string]func(first int64, n int) error, len(loops))
	for name, loop := range loops {
		turns[name] = func(first int64, n int) error {
			for j := range n {
				if err := loop(first + int64(j)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	InterleaveTurns(b, unit, names, 50, turns)
}

// InterleaveTurns is Interleave for loops that run a whole turn at once
// (turn calls, or fewer at the end, numbered from first): several workers
// sharing a turn, say.
func InterleaveTurns(b *testing.B, unit string, names []string, turn int, loops map[string]func(first int64, n int) error) {
	b.Helper()
	took := make([]time.Duration, len(names))
	var first int64
	b.ResetTimer()
	for left := b.N; left > 0; left -= min(left, turn) {
		for i, name := range names {
			st := time.Now()
			if err := loops[name](first, min(left, turn)); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			took[i] += time.Since(st)
		}
		first += int64(turn)
	}
	for i, name := range names {
		b.ReportMetric(float64(b.N)/took[i].Seconds(), name+"-"+unit)
		if i > 0 {
			b.ReportMetric(took[0].Seconds()/took[i].Seconds(), name+"/"+names[0])
		}
	}
}
