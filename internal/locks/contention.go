package locks

import (
	"sync"

	"github.com/batonhq/baton/driver"
)

// contention remembers the identifiers this client recently found
// contended, so that its next call on one takes the path that pays off
// under contention: an acquisition goes straight to its request (a fast
// attempt would be refused), a release hands on in its own transaction
// (driver.TxReleaser). A hint is only a choice of path, never of outcome:
// both paths decide by the same rule, so a stale hint costs a little time
// and is dropped by the call that finds it wrong.
type contention struct {
	mu sync.Mutex
	m  map[driver.Ident]struct{}
}

// contentionCap bounds the hints: past it they are forgotten at once (a
// client touching that many contended identifiers only loses the shortcut
// until it meets them again).
const contentionCap = 4096

func (c *contention) has(id driver.Ident) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[id]
	return ok
}

// set records (on) or forgets the hint for id.
func (c *contention) set(id driver.Ident, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !on:
		delete(c.m, id)
	case c.m == nil || len(c.m) >= contentionCap:
		c.m = map[driver.Ident]struct{}{id: {}}
	default:
		c.m[id] = struct{}{}
	}
}

// released is the hint's key for a release: the identifier it names, or
// its namespace (empty name) when it releases every name in it.
func released(p driver.FastReleaseParams) driver.Ident {
	return driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name}
}
