package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
)

func testNotify(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	got, woken := listenTo(t, d)
	notifyUntilHeard(t, d, got)
	must(t, d.Notifier().Notify(ctx, "ch", "one"))
	must(t, d.Notifier().Notify(ctx, "other", "two"))
	for _, want := range [][2]string{{"ch", "one"}, {"other", "two"}} {
		n := await(t, got, fmt.Sprintf("%q", want))
		failIf(t, n != want, "received %q, want %q (commit order)", n, want)
	}
	inTx(t, d, func(tx driver.Tx) { must(t, tx.WakeClients(ctx, []driver.Request{{ClientID: "L"}})) })
	await(t, woken, "the listener's wake-up")
	// A grant reaches the client with its id and token (no status read):
	// in-process on SQLite and MySQL, in the NOTIFY payload on PostgreSQL.
	grant := driver.Request{ClientID: "L", SessionID: "s-42", CallID: 77, ID: 42, Status: driver.StatusGranted, Token: 9}
	inTx(t, d, func(tx driver.Tx) {
		must(t, tx.WakeClients(ctx, []driver.Request{grant, {ClientID: "other", ID: 43, Status: driver.StatusGranted, Token: 10}}))
	})
	for {
		gs := await(t, woken, "the grant's wake-up")
		if gs == nil {
			continue // a look (SQLite's file watch may add one)
		}
		failIf(t, len(gs) != 1 || gs[0].ID != 42 || gs[0].Token != 9 || gs[0].Status != driver.StatusGranted || gs[0].SessionID != "s-42" || gs[0].CallID != 77,
			"the listener was handed %+v, want the grant %+v", gs, grant)
		break
	}
	q, args := d.Notifier().NotifyStatement("ch", "p")
	failIf(t, q == "" || len(args) == 0, "NotifyStatement = %q %v", q, args)
}

// notifyUntilHeard: notifications sent before the listener is ready may be
// missed, so it resends one until one arrives, then drops what else did.
func notifyUntilHeard(t *testing.T, d driver.Driver, got chan [2]string) {
	deadline := time.Now().Add(20 * time.Second)
	for !notifyHeard(t, d, got) {
		failIf(t, time.Now().After(deadline), "no notification delivered")
	}
	for len(got) > 0 {
		<-got
	}
}

// notifyHeard sends a notification and reports whether the listener
// received one within 200 ms.
func notifyHeard(t *testing.T, d driver.Driver, got chan [2]string) bool {
	must(t, d.Notifier().Notify(testCtx(t), "ch", "hello"))
	select {
	case n := <-got:
		failIf(t, n != [2]string{"ch", "hello"}, "received %q", n)
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

// await returns what arrives on ch within 20 s.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s not delivered", what)
		panic("unreachable")
	}
}

// listenTo starts client L's listener, notifying and waiting: it delivers
// notifications (but the engine's own channels) on got and wake-ups (the
// grants they carry, nil for a look) on woken, until the test ends.
func listenTo(t *testing.T, d driver.Driver) (got chan [2]string, woken chan []driver.Request) {
	got = make(chan [2]string, 16)
	woken = make(chan []driver.Request, 16)
	stop, err := d.Notifier().Listen(testCtx(t), driver.ListenParams{
		ClientID: "L",
		Wake: func(granted []driver.Request) {
			select {
			case woken <- granted:
			default:
			}
		},
		Notify: func(ch, payload string) {
			if strings.HasPrefix(ch, "#") {
				return // the engine's own channels (queue wake-ups)
			}
			select {
			case got <- [2]string{ch, payload}:
			default:
			}
		},
		Interval: 50 * time.Millisecond,
	})
	must(t, err)
	t.Cleanup(stop)
	d.Notifier().SetNotifying("L", true)
	d.Notifier().SetWaiting("L", true)
	return got, woken
}
