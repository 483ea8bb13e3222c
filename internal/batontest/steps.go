package batontest

import "sync"

// Steps records, in order, what a test's callbacks were asked to do,
// from any goroutine.
type Steps struct {
	mu  sync.Mutex
	got []string
}

// Add records one step.
func (s *Steps) Add(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, step)
}

// Take returns the steps recorded since the last Take.
func (s *Steps) Take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.got
	s.got = nil
	return out
}
