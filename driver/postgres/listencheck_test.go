package postgres_test

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/internal/batontest"
)

// TestListenerFindsSilentServer: a LISTEN connection whose server stops
// answering (every byte held, nothing closed) is found out and given up
// (logged, then reconnected) once it has been quiet for the check
// interval and a ping gets no answer within the statement timeout,
// instead of waiting for notifications for ever.
func TestListenerFindsSilentServer(t *testing.T) {
	defer postgres.SetListenCheck(200 * time.Millisecond)()
	u, err := url.Parse(batontest.NewDSN(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	addr, stall := batontest.StallingProxy(t, u.Host, "")
	u.Host = addr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := postgres.Open(ctx, u.String(), "baton_")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { go d.Close() }) // its connections are stalled
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	d.SetStatementTimeout(500 * time.Millisecond)
	var logs batontest.LogBuffer
	d.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	stop, err := d.Listen(ctx, driver.ListenParams{ClientID: "c", Wake: func([]driver.Request) {}, Notify: func(string, string) {}, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { go stop() })
	stall()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), "LISTEN connection failed"); {
		if time.Now().After(deadline) {
			t.Fatalf("the listener of a silent server noticed nothing in 20s; logs: %s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s", logs.String())
}
