package dashboard

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

func lockInfo(name, mode, status, session, owner string, at time.Time) baton.LockInfo {
	return baton.LockInfo{Type: "LOCKING SERVICE", Namespace: "app", Name: name, Mode: mode, Status: status,
		Session: session, Owner: owner, Since: at}
}

// TestWaitGraph: only contended locks are drawn, with their holders and
// waiters, in a fixed layout (sessions by the first lock they touch);
// holds go lock → session, waits session → lock; a cycle is marked and
// its victim is the detector's choice (a read request first, then the
// newest); an uncontended lock is left out.
func TestWaitGraph(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ls := []baton.LockInfo{
		lockInfo("a", "EXCLUSIVE", "GRANTED", "s4", "h:1/alpha", t0),
		lockInfo("a", "EXCLUSIVE", "PENDING", "s5", "h:2/beta", t0.Add(2*time.Second)),
		lockInfo("b", "EXCLUSIVE", "GRANTED", "s5", "h:2/beta", t0),
		lockInfo("b", "EXCLUSIVE", "PENDING", "s4", "h:1/alpha", t0.Add(time.Second)),
		lockInfo("idle", "EXCLUSIVE", "GRANTED", "s6", "h:3/x", t0),
		lockInfo("orders", "EXCLUSIVE", "GRANTED", "s1", "h:4/api", t0),
		lockInfo("orders", "SHARED", "PENDING", "s2", "h:5/report", t0.Add(time.Second)),
	}
	g := buildWaitGraph(ls)
	var nodes []string
	for _, n := range g.Nodes {
		nodes = append(nodes, n.Kind+":"+n.Key+"@"+n.Y.String()+"/"+n.Class)
	}
	want := "session:s4@30/session cycle session:s5@76/session cycle victim session:s1@122/session session:s2@168/session " +
		"lock:app/a@30/lock lock:app/b@76/lock lock:app/orders@122/lock"
	if got := strings.Join(nodes, " "); got != want {
		t.Errorf("nodes\n%s\nwant\n%s", got, want)
	}
	var edges []string
	for _, e := range g.Edges {
		edges = append(edges, e.From+">"+e.To+"/"+e.Class)
	}
	want = "app/a>s4/holds cycle s5>app/a/waits cycle victim app/b>s5/holds cycle s4>app/b/waits cycle app/orders>s1/holds s2>app/orders/waits"
	if got := strings.Join(edges, " "); got != want {
		t.Errorf("edges\n%s\nwant\n%s", got, want)
	}
	// The wait of s2 runs from the right of its box (x 258, row 3's
	// middle + 6) to the left of the lock's (452 - 2, row 2's middle + 6).
	if d := g.Edges[5].D; d != "M258 191 C355 191, 355 145, 450 145" {
		t.Errorf("s2's wait: %s", d)
	}
	if len(g.Deadlock) != 1 || !strings.Contains(g.Deadlock[0], "h:2/beta waits for app/a") {
		t.Errorf("deadlock notes %q", g.Deadlock)
	}
	// A read request is the victim before a newer write request.
	ls[3].Mode = "SHARED"
	if g := buildWaitGraph(ls); !strings.Contains(g.Edges[3].Class, "victim") || strings.Contains(g.Edges[1].Class, "victim") {
		t.Errorf("with s4's request a read: %+v", g.Edges)
	}
	if g := buildWaitGraph(ls[4:5]); len(g.Nodes) != 0 {
		t.Errorf("an uncontended lock is drawn: %+v", g.Nodes)
	}
}

// TestWaitGraphQueued: a request queued behind another waiting one waits
// for it (first come, first served), which can close a cycle: s1 holds L
// (read), s2 waits for L (write), s3 waits for L (read) behind s2 and
// holds M, for which s1 waits. The victim is the read request, s3's.
func TestWaitGraphQueued(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ls := []baton.LockInfo{
		lockInfo("L", "SHARED", "GRANTED", "s1", "h:1/one", t0),
		lockInfo("L", "EXCLUSIVE", "PENDING", "s2", "h:2/two", t0.Add(time.Second)),
		lockInfo("L", "SHARED", "PENDING", "s3", "h:3/three", t0.Add(2*time.Second)),
		lockInfo("M", "EXCLUSIVE", "GRANTED", "s3", "h:3/three", t0),
		lockInfo("M", "EXCLUSIVE", "PENDING", "s1", "h:1/one", t0.Add(3*time.Second)),
	}
	g := buildWaitGraph(ls)
	var edges []string
	for _, e := range g.Edges {
		edges = append(edges, e.From+">"+e.To+"/"+e.Class)
	}
	want := "app/L>s1/holds cycle s2>app/L/waits cycle s3>app/L/waits cycle victim app/M>s3/holds cycle s1>app/M/waits cycle"
	if got := strings.Join(edges, " "); got != want {
		t.Errorf("edges\n%s\nwant\n%s", got, want)
	}
	// Without the queue (s3 holding L too, so not queued) there is no cycle.
	ls = append(ls, lockInfo("L", "SHARED", "GRANTED", "s3", "h:3/three", t0))
	if g := buildWaitGraph(ls); len(g.Deadlock) != 0 {
		t.Errorf("a cycle through a request that is not queued: %q", g.Deadlock)
	}
}

// TestWaitGraphEscapes: names full of markup are text in the SVG.
func TestWaitGraphEscapes(t *testing.T) {
	tm, err := parseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	x := `<script>alert(1)</script>"&`
	g := buildWaitGraph([]baton.LockInfo{lockInfo(x, "EXCLUSIVE", "GRANTED", "s1", "h:1/"+x, time.Now()),
		lockInfo(x, "SHARED", "PENDING", "s2", "h:2/w", time.Now())})
	var b bytes.Buffer
	if err := tm["locks"].ExecuteTemplate(&b, "waitgraph", g); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "<script") || !strings.Contains(out, "&lt;script&gt;") {
		t.Fatalf("names are not escaped:\n%s", out)
	}
}
