package driver

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/batonhq/baton/internal/errs"
)

// Opener opens a backend from a DSN, with baton's table prefix.
type Opener func(ctx context.Context, dsn, prefix string) (Driver, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Opener{}
)

// Register makes a backend available to baton.Open under the DSN schemes
// it names (the part before the first colon, as in "postgres" for
// postgres://...). Backend packages call it from init, as database/sql
// drivers do, so that a program links only the backends it imports.
// Registering a scheme twice panics.
func Register(open Opener, schemes ...string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, s := range schemes {
		if _, dup := registry[s]; dup {
			panic(fmt.Sprintf("baton/driver: scheme %q registered twice", s))
		}
		registry[s] = open
	}
}

// Replace registers open for the schemes, replacing what was registered:
// an opt-in backend package (such as the cgo SQLite driver) takes over a
// scheme its default registered.
func Replace(open Opener, schemes ...string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, s := range schemes {
		registry[s] = open
	}
}

// Scheme returns the scheme of a DSN: the part before its first colon.
func Scheme(dsn string) string {
	if i := strings.IndexByte(dsn, ':'); i > 0 {
		return dsn[:i]
	}
	return ""
}

// Lookup returns the backend registered for the DSN's scheme.
func Lookup(dsn string) (Opener, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	open, ok := registry[Scheme(dsn)]
	return open, ok
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for s := range registry {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Adapt turns a backend's Open, which returns its own driver type, into an
// Opener.
func Adapt[D Driver](open func(ctx context.Context, dsn, prefix string) (D, error)) Opener {
	return func(ctx context.Context, dsn, prefix string) (Driver, error) {
		d, err := open(ctx, dsn, prefix)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}

// backendPackages names the package that registers each scheme baton
// ships, for the error that tells a program which import it lacks.
var backendPackages = map[string]string{
	"sqlite":     "github.com/batonhq/baton/driver/sqlite",
	"postgres":   "github.com/batonhq/baton/driver/postgres",
	"postgresql": "github.com/batonhq/baton/driver/postgres",
	"mysql":      "github.com/batonhq/baton/driver/mysql",
	"mariadb":    "github.com/batonhq/baton/driver/mysql",
}

// Open opens the backend a DSN names (registered by its package's import,
// for example _ "github.com/batonhq/baton/driver/postgres") with baton's
// table prefix ("baton_" when empty), without starting a client: the CLI
// uses it for migrations.
func Open(ctx context.Context, dsn, prefix string) (Driver, error) {
	if prefix == "" {
		prefix = "baton_"
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	if open, ok := Lookup(dsn); ok {
		return open(ctx, dsn, prefix)
	}
	if pkg, known := backendPackages[Scheme(dsn)]; known {
		return nil, fmt.Errorf("%w: %q: the %s backend is not linked into this program: add import _ %q", ErrBadDSN, redact(dsn), Scheme(dsn), pkg)
	}
	return nil, fmt.Errorf("%w: %q: use sqlite:PATH, postgres://user@host:port/db or mysql://user:pass@host:port/db (registered schemes: %s)", ErrBadDSN, redact(dsn), strings.Join(Schemes(), ", "))
}

var prefixRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,30}$`)

// CheckPrefix refuses a table prefix that is not a plain identifier: it
// is written into every statement's table names.
func CheckPrefix(prefix string) error {
	if !prefixRE.MatchString(prefix) {
		return fmt.Errorf("%w: table prefix %q: use letters, digits and underscores (at most 31)", errs.ErrInvalid, prefix)
	}
	return nil
}

var passwordInDSN = regexp.MustCompile(`(://[^:/@]*:)[^@]*@`)

// redact hides a password in a DSN for error messages.
func redact(dsn string) string {
	return passwordInDSN.ReplaceAllString(dsn, "${1}***@")
}
