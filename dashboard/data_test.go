package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// dataMessages enqueues three messages on "tagged": one with markup in its
// metadata and tags red and blue, completed with markup in its output; one
// ready with tag red; one ready without tags. It returns their ids.
func dataMessages(t *testing.T, c *baton.Client) (done, red, plain int64) {
	t.Helper()
	md, _ := json.Marshal(map[string]string{"note": xss})
	var err error
	if done, err = c.Enqueue(ctxT(t), "tagged", []byte("d"), baton.EnqueueOptions{Metadata: md, Tags: []string{"red", "blue"}}); err != nil {
		t.Fatal(err)
	}
	err = c.Work(ctxT(t), "tagged", func(ctx context.Context, m *baton.Message) error { return m.SetOutput(xss) }, baton.WorkerOptions{Drain: true})
	if err != nil {
		t.Fatal(err)
	}
	if red, err = c.Enqueue(ctxT(t), "tagged", []byte("r"), baton.EnqueueOptions{Tags: []string{"red"}}); err != nil {
		t.Fatal(err)
	}
	if plain, err = c.Enqueue(ctxT(t), "tagged", []byte("p")); err != nil {
		t.Fatal(err)
	}
	return done, red, plain
}

// TestTagFilterAndData: a queue's tab filters by tag and by metadata (the
// tabs, form and next link keep the filter; a bad one is refused), rows show their tags,
// and a message's page shows its tags, metadata and output, escaped.
func TestTagFilterAndData(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		c, _, srv := serve(t, b)
		hc := client{t, srv}
		done, red, plain := dataMessages(t, c)
		row := func(id int64) string { return fmt.Sprintf(`data-id="%d"`, id) }
		page := hc.get("/queues/tagged?state=ready&tag=red")
		if !strings.Contains(page, row(red)) || strings.Contains(page, row(plain)) {
			t.Fatalf("the red filter does not list exactly the red message:\n%s", page)
		}
		if !strings.Contains(page, `?state=completed&amp;tag=red"`) || !strings.Contains(page, `name="tag" value="red"`) || !strings.Contains(page, `class="tag"`) {
			t.Fatalf("the tabs, form or rows lose the tag:\n%s", page)
		}
		if page := hc.get("/queues/tagged?state=completed&tag=blue"); !strings.Contains(page, row(done)) {
			t.Fatalf("the completed tab by tag blue:\n%s", page)
		}
		if code, body, _ := hc.do("GET", "/queues/tagged?state=ready&tag=bad%20tag", nil, nil); code < 400 || !strings.Contains(body, "tag") {
			t.Fatalf("a bad tag: %d %s", code, body)
		}
		// By metadata: the value (markup) travels encoded in the links
		// and shows escaped in the form.
		page = hc.get("/queues/tagged?state=completed&meta_key=note&meta_value=" + url.QueryEscape(xss))
		if !strings.Contains(page, row(done)) || strings.Contains(page, xss) {
			t.Fatalf("the metadata filter does not list the message, or renders the value unescaped:\n%s", page)
		}
		args := "&amp;meta_key=note&amp;meta_value=" + url.QueryEscape(xss)
		if !strings.Contains(page, `?state=ready`+args+`"`) || !strings.Contains(page, `name="meta_key" value="note"`) {
			t.Fatalf("the tabs or form lose the metadata filter (want %s):\n%s", args, page)
		}
		if page := hc.get("/queues/tagged?state=completed&meta_key=note&meta_value=other"); strings.Contains(page, row(done)) ||
			!strings.Contains(page, "with metadata note = other") {
			t.Fatalf("a metadata value no message has:\n%s", page)
		}
		if code, body, _ := hc.do("GET", "/queues/tagged?state=ready&meta_value=x", nil, nil); code < 400 || !strings.Contains(body, "metadata") {
			t.Fatalf("a metadata value without its key: %d %s", code, body)
		}
		msg := hc.get(fmt.Sprintf("/queues/tagged/messages/%d", done))
		if strings.Contains(msg, xss) {
			t.Fatalf("the message page renders markup unescaped:\n%s", msg)
		}
		for _, want := range []string{`id="tags"`, ">blue</a>", ">red</a>", `id="metadata">{&#34;note&#34;:&#34;\u003cscript\u003e`, `id="output">&#34;\u003cscript\u003e`} {
			if !strings.Contains(msg, want) {
				t.Fatalf("the message page lacks %q:\n%s", want, msg)
			}
		}
	})
}

// TestBrowserData drives the message page and the tag filter in headless
// Chromium: the metadata and output show as text (their markup runs
// nothing), and the filter form keeps only the tagged message.
func TestBrowserData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "sqlite" && b.Label != "postgres" {
			t.Skip("the browser tests run on SQLite and PostgreSQL (TestTagFilterAndData checks every backend)")
		}
		c, _, srv := serve(t, b)
		done, red, plain := dataMessages(t, c)
		_, step, _ := browser(t, false)
		text := func(sel string) string { t.Helper(); return textOf(t, step, sel) }
		if err := chromedp.Do(step(), chromedp.Navigate(fmt.Sprintf("%s/queues/tagged/messages/%d", srv.URL, done)), chromedp.WaitVisible("#metadata")); err != nil {
			t.Fatal(err)
		}
		md, out, tags := text("#metadata"), text("#output"), text("#tags")
		scripts, err := chromedp.Run(step(), chromedp.Evaluate[int](`document.querySelectorAll("main script").length`))
		if err != nil {
			t.Fatal(err)
		}
		if md != `{"note":"\u003cscript\u003ealert(1)\u003c/script\u003e"}` {
			t.Fatalf("metadata shows %q", md)
		}
		if out != `"\u003cscript\u003ealert(1)\u003c/script\u003e"` || strings.TrimSpace(tags) != "red blue" && strings.TrimSpace(tags) != "blue red" || scripts != 0 {
			t.Fatalf("output %q, tags %q, %d scripts in the page", out, tags, scripts)
		}
		err = chromedp.Do(step(), chromedp.Navigate(srv.URL+"/queues/tagged?state=ready"), chromedp.WaitVisible(`#filter`),
			chromedp.SendKeys(`#filter input[name="tag"]`, "red"), chromedp.Submit(`#filter input[name="tag"]`),
			chromedp.WaitVisible(`#filter a`))
		if err != nil {
			t.Fatal(err)
		}
		ids, err := chromedp.Run(step(), chromedp.Evaluate[[]string](`[...document.querySelectorAll("#messages tbody tr")].map(r => r.dataset.id)`))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids) != fmt.Sprintf("[%d]", red) {
			t.Fatalf("the form's tag filter lists %v, want [%d] (not %d)", ids, red, plain)
		}
	})
}
