package sqlbase

import (
	"context"
	"log/slog"
	"time"
)

// DefaultInterval is a listener's poll interval when none is given.
func DefaultInterval(interval time.Duration) time.Duration {
	if interval <= 0 {
		return 500 * time.Millisecond
	}
	return interval
}

// Failing says a repeated failure once: the first failure is logged (to
// Log, else slog.Default()), the next ones not until the work succeeds
// again.
type Failing struct {
	on  bool
	Log *slog.Logger
}

func (f *Failing) logger() *slog.Logger {
	if f.Log != nil {
		return f.Log
	}
	return slog.Default()
}

// Failed records a failure and logs msg as a warning when it is the first
// since the work last succeeded and ctx, the work's context, has not
// ended (a failure because the work stops is no news).
func (f *Failing) Failed(ctx context.Context, msg string) {
	if !f.on && ctx.Err() == nil {
		f.logger().Warn(msg)
	}
	f.on = true
}

// Worked records a success and, after failures, logs msg (unless empty).
func (f *Failing) Worked(msg string) {
	if f.on && msg != "" {
		f.logger().Info(msg)
	}
	f.on = false
}
