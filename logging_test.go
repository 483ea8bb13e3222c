package baton_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
)

// messageLog keeps the records at warning level or above whose message
// holds a text, with their attributes.
type messageLog struct {
	text string
	mu   sync.Mutex
	msgs []string
}

func (l *messageLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *messageLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *messageLog) WithGroup(string) slog.Handler            { return l }
func (l *messageLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn || !strings.Contains(r.Message, l.text) {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.msgs = append(l.msgs, b.String())
	l.mu.Unlock()
	return nil
}

func (l *messageLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}

func (l *messageLog) count() int { return len(l.messages()) }

// TestLockCheckFailuresLoggedOnce: while the database is out of reach, a
// client's poll of its waiting lock requests fails at every interval and
// says so once; once a check works again, the next outage is said again.
// The waiter is granted after all.
func TestLockCheckFailuresLoggedOnce(t *testing.T) {
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := serverDSN(t, b, "no network between client and database")
		pdsn, p := viaProxy(t, dsn)
		log := &messageLog{text: "check waiting lock requests"}
		// A lease that outlasts the outages: the session is not under test.
		c := openDSN(t, pdsn, baton.Options{Lease: time.Minute, PollInterval: 50 * time.Millisecond, Logger: slog.New(log)})
		holder := session(t, openDSN(t, dsn))
		mustLock(t, holder, "ns", baton.Write, "x")
		s := session(t, c)
		ch := waiting(t, c, s, "ns", baton.Write, baton.Forever, "x")
		// A check that fails can take a while (MariaDB's driver tries a
		// new connection three times), the more so on a loaded machine.
		checks := func(n int64, what string) {
			t.Helper()
			from := baton.LockChecks(c)
			for deadline := time.Now().Add(time.Minute); baton.LockChecks(c) < from+n; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for %s (%d of %d); where the lock service's goroutines are:\n%s",
						what, baton.LockChecks(c)-from, n, stacksOf("internal/locks", "internal/bus", "baton/driver/"))
				}
			}
		}
		// The waiter waits in the table, which its client polls, before
		// the first outage: a wait still behind its turnstile (listed as
		// pending after 25 ms, in the table only after up to a second)
		// is ended by the outage instead, and polled by nobody.
		checks(1, "a check of the waiting request before the outage")
		for outage := 1; outage <= 2; outage++ {
			p.Cut(true)
			checks(3, "checks during the outage")
			p.Restore()
			// A check that works ends the streak of failures.
			waitFor(t, "a check that works", func() bool {
				ls, err := c.Locks(ctxT(t))
				return err == nil && len(ls) > 0
			})
			checks(2, "checks after the outage")
			if got := log.count(); got != outage {
				t.Fatalf("after outage %d, %d warnings of failed checks, want one per outage", outage, got)
			}
		}
		release(t, holder, "ns")
		mustRecv(t, ch)
	})
}

// stacksOf is the stacks of the goroutines whose stack names one of pkgs,
// for a test that timed out waiting for them.
func stacksOf(pkgs ...string) string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, pkg := range pkgs {
			if strings.Contains(g, pkg) {
				out = append(out, g)
				break
			}
		}
	}
	return strings.Join(out, "\n\n")
}
