package baton

import (
	"context"
	"time"
)

// CountDuration counts a handler run of d on queue in c's roll-up, as a
// worker does.
func CountDuration(c *Client, queue string, d time.Duration) { c.mq.CountDuration(queue, d) }

// FlushRollup writes c's roll-up counts, as its upkeep does.
func FlushRollup(ctx context.Context, c *Client) error { return c.mq.FlushThroughput(ctx) }

// SampleBacklog samples every queue's backlog into the current minute,
// even when another process did already.
func SampleBacklog(ctx context.Context, c *Client) error { return c.mq.SampleBacklogNow(ctx) }

// PurgeRollup runs the roll-up's purge, as the upkeep does.
func PurgeRollup(ctx context.Context, c *Client) error { return c.drv.NoTx().ThroughputPurge(ctx) }
