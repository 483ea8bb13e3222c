package sqlbase

import "context"

// Gate queues the writers of one database inside this process, so that
// they wait for each other in Go instead of in the database's busy
// handler: SQLite's sleeps a millisecond on the first conflict and longer
// after it, where a write transaction takes a tenth of that, which cost
// two clients of one file a third of their throughput under contention.
// Writers of other processes still meet the busy handler. A zero Gate is
// not usable: make one with NewGate.
type Gate struct{ ch chan struct{} }

// NewGate returns an open gate.
func NewGate() *Gate { return &Gate{ch: make(chan struct{}, 1)} }

// Enter waits until the gate is free or ctx is done, and returns the
// function that leaves it (call it once).
func (g *Gate) Enter(ctx context.Context) (leave func(), err error) {
	select {
	case g.ch <- struct{}{}:
		return func() { <-g.ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
