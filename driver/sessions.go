package driver

import (
	"context"
	"time"
)

// Session is one row of the session table.
type Session struct {
	ID       string
	ClientID string
	Host     string
	PID      int
	Name     string
	// HostID names the boot and PID namespace of the session's process
	// (empty when unknown): processes with the same HostID can check
	// whether PID is alive.
	HostID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SessionRef is a session that may be reaped: its lease ran out (Expired),
// or its process runs on the caller's host and may be checked by PID.
type SessionRef struct {
	ID      string
	PID     int
	Expired bool
}

// HeartbeatParams are the inputs of Sessions.SessionHeartbeat.
type HeartbeatParams struct {
	ClientID string
	HostID   string
	// SessionIDs are the sessions to renew: those the client still owns,
	// never one it has reported lost.
	SessionIDs []string
	Lease      time.Duration
	Limit      int // at most this many reapable sessions
}

// Sessions is the sessions slice of a backend: sessions' leases, outside
// any transaction (SessionsTx has the statements inside one).
type Sessions interface {
	// SessionHeartbeat renews the named sessions whose lease has not run
	// out (returning how many it renewed; an expired session is never
	// revived) and lists other clients' sessions that may be reaped, in as
	// few statements as the backend allows.
	SessionHeartbeat(ctx context.Context, p HeartbeatParams) (renewed int, reapable []SessionRef, err error)

	// Incarnation is for backends whose lock state does not survive a
	// server crash (PostgreSQL keeps it in UNLOGGED tables, which crash
	// recovery empties). A holder from before the crash still counts itself the
	// holder until its lease runs out, so after a restart no lock may be
	// granted until the longest lease in use has passed since the state was
	// found empty, and no session from an earlier incarnation may be granted
	// one. A clean restart keeps the state and its incarnation.
	//
	// Incarnation records lease as a lease in use and returns the lock
	// state's incarnation and how long from now its first grant must wait
	// (never negative); a backend whose lock state survives a crash
	// returns 0 and 0.
	Incarnation(ctx context.Context, lease time.Duration) (id int64, wait time.Duration, err error)

	SessionPresence
}

// SessionsTx is the sessions part of Tx.
type SessionsTx interface {
	// SessionInsert creates a session with a lease of the given length,
	// measured on the database's clock.
	SessionInsert(ctx context.Context, s Session, lease time.Duration) error

	// SessionRenew extends the lease of the named sessions whose lease has
	// not run out and returns how many it renewed.
	SessionRenew(ctx context.Context, ids []string, lease time.Duration) (int, error)

	// SessionListByClient lists the ids of a client's sessions whose lease
	// has not run out.
	SessionListByClient(ctx context.Context, clientID string) ([]string, error)

	// SessionDelete removes a session row.
	SessionDelete(ctx context.Context, id string) error

	// SessionListReapable lists other clients' sessions whose lease ran
	// out and whose HostID is hostID.
	SessionListReapable(ctx context.Context, clientID, hostID string, limit int) ([]SessionRef, error)

	// SessionList returns every session, oldest first.
	SessionList(ctx context.Context) ([]Session, error)
}

// SessionPresence is part of Sessions: whether any session of a name is
// live.
type SessionPresence interface {
	// SessionNamedLive reports whether a session named name has a lease
	// that has not run out, outside any transaction: the presence of
	// job-event subscribers, which hold such sessions.
	SessionNamedLive(ctx context.Context, name string) (bool, error)
}
