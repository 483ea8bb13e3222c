package dashboard_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// TestBrowserWorkflow: a message's page links its parents and its
// workflow; the workflow's page draws its dependency graph in inline SVG
// (under the dashboard's CSP): one box per step, coloured by state, one
// arrow per edge from parent to child, parents left of their children; a
// step named in markup shows as text and runs nothing.
func TestBrowserWorkflow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Label != "sqlite" && b.Label != "postgres" {
			t.Skip("the browser tests run on SQLite and PostgreSQL")
		}
		c, _, srv := serve(t, b)
		ids, err := c.EnqueueWorkflow(ctxT(t), []baton.WorkflowStep{
			{Name: "fetch", Queue: "wf", Payload: []byte("a")},
			{Name: "resize", Queue: "wf", Payload: []byte("b"), After: []string{"fetch"}},
			{Name: "scan", Queue: "wf", Payload: []byte("c"), After: []string{"fetch"}},
			{Name: xss, Queue: "wf", Payload: []byte("d"), After: []string{"resize", "scan"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		a, bb, cc, d := ids[0], ids[1], ids[2], ids[3]
		s, err := c.NewSession(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctxT(t))
		ms, err := s.Claim(ctxT(t), "wf", baton.ClaimOptions{Max: 10})
		if err != nil || len(ms) != 1 || ms[0].ID != a {
			t.Fatalf("claim: %v %v", ms, err)
		}
		if err := s.Ack(ctxT(t), ms[0]); err != nil {
			t.Fatal(err)
		}

		_, step, dialogs := browser(t, false)

		// The last step's page: its parents, linked, and its workflow.
		if err := chromedp.Do(step(), chromedp.Navigate(fmt.Sprintf("%s/messages/%d", srv.URL, d)), chromedp.WaitVisible(`#parents`)); err != nil {
			t.Fatal(err)
		}
		parents, err := chromedp.Run(step(), chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#parents a')).map(a => a.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{fmt.Sprint(bb), fmt.Sprint(cc)}; !slices.Equal(parents, want) {
			t.Fatalf("parents shown: %q, want %q", parents, want)
		}
		if err := chromedp.Do(step(), chromedp.Click(`#workflow`), chromedp.WaitVisible(`#graph g.node`)); err != nil {
			t.Fatal(err)
		}
		// The graph once the sweep made the fetch step's dependants ready.
		var nodes, edges []string
		deadline := time.Now().Add(15 * time.Second)
		for {
			if err := chromedp.Do(step(), chromedp.Navigate(fmt.Sprintf("%s/workflows/%d", srv.URL, a)), chromedp.WaitVisible(`#graph g.node`)); err != nil {
				t.Fatal(err)
			}
			var err error
			if nodes, err = chromedp.Run(step(), chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#graph g.node')).map(g => g.dataset.id + ':' + g.dataset.state + ':' + getComputedStyle(g.querySelector('rect')).fill + ':' + Math.round(g.getBBox().width))`)); err != nil {
				t.Fatal(err)
			}
			if edges, err = chromedp.Run(step(), chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#graph line.edge')).map(l => l.dataset.from + '>' + l.dataset.to + ':' + (l.x1.baseVal.value < l.x2.baseVal.value))`)); err != nil {
				t.Fatal(err)
			}
			if len(nodes) == 4 && strings.Contains(nodes[1], ":ready:") || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		states := map[int64]string{a: "completed", bb: "ready", cc: "ready", d: "pending"}
		fills := map[string]string{}
		for i, id := range ids {
			parts := strings.Split(nodes[i], ":")
			if len(nodes) != 4 || parts[0] != fmt.Sprint(id) || parts[1] != states[id] || parts[3] == "0" {
				t.Fatalf("graph nodes %q: want ids %v in states %v, drawn", nodes, ids, states)
			}
			fills[parts[1]] = parts[2]
		}
		if fills["completed"] == fills["ready"] || fills["ready"] == fills["pending"] {
			t.Fatalf("states share a colour: %v", fills)
		}
		want := []string{fmt.Sprintf("%d>%d:true", a, bb), fmt.Sprintf("%d>%d:true", a, cc), fmt.Sprintf("%d>%d:true", bb, d), fmt.Sprintf("%d>%d:true", cc, d)}
		slices.Sort(edges)
		slices.Sort(want)
		if !slices.Equal(edges, want) {
			t.Fatalf("graph edges %q, want %q", edges, want)
		}
		title, err := chromedp.Run(step(), chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector('#graph g.node[data-id="%d"] title').textContent`, d)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(title, xss) || dialogs.Load() != 0 {
			t.Fatalf("the step named in markup shows as %q (%d dialogs)", title, dialogs.Load())
		}
	})
}
