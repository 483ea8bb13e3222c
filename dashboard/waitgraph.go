package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton"
)

// The locks page's wait-for graph: sessions in the left column, the locks
// someone waits for in the right one; a solid arrow from a lock to each
// session holding it, a dashed arrow from each waiting session to the lock
// it waits for, so that "A waits for B" reads A → lock → B. Only contended
// locks are drawn (a lock nobody waits for is in the table), their
// holders and waiters, in a deterministic order: locks by type, namespace
// and name, sessions by the first lock they touch (its holders before its
// waiters, then in the listing's order: by request).
//
// A cycle of sessions waiting for each other (a waiting request waits for
// the other sessions holding its lock in a conflicting mode, and for those
// queued ahead of it) is a deadlock that baton's detector breaks as soon as
// it runs (within tens of milliseconds): it is drawn in red, and the
// request the detector aborts (lockcore's rule: a read request before a
// write one, then the newest) is marked the victim. A cycle is only seen
// when the detector is held up; nothing remembers past victims (each
// victim's own call returns ErrDeadlock and its client's Observer counts
// it).

// Wait-for graph geometry, in SVG user units.
const (
	wfBoxW, wfBoxH, wfRow, wfTop = 250, 34, 46, 30
	wfSessX, wfLockX, wfW        = 8, 452, 710
	wfMaxLocks, wfMaxSessions    = 40, 60
	wfLabel                      = 34 // characters of a label
)

// waitGraph is the laid-out graph.
type waitGraph struct {
	W, H     int
	Nodes    []gnode
	Edges    []gedge
	Deadlock []string // one sentence per cycle found
	More     int      // contended locks not drawn
	Heads    [2]num   // the columns' headings' places
}

// gnode is a box: a session or a lock.
type gnode struct {
	Key        string // the session id, or the lock's type/namespace/name
	Kind       string // "session" or "lock"
	Class      string
	X, Y, W, H num
	TX, TY, SY num // the label's and the second line's places
	VX         num // the victim mark's place
	Label, Sub string
	Title      string
	Victim     bool
}

// gedge is an arrow between a session and a lock.
type gedge struct {
	D      string
	Class  string // holds or waits, and cycle / victim
	Marker string // the arrowhead's id
	Title  string
	From   string
	To     string
}

// lockKey names a lock in the graph.
func lockKey(l baton.LockInfo) string {
	if l.Type == "USER LEVEL LOCK" {
		return "user lock " + l.Name
	}
	return l.Namespace + "/" + l.Name
}

// short cuts a label to wfLabel characters.
func short(s string) string {
	r := []rune(s)
	if len(r) <= wfLabel {
		return s
	}
	return string(r[:wfLabel-1]) + "…"
}

// sessionName is how a session's box is labelled: its owner, or the
// transaction holding the lock.
func sessionName(l baton.LockInfo) string {
	if l.Transaction {
		return "transaction " + l.Session
	}
	return l.Owner
}

// conflicts says whether a request of mode waits for a holder of held.
func conflicts(mode, held string) bool { return mode == "EXCLUSIVE" || held == "EXCLUSIVE" }

// buildWaitGraph lays out the wait-for graph of the locks listed.
func buildWaitGraph(ls []baton.LockInfo) waitGraph {
	g := waitGraph{W: wfW, Heads: [2]num{wfSessX, wfLockX}}
	// The contended locks, in the listing's order (type, namespace, name).
	var locks []string
	contended := map[string]bool{}
	for _, l := range ls {
		if k := lockKey(l); l.Status != "GRANTED" && !contended[k] {
			contended[k] = true
			locks = append(locks, k)
		}
	}
	slices.Sort(locks)
	if len(locks) > wfMaxLocks {
		g.More = len(locks) - wfMaxLocks
		locks = locks[:wfMaxLocks]
	}
	lockRow := map[string]int{}
	for i, k := range locks {
		lockRow[k] = i
	}
	// The requests on them; sessions by the first lock they touch.
	// A session's place: the first lock it touches, holders of that lock
	// before its waiters, then the listing's order.
	type place struct{ lock, role, pos int }
	var reqs []baton.LockInfo
	first := map[string]place{}
	owner := map[string]string{}
	for pos, l := range ls {
		i, ok := lockRow[lockKey(l)]
		if !ok {
			continue
		}
		reqs = append(reqs, l)
		p := place{i, 1, pos}
		if l.Status == "GRANTED" {
			p.role = 0
		}
		if f, seen := first[l.Session]; !seen || cmp.Or(cmp.Compare(p.lock, f.lock), cmp.Compare(p.role, f.role), cmp.Compare(p.pos, f.pos)) < 0 {
			first[l.Session] = p
		}
		owner[l.Session] = sessionName(l)
	}
	var sessions []string
	for s := range first {
		sessions = append(sessions, s)
	}
	slices.SortFunc(sessions, func(a, b string) int {
		pa, pb := first[a], first[b]
		return cmp.Or(cmp.Compare(pa.lock, pb.lock), cmp.Compare(pa.role, pb.role), cmp.Compare(pa.pos, pb.pos))
	})
	if len(sessions) > wfMaxSessions {
		sessions = sessions[:wfMaxSessions]
	}
	sessRow := map[string]int{}
	for i, s := range sessions {
		sessRow[s] = i
	}
	rows := max(len(sessions), len(locks))
	g.H = wfTop + rows*wfRow + 8
	if rows == 0 {
		g.H = 0
	}
	cycle, victims := deadlocks(reqs)
	for i, s := range sessions {
		n := box("session", s, wfSessX, i)
		n.Label, n.Sub, n.Title = short(owner[s]), short("session "+s), "session "+s+" of "+owner[s]
		if cycle[s] {
			n.Class += " cycle"
		}
		g.Nodes = append(g.Nodes, n)
	}
	for i, k := range locks {
		n := box("lock", k, wfLockX, i)
		n.Label, n.Sub, n.Title = short(k), "lock", "lock "+k
		g.Nodes = append(g.Nodes, n)
	}
	for ri, r := range reqs {
		si, ok := sessRow[r.Session]
		if !ok {
			continue
		}
		li := lockRow[lockKey(r)]
		sy := num(wfTop + si*wfRow + wfBoxH/2)
		ly := num(wfTop + li*wfRow + wfBoxH/2)
		sx, lx := num(wfSessX+wfBoxW), num(wfLockX)
		mid := (sx + lx) / 2
		e := gedge{From: r.Session, To: lockKey(r)}
		if r.Status == "GRANTED" {
			// lock → holder, above the middle of both boxes
			sy, ly = sy-6, ly-6
			e.From, e.To = lockKey(r), r.Session
			e.D = fmt.Sprintf("M%v %v C%v %v, %v %v, %v %v", lx, ly, mid, ly, mid, sy, sx+2, sy)
			e.Class, e.Marker = "holds", "wf-arrow-holds"
			e.Title = fmt.Sprintf("%s holds %s (%s)", owner[r.Session], lockKey(r), strings.ToLower(r.Mode))
		} else {
			sy, ly = sy+6, ly+6
			e.D = fmt.Sprintf("M%v %v C%v %v, %v %v, %v %v", sx, sy, mid, sy, mid, ly, lx-2, ly)
			e.Class, e.Marker = "waits", "wf-arrow-waits"
			e.Title = fmt.Sprintf("%s waits for %s (%s)", owner[r.Session], lockKey(r), strings.ToLower(r.Mode))
		}
		if inCycle(reqs, ri, cycle) {
			e.Class += " cycle"
			e.Marker = "wf-arrow-cycle"
		}
		if r.Status != "GRANTED" && victims[r.Session+"\x00"+lockKey(r)] {
			e.Class += " victim"
			e.Title += ": the deadlock's victim"
			g.Nodes[si].Victim = true
			g.Nodes[si].Class += " victim"
		}
		g.Edges = append(g.Edges, e)
	}
	for _, v := range victimList(reqs, victims) {
		g.Deadlock = append(g.Deadlock, v)
	}
	return g
}

// box is a node's box in column x, row i.
func box(kind, key string, x, i int) gnode {
	y := wfTop + i*wfRow
	return gnode{Key: key, Kind: kind, Class: kind, X: num(x), Y: num(y), W: wfBoxW, H: wfBoxH,
		TX: num(x + 8), TY: num(y + 14), SY: num(y + 28), VX: num(x + wfBoxW - 62)}
}

// blocks says whether request g makes the waiting request r wait, as
// baton's detector reads it (lockcore.Blockers): a conflicting request of
// another session on the same lock, granted, or waiting ahead of r when
// r's session holds nothing there (queued: first come, first served).
// The listing has each lock's requests in request order.
func blocks(reqs []baton.LockInfo, g, r int) bool {
	a, b := reqs[g], reqs[r]
	if b.Status == "GRANTED" || a.Session == b.Session || lockKey(a) != lockKey(b) || !conflicts(b.Mode, a.Mode) {
		return false
	}
	if a.Status == "GRANTED" {
		return true
	}
	for _, o := range reqs {
		if o.Session == b.Session && o.Status == "GRANTED" && lockKey(o) == lockKey(b) {
			return false // not queued
		}
	}
	return g < r
}

// inCycle says whether request i is an arrow of a cycle among the
// sessions in cycle: a waiting one that a request of the cycle blocks, or
// one that blocks a waiting request of the cycle.
func inCycle(reqs []baton.LockInfo, i int, cycle map[string]bool) bool {
	if !cycle[reqs[i].Session] {
		return false
	}
	for o := range reqs {
		if cycle[reqs[o].Session] && (blocks(reqs, o, i) || blocks(reqs, i, o)) {
			return true
		}
	}
	return false
}

// deadlocks finds the sessions on a cycle of waits and, per cycle, the
// request baton's detector aborts: a read request before a write one,
// then the newest (keys session + "\x00" + lock).
func deadlocks(reqs []baton.LockInfo) (onCycle map[string]bool, victims map[string]bool) {
	edges := map[string][]string{}
	for r := range reqs {
		for g := range reqs {
			if blocks(reqs, g, r) {
				edges[reqs[r].Session] = append(edges[reqs[r].Session], reqs[g].Session)
			}
		}
	}
	onCycle, victims = map[string]bool{}, map[string]bool{}
	for _, comp := range components(edges) {
		in := map[string]bool{}
		for _, s := range comp {
			in[s] = true
			onCycle[s] = true
		}
		var best *baton.LockInfo
		for i := range reqs {
			r := &reqs[i]
			if r.Status == "GRANTED" || !inCycle(reqs, i, in) {
				continue
			}
			if best == nil || better(r, best) {
				best = r
			}
		}
		if best != nil {
			victims[best.Session+"\x00"+lockKey(*best)] = true
		}
	}
	return onCycle, victims
}

// better says whether waiting request a is a likelier victim than b.
func better(a, b *baton.LockInfo) bool {
	if (a.Mode == "SHARED") != (b.Mode == "SHARED") {
		return a.Mode == "SHARED"
	}
	if !a.Since.Equal(b.Since) {
		return a.Since.After(b.Since)
	}
	return a.Session > b.Session
}

// components returns the strongly connected components of more than one
// session (Tarjan), each sorted, in a deterministic order.
func components(edges map[string][]string) [][]string {
	var nodes []string
	for n := range edges {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	index, low, on := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		on[v] = true
		for _, w := range edges[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 {
				slices.Sort(comp)
				out = append(out, comp)
			}
		}
	}
	for _, n := range nodes {
		if _, seen := index[n]; !seen {
			visit(n)
		}
	}
	return out
}

// victimList says, per victim, what the detector will do.
func victimList(reqs []baton.LockInfo, victims map[string]bool) []string {
	var out []string
	for _, r := range reqs {
		if r.Status != "GRANTED" && victims[r.Session+"\x00"+lockKey(r)] {
			out = append(out, fmt.Sprintf("Deadlock: %s waits for %s in a cycle of waits; baton's detector aborts this request (the victim), and its Lock call returns ErrDeadlock.",
				sessionName(r), lockKey(r)))
		}
	}
	return out
}
