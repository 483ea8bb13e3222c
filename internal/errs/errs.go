// Package errs holds the errors the engine's packages return and the root
// package exports (baton.ErrTimeout is errs.ErrTimeout, and so on), so that
// callers test them with errors.Is whichever package made them.
package errs

import "errors"

// The errors; baton's errors.go documents each.
var (
	ErrWrongName   = errors.New("baton: wrong lock name")
	ErrTimeout     = errors.New("baton: lock wait timeout")
	ErrDeadlock    = errors.New("baton: deadlock found when trying to get lock")
	ErrSessionLost = errors.New("baton: session lost")
	ErrClosed      = errors.New("baton: closed")
	ErrInvalid     = errors.New("baton: invalid argument")
)
