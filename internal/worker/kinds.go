package worker

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Kinds maps the kinds of messages of type M to their handlers, for a
// worker that runs each message by the handler of its kind. A kind may
// have aliases: other names whose messages its handler runs. The zero
// value is empty and ready; it is safe for concurrent use.
type Kinds[M any] struct {
	mu    sync.RWMutex
	kinds map[string]*Kind[M] // by kind and by alias
}

// Kind is the handler of a kind, the bound of its runs (0: none), its
// retry policy (nil: the caller's default) and its aliases.
type Kind[M any] struct {
	Handle  func(ctx context.Context, m M) error
	Timeout time.Duration
	Retry   func(m M) time.Duration
	Aliases []string

	name string
}

// Add registers the handler of kind under its name and its aliases; it
// returns the first of those names that is taken already ("" when none
// is, and k was added).
func (ks *Kinds[M]) Add(kind string, k Kind[M]) (taken string) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	names := append([]string{kind}, k.Aliases...)
	seen := map[string]bool{}
	for _, n := range names {
		if _, dup := ks.kinds[n]; dup || seen[n] {
			return n
		}
		seen[n] = true
	}
	if ks.kinds == nil {
		ks.kinds = map[string]*Kind[M]{}
	}
	k.name = kind
	k.Aliases = append([]string(nil), k.Aliases...)
	for _, n := range names {
		ks.kinds[n] = &k
	}
	return ""
}

// Names lists the kinds that have a handler, sorted (aliases not
// included).
func (ks *Kinds[M]) Names() []string {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	out := make([]string, 0, len(ks.kinds))
	for n, k := range ks.kinds {
		if n == k.name {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Known says whether name is a kind or an alias of one.
func (ks *Kinds[M]) Known(name string) bool {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	_, ok := ks.kinds[name]
	return ok
}

// Aliases are the aliases of name's kind other than name itself (none
// when it has no handler).
func (ks *Kinds[M]) Aliases(name string) []string {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	k, ok := ks.kinds[name]
	if !ok || (len(k.Aliases) == 0 && k.name == name) {
		return nil // the common case, on every claim: no allocation
	}
	var out []string
	for _, n := range append([]string{k.name}, k.Aliases...) {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}

// Timeout is the bound of a run of kind's handler (0: none, or no
// handler).
func (ks *Kinds[M]) Timeout(kind string) time.Duration {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	if k, ok := ks.kinds[kind]; ok {
		return k.Timeout
	}
	return 0
}

// Retry is kind's retry policy (nil: none of its own, or no handler).
func (ks *Kinds[M]) Retry(kind string) func(m M) time.Duration {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	if k, ok := ks.kinds[kind]; ok {
		return k.Retry
	}
	return nil
}

// Handler is the handler of kind (or of the kind it is an alias of);
// false when kind has none.
func (ks *Kinds[M]) Handler(kind string) (func(ctx context.Context, m M) error, bool) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	k, found := ks.kinds[kind]
	if !found {
		return nil, false
	}
	return k.Handle, true
}
