package postgres

// Pooled tells whether the driver found (or was told) that it goes through
// a transaction pooler.
func (d *Driver) Pooled() bool { return d.pooled }
