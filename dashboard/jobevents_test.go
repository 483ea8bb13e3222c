package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// workOne enqueues a job on c and runs it with a handler that fails it
// for good with the error msg, then returns its id.
func workOne(t *testing.T, c *baton.Client, queue, kind, msg string) int64 {
	t.Helper()
	id, err := c.Enqueue(ctxT(t), queue, []byte("{}"), baton.EnqueueOptions{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Work(ctxT(t), queue, func(context.Context, *baton.Message) error {
		return fmt.Errorf("%s%w", msg, baton.ErrPermanent)
	}, baton.WorkerOptions{Drain: true})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestEventStream: /events/stream streams the job events of another
// client as server-sent events, one JSON object each, filtered by the
// query; a bad filter is refused; the events page renders.
func TestEventStream(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		_, dsn, srv := serve(t, b)
		cl := client{t, srv}
		if code, body, _ := cl.do("GET", "/events?state=finished", nil, nil); code != http.StatusNotFound || !strings.Contains(body, "finished") {
			t.Fatalf("bad filter: %d %q", code, body)
		}
		if code, body, _ := cl.do("GET", "/events?queue=jobs&state=dead", nil, nil); code != http.StatusOK || !strings.Contains(body, `data-stream="/events/stream?queue=jobs&amp;state=dead"`) {
			t.Fatalf("events page: %d %q", code, body)
		}
		req, err := http.NewRequestWithContext(ctxT(t), "GET", srv.URL+"/events/stream?queue=jobs&state=dead", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			t.Fatalf("stream: %d %q", resp.StatusCode, ct)
		}
		// Subscribed once the headers came: another client's jobs now
		// send their events.
		other := open(t, dsn)
		workOne(t, other, "elsewhere", "k", "not this one")
		id := workOne(t, other, "jobs", "k", xss)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev baton.JobEvent
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("stream sent %q: %v", data, err)
			}
			if ev.ID != id || ev.Queue != "jobs" || ev.State != baton.JobDead || !strings.HasPrefix(ev.Error, xss) {
				t.Fatalf("stream sent %+v, want the death of %d", ev, id)
			}
			return
		}
		t.Fatalf("the stream ended: %v", sc.Err())
	})
}

// TestBrowserJobEvents: the job events page, open in headless Chromium,
// shows a job event produced by another client as it happens, its error
// (markup) as text.
func TestBrowserJobEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "sqlite" && b.Label != "postgres" {
			t.Skip("the browser tests run on SQLite and PostgreSQL (TestEventStream checks the stream on every backend)")
		}
		_, dsn, srv := serve(t, b)
		_, step, _ := browser(t, false)
		if err := chromedp.Do(step(), chromedp.Navigate(srv.URL+"/events"), chromedp.WaitVisible(`table[data-open]`)); err != nil {
			t.Fatalf("the stream never opened: %v", err)
		}
		other := open(t, dsn)
		id := workOne(t, other, "jobs", "mailer", xss)
		row := fmt.Sprintf(`#job-events tr[data-id="%d"]`, id)
		if err := chromedp.Do(step(), chromedp.WaitVisible(row)); err != nil {
			t.Fatalf("the event never appeared: %v", err)
		}
		text := func(sel string) string {
			t.Helper()
			s, err := chromedp.Run(step(), chromedp.Text(sel))
			if err != nil {
				t.Fatalf("text of %s: %v", sel, err)
			}
			return s
		}
		state, errText, kind := text(row+" td.state"), text(row+" td.err"), text(row+" td.kind")
		scripts, err := chromedp.Run(step(), chromedp.Evaluate[int](`document.querySelectorAll("main script").length`))
		if err != nil {
			t.Fatal(err)
		}
		if state != "dead" || kind != "mailer" || !strings.HasPrefix(errText, xss) || scripts != 0 {
			t.Fatalf("row: state %q, kind %q, error %q, %d scripts", state, kind, errText, scripts)
		}
		// The page is not refreshed away: the row stays after a refresh
		// period.
		if err := chromedp.Do(step(), chromedp.Sleep(2500*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		rows, err := chromedp.Run(step(), chromedp.Evaluate[int](`document.querySelectorAll("#job-events tbody tr").length`))
		if err != nil || rows != 1 {
			t.Fatalf("after the refresh period: %d rows, %v", rows, err)
		}
	})
}
