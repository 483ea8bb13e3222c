package dashboard

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// TestLineChart: points land where the axes put them (x across the plot
// in order, y from the bottom at 0 to the top at the round maximum), a
// point without a value breaks the path, and each dot's title says what
// it is.
func TestLineChart(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	at := []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute)}
	c := lineChart("c", "T", at, time.Minute, []series{
		{Name: "a", Class: "s-a", Values: []float64{0, 5, 9}},
		{Name: "b", Class: "s-b", Values: []float64{1, 2, 3}, Has: []bool{true, false, true}}}, count, false)
	// The plot runs from x 52 to 548 and from y 166 (0) up to 26 (10).
	if c.Left != 52 || c.Right != 548 || c.Top != 26 || c.Bottom != 166 {
		t.Fatalf("plot area %v %v %v %v", c.Left, c.Right, c.Top, c.Bottom)
	}
	a := c.Series[0]
	if a.D != "M52 166 L300 96 L548 40 " {
		t.Errorf("series a's path %q", a.D)
	}
	if len(a.Dots) != 3 || a.Dots[2].X != 548 || a.Dots[2].Y != 40 || a.Dots[2].Value != "9" || a.Dots[2].Title != "a 9, 03:06 UTC" {
		t.Errorf("series a's dots %+v", a.Dots)
	}
	if b := c.Series[1]; b.D != "M52 152 M548 124 " || len(b.Dots) != 2 {
		t.Errorf("series b (no second value): path %q, %d dots", b.D, len(b.Dots))
	}
	var ys []string
	for _, y := range c.YTicks {
		ys = append(ys, y.Label+"@"+y.Y.String())
	}
	if got := strings.Join(ys, " "); got != "0@166 5@96 10@26" {
		t.Errorf("y ticks %s", got)
	}
	// Day points: 96 of 15 minutes, ticks every 6 hours back from now.
	day := make([]time.Time, 96)
	for i := range day {
		day[i] = t0.Add(time.Duration(i) * 15 * time.Minute)
	}
	d := lineChart("d", "D", day, 15*time.Minute, []series{{Name: "a", Values: make([]float64, 96)}}, count, false)
	var xs []string
	for _, x := range d.XTicks {
		xs = append(xs, x.Label+"@"+x.X.String())
	}
	if got := strings.Join(xs, " "); got != "now@548 −6h@422.7 −12h@297.4 −18h@172.1" {
		t.Errorf("day x ticks %s", got)
	}
	if d.Series[0].Dots[95].Title != "a 0, 02:49–03:04 UTC" {
		t.Errorf("a day point's title %q", d.Series[0].Dots[95].Title)
	}
}

// TestLogChart: on a log scale, ticks at each decade from below the
// least value to above the largest, each value at its decade's fraction.
func TestLogChart(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	c := lineChart("c", "T", []time.Time{t0, t0.Add(time.Minute)}, time.Minute,
		[]series{{Name: "p", Values: []float64{3, 3000}}}, millis, true)
	var ys []string
	for _, y := range c.YTicks {
		ys = append(ys, y.Label+"@"+y.Y.String())
	}
	// 1ms .. 10s: four decades over 140 units, 35 each.
	if got := strings.Join(ys, " "); got != "1ms@166 10ms@131 100ms@96 1s@61 10s@26" {
		t.Errorf("log ticks %s", got)
	}
	// 3 ms: log10(3) = 0.477 of a decade above 1 ms; 3 s likewise above 1 s.
	if d := c.Series[0].Dots; d[0].Y.String() != "149.3" || d[1].Y.String() != "44.3" {
		t.Errorf("log dots %+v", d)
	}
}

func TestNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 0.3: 1, 1: 1, 1.5: 2, 3: 5, 5: 5, 7: 10, 10: 10, 11: 20, 999: 1000, 4100: 5000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}

// TestChartEscapes: a queue's name full of markup is text in the SVG.
func TestChartEscapes(t *testing.T) {
	tm, err := parseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	q := `<script>alert(1)</script>"&`
	cs := queueCharts(q, "hour", []baton.QueuePoint{{At: time.Now(), Completed: 1}}, time.Minute)
	var b bytes.Buffer
	if err := tm["queue"].ExecuteTemplate(&b, "chart", cs.Throughput); err != nil {
		t.Fatal(err)
	}
	if cs.Backlog.Empty == "" || cs.Durations.Empty == "" || cs.Throughput.Empty != "" {
		t.Errorf("empty notes: backlog %q, durations %q, throughput %q", cs.Backlog.Empty, cs.Durations.Empty, cs.Throughput.Empty)
	}
	out := b.String()
	if strings.Contains(out, "<script") || !strings.Contains(out, "queue &lt;script&gt;alert(1)&lt;/script&gt;&#34;&amp;") {
		t.Fatalf("the queue's name is not escaped:\n%s", out)
	}
}
