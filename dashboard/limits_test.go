package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestQueueLimitsForm: the queue page shows a queue's limits and what
// runs against them; its form sets and clears them (with the page's CSRF
// token from a same-origin form, refused without), and bad limits are
// refused naming the problem.
func TestQueueLimitsForm(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _, srv := serve(t, b)
		hc := client{t, srv}
		if _, err := c.Enqueue(ctxT(t), "mail", []byte("x")); err != nil {
			t.Fatal(err)
		}
		page := hc.get("/queues/mail")
		if !strings.Contains(page, `id="no-limits"`) || !strings.Contains(page, `action="/queues/mail/limits"`) {
			t.Fatalf("queue page without limits:\n%s", page)
		}
		form := url.Values{"csrf": {csrfRE(page)}, "concurrency": {"3"}, "partition_by": {"key"},
			"partition_concurrency": {"1"}, "rate": {"10"}, "per": {"1s"}}
		same := map[string]string{"Sec-Fetch-Site": "same-origin"}
		if code, _, _ := hc.do("POST", "/queues/mail/limits", form, map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
			t.Fatalf("cross-site limits: %d, want 403", code)
		}
		if code, body, _ := hc.do("POST", "/queues/mail/limits", form, same); code != http.StatusSeeOther {
			t.Fatalf("set limits: %d %s", code, body)
		}
		want := baton.QueueLimits{Concurrency: 3, PartitionBy: "key", PartitionConcurrency: 1, Rate: 10, Per: time.Second}
		if l, err := c.QueueLimits(ctxT(t), "mail"); err != nil || l != want {
			t.Fatalf("limits set by the form: %+v, %v", l, err)
		}
		page = hc.get("/queues/mail")
		for _, s := range []string{`id="limit-concurrency">0 / 3<`, `<dt>per key</dt>`, `id="limit-rate">10 / `, `id="clear-limits"`} {
			if !strings.Contains(page, s) {
				t.Fatalf("queue page lacks %q:\n%s", s, page)
			}
		}
		bad := url.Values{"csrf": {csrfRE(page)}, "partition_by": {"<b>color</b>"}, "partition_concurrency": {"1"}}
		if code, body, _ := hc.do("POST", "/queues/mail/limits", bad, same); code == http.StatusSeeOther || !strings.Contains(body, "partition by") || strings.Contains(body, "<b>color") {
			t.Fatalf("bad limits: %d %s", code, body)
		}
		if l, _ := c.QueueLimits(ctxT(t), "mail"); l != want {
			t.Fatalf("refused limits changed them: %+v", l)
		}
		if code, _, _ := hc.do("POST", "/queues/mail/limits", url.Values{"csrf": {csrfRE(page)}, "clear": {"1"}}, same); code != http.StatusSeeOther {
			t.Fatalf("clear limits: %d", code)
		}
		if l, _ := c.QueueLimits(ctxT(t), "mail"); !l.IsZero() {
			t.Fatalf("cleared limits: %+v", l)
		}
	})
}
