package locks

import (
	"sync"

	"github.com/batonhq/baton/driver"
)

// Rows records the identifiers on which the session may hold an instance
// that is not an inline holder (driver.Request.Inline), or a waiting
// request: a release that covers none of them tells the backend so
// (driver.FastReleaseParams.InlineOnly), which saves looking for rows.
// An acquisition that may store rows is Begun before its first statement
// and Done after its last; a release that covered every instance of its
// identifiers Clears them, unless an acquisition began or ended since it
// looked (Covered's generation), so a row stored meanwhile stays counted.
type Rows struct {
	mu       sync.Mutex
	gen      uint64
	marked   map[driver.Ident]bool
	inFlight map[driver.Ident]int
}

// Begin records an acquisition of ids that may store rows, under way.
func (r *Rows) Begin(ids ...driver.Ident) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inFlight == nil {
		r.inFlight = map[driver.Ident]int{}
	}
	r.gen++
	for _, id := range ids {
		r.inFlight[id]++
	}
}

// Done ends an acquisition Begun on id; stored says it may have left a
// row (an error counts as one).
func (r *Rows) Done(id driver.Ident, stored bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	if r.inFlight[id]--; r.inFlight[id] <= 0 {
		delete(r.inFlight, id)
	}
	if stored {
		if r.marked == nil {
			r.marked = map[driver.Ident]bool{}
		}
		r.marked[id] = true
	}
}

// Covered reports whether a release of scope (one name, or a whole
// namespace when its Name is empty) may meet rows, the only identifier
// there on which it may (one false when there are several, or none), and
// the generation to give Clear.
func (r *Rows) Covered(scope driver.Ident) (rows bool, sole driver.Ident, one bool, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0 // distinct identifiers seen, counted up to two
	see := func(id driver.Ident) {
		if !id.Within(scope) || n == 1 && id == sole {
			return
		}
		if n == 0 {
			sole = id
		}
		n++
	}
	for id := range r.marked {
		see(id)
	}
	for id := range r.inFlight {
		see(id)
	}
	if n != 1 {
		sole = driver.Ident{}
	}
	return n > 0, sole, n == 1, r.gen
}

// Any reports whether the session may have rows anywhere.
func (r *Rows) Any() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.marked) > 0 || len(r.inFlight) > 0
}

// Clear forgets the rows of scope after a release of all the session's
// instances there, if nothing began or ended since Covered gave gen.
func (r *Rows) Clear(scope driver.Ident, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen {
		return
	}
	for id := range r.marked {
		if id.Within(scope) {
			delete(r.marked, id)
		}
	}
}
