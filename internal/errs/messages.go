package errs

import "errors"

// The errors of messages and their claims; baton's queue.go and jobs.go
// document each.
var (
	ErrEmpty      = errors.New("baton: no message ready")
	ErrNotClaimed = errors.New("baton: message not claimed by this session")
	ErrPermanent  = errors.New("baton: permanent failure")
	ErrCancelled  = errors.New("baton: message cancelled")
)
