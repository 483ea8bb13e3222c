package main

import (
	"time"

	"github.com/batonhq/baton"
)

// runAt sets the run-at time of baton queue push from --at (RFC 3339).
func runAt(o *baton.EnqueueOptions, at string) error {
	if at == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, at)
	switch {
	case err != nil:
		return usageErr("queue push: --at %q: give a time in RFC 3339, e.g. 2026-12-24T18:00:00Z", at)
	case o.Delay != 0:
		return usageErr("queue push: --at and --delay: give one")
	}
	o.RunAt = t
	return nil
}
