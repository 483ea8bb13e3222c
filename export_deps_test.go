package baton

import "context"

// SweepDeps runs a client's dependency sweep now, whatever it knows of
// waiting edges; when it returns, every edge whose parent was done before
// it started is settled.
func SweepDeps(ctx context.Context, c *Client) error { return c.mq.SweepDeps(ctx, true) }

// PurgeDeps runs a client's purge of dependencies now.
func PurgeDeps(ctx context.Context, c *Client) error { return c.mq.PurgeDeps(ctx) }
