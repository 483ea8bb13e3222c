package locks

import (
	"context"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/sessions"
)

// CloseSession frees, before a closing session's row goes, the
// namespaces where its own calls were granted locks (Session.Own), each by
// the release a caller's Release runs: one statement where the instances
// are fast-path holders. The delete's transaction (DropSession) would
// take each instance through the slow path (on MySQL/MariaDB adopted
// into InnoDB first, a commit's flush), and still catches whatever this
// leaves: an error here is only logged, and ends the releases (a database
// in trouble is not asked once per namespace before the delete). Then
// the session's waiting requests are withdrawn where it may have request
// rows.
func (l *Service) CloseSession(ctx context.Context, ls *sessions.Session) {
	s := l.Sessions([]*sessions.Session{ls})[0]
	l.releaseOwn(ctx, s)
	if s.Rows.Any() {
		// Waiting requests, or instances in request rows, may be left.
		l.WithdrawSession(ctx, s.ID())
	}
}

func (l *Service) releaseOwn(ctx context.Context, s *Session) {
	for _, scope := range s.Own.Scopes() {
		if ctx.Err() != nil {
			return
		}
		if _, err := l.Release(ctx, s, driver.FastReleaseParams{Kind: scope.Kind, NS: scope.NS}); err != nil {
			l.cfg.Log("release a closing session's locks", err)
			return
		}
	}
}

// DropSession removes every request of session id in tx, the
// transaction that deletes the session, granting what that frees.
func (l *Service) DropSession(ctx context.Context, tx driver.Tx, id string) error {
	rs, err := tx.LockRequestListBySession(ctx, id, -1, "")
	if err != nil {
		return err
	}
	return l.RemoveRequests(ctx, tx, rs)
}
