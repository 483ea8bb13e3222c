package errs

import "errors"

// The queue's errors; baton's queue.go and jobs.go document each.
var (
	ErrEmpty        = errors.New("baton: no message ready")
	ErrNotClaimed   = errors.New("baton: message not claimed by this session")
	ErrUnknownQueue = errors.New("baton: unknown queue")
	ErrRunning      = errors.New("baton: message is being handled")
	ErrNotFound     = errors.New("baton: message not found")
	ErrFinished     = errors.New("baton: message already finished")
	ErrCancelled    = errors.New("baton: message cancelled")
	ErrDuplicate    = errors.New("baton: duplicate of a unique key's message")
)
