package errs

import "errors"

// The errors of queues, messages and their claims; baton's errors.go
// documents each.
var (
	ErrEmpty        = errors.New("baton: no message ready")
	ErrNotClaimed   = errors.New("baton: message not claimed by this session")
	ErrUnknownQueue = errors.New("baton: unknown queue")
	ErrRunning      = errors.New("baton: message is being handled")
	ErrNotFound     = errors.New("baton: message not found")
	ErrFinished     = errors.New("baton: message already finished")
	ErrCancelled    = errors.New("baton: message cancelled")
	ErrDuplicate    = errors.New("baton: duplicate of a unique key's message")
	ErrPermanent    = errors.New("baton: permanent failure")
)
