package baton

// SetHostIdentity makes clients opened afterwards in this process claim
// another host, so that tests can exercise the lease path of crash recovery.
func SetHostIdentity(id string) { hostIdentityFunc = func() string { return id } }
