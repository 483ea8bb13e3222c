package baton_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// silentServer listens on loopback, accepts every connection and never
// answers (a hung host); it returns the listener's host:port.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit); ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return ln.Addr().String()
}

// silentDSNs are DSNs of every server backend naming addr.
func silentDSNs(addr string) map[string]string {
	return map[string]string{
		"postgres": "postgres://postgres@" + addr + "/test",
		"mysql":    "mysql://root@" + addr + "/test",
	}
}

// openWithin opens dsn with ctx in a goroutine and returns its error, or
// fails the test if Open has not returned after guard (it hangs).
func openWithin(t *testing.T, ctx context.Context, dsn string, guard time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		c, err := baton.Open(ctx, dsn)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(guard):
		t.Fatalf("Open(%s) has not returned after %v", dsn, guard)
		return nil
	}
}

// TestOpenSilentServer: against a server that accepts connections and
// never answers, Open returns within the caller's context, and without a
// deadline within the default connect timeout, with an error naming the
// host.
func TestOpenSilentServer(t *testing.T) {
	addr := silentServer(t)
	for name, dsn := range silentDSNs(addr) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			err := openWithin(t, ctx, dsn, 10*time.Second)
			if err == nil || !strings.Contains(err.Error(), addr) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Open with a 500ms context: %v; want a deadline error naming %s", err, addr)
			}
			err = openWithin(t, context.Background(), dsn, 30*time.Second)
			if err == nil || !strings.Contains(err.Error(), addr) {
				t.Fatalf("Open without a deadline: %v; want an error naming %s", err, addr)
			}
		})
	}
}
