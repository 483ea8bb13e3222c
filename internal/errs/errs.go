// Package errs holds the errors the engine's packages return and the root
// package exports (baton.ErrTimeout is errs.Timeout, and so on), so that
// callers test them with errors.Is whichever package made them.
package errs

import "errors"

// The errors; baton's errors.go documents each.
var (
	WrongName   = errors.New("baton: wrong lock name")
	Timeout     = errors.New("baton: lock wait timeout")
	Deadlock    = errors.New("baton: deadlock found when trying to get lock")
	SessionLost = errors.New("baton: session lost")
	Closed      = errors.New("baton: closed")
	Invalid     = errors.New("baton: invalid argument")
)
