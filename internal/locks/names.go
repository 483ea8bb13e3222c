package locks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/errs"
)

// MaxNameLen is the longest namespace or lock name, in characters
// (baton.MaxNameLen).
const MaxNameLen = 64

// ValidateName checks a locking-service namespace or name (what says
// which): non-empty and at most MaxNameLen characters (a byte that is not
// part of valid UTF-8 counts as one).
func ValidateName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", errs.ErrWrongName, what)
	case len(s) > MaxNameLen && utf8.RuneCountInString(s) > MaxNameLen:
		return fmt.Errorf("%w: %s %s is %d characters long, more than %d", errs.ErrWrongName, what, errs.Quote(s), utf8.RuneCountInString(s), MaxNameLen)
	}
	return nil
}

// Idents validates a namespace and lock names and returns their
// identifiers in the canonical (byte) order.
func Idents(ns string, names []string) ([]driver.Ident, error) {
	if err := ValidateName("namespace", ns); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no lock names given", errs.ErrWrongName)
	}
	for _, n := range names {
		if err := ValidateName("lock name", n); err != nil {
			return nil, err
		}
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	ids := make([]driver.Ident, len(sorted))
	for i, n := range sorted {
		ids[i] = driver.Ident{Kind: driver.KindService, NS: ns, Name: n}
	}
	return ids, nil
}

// UserIdent validates and folds a user-level lock name: valid UTF-8, 1 to
// 64 characters, compared case-insensitively as MySQL and MariaDB do.
func UserIdent(name string) (driver.Ident, error) {
	switch {
	case name == "":
		return driver.Ident{}, fmt.Errorf("%w: user lock name is empty", errs.ErrWrongName)
	case !utf8.ValidString(name):
		return driver.Ident{}, fmt.Errorf("%w: user lock name %s is not valid UTF-8", errs.ErrWrongName, errs.Quote(name))
	case utf8.RuneCountInString(name) > MaxNameLen:
		return driver.Ident{}, fmt.Errorf("%w: user lock name %s is longer than %d characters", errs.ErrWrongName, errs.Quote(name), MaxNameLen)
	}
	return driver.Ident{Kind: driver.KindUser, NS: "", Name: strings.ToLower(name)}, nil
}

// Info is one row of the monitoring view (baton.LockInfo, which converts
// from it): a granted instance or a waiting request.
type Info struct {
	Type        string
	Namespace   string
	Name        string
	Mode        string
	Status      string
	Session     string
	Owner       string
	Since       time.Time
	Token       int64
	Transaction bool
}

// List reads every granted instance and waiting request, of every
// session of every process and of transactions, by kind, namespace and
// name.
func (s *Service) List(ctx context.Context) ([]Info, error) {
	// One statement, outside any transaction: on SQLite a transaction
	// would wait for any program's open write transaction.
	rows, err := s.drv.NoTx().LockInfoList(ctx)
	if err != nil {
		return nil, err
	}
	holds, err := s.drv.Locks().TxHolds(ctx)
	if err != nil {
		return nil, err
	}
	rows = append(rows, holds...)
	slices.SortStableFunc(rows, func(a, b driver.LockInfo) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.NS, b.NS), cmp.Compare(a.Name, b.Name))
	})
	out := make([]Info, len(rows))
	for i, r := range rows {
		out[i] = infoOf(r)
	}
	return out, nil
}

// infoOf is a stored lock row as the monitoring view shows it.
func infoOf(r driver.LockInfo) Info {
	li := Info{Type: "LOCKING SERVICE", Namespace: r.NS, Name: r.Name, Mode: "SHARED", Status: "PENDING",
		Session: r.SessionID, Owner: fmt.Sprintf("%s:%d/%s", r.Host, r.PID, r.Owner), Since: r.CreatedAt}
	if r.Kind == driver.KindUser {
		li.Type, li.Namespace = "USER LEVEL LOCK", ""
	}
	if r.Mode == driver.ModeWrite {
		li.Mode = "EXCLUSIVE"
	}
	if r.Status == driver.StatusGranted {
		li.Status, li.Since, li.Token = "GRANTED", r.GrantedAt, r.Token
	}
	li.Transaction = r.ClientID == "" && strings.HasPrefix(r.SessionID, "tx ")
	return li
}
