// Package lockcore holds the rules of baton's lock service as pure functions:
// which waiting requests can be granted, and which request to abort when
// waits form a cycle. The engine applies them to rows it has read under the
// identifiers' row locks, so the same rules hold on every backend.
package lockcore

import (
	"sort"

	"github.com/batonhq/baton/driver"
)

// Conflicts reports whether two modes exclude each other.
func Conflicts(a, b string) bool { return a == driver.ModeWrite || b == driver.ModeWrite }

// Grants returns the ids of the pending requests that can be granted now,
// given every request on one identifier ordered by id. It simulates the
// queue front to back:
//   - a request conflicts with other sessions' granted instances;
//   - a request from a session that holds nothing on the identifier also
//     queues behind earlier conflicting requests of other sessions (first
//     come, first served; a waiting writer blocks later readers);
//   - a session that already holds an instance skips the queue and waits
//     only for other sessions' conflicting instances (re-entry, upgrade).
//
// Requests marked as deadlock victims are being withdrawn and are ignored.
func Grants(reqs []driver.Request) []int64 {
	granted := make([]driver.Request, 0, len(reqs))
	for _, r := range reqs {
		if r.Status == driver.StatusGranted {
			granted = append(granted, r)
		}
	}
	var out []int64
	var waiting []driver.Request
	for _, r := range reqs {
		if r.Status != driver.StatusPending {
			continue
		}
		if grantable(r, granted, waiting) {
			r.Status = driver.StatusGranted
			granted = append(granted, r)
			out = append(out, r.ID)
			continue
		}
		waiting = append(waiting, r)
	}
	return out
}

func grantable(r driver.Request, granted, earlier []driver.Request) bool {
	holds := false
	for _, g := range granted {
		if g.SessionID == r.SessionID {
			holds = true
			continue
		}
		if Conflicts(g.Mode, r.Mode) {
			return false
		}
	}
	if holds {
		return true
	}
	for _, w := range earlier {
		if w.SessionID != r.SessionID && Conflicts(w.Mode, r.Mode) {
			return false
		}
	}
	return true
}

// Blockers returns the sessions that the pending request r waits for, given
// every request on r's identifier ordered by id.
func Blockers(r driver.Request, same []driver.Request) []string {
	holds := false
	for _, g := range same {
		if g.Status == driver.StatusGranted && g.SessionID == r.SessionID {
			holds = true
		}
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, g := range same {
		if g.SessionID == r.SessionID || !Conflicts(g.Mode, r.Mode) {
			continue
		}
		switch {
		case g.Status == driver.StatusGranted:
			add(g.SessionID)
		case g.Status == driver.StatusPending && !holds && g.ID < r.ID:
			add(g.SessionID)
		}
	}
	return out
}

// Victims finds every cycle of waits among the requests (every pending
// request and every request on an identifier with a pending request, as
// returned by Tx.LockWaitGraph) and returns the pending requests to abort so
// that no cycle remains. In each cycle the victim is a request waiting for a
// read lock if there is one, otherwise a write request; among equals, the
// newest request, the one that closed the cycle.
func Victims(reqs []driver.Request) []driver.Request {
	byIdent := map[driver.Ident][]driver.Request{}
	for _, r := range reqs {
		byIdent[r.Ident] = append(byIdent[r.Ident], r)
	}
	for _, rs := range byIdent {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	}
	pendingBySession := map[string][]driver.Request{}
	var pending []driver.Request
	for _, r := range reqs {
		if r.Status == driver.StatusPending {
			pending = append(pending, r)
			pendingBySession[r.SessionID] = append(pendingBySession[r.SessionID], r)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].ID < pending[j].ID })

	edges := map[int64][]int64{}
	index := map[int64]driver.Request{}
	for _, p := range pending {
		index[p.ID] = p
		for _, s := range Blockers(p, byIdent[p.Ident]) {
			for _, q := range pendingBySession[s] {
				edges[p.ID] = append(edges[p.ID], q.ID)
			}
		}
	}
	removed := map[int64]bool{}
	var victims []driver.Request
	for {
		cycle := findCycle(pending, edges, removed)
		if cycle == nil {
			return victims
		}
		v := index[cycle[0]]
		for _, id := range cycle[1:] {
			c := index[id]
			if better(c, v) {
				v = c
			}
		}
		removed[v.ID] = true
		victims = append(victims, v)
	}
}

// better reports whether a is a better deadlock victim than b.
func better(a, b driver.Request) bool {
	if a.Mode != b.Mode {
		return a.Mode == driver.ModeRead
	}
	return a.ID > b.ID
}

// findCycle returns the ids along one cycle, or nil.
func findCycle(nodes []driver.Request, edges map[int64][]int64, removed map[int64]bool) []int64 {
	const (
		white = 0
		grey  = 1
		black = 2
	)
	color := map[int64]int{}
	var stack []int64
	var found []int64
	var visit func(id int64) bool
	visit = func(id int64) bool {
		color[id] = grey
		stack = append(stack, id)
		for _, next := range edges[id] {
			if removed[next] {
				continue
			}
			switch color[next] {
			case grey:
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i] == next {
						found = append([]int64(nil), stack[i:]...)
						return true
					}
				}
			case white:
				if visit(next) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return false
	}
	for _, n := range nodes {
		if removed[n.ID] || color[n.ID] != white {
			continue
		}
		if visit(n.ID) {
			return found
		}
	}
	return nil
}

// Counts returns an identifier's counters as stored on its lock row.
func Counts(reqs []driver.Request) (readers, writers, waiting int64) {
	for _, r := range reqs {
		switch {
		case r.Status != driver.StatusGranted:
			waiting++
		case r.Mode == driver.ModeWrite:
			writers++
		default:
			readers++
		}
	}
	return
}
