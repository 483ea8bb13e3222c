package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestDelayProxy: bytes go through in order and intact both ways, and a
// round trip through the proxy never takes less than the round trip it
// adds (each way holds the bytes for half of it).
func TestDelayProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	const rtt = 20 * time.Millisecond
	p, err := startDelayProxy(ln.Addr().String(), rtt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 3; i++ {
		start := time.Now()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("echo %q, %v", buf, err)
		}
		if el := time.Since(start); el < rtt {
			t.Fatalf("round trip %v through a proxy adding %v", el, rtt)
		}
	}
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	go func() { _, _ = c.Write(data) }()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("1 MiB through the proxy: %v, equal %v", err, bytes.Equal(got, data))
	}
}

// TestDelayedNeedsServerURL: an added round trip is refused for SQLite
// and for a server not given as a URL, before anything is created.
func TestDelayedNeedsServerURL(t *testing.T) {
	for _, c := range []struct{ backend, server, want string }{
		{"sqlite", "", "needs a server backend"},
		{"postgres", "host=127.0.0.1 port=5432", "needs the server as a URL"},
	} {
		if _, _, err := DelayServer(c.backend, c.server, time.Millisecond); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error saying %q", c, err, c.want)
		}
	}
	server, stop, err := DelayServer("postgres", "postgres://u@db/x", 0)
	if err != nil || server != "postgres://u@db/x" {
		t.Fatalf("no added round trip: %q, %v; want the server as it was", server, err)
	}
	stop()
	server, stop, err = DelayServer("mysql", "mysql://root@127.0.0.1/test", time.Millisecond)
	if err != nil || !strings.HasPrefix(server, "mysql://root@127.0.0.1:") || strings.HasPrefix(server, "mysql://root@127.0.0.1:3306/") {
		t.Fatalf("through the proxy: %q, %v; want the proxy's port", server, err)
	}
	stop()
}

// TestRunThroughDelay: with an added round trip, a server backend's
// lock_pair (two round trips each way: baton's and the baseline's) is
// measured through the proxy, and never faster than two added round trips.
func TestRunThroughDelay(t *testing.T) {
	for _, b := range batontest.All() {
		if b.Label != "postgres" && b.Label != "mysql" {
			continue
		}
		t.Run(b.Label, func(t *testing.T) {
			const rtt = 2 * time.Millisecond
			server, stop, err := DelayServer(b.Name, "", rtt)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			recs, err := Run(context.Background(), Config{Backend: b.Name, Server: server, Duration: 200 * time.Millisecond, Only: []string{CaseLockPair}})
			if err != nil || len(recs) != 1 {
				t.Fatalf("Run: %v, %d records", err, len(recs))
			}
			r, least := recs[0], 2*float64(rtt/time.Microsecond)
			if r.Baseline == "" || r.P50us < least || r.BaselineP50us < least {
				t.Fatalf("lock_pair through %v: %+v; want baton's and the baseline's p50 ≥ %v µs", rtt, r, least)
			}
		})
	}
}
