package locks

import (
	"sync"

	"github.com/batonhq/baton/driver"
)

// contention remembers the identifiers this client recently found
// contended, so that its next call on one takes the path that pays off
// under contention: an acquisition goes straight to its request (a fast
// attempt would be refused), a release hands on in its own transaction
// (driver.Locks.ReleasesInTx). A hint is only a choice of path, never of
// outcome: both paths decide by the same rule, so a stale hint costs a
// little time and is dropped by the call that finds it wrong.
type contention struct {
	mu sync.Mutex
	m  map[driver.Ident]uint8 // the hint, with its quiet count
}

// contentionCap bounds the hints: past it they are forgotten at once (a
// client touching that many contended identifiers only loses the shortcut
// until it meets them again).
const contentionCap = 4096

// quietCap is how many grants in a row through the identifier's
// turnstile that waited for nobody drop the hint: under contention a
// grant now and then finds the turnstile free (the others are inside or
// on their way), so a few in a row prove little.
const quietCap = 64

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
		c.m = map[driver.Ident]uint8{id: 0}
	default:
		c.m[id] = 0
	}
}

// turnstile counts a grant through id's turnstile: one that waited for
// nobody (quiet) adds to the count, the quietCap-th in a row forgetting
// the hint; one that waited starts it again.
func (c *contention) turnstile(id driver.Ident, quiet bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.m[id]
	switch {
	case !ok:
	case !quiet:
		c.m[id] = 0
	case n+1 >= quietCap:
		delete(c.m, id)
	default:
		c.m[id] = n + 1
	}
}

// released is the hint's key for a release: the identifier it names, or
// its namespace (empty name) when it releases every name in it.
func released(p driver.FastReleaseParams) driver.Ident {
	return driver.Ident{Kind: p.Kind, NS: p.NS, Name: p.Name}
}
