package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/dashboard"
	"github.com/batonhq/baton/internal/batontest"
)

// stateOf is the state of message id ("" when it is gone).
func stateOf(t *testing.T, c *baton.Client, id int64) baton.MessageState {
	t.Helper()
	m, err := c.Message(ctxT(t), id)
	if err != nil {
		return ""
	}
	return m.State
}

// onlyID is the id of the one message of q in state.
func onlyID(t *testing.T, c *baton.Client, q string, state baton.MessageState) int64 {
	t.Helper()
	ms, _, err := c.ListMessages(ctxT(t), baton.ListOptions{Queue: q, State: state})
	if err != nil || len(ms) != 1 {
		t.Fatalf("%s messages of %s: %+v %v, want one", state, q, ms, err)
	}
	return ms[0].ID
}

// TestMessageAndBulkActions: a finished message's page and rows offer
// retry and delete, a running one's no delete; the bulk form acts on the
// queue's messages its fields select and says how many; a bad bulk
// filter is refused and changes nothing; read-only has none of it.
func TestMessageAndBulkActions(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _, srv := serve(t, b)
		hc := client{t, srv}
		deadLetter(t, c, "jobs", "x", "broken")
		dead := onlyID(t, c, "jobs", baton.StateDead)
		var ks []int64
		for range 3 {
			id, err := c.Enqueue(ctxT(t), "jobs", []byte("k"), baton.EnqueueOptions{Kind: "k"})
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, id)
		}
		msg := func(id int64) string { return fmt.Sprintf("/queues/jobs/messages/%d", id) }
		for path, want := range map[string][]string{
			msg(dead):                  {`id="retry"`, `id="delete"`, msg(dead) + "/retry", msg(dead) + "/delete"},
			msg(ks[0]):                 {`id="cancel"`, `id="delete"`},
			"/queues/jobs?state=dead":  {msg(dead) + "/retry", msg(dead) + "/delete"},
			"/queues/jobs?state=ready": {`id="bulk"`, `<option value="ready" selected>`},
		} {
			body := hc.get(path)
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Fatalf("%s lacks %q:\n%s", path, w, body)
				}
			}
		}
		csrf := csrfRE(hc.get("/queues/jobs"))
		same := map[string]string{"Sec-Fetch-Site": "same-origin"}
		post := func(path string, form url.Values) (int, string, http.Header) {
			form.Set("csrf", csrf)
			return hc.do("POST", path, form, same)
		}
		code, _, hdr := post("/queues/jobs/bulk", url.Values{"action": {"cancel"}, "state": {"ready"}, "kind": {"k"}})
		if done, _ := url.QueryUnescape(hdr.Get("Location")); code != http.StatusSeeOther || !strings.Contains(done, "3 messages of jobs cancelled") {
			t.Fatalf("bulk cancel: %d %q", code, done)
		}
		for _, id := range ks {
			if st := stateOf(t, c, id); st != baton.StateCancelled {
				t.Fatalf("message %d after the bulk cancel is %q", id, st)
			}
		}
		if body := hc.get("/queues/jobs?state=cancelled"); !strings.Contains(body, msg(ks[0])+"/retry") {
			t.Fatalf("a cancelled row lacks retry:\n%s", body)
		}
		for _, bad := range []url.Values{{"action": {"retry"}, "state": {"ready"}}, {"action": {"purge"}},
			{"action": {"delete"}, "older_than": {"soon"}}} {
			if code, body, _ := post("/queues/jobs/bulk", bad); code != http.StatusNotFound || !strings.Contains(body, "invalid") {
				t.Fatalf("bulk %v: %d, want refused:\n%s", bad, code, body)
			}
		}
		if code, _, _ := hc.do("POST", "/queues/jobs/bulk", url.Values{"action": {"delete"}}, same); code != http.StatusForbidden {
			t.Fatalf("bulk without the CSRF token: %d, want 403", code)
		}
		code, _, hdr = post("/queues/jobs/bulk", url.Values{"action": {"retry"}, "older_than": {"0s"}})
		if done, _ := url.QueryUnescape(hdr.Get("Location")); code != http.StatusSeeOther || !strings.Contains(done, "4 messages of jobs retried") {
			t.Fatalf("bulk retry: %d %q", code, done)
		}
		if st := stateOf(t, c, dead); st != baton.StateReady {
			t.Fatalf("the dead letter after the bulk retry is %q", st)
		}
		// By id: a running message has no delete; a finished one is retried and deleted.
		s, err := c.NewSession(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctxT(t))
		ms, err := s.Claim(ctxT(t), "jobs", baton.ClaimOptions{})
		if err != nil || len(ms) != 1 {
			t.Fatalf("claim: %v %d", err, len(ms))
		}
		if body := hc.get(msg(ms[0].ID)); strings.Contains(body, `id="delete"`) || !strings.Contains(body, `id="cancel"`) {
			t.Fatalf("a running message's page:\n%s", body)
		}
		if err := s.Ack(ctxT(t), ms[0]); err != nil {
			t.Fatal(err)
		}
		if code, _, _ := post(msg(ms[0].ID)+"/retry", url.Values{}); code != http.StatusSeeOther || stateOf(t, c, ms[0].ID) != baton.StateReady {
			t.Fatalf("retry a completed message: %d, now %q", code, stateOf(t, c, ms[0].ID))
		}
		if code, _, _ := post(msg(ms[0].ID)+"/delete", url.Values{}); code != http.StatusSeeOther || stateOf(t, c, ms[0].ID) != "" {
			t.Fatalf("delete: %d, now %q", code, stateOf(t, c, ms[0].ID))
		}

		ro, err := dashboard.New(c, dashboard.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		rsrv := httptest.NewServer(ro)
		defer rsrv.Close()
		rc := client{t, rsrv}
		if body := rc.get(msg(ks[1])) + rc.get("/queues/jobs"); strings.Contains(body, `id="cancel"`) || strings.Contains(body, `id="bulk"`) {
			t.Fatalf("read-only message page has actions:\n%s", body)
		}
		if code, _, _ := rc.do("POST", "/queues/jobs/bulk", url.Values{"action": {"delete"}}, same); code/100 == 2 || code/100 == 3 {
			t.Fatalf("read-only bulk answered %d", code)
		}
	})
}

// TestBrowserActions drives the new buttons in headless Chromium, their
// confirmations accepted: retry and delete on a dead letter's page, and
// the bulk form on a queue's page.
func TestBrowserActions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "sqlite" && b.Label != "postgres" {
			t.Skip("the browser tests run on SQLite and PostgreSQL (the routes' effects are checked on every backend by TestMessageAndBulkActions)")
		}
		c, _, srv := serve(t, b)
		_, step, _ := browser(t, true)
		do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
			t.Helper()
			if err := chromedp.Do(step(), actions...); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		done := func() string { t.Helper(); return textOf(t, step, `p.done`) }

		deadLetter(t, c, "dlq", "x", "broken")
		id := onlyID(t, c, "dlq", baton.StateDead)
		page := fmt.Sprintf("%s/queues/dlq/messages/%d", srv.URL, id)
		do("retry the dead letter", chromedp.Navigate(page), chromedp.Click(`#retry`), chromedp.WaitVisible(`p.done`))
		if st := stateOf(t, c, id); st != baton.StateReady || !strings.Contains(done(), fmt.Sprintf("message %d of dlq is due now", id)) {
			t.Fatalf("after Retry in the browser: %q, page says %q", st, done())
		}
		do("delete it", chromedp.Navigate(page), chromedp.Click(`#delete`), chromedp.WaitVisible(`p.done`))
		if st := stateOf(t, c, id); st != "" {
			t.Fatalf("after Delete in the browser the message is %q", st)
		}

		for range 3 {
			if _, err := c.Enqueue(ctxT(t), "bq", []byte("x"), baton.EnqueueOptions{Kind: "k"}); err != nil {
				t.Fatal(err)
			}
		}
		// Typing first: a page whose form has the focus is not refreshed
		// (which would reset the action chosen).
		do("bulk delete", chromedp.Navigate(srv.URL+"/queues/bq?state=ready"), chromedp.WaitVisible(`#bulk`),
			chromedp.SendKeys(`#bulk-kind`, "k"), chromedp.SetValue(`#bulk-action`, "delete"),
			chromedp.Click(`#bulk-apply`), chromedp.WaitVisible(`p.done`))
		if st, err := c.Stats(ctxT(t), "bq"); err != nil || st.Ready != 0 || !strings.Contains(done(), "3 messages of bq deleted") {
			t.Fatalf("after the bulk delete in the browser: %+v %v, page says %q", st, err, done())
		}
	})
}
