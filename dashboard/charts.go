package dashboard

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/batonhq/baton"
)

// Charts are inline SVG laid out here, in Go: the templates (charts.html)
// only write the coordinates, escaped like any other text. Nothing runs in
// the browser and nothing is loaded; the colours are style.css's classes.

// num is a coordinate, written with at most one decimal.
type num float64

func (n num) String() string { return strconv.FormatFloat(math.Round(float64(n)*10)/10, 'f', -1, 64) }

// chart is one line chart: its box, its plot area, its axes' ticks, a key
// and the series.
type chart struct {
	ID, Title, Desc          string
	W, H                     int
	Left, Top, Right, Bottom num
	XTicks, YTicks           []tick
	Series                   []line
	// Empty, when no series has a point, says why, at EX, EY.
	Empty  string
	EX, EY num
}

// tick is an axis label at X, Y (the grid line of a y tick runs across
// the plot at Y).
type tick struct {
	X, Y  num
	Label string
}

// line is a series: its path (gaps where a point has no value), a dot per
// point with its own title, and its key's place.
type line struct {
	Name, Class string
	D           string
	Dots        []dot
	// The key: a stroke from KeyX to KeyX2 at KeyY, the name at KeyTX.
	KeyX, KeyX2, KeyTX, KeyY num
}

// dot is a point of a series; Title says what it is in words.
type dot struct {
	X, Y  num
	Value string
	Title string
}

// series is a chart's input: a value per point, Has saying which points
// have one (nil: all).
type series struct {
	Name, Class string
	Values      []float64
	Has         []bool
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH                                 = 560, 190
	padLeft, padRight, padTop, padBottom, keyWidth = 52, 12, 26, 24, 86
)

// lineChart lays out series over points starting at at (each step long),
// the y axis from 0 to a round maximum, or with logScale in decades around
// the values, its labels written by label.
func lineChart(id, title string, at []time.Time, step time.Duration, ss []series, label func(float64) string, logScale bool) chart {
	c := chart{ID: id, Title: title, W: chartW, H: chartH, Left: padLeft, Top: padTop, Right: chartW - padRight, Bottom: chartH - padBottom}
	n := len(at)
	top, least := 0.0, math.Inf(1)
	for _, s := range ss {
		for i, v := range s.Values {
			if s.Has == nil || s.Has[i] {
				top = max(top, v)
				if v > 0 {
					least = min(least, v)
				}
			}
		}
	}
	x := func(i int) num {
		if n < 2 {
			return c.Left
		}
		return c.Left + (c.Right-c.Left)*num(i)/num(n-1)
	}
	var y func(v float64) num
	if logScale && top > 0 {
		// Decades from the one below the least value to the one above
		// the largest: a p50 of milliseconds and a p99 of seconds both
		// stay readable.
		lo, hi := math.Floor(math.Log10(least)), math.Ceil(math.Log10(top))
		if hi <= lo {
			hi = lo + 1
		}
		y = func(v float64) num {
			return c.Bottom - (c.Bottom-c.Top)*num((math.Log10(max(v, math.Pow(10, lo)))-lo)/(hi-lo))
		}
		for d := lo; d <= hi; d++ {
			c.YTicks = append(c.YTicks, tick{X: c.Left - 6, Y: y(math.Pow(10, d)), Label: label(math.Pow(10, d))})
		}
		top = math.Pow(10, hi)
	} else {
		top = niceCeil(top)
		y = func(v float64) num { return c.Bottom - (c.Bottom-c.Top)*num(v/top) }
		for k := 0; k <= 2; k++ {
			v := top * float64(k) / 2
			c.YTicks = append(c.YTicks, tick{X: c.Left - 6, Y: y(v), Label: label(v)})
		}
	}
	if n > 0 {
		for k := 0; k < 4; k++ {
			i := n - 1 - k*(n/4)
			l := "now"
			if k > 0 {
				l = "−" + shortDur(time.Duration(n-1-i)*step)
			}
			c.XTicks = append(c.XTicks, tick{X: x(i), Y: c.Bottom + 16, Label: l})
		}
	}
	for j, s := range ss {
		kx := c.Left + num(j*keyWidth)
		l := line{Name: s.Name, Class: s.Class, KeyX: kx, KeyX2: kx + 14, KeyTX: kx + 18, KeyY: 12}
		pen := "M"
		for i, v := range s.Values {
			if s.Has != nil && !s.Has[i] {
				pen = "M"
				continue
			}
			px, py := x(i), y(v)
			l.D += pen + px.String() + " " + py.String() + " "
			pen = "L"
			l.Dots = append(l.Dots, dot{X: px, Y: py, Value: label(v),
				Title: fmt.Sprintf("%s %s, %s", s.Name, label(v), span(at[i], step))})
		}
		c.Series = append(c.Series, l)
	}
	c.EX, c.EY = (c.Left+c.Right)/2, (c.Top+c.Bottom)/2
	scale := "from 0"
	if logScale && len(c.YTicks) > 0 {
		scale = "on a logarithmic scale from " + c.YTicks[0].Label
	}
	c.Desc = fmt.Sprintf("%s: %d points of %s each, the last ending now; the y axis runs %s to %s.", title, n, shortDur(step), scale, label(top))
	return c
}

// niceCeil is the smallest of 1, 2, 5 × 10^k at or above v (1 for 0).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// span names a point's time in UTC: its minute, or its start and end.
func span(at time.Time, step time.Duration) string {
	at = at.UTC()
	if step <= time.Minute {
		return at.Format("15:04") + " UTC"
	}
	return at.Format("15:04") + "–" + at.Add(step).Format("15:04") + " UTC"
}

// shortDur writes whole minutes and hours briefly: 15m, 6h, 1h30m.
func shortDur(d time.Duration) string {
	s := d.String()
	if len(s) > 2 && s[len(s)-2:] == "0s" {
		s = s[:len(s)-2]
	}
	if len(s) > 2 && s[len(s)-2:] == "0m" && d >= time.Hour {
		s = s[:len(s)-2]
	}
	return s
}

// count writes a count axis value.
func count(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// millis writes a duration given in milliseconds.
func millis(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return strconv.FormatFloat(math.Round(v*1000), 'f', -1, 64) + "µs"
	}
	return dur(time.Duration(v * float64(time.Millisecond)))
}

// chartSet is a queue's charts over one range.
type chartSet struct {
	Range                          string // "hour" or "day"
	Throughput, Backlog, Durations chart
}

// chartRanges are the ranges a queue's charts show: span and step.
var chartRanges = map[string][2]time.Duration{"hour": {time.Hour, time.Minute}, "day": {24 * time.Hour, 15 * time.Minute}}

// queueCharts lays out a queue's charts from its history.
func queueCharts(q, rng string, pts []baton.QueuePoint, step time.Duration) chartSet {
	n := len(pts)
	at := make([]time.Time, n)
	var completed, retried, dead, ready, scheduled, retrying, p50, p90, p99 = make([]float64, n), make([]float64, n),
		make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	sampled, handled := make([]bool, n), make([]bool, n)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i, p := range pts {
		at[i] = p.At
		completed[i], retried[i], dead[i] = float64(p.Completed), float64(p.Retried), float64(p.Dead)
		ready[i], scheduled[i], retrying[i], sampled[i] = float64(p.Ready), float64(p.Scheduled), float64(p.Retrying), p.Sampled
		p50[i], p90[i], p99[i], handled[i] = ms(p.P50), ms(p.P90), ms(p.P99), p.Handled > 0
	}
	per := "per minute"
	if step > time.Minute {
		per = "per " + shortDur(step)
	}
	last := map[string]string{"hour": "last hour", "day": "last day"}[rng] + ", queue " + q
	cs := chartSet{Range: rng,
		Throughput: lineChart("chart-throughput", "Finished "+per+", "+last, at, step, []series{
			{Name: "completed", Class: "s-completed", Values: completed},
			{Name: "retried", Class: "s-retried", Values: retried},
			{Name: "dead", Class: "s-dead", Values: dead}}, count, false),
		Backlog: lineChart("chart-backlog", "Backlog, "+last+" (largest sample "+per+")", at, step, []series{
			{Name: "ready", Class: "s-ready", Values: ready, Has: sampled},
			{Name: "scheduled", Class: "s-scheduled", Values: scheduled, Has: sampled},
			{Name: "retrying", Class: "s-retrying", Values: retrying, Has: sampled}}, count, false),
		Durations: lineChart("chart-durations", "Handler duration "+per+" (log scale), "+last, at, step, []series{
			{Name: "p50", Class: "s-p50", Values: p50, Has: handled},
			{Name: "p90", Class: "s-p90", Values: p90, Has: handled},
			{Name: "p99", Class: "s-p99", Values: p99, Has: handled}}, millis, true),
	}
	if !slices.Contains(sampled, true) {
		cs.Backlog.Empty = "no sample yet: a running client samples once a minute"
	}
	if !slices.Contains(handled, true) {
		cs.Durations.Empty = "no handler run of a worker in this range"
	}
	return cs
}

// charts reads a queue's history over the range asked for ("" is the
// last hour) and lays out its charts.
func (d *dash) charts(ctx context.Context, q, rng string) (chartSet, error) {
	if rng == "" {
		rng = "hour"
	}
	r, ok := chartRanges[rng]
	if !ok {
		return chartSet{}, fmt.Errorf("%w: range %q: give hour or day", baton.ErrInvalid, rng)
	}
	pts, err := d.c.QueueHistory(ctx, q, baton.HistoryOptions{Span: r[0], Step: r[1]})
	if err != nil {
		return chartSet{}, err
	}
	return queueCharts(q, rng, pts, r[1]), nil
}
