package mysql

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/batonhq/baton/driver"
)

// FuzzParseDSN: a DSN is either refused with driver.ErrBadDSN, without
// echoing a password, or parsed; parsing never panics.
func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{"mysql://root@127.0.0.1:3306/test", "mysql://u:se#cret@h/d", "mariadb://u:p@h:abc/d", "mysql://", "mysql://u@h/d?tls=true", "postgres://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		_, err := ParseDSN(dsn)
		if err == nil {
			return
		}
		if !errors.Is(err, driver.ErrBadDSN) {
			t.Fatalf("ParseDSN(%q): %v does not wrap ErrBadDSN", dsn, err)
		}
		if u, uerr := url.Parse(dsn); uerr == nil && u.User != nil {
			if p, ok := u.User.Password(); ok && len(p) >= 6 && strings.Contains(err.Error(), p) {
				t.Fatalf("ParseDSN(%q) error shows the password: %v", dsn, err)
			}
		}
	})
}
