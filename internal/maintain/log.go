package maintain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// Log reports what baton's background work meets, which reaches no caller
// otherwise, to the client's slog logger.
type Log struct{ L *slog.Logger }

// Warnf logs a warning.
func (l Log) Warnf(format string, a ...any) {
	l.L.Warn("baton: " + fmt.Sprintf(format, a...))
}

// Err logs err, if any and not a cancellation, as the failure of what.
func (l Log) Err(what string, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		l.Warnf("%s: %v", what, err)
	}
}
