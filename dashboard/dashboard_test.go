package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/dashboard"
	_ "github.com/batonhq/baton/driver/mysql"
	_ "github.com/batonhq/baton/driver/postgres"
	_ "github.com/batonhq/baton/driver/sqlite"
	"github.com/batonhq/baton/internal/batontest"
	"github.com/batonhq/baton/metrics"
)

const xss = "<script>alert(1)</script>"

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, dsn string, o ...baton.Options) *baton.Client {
	t.Helper()
	c, err := baton.Open(ctxT(t), dsn, o...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// deadLetter enqueues one message to q and fails it for good with reason.
func deadLetter(t *testing.T, c *baton.Client, q, payload, reason string) {
	t.Helper()
	if _, err := c.Enqueue(ctxT(t), q, []byte(payload)); err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSession(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctxT(t))
	ms, err := s.Claim(ctxT(t), q, baton.ClaimOptions{})
	if err != nil || len(ms) != 1 {
		t.Fatalf("claim: %v %d", err, len(ms))
	}
	if err := s.Fail(ctxT(t), ms[0], reason); err != nil {
		t.Fatal(err)
	}
}

// holdAndWait has a client whose owner name is markup hold a write lock
// named in markup, and a session of c named "waiter" wait for it; the
// returned function ends the wait.
func holdAndWait(t *testing.T, c *baton.Client, dsn string) context.CancelFunc {
	t.Helper()
	holder := open(t, dsn, baton.Options{Name: xss})
	hs, err := holder.NewSession(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hs.Lock(ctxT(t), xss, baton.Write, 0, xss); err != nil {
		t.Fatal(err)
	}
	ws, err := c.NewSession(ctxT(t), baton.SessionOptions{Name: "waiter"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() { _, _ = ws.Lock(ctx, xss, baton.Read, baton.Forever, xss) }()
	return stop
}

// serve opens a client on a fresh database of the backend (dsn) and
// serves its dashboard (default options) until the test ends.
func serve(t *testing.T, b batontest.Backend) (c *baton.Client, dsn string, srv *httptest.Server) {
	t.Helper()
	dsn = b.NewDSN(t)
	c = open(t, dsn)
	h, err := dashboard.New(c, dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return c, dsn, srv
}

type client struct {
	t   *testing.T
	srv *httptest.Server
}

func (c client) do(method, path string, form url.Values, header map[string]string) (int, string, http.Header) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.srv.URL+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (c client) get(path string) string {
	c.t.Helper()
	code, body, _ := c.do("GET", path, nil, nil)
	if code != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return body
}

var csrfRE = func(body string) string {
	_, rest, ok := strings.Cut(body, `name="csrf" value="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// TestPages: every page shows what the database holds, with every string a
// user controls escaped; re-drive needs the CSRF token from a same-origin
// form (or the bearer token); the pages work under a path prefix.
func TestPages(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		m := metrics.New()
		c := open(t, dsn, baton.Options{Observer: m})
		m.Watch(c)
		h, err := dashboard.New(c, dashboard.Options{Metrics: m.Handler()})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/ops/", http.StripPrefix("/ops", h))
		srv := httptest.NewServer(mux)
		defer srv.Close()
		hc := client{t, srv}

		deadLetter(t, c, "mail", xss, xss)
		stopWait := holdAndWait(t, c, dsn)
		defer stopWait()

		overview := hc.get("/ops/")
		if !strings.Contains(overview, `href="/ops/queues/mail"`) || !strings.Contains(overview, `<td class="n dead">1</td>`) {
			t.Fatalf("overview lacks the queue with its dead letter:\n%s", overview)
		}
		queue := hc.get("/ops/queues/mail")
		locks := ""
		for deadline := time.Now().Add(10 * time.Second); ; {
			locks = hc.get("/ops/locks")
			if strings.Contains(locks, "PENDING") || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		sessions := hc.get("/ops/sessions")
		for name, body := range map[string]string{"queue": queue, "locks": locks, "sessions": sessions} {
			if strings.Contains(body, xss) {
				t.Fatalf("%s page renders %s unescaped:\n%s", name, xss, body)
			}
			if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Fatalf("%s page lacks the escaped name:\n%s", name, body)
			}
		}
		for _, want := range []string{"GRANTED", "PENDING", "EXCLUSIVE", "SHARED", "/waiter</td>"} {
			if !strings.Contains(locks, want) {
				t.Fatalf("locks page lacks %q:\n%s", want, locks)
			}
		}
		if !strings.Contains(locks, `<td class="n">1</td>`) {
			t.Fatalf("locks page does not count the waiter:\n%s", locks)
		}

		// Mutations: refused without the CSRF token or cross-site.
		csrf := csrfRE(queue)
		if csrf == "" {
			t.Fatalf("queue page has no re-drive form:\n%s", queue)
		}
		for _, tc := range []struct {
			form   url.Values
			header map[string]string
		}{
			{url.Values{}, map[string]string{"Sec-Fetch-Site": "same-origin"}},
			{url.Values{"csrf": {"wrong"}}, map[string]string{"Sec-Fetch-Site": "same-origin"}},
			{url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
			{url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}},
			{url.Values{"csrf": {csrf}}, nil},
		} {
			if code, body, _ := hc.do("POST", "/ops/queues/mail/redrive", tc.form, tc.header); code != http.StatusForbidden {
				t.Fatalf("re-drive with %v %v: %d %s, want 403", tc.form, tc.header, code, body)
			}
		}
		if st, _ := c.Stats(ctxT(t), "mail"); st.Dead != 1 {
			t.Fatalf("a refused re-drive moved dead letters: %+v", st)
		}
		code, _, hdr := hc.do("POST", "/ops/queues/mail/redrive", url.Values{"csrf": {csrf}}, map[string]string{"Origin": srv.URL})
		if code != http.StatusSeeOther || !strings.HasPrefix(hdr.Get("Location"), "/ops/queues/mail?done=") {
			t.Fatalf("re-drive: %d %v", code, hdr)
		}
		if st, _ := c.Stats(ctxT(t), "mail"); st.Dead != 0 || st.Ready != 1 {
			t.Fatalf("after re-drive: %+v", st)
		}

		// Pause and resume from the page's forms.
		for _, act := range []string{"pause", "resume"} {
			page := hc.get("/ops/queues/mail")
			if !strings.Contains(page, `action="/ops/queues/mail/`+act+`"`) {
				t.Fatalf("queue page offers no %s:\n%s", act, page)
			}
			if code, _, _ := hc.do("POST", "/ops/queues/mail/"+act, url.Values{"csrf": {csrfRE(page)}}, map[string]string{"Sec-Fetch-Site": "same-origin"}); code != http.StatusSeeOther {
				t.Fatalf("%s: %d", act, code)
			}
			if st, _ := c.Stats(ctxT(t), "mail"); st.Paused != (act == "pause") {
				t.Fatalf("after %s: %+v", act, st)
			}
			if act == "pause" && !strings.Contains(hc.get("/ops/"), "paused</span>") {
				t.Fatal("the overview does not show the paused queue")
			}
		}
		// The re-driven message is listed, escaped, on the ready tab.
		ready := hc.get("/ops/queues/mail?state=ready")
		if !strings.Contains(ready, `<table id="messages">`) || strings.Contains(ready, xss) || !strings.Contains(ready, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Fatalf("ready tab:\n%s", ready)
		}
		// Run now and delete one waiting message from its row.
		later, err := c.Enqueue(ctxT(t), "mail", []byte("later"), baton.EnqueueOptions{Delay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		sched := hc.get("/ops/queues/mail?state=scheduled")
		for _, want := range []string{"<dt>scheduled</dt><dd>1</dd>", "<dt>retrying</dt><dd>", "<dt>completed</dt><dd>", "<dt>cancelled</dt><dd>"} {
			if !strings.Contains(sched, want) {
				t.Fatalf("queue page's counts lack %q:\n%s", want, sched)
			}
		}
		if overview := hc.get("/ops/"); !strings.Contains(overview, `<th class="n">retrying</th>`) || !strings.Contains(overview, `<th class="n">cancelled</th>`) {
			t.Fatalf("the overview has no retrying or cancelled column:\n%s", overview)
		}
		retry := fmt.Sprintf("/ops/queues/mail/messages/%d/retry", later)
		if !strings.Contains(sched, `action="`+retry+`"`) {
			t.Fatalf("scheduled tab offers no run-now for %d:\n%s", later, sched)
		}
		same := map[string]string{"Sec-Fetch-Site": "same-origin"}
		if code, _, _ := hc.do("POST", retry, url.Values{"csrf": {csrfRE(sched)}}, same); code != http.StatusSeeOther {
			t.Fatalf("run now: %d", code)
		}
		if st, _ := c.Stats(ctxT(t), "mail"); st.Scheduled != 0 || st.Ready != 2 {
			t.Fatalf("after run now: %+v", st)
		}
		if code, _, _ := hc.do("POST", fmt.Sprintf("/ops/queues/mail/messages/%d/delete", later), url.Values{"csrf": {csrfRE(sched)}}, same); code != http.StatusSeeOther {
			t.Fatalf("delete: %d", code)
		}
		if code, _, _ := hc.do("POST", fmt.Sprintf("/ops/queues/mail/messages/%d/delete", later), url.Values{"csrf": {csrfRE(sched)}}, same); code != http.StatusNotFound {
			t.Fatalf("delete of a deleted message: %d, want 404", code)
		}
		if code, _, _ := hc.do("GET", "/ops/queues/mail?state=bogus", nil, nil); code != http.StatusNotFound {
			t.Fatalf("unknown state tab: %d, want 404", code)
		}
		stopWait() // the waiter gives up: its wait is observed
		metricsText := ""
		for deadline := time.Now().Add(10 * time.Second); ; {
			metricsText = hc.get("/ops/metrics")
			if strings.Contains(metricsText, `baton_lock_wait_seconds_count{namespace="<script>alert(1)</script>"} 1`) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, want := range []string{`baton_queue_messages{queue="mail",state="ready"} 1`, `baton_locks_held{mode="write",namespace="<script>alert(1)</script>"} 1`, `baton_lock_wait_seconds_count{namespace="<script>alert(1)</script>"} 1`} {
			if !strings.Contains(metricsText, want) {
				t.Fatalf("metrics lack %q:\n%s", want, metricsText)
			}
		}
		if code, _, _ := hc.do("GET", "/ops/queues/no-such-queue", nil, nil); code != http.StatusNotFound {
			t.Fatalf("unknown queue: %d, want 404", code)
		}
	})
}

// TestTokenAndReadOnly: with a token every request needs it; read-only
// has no mutating route.
func TestTokenAndReadOnly(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Name != "sqlite" {
			t.Skip("the handler's access rules do not depend on the backend (the pages do: TestPages)")
		}
		c := open(t, b.NewDSN(t))
		deadLetter(t, c, "mail", "x", "boom")
		h, err := dashboard.New(c, dashboard.Options{Token: "s3cret", ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		hc := client{t, srv}
		if code, _, _ := hc.do("GET", "/", nil, nil); code != http.StatusUnauthorized {
			t.Fatalf("no token: %d, want 401", code)
		}
		if code, _, _ := hc.do("GET", "/?token=wrong", nil, nil); code != http.StatusUnauthorized {
			t.Fatalf("wrong token: %d, want 401", code)
		}
		code, _, hdr := hc.do("GET", "/locks?token=s3cret", nil, nil)
		cookie := hdr.Get("Set-Cookie")
		if code != http.StatusSeeOther || hdr.Get("Location") != "/locks" || !strings.Contains(cookie, "baton_token=s3cret") || !strings.Contains(cookie, "HttpOnly") {
			t.Fatalf("token login: %d %v", code, hdr)
		}
		if code, _, _ := hc.do("GET", "/", nil, map[string]string{"Cookie": "baton_token=s3cret"}); code != http.StatusOK {
			t.Fatalf("with the cookie: %d", code)
		}
		bearer := map[string]string{"Authorization": "Bearer s3cret"}
		code, body, _ := hc.do("GET", "/queues/mail", nil, bearer)
		if code != http.StatusOK || strings.Contains(body, "redrive") || strings.Contains(body, `name="csrf"`) {
			t.Fatalf("read-only queue page: %d, shows actions:\n%s", code, body)
		}
		if code, _, _ := hc.do("POST", "/queues/mail/redrive", url.Values{}, bearer); code/100 == 2 || code/100 == 3 {
			t.Fatalf("read-only re-drive answered %d", code)
		}
		if st, _ := c.Stats(ctxT(t), "mail"); st.Dead != 1 {
			t.Fatalf("read-only dashboard moved dead letters: %+v", st)
		}
	})
}

// TestKindFilterAndMessagePage: a queue's tab lists the messages of one
// kind when asked (and keeps the filter across tabs and pages); a
// message's page shows its payload and every failed attempt's error,
// escaped; a message asked for under another queue, or an unknown one, is
// not found.
func TestKindFilterAndMessagePage(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _, srv := serve(t, b)
		hc := client{t, srv}

		ids := map[string]int64{}
		for _, p := range []struct{ name, kind string }{{"m1", "mail"}, {"s1", "sms"}, {"m2", "mail"}} {
			id, err := c.Enqueue(ctxT(t), "jobs", []byte(p.name), baton.EnqueueOptions{Kind: p.kind})
			if err != nil {
				t.Fatal(err)
			}
			ids[p.name] = id
		}
		row := func(id int64) string { return fmt.Sprintf(`data-id="%d"`, id) }
		page := hc.get("/queues/jobs?state=ready&kind=mail")
		if !strings.Contains(page, row(ids["m1"])) || !strings.Contains(page, row(ids["m2"])) || strings.Contains(page, row(ids["s1"])) {
			t.Fatalf("the mail filter does not list exactly the two mail messages:\n%s", page)
		}
		if !strings.Contains(page, `?state=running&amp;kind=mail"`) || !strings.Contains(page, `value="mail"`) {
			t.Fatalf("the tabs or the form lose the filter:\n%s", page)
		}
		if all := hc.get("/queues/jobs?state=ready"); !strings.Contains(all, row(ids["s1"])) || !strings.Contains(all, row(ids["m1"])) {
			t.Fatalf("without a filter the tab lacks messages:\n%s", all)
		}
		if code, body, _ := hc.do("GET", "/queues/jobs?state=ready&kind="+url.QueryEscape("no such kind!"), nil, nil); code != http.StatusNotFound || !strings.Contains(body, "kind") {
			t.Fatalf("a bad kind: %d %s", code, body)
		}

		// Two failed attempts, errors in markup.
		id, err := c.Enqueue(ctxT(t), "flaky", []byte(xss), baton.EnqueueOptions{MaxAttempts: 5})
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.NewSession(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		for attempt := 1; attempt <= 2; attempt++ {
			ms, err := s.Claim(ctxT(t), "flaky", baton.ClaimOptions{})
			if err != nil || len(ms) != 1 {
				t.Fatalf("claim %d: %v %d", attempt, err, len(ms))
			}
			if err := s.RetryAfter(ctxT(t), ms[0], 0, fmt.Errorf("failure %d %s", attempt, xss)); err != nil {
				t.Fatal(err)
			}
		}
		msg := hc.get(fmt.Sprintf("/queues/flaky/messages/%d", id))
		if strings.Contains(msg, xss) {
			t.Fatalf("the message page renders markup unescaped:\n%s", msg)
		}
		for _, want := range []string{"failure 1 &lt;script&gt;", "failure 2 &lt;script&gt;", `<pre class="payload" id="payload">&lt;script&gt;`, "2/5"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("the message page lacks %q:\n%s", want, msg)
			}
		}
		if page := hc.get("/queues/flaky?state=ready"); !strings.Contains(page, fmt.Sprintf(`href="/queues/flaky/messages/%d"`, id)) {
			t.Fatalf("the queue's tab does not link the message's page:\n%s", page)
		}
		for _, path := range []string{fmt.Sprintf("/queues/jobs/messages/%d", id), "/queues/flaky/messages/999999", "/queues/flaky/messages/x"} {
			if code, body, _ := hc.do("GET", path, nil, nil); code != http.StatusNotFound {
				t.Fatalf("GET %s: %d, want 404:\n%s", path, code, body)
			}
		}
	})
}

// TestCancelFinished: cancelling a message that has finished is a conflict
// (409) saying so, not a server error; a waiting one is cancelled.
func TestCancelFinished(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _, srv := serve(t, b)
		hc := client{t, srv}
		deadLetter(t, c, "jobs", "x", "broken")
		dead, _, err := c.ListMessages(ctxT(t), baton.ListOptions{Queue: "jobs", State: baton.StateDead})
		if err != nil || len(dead) != 1 {
			t.Fatalf("dead letters: %v %v", dead, err)
		}
		waiting, err := c.Enqueue(ctxT(t), "jobs", []byte("y"))
		if err != nil {
			t.Fatal(err)
		}
		csrf := url.Values{"csrf": {csrfRE(hc.get("/queues/jobs"))}}
		same := map[string]string{"Sec-Fetch-Site": "same-origin"}
		code, body, _ := hc.do("POST", fmt.Sprintf("/queues/jobs/messages/%d/cancel", dead[0].ID), csrf, same)
		if want := fmt.Sprintf("message %d is dead", dead[0].ID); code != http.StatusConflict || !strings.Contains(body, want) {
			t.Fatalf("cancel a dead letter: %d, want 409 saying %q:\n%s", code, want, body)
		}
		if code, body, _ := hc.do("POST", fmt.Sprintf("/queues/jobs/messages/%d/cancel", waiting), csrf, same); code != http.StatusSeeOther {
			t.Fatalf("cancel a waiting message: %d\n%s", code, body)
		}
		if m, err := c.Message(ctxT(t), waiting); err != nil || m.State != baton.StateCancelled {
			t.Fatalf("the waiting message: %+v %v", m, err)
		}
	})
}
