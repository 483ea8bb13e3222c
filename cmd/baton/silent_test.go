package main

import (
	"bytes"
	"net"
	"os/exec"
	"testing"
	"time"
)

// silentServer listens on loopback, accepts every connection and never
// answers (a hung host); it returns the listener's host:port.
func silentServer(t *testing.T) string {
	addr, _ := countingSilentServer(t)
	return addr
}

// countingSilentServer is silentServer, and a channel that receives once
// per connection it accepted.
func countingSilentServer(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 100)
	told := make(chan struct{}, 100)
	t.Cleanup(func() {
		ln.Close()
		close(accepted)
		for c := range accepted {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- c:
				told <- struct{}{}
			default:
				c.Close()
			}
		}
	}()
	return ln.Addr().String(), told
}

// TestSilentServer: against a server that accepts connections and never
// answers, commands exit 69 within 15 s, with one line naming the host:
// bounded by the backends' default connect timeout, and `baton lock
// --timeout 2s` by its timeout even when the DSN's own connect timeout is
// a minute.
func TestSilentServer(t *testing.T) {
	addr := silentServer(t)
	pg, my := "postgres://postgres@"+addr+"/test", "mysql://root@"+addr+"/test"
	for name, args := range map[string][]string{
		"pg-lock":      {"--dsn", pg + "?connect_timeout=60", "lock", "--write", "--timeout", "2s", "x", "--", "true"},
		"pg-push":      {"--dsn", pg, "queue", "push", "q", "x"},
		"pg-locks":     {"--dsn", pg, "locks"},
		"pg-lock-once": {"--dsn", pg, "lock", "--write", "x", "--", "true"},
		"my-lock":      {"--dsn", my + "?timeout=60s", "lock", "--write", "--timeout", "2s", "x", "--", "true"},
		"my-push":      {"--dsn", my, "queue", "push", "q", "x"},
		"my-locks":     {"--dsn", my, "locks"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, args...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			startBaton(t, cmd)
			code := waitExit(t, cmd, 15*time.Second)
			expect(t, code, errb.String(), exitUnavailable, addr)
		})
	}
}
