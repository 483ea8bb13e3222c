// Package lockcore holds the rules of baton's lock service as pure functions:
// which waiting requests can be granted, and which request to abort when
// waits form a cycle. The engine applies them to rows it has read under the
// identifiers' row locks, so the same rules hold on every backend.
package lockcore

import (
	"slices"
	"sort"

	"github.com/batonhq/baton/driver"
)

// Conflicts reports whether two modes exclude each other.
func Conflicts(a, b driver.LockMode) bool { return a == driver.ModeWrite || b == driver.ModeWrite }

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
	granted := withStatus(reqs, driver.StatusGranted)
	var out []int64
	var waiting []driver.Request
	for _, r := range withStatus(reqs, driver.StatusPending) {
		if !grantable(r, granted, waiting) {
			waiting = append(waiting, r)
			continue
		}
		r.Status = driver.StatusGranted
		granted = append(granted, r)
		out = append(out, r.ID)
	}
	return out
}

// withStatus returns the requests in the status, in their order.
func withStatus(reqs []driver.Request, status driver.RequestStatus) []driver.Request {
	var out []driver.Request
	for _, r := range reqs {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

// grantable reports whether r can be granted beside the granted requests
// and behind the earlier waiting ones.
func grantable(r driver.Request, granted, earlier []driver.Request) bool {
	if conflictsWithOthers(r, granted) {
		return false
	}
	return holds(r.SessionID, granted) || !conflictsWithOthers(r, earlier)
}

// conflictsWithOthers reports whether a request of another session among
// reqs excludes r.
func conflictsWithOthers(r driver.Request, reqs []driver.Request) bool {
	return slices.ContainsFunc(reqs, func(o driver.Request) bool {
		return o.SessionID != r.SessionID && Conflicts(o.Mode, r.Mode)
	})
}

// holds reports whether the session has a granted request among reqs.
func holds(session string, reqs []driver.Request) bool {
	return slices.ContainsFunc(reqs, func(g driver.Request) bool {
		return g.Status == driver.StatusGranted && g.SessionID == session
	})
}

// Blockers returns the sessions that the pending request r waits for, given
// every request on r's identifier ordered by id.
func Blockers(r driver.Request, same []driver.Request) []string {
	queued := !holds(r.SessionID, same)
	seen := map[string]bool{}
	var out []string
	for _, g := range same {
		if blocks(g, r, queued) && !seen[g.SessionID] {
			seen[g.SessionID] = true
			out = append(out, g.SessionID)
		}
	}
	return out
}

// blocks reports whether g makes the pending request r wait: a conflicting
// request of another session, granted, or pending ahead of r when r's
// session holds nothing on the identifier (queued).
func blocks(g, r driver.Request, queued bool) bool {
	if g.SessionID == r.SessionID || !Conflicts(g.Mode, r.Mode) {
		return false
	}
	if g.Status == driver.StatusGranted {
		return true
	}
	return g.Status == driver.StatusPending && queued && g.ID < r.ID
}

// Victims finds every cycle of waits among the requests (every pending
// request and every request on an identifier with a pending request, as
// returned by Tx.LockWaitGraph) and returns the pending requests to abort so
// that no cycle remains. In each cycle the victim is a request waiting for a
// read lock if there is one, otherwise a write request; among equals, the
// newest request, the one that closed the cycle.
func Victims(reqs []driver.Request) []driver.Request {
	g := newWaitGraph(reqs)
	removed := map[int64]bool{}
	var victims []driver.Request
	for cycle := g.findCycle(removed); cycle != nil; cycle = g.findCycle(removed) {
		v := g.victim(cycle)
		removed[v.ID] = true
		victims = append(victims, v)
	}
	return victims
}

// waitGraph links each pending request to the pending requests of the
// sessions it waits for.
type waitGraph struct {
	pending []driver.Request // ordered by id
	index   map[int64]driver.Request
	edges   map[int64][]int64
}

func newWaitGraph(reqs []driver.Request) *waitGraph {
	byIdent := map[driver.Ident][]driver.Request{}
	for _, r := range reqs {
		byIdent[r.Ident] = append(byIdent[r.Ident], r)
	}
	for _, rs := range byIdent {
		sortByID(rs)
	}
	pending := withStatus(reqs, driver.StatusPending)
	pendingBySession := map[string][]driver.Request{}
	for _, p := range pending {
		pendingBySession[p.SessionID] = append(pendingBySession[p.SessionID], p)
	}
	g := &waitGraph{pending: sortByID(pending), index: map[int64]driver.Request{}, edges: map[int64][]int64{}}
	for _, p := range g.pending {
		g.index[p.ID] = p
		for _, s := range Blockers(p, byIdent[p.Ident]) {
			for _, q := range pendingBySession[s] {
				g.edges[p.ID] = append(g.edges[p.ID], q.ID)
			}
		}
	}
	return g
}

// sortByID sorts the requests by id in place and returns them.
func sortByID(rs []driver.Request) []driver.Request {
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	return rs
}

// victim returns the request of the cycle to abort.
func (g *waitGraph) victim(cycle []int64) driver.Request {
	v := g.index[cycle[0]]
	for _, id := range cycle[1:] {
		if c := g.index[id]; better(c, v) {
			v = c
		}
	}
	return v
}

// better reports whether a is a better deadlock victim than b.
func better(a, b driver.Request) bool {
	if a.Mode != b.Mode {
		return a.Mode == driver.ModeRead
	}
	return a.ID > b.ID
}

// The colours of a depth-first search: not yet reached, on the path being
// explored, done.
const (
	white = iota
	grey
	black
)

// cycleSearch is one depth-first search of the wait graph without the
// removed requests.
type cycleSearch struct {
	edges   map[int64][]int64
	removed map[int64]bool
	color   map[int64]int
	path    []int64
}

// findCycle returns the ids along one cycle, or nil.
func (g *waitGraph) findCycle(removed map[int64]bool) []int64 {
	s := &cycleSearch{edges: g.edges, removed: removed, color: map[int64]int{}}
	for _, n := range g.pending {
		if c := s.follow(n.ID); c != nil {
			return c
		}
	}
	return nil
}

// follow explores from id unless it is removed or done; it returns the
// cycle it closes or finds beyond, or nil.
func (s *cycleSearch) follow(id int64) []int64 {
	switch {
	case s.removed[id]:
		return nil
	case s.color[id] == grey:
		return slices.Clone(s.path[slices.Index(s.path, id):])
	case s.color[id] == white:
		return s.visit(id)
	}
	return nil
}

// visit explores the requests id waits for.
func (s *cycleSearch) visit(id int64) []int64 {
	s.color[id] = grey
	s.path = append(s.path, id)
	for _, next := range s.edges[id] {
		if c := s.follow(next); c != nil {
			return c
		}
	}
	s.path = s.path[:len(s.path)-1]
	s.color[id] = black
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

// Regrant hands an identifier on: it grants what Grants allows of rows
// (the identifier's requests in queue order; ahead are granted stand-ins
// queued before them, such as a transaction's gate, never stored), each
// with the next token of st's fence, through grant, which stores one
// grant and reports whether the request was still pending (a deadlock
// victim may have been withdrawn meanwhile: it is not granted, its token
// is spent). It then sets st's counters from rows and returns the grants
// made, each with its client, session, call and token: what a waiter may
// take without reading its status.
func Regrant(st *driver.IdentState, ahead, rows []driver.Request, grant func(id, token int64) (bool, error)) ([]driver.Request, error) {
	var grants []driver.Request
	for _, gid := range Grants(slices.Concat(ahead, rows)) {
		st.Fence++
		ok, err := grant(gid, st.Fence)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		i := slices.IndexFunc(rows, func(r driver.Request) bool { return r.ID == gid })
		r := &rows[i]
		r.Status, r.Token = driver.StatusGranted, st.Fence
		grants = append(grants, driver.Request{ID: gid, ClientID: r.ClientID, SessionID: r.SessionID, CallID: r.CallID,
			Status: driver.StatusGranted, Token: st.Fence})
	}
	st.Readers, st.Writers, st.Waiting = Counts(rows)
	return grants, nil
}
