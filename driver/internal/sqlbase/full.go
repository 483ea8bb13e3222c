package sqlbase

import (
	"context"
	sqldrv "database/sql/driver"
	"math/rand/v2"
	"time"
)

// FullWait bounds how long a connection refused for lack of slots is
// tried again when the caller's context has no deadline of its own.
const FullWait = 30 * time.Second

// WhileFull runs connect until it succeeds, fails for another reason than
// a server out of connection slots (full reports that), ctx ends, or,
// when ctx has no deadline, FullWait has passed: a refused connection is
// tried again after a backoff from 25 ms doubling to 1 s, each wait drawn
// between half and all of it, so that the processes a full server refused
// together do not come back together. The last error is returned.
func WhileFull[C any](ctx context.Context, full func(error) bool, connect func(context.Context) (C, error)) (C, error) {
	c, err := connect(ctx)
	if err == nil || !full(err) {
		return c, err
	}
	end := time.Now().Add(FullWait)
	if d, ok := ctx.Deadline(); ok {
		end = d
	}
	backoff := 25 * time.Millisecond
	for {
		wait := backoff/2 + rand.N(backoff/2+1)
		if time.Until(end) < wait {
			return c, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return c, err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
		if c, err = connect(ctx); err == nil || !full(err) {
			return c, err
		}
	}
}

// RetryFull wraps a connector so that every connection its pool opens is
// tried again while the server refuses it for lack of connection slots
// (WhileFull): a statement then waits for a slot within its context
// instead of failing at once.
func RetryFull(c sqldrv.Connector, full func(error) bool) sqldrv.Connector {
	return fullConnector{c: c, full: full}
}

type fullConnector struct {
	c    sqldrv.Connector
	full func(error) bool
}

func (f fullConnector) Connect(ctx context.Context) (sqldrv.Conn, error) {
	return WhileFull(ctx, f.full, f.c.Connect)
}

func (f fullConnector) Driver() sqldrv.Driver { return f.c.Driver() }
