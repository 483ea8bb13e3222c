package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// evalJSON runs expr (which returns a JSON string) in the page and
// decodes its result into out.
func evalJSON(t *testing.T, ctx context.Context, expr string, out any) {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
}

// svgDot is a chart's point as the browser has it.
type svgDot struct {
	CX, CY, Value, Title string
}

// dotsJS lists the dots of a chart's series with a value other than 0.
const dotsJS = `JSON.stringify([...document.querySelectorAll('#%s g[data-series="%s"] circle')].map(c => ({
  CX: c.getAttribute("cx"), CY: c.getAttribute("cy"), Value: c.dataset.value, Title: c.querySelector("title").textContent})))`

// TestBrowserCharts: a queue's page draws its throughput and duration
// charts with the points of what another process did (the roll-up that
// process flushed at Close), at the coordinates the axes give them; the
// locks page draws the wait-for graph of a held lock and a waiting
// request; on PostgreSQL, a real deadlock held up before its detector
// runs shows its cycle and the victim, which the detector then aborts.
func TestBrowserCharts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "sqlite" && b.Label != "postgres" {
			t.Skip("the browser tests run on SQLite and PostgreSQL (the roll-up's queries are checked on every backend by TestQueueHistory)")
		}
		c, dsn, srv := serve(t, b)
		_, step, _ := browser(t, false)

		// Another process completes 3, retries 1 and buries 1, then a
		// worker of it completes one more; its Close flushes the counts.
		w := open(t, dsn)
		ctx := ctxT(t)
		for range 5 {
			if _, err := w.Enqueue(ctx, "mail", []byte("m"), baton.EnqueueOptions{MaxAttempts: 3}); err != nil {
				t.Fatal(err)
			}
		}
		s, err := w.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := s.Claim(ctx, "mail", baton.ClaimOptions{Max: 5})
		if err != nil || len(ms) != 5 {
			t.Fatalf("claimed %d: %v", len(ms), err)
		}
		for i, m := range ms {
			switch {
			case i < 3:
				err = s.Ack(ctx, m)
			case i == 3:
				err = s.RetryAfter(ctx, m, time.Hour, errors.New("later"))
			default:
				err = s.Fail(ctx, m, "no")
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Enqueue(ctx, "mail", []byte("w")); err != nil {
			t.Fatal(err)
		}
		if err := w.Work(ctx, "mail", func(context.Context, *baton.Message) error { return nil }, baton.WorkerOptions{Drain: true}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}

		if err := chromedp.Do(step(), chromedp.Navigate(srv.URL+"/queues/mail"), chromedp.WaitVisible(`#chart-throughput`)); err != nil {
			t.Fatal(err)
		}
		// 60 points a series; completed 4 is the only one off 0, on the
		// y axis up to 5 (166 at 0, 26 at 5): 166 - 140 × 4/5 = 54. Its
		// x is that of the point of the minute of the flush: the last or,
		// when the minute turned since, the one before (548 - 496/59).
		var completed, retried, dead, p50 []svgDot
		evalJSON(t, step(), sprintf(dotsJS, "chart-throughput", "completed"), &completed)
		evalJSON(t, step(), sprintf(dotsJS, "chart-throughput", "retried"), &retried)
		evalJSON(t, step(), sprintf(dotsJS, "chart-throughput", "dead"), &dead)
		evalJSON(t, step(), sprintf(dotsJS, "chart-durations", "p50"), &p50)
		nonzero := func(ds []svgDot) (out []svgDot) {
			for _, d := range ds {
				if d.Value != "0" {
					out = append(out, d)
				}
			}
			return out
		}
		cd, rd, dd := nonzero(completed), nonzero(retried), nonzero(dead)
		if len(completed) != 60 || len(cd) != 1 || cd[0].Value != "4" || cd[0].CY != "54" || (cd[0].CX != "548" && cd[0].CX != "539.6") {
			t.Fatalf("completed: %d points, those off 0: %+v", len(completed), cd)
		}
		if len(rd) != 1 || rd[0].CY != "138" || rd[0].CX != cd[0].CX || len(dd) != 1 || dd[0].CY != "138" {
			t.Fatalf("retried %+v, dead %+v; want 1 each at y 138, x %s", rd, dd, cd[0].CX)
		}
		if len(p50) != 1 || p50[0].CX != cd[0].CX {
			t.Fatalf("p50 of the one handler run: %+v", p50)
		}
		var labels struct{ X, Y []string }
		evalJSON(t, step(), `JSON.stringify({X: [...document.querySelectorAll("#chart-throughput text.x")].map(e => e.textContent),
		  Y: [...document.querySelectorAll("#chart-throughput text.y")].map(e => e.textContent)})`, &labels)
		if sprintf("%q", labels.X) != `["now" "−15m" "−30m" "−45m"]` || sprintf("%q", labels.Y) != `["0" "2.5" "5"]` {
			t.Fatalf("axis labels %q %q", labels.X, labels.Y)
		}
		// The day's range: 96 points of 15 minutes.
		var day []svgDot
		if err := chromedp.Do(step(), chromedp.Click(`#range-day`), chromedp.WaitVisible(`#charts[data-range="day"]`)); err != nil {
			t.Fatal(err)
		}
		evalJSON(t, step(), sprintf(dotsJS, "chart-throughput", "completed"), &day)
		if d := nonzero(day); len(day) != 96 || len(d) != 1 || d[0].Value != "4" {
			t.Fatalf("day: %d points, off 0: %+v", len(day), d)
		}

		// A held lock and a waiting request.
		holder, waiter := open(t, dsn, baton.Options{Name: "holder"}), open(t, dsn, baton.Options{Name: "waiter"})
		hs, ws := newSession(t, holder), newSession(t, waiter)
		if _, err := hs.Lock(ctx, "app", baton.Write, 0, "orders"); err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(context.Background())
		defer stop()
		go func() { _, _ = ws.Lock(wctx, "app", baton.Write, baton.Forever, "orders") }()
		if err := chromedp.Do(step(), chromedp.Navigate(srv.URL+"/locks"), chromedp.WaitVisible(`#waitgraph path.edge.waits`)); err != nil {
			t.Fatal(err)
		}
		var graph struct{ Sessions, Locks, Holds, Waits []string }
		evalJSON(t, step(), `JSON.stringify({
		  Sessions: [...document.querySelectorAll("#waitgraph g.node.session")].map(n => n.dataset.key + " " + n.querySelector("text").textContent),
		  Locks: [...document.querySelectorAll("#waitgraph g.node.lock")].map(n => n.dataset.key),
		  Holds: [...document.querySelectorAll("#waitgraph path.edge.holds")].map(e => e.dataset.from + ">" + e.dataset.to),
		  Waits: [...document.querySelectorAll("#waitgraph path.edge.waits")].map(e => e.dataset.from + ">" + e.dataset.to)})`, &graph)
		if len(graph.Sessions) != 2 || !hasSuffix(graph.Sessions[0], hs.ID(), "/holder") || !hasSuffix(graph.Sessions[1], ws.ID(), "/waiter") ||
			sprintf("%q", graph.Locks) != `["app/orders"]` || sprintf("%q", graph.Holds) != sprintf("%q", []string{"app/orders>" + hs.ID()}) ||
			sprintf("%q", graph.Waits) != sprintf("%q", []string{ws.ID() + ">app/orders"}) {
			t.Fatalf("wait-for graph: %+v (holder %s, waiter %s)", graph, hs.ID(), ws.ID())
		}
		stop()
		_ = c

		if b.Label != "postgres" {
			return // SQLite's detector takes the write lock every request needs: it cannot be held up alone
		}
		deadlockVictim(t, step, srv.URL, dsn)
	})
}

// deadlockVictim makes a real deadlock on PostgreSQL while the test holds
// the detector's row lock: x holds a and waits for b, y holds b and
// waits for a (the newer request, the victim by the detector's rule).
// The page shows the cycle and marks y; once the row is let go, the
// detector aborts y's request: its Lock returns ErrDeadlock.
func deadlockVictim(t *testing.T, step func() context.Context, url, dsn string) {
	ctx := ctxT(t)
	db := batontest.SQLDB(t, dsn)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT k FROM baton_meta WHERE k = 'deadlock' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	// A long lease: the detector's wait for the row is bounded by it.
	o := baton.Options{Lease: 30 * time.Second}
	x, y := newSession(t, open(t, dsn, withName(o, "x"))), newSession(t, open(t, dsn, withName(o, "y")))
	for _, l := range []struct {
		s    *baton.Session
		name string
	}{{x, "a"}, {y, "b"}} {
		if _, err := l.s.Lock(ctx, "app", baton.Write, 0, l.name); err != nil {
			t.Fatal(err)
		}
	}
	xErr, yErr := make(chan error, 1), make(chan error, 1)
	go func() { _, err := x.Lock(ctx, "app", baton.Write, baton.Forever, "b"); xErr <- err }()
	if err := chromedp.Do(step(), chromedp.Navigate(url+"/locks"), chromedp.WaitVisible(`#waitgraph path.edge.waits`)); err != nil {
		t.Fatal(err)
	}
	go func() { _, err := y.Lock(ctx, "app", baton.Write, baton.Forever, "a"); yErr <- err }()
	if err := chromedp.Do(step(), chromedp.WaitVisible(`#waitgraph g.node.victim`)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Victim string
		Cycle  []string
		Alert  string
	}
	evalJSON(t, step(), `JSON.stringify({Victim: document.querySelector("#waitgraph g.node.victim").dataset.key,
	  Cycle: [...document.querySelectorAll("#waitgraph g.node.cycle")].map(n => n.dataset.key),
	  Alert: document.querySelector("p.deadlock").textContent})`, &got)
	if got.Victim != y.ID() || len(got.Cycle) != 2 || got.Alert == "" {
		t.Fatalf("deadlock drawn: %+v; want the victim %s (x is %s)", got, y.ID(), x.ID())
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-yErr:
		if !errors.Is(err, baton.ErrDeadlock) {
			t.Fatalf("the marked victim's Lock returned %v, want ErrDeadlock", err)
		}
	case err := <-xErr:
		t.Fatalf("x's Lock returned %v before the marked victim's", err)
	case <-ctx.Done():
		t.Fatal("the detector never broke the deadlock")
	}
	// y lets b go: x, which waited for it, gets it.
	if _, err := y.Release(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if err := <-xErr; err != nil {
		t.Fatalf("x's Lock after the victim gave up: %v", err)
	}
}

func sprintf(f string, a ...any) string { return fmt.Sprintf(f, a...) }

func hasSuffix(s, prefix, suffix string) bool {
	return strings.HasPrefix(s, prefix+" ") && strings.HasSuffix(s, suffix)
}

func newSession(t *testing.T, c *baton.Client) *baton.Session {
	t.Helper()
	s, err := c.NewSession(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func withName(o baton.Options, name string) baton.Options {
	o.Name = name
	return o
}
