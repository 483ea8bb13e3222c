package batontest

import (
	"strings"
	"testing"
)

// TestSelection: BATON_TEST_BACKENDS narrows the backends by label; a name
// that is no backend's (a typo), alone or among valid ones, and a value
// that selects nothing are errors, so that a conformance run can never
// pass with a backend silently left out.
func TestSelection(t *testing.T) {
	labels := func(bs []Backend) string {
		var l []string
		for _, b := range bs {
			l = append(l, b.Label)
		}
		return strings.Join(l, ",")
	}
	for _, c := range []struct{ env, want, err string }{
		{"", "sqlite,postgres,mysql,pgbouncer", ""},
		{"mysql", "mysql", ""},
		{"pgbouncer, sqlite", "sqlite,pgbouncer", ""},
		{"postgress", "", `unknown backend "postgress"`},
		{"sqlite,mysq,postgres", "", `unknown backend "mysq"`},
		{"Postgres", "", `unknown backend "Postgres"`},
		{",", "", "selects no backend"},
	} {
		t.Setenv("BATON_TEST_BACKENDS", c.env)
		bs, err := selection()
		switch {
		case c.err == "" && err != nil:
			t.Errorf("BATON_TEST_BACKENDS=%q: %v", c.env, err)
		case c.err == "" && labels(bs) != c.want:
			t.Errorf("BATON_TEST_BACKENDS=%q selects %q, want %q", c.env, labels(bs), c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("BATON_TEST_BACKENDS=%q: selects %q, error %v; want an error saying %s", c.env, labels(bs), err, c.err)
		}
	}
}
