package postgres

import "time"

// Pooled tells whether the driver found (or was told) that it goes through
// a transaction pooler.
func (d *Driver) Pooled() bool { return d.pooled }

// SetListenCheck changes how long the listener waits for a notification
// before it checks that the server answers; the returned function
// restores it.
func SetListenCheck(d time.Duration) func() {
	old := listenCheck
	listenCheck = d
	return func() { listenCheck = old }
}
