package main

import (
	"bytes"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestStalledStatement: a command whose database stops answering once
// connected (here: at the statement that names the queue) exits 69 within
// --statement-timeout (plus a reconnection's connect timeout), with one
// line naming the host, instead of hanging.
func TestStalledStatement(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		if b.Name == "sqlite" {
			t.Skip("embedded: no server to stop answering")
		}
		dsn := b.NewDSN(t)
		runOK(t, dsn, "migrate")
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		server := u.Host
		if b.Name != "mysql" {
			// The proxy reads the statements: no TLS.
			q := u.Query()
			q.Set("sslmode", "disable")
			u.RawQuery = q.Encode()
		}
		for name, args := range map[string][]string{
			"flag": {"--statement-timeout", "1s", "queue", "push", "stalledqueue", "x"},
			"env":  {"queue", "push", "stalledqueue", "x"},
		} {
			t.Run(name, func(t *testing.T) {
				u.Host, _ = batontest.StallingProxy(t, server, "stalledqueue")
				cmd := exec.Command(bin, append([]string{"--dsn", u.String()}, args...)...)
				if name == "env" {
					cmd.Env = append(cmd.Environ(), "BATON_STATEMENT_TIMEOUT=1s")
				}
				var errb bytes.Buffer
				cmd.Stderr = &errb
				startBaton(t, cmd)
				code := waitExit(t, cmd, 15*time.Second)
				expect(t, code, errb.String(), exitUnavailable, u.Host)
				t.Logf("%s", errb.String())
			})
		}
	})
}

// TestStatementTimeoutUsage: --statement-timeout and
// BATON_STATEMENT_TIMEOUT take durations with a unit; anything else is a
// usage error (64), and 0 (no bound) is accepted.
func TestStatementTimeoutUsage(t *testing.T) {
	dsn := batontest.SQLiteDSN(t)
	for _, tc := range []struct {
		env  []string
		args []string
		code int
	}{
		{nil, []string{"--statement-timeout", "5", "queue", "push", "q", "x"}, exitUsage},
		{[]string{"BATON_STATEMENT_TIMEOUT=5"}, []string{"queue", "push", "q", "x"}, exitUsage},
		{[]string{"BATON_STATEMENT_TIMEOUT=-1s"}, []string{"queue", "push", "q", "x"}, exitUsage},
		{nil, []string{"--statement-timeout", "-1s", "queue", "push", "q", "x"}, exitUsage},
		{[]string{"BATON_STATEMENT_TIMEOUT=0"}, []string{"queue", "push", "q", "x"}, 0},
		{nil, []string{"--statement-timeout", "2m", "queue", "push", "q", "x"}, 0},
	} {
		code, _, errs := runWith(t, dsn, "", tc.env, tc.args...)
		if code != tc.code || (tc.code == exitUsage && !strings.Contains(strings.ToLower(errs), "statement")) {
			t.Errorf("%v %v: exit %d (%q), want %d", tc.env, tc.args, code, errs, tc.code)
		}
	}
}
