package worker

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Kinds maps the kinds of messages of type M to their handlers, for a
// worker that runs each message by the handler of its kind. The zero
// value is empty and ready; it is safe for concurrent use.
type Kinds[M any] struct {
	mu    sync.RWMutex
	kinds map[string]Kind[M]
}

// Kind is the handler of a kind and the bound of its runs (0: none).
type Kind[M any] struct {
	Handle  func(ctx context.Context, m M) error
	Timeout time.Duration
}

// Add registers the handler of kind; false when kind has one already.
func (ks *Kinds[M]) Add(kind string, k Kind[M]) bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if _, dup := ks.kinds[kind]; dup {
		return false
	}
	if ks.kinds == nil {
		ks.kinds = map[string]Kind[M]{}
	}
	ks.kinds[kind] = k
	return true
}

// Names lists the kinds that have a handler, sorted.
func (ks *Kinds[M]) Names() []string {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	out := make([]string, 0, len(ks.kinds))
	for k := range ks.kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Timeout is the bound of a run of kind's handler (0: none, or no
// handler).
func (ks *Kinds[M]) Timeout(kind string) time.Duration {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return ks.kinds[kind].Timeout
}

// Handler is the handler of kind; false when kind has none.
func (ks *Kinds[M]) Handler(kind string) (func(ctx context.Context, m M) error, bool) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	k, found := ks.kinds[kind]
	return k.Handle, found
}
