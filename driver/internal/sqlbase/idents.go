package sqlbase

import (
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/driver"
)

// IdentSet is a set of identifiers a driver remembers something of (a
// lock row it has seen, readers it joined), safe for concurrent use and
// bounded: past identSetMax members it starts again empty, so a
// forgotten identifier costs its next call only the statement the
// memory spared.
type IdentSet struct {
	m sync.Map // driver.Ident -> struct{}
	n atomic.Int64
}

const identSetMax = 1 << 14

// Has reports whether id is in the set.
func (s *IdentSet) Has(id driver.Ident) bool {
	_, ok := s.m.Load(id)
	return ok
}

// HasAll reports whether every name of a namespace is in the set.
func (s *IdentSet) HasAll(kind int, ns string, names []string) bool {
	for _, n := range names {
		if !s.Has(driver.Ident{Kind: kind, NS: ns, Name: n}) {
			return false
		}
	}
	return true
}

// Add adds id.
func (s *IdentSet) Add(id driver.Ident) {
	if _, loaded := s.m.LoadOrStore(id, struct{}{}); loaded {
		return
	}
	if s.n.Add(1) > identSetMax {
		s.m.Clear()
		s.n.Store(0)
	}
}

// AddAll adds the names of a namespace.
func (s *IdentSet) AddAll(kind int, ns string, names []string) {
	for _, n := range names {
		s.Add(driver.Ident{Kind: kind, NS: ns, Name: n})
	}
}

// Remove takes id out of the set.
func (s *IdentSet) Remove(id driver.Ident) {
	if _, loaded := s.m.LoadAndDelete(id); loaded {
		s.n.Add(-1)
	}
}
