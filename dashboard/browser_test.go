package dashboard_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton/internal/batontest"
)

// chromium finds the browser: $BATON_TEST_CHROME, or chromium / Google
// Chrome on the PATH. A missing browser fails the test (.ci/run installs
// Debian's chromium).
func chromium(t *testing.T) string {
	if p := os.Getenv("BATON_TEST_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found for the browser tests: install it (apt-get install -y chromium) or set BATON_TEST_CHROME")
	return ""
}

// browser starts headless Chromium for the test (it lives until the test
// ends) and returns its tab's context, a function that bounds one step
// of it (20 s), and the count of JavaScript dialogs (confirmations), each
// answered with accept.
func browser(t *testing.T, accept bool) (context.Context, func() context.Context, *atomic.Int32) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	var dialogs atomic.Int32
	// Listen starts the browser, bound to ctx.
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go func() {
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
			}()
		}
	}); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	step := func() context.Context {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		t.Cleanup(cancel)
		return sctx
	}
	return ctx, step, &dialogs
}

// textOf is the text of the element sel selects, in a step.
func textOf(t *testing.T, step func() context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(step(), chromedp.Text(sel))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// TestBrowser drives the dashboard in headless Chromium: the overview shows
// a queue enqueued after the page loaded (live refresh); re-drive on a dead
// letter moves it back; a held lock and a waiting request appear with their
// owners; names full of markup render as text and run nothing.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "sqlite" && b.Label != "postgres" {
			t.Skip("the browser tests run on SQLite and PostgreSQL (the pages' queries are the conformance suite's, checked on every backend by TestPages)")
		}
		c, dsn, srv := serve(t, b)

		_, step, dialogs := browser(t, false)
		text := func(sel string) string { t.Helper(); return textOf(t, step, sel) }

		// Live refresh: a queue enqueued after the page loaded appears.
		if err := chromedp.Do(step(), chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("main h1")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Enqueue(ctxT(t), "mail", []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(step(), chromedp.WaitVisible(`tr[data-queue="mail"]`)); err != nil {
			t.Fatalf("the new queue never appeared: %v", err)
		}
		if ready := text(`tr[data-queue="mail"] td.ready`); ready != "1" {
			t.Fatalf("ready shows %q, want 1", ready)
		}

		// Re-drive a dead letter whose error and payload are markup.
		deadLetter(t, c, "dlq", xss, xss)
		if err := chromedp.Do(step(), chromedp.Navigate(srv.URL+"/queues/dlq"), chromedp.WaitVisible(`#dead`)); err != nil {
			t.Fatal(err)
		}
		errText := text(`#dead td.err`)
		if err := chromedp.Do(step(), chromedp.Click(`#redrive`), chromedp.WaitVisible(`p.done`)); err != nil {
			t.Fatal(err)
		}
		done := text(`p.done`)
		if errText != xss {
			t.Fatalf("the error shows as %q, want the text %q", errText, xss)
		}
		if !strings.Contains(done, "1 dead letters of dlq moved back") {
			t.Fatalf("after re-drive the page says %q", done)
		}
		if st, err := c.Stats(ctxT(t), "dlq"); err != nil || st.Dead != 0 || st.Ready != 1 {
			t.Fatalf("after re-drive in the browser: %+v %v", st, err)
		}

		// A held lock and a waiting request, names full of markup.
		stopWait := holdAndWait(t, c, dsn)
		defer stopWait()
		if err := chromedp.Do(step(), chromedp.Navigate(srv.URL+"/locks"), chromedp.WaitVisible(`tr.PENDING`)); err != nil {
			t.Fatal(err)
		}
		grantedOwner, grantedName, pendingOwner := text(`tr.GRANTED td.owner`), text(`tr.GRANTED td.lname`), text(`tr.PENDING td.owner`)
		scripts, err := chromedp.Run(step(), chromedp.Evaluate[int](`document.querySelectorAll("main script").length`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(grantedOwner, "/"+xss) || grantedName != xss || !strings.HasSuffix(pendingOwner, "/waiter") {
			t.Fatalf("locks page: holder %q on %q, waiter %q", grantedOwner, grantedName, pendingOwner)
		}
		if scripts != 0 || dialogs.Load() != 0 {
			t.Fatalf("markup in names ran: %d script elements in the page, %d dialogs", scripts, dialogs.Load())
		}
	})
}
