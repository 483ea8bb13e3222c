package batontest

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// StallingProxy forwards between its clients and target until a client
// sends bytes containing marker; from then on it holds every byte of
// every connection, both ways, and closes nothing: a server that stops
// answering once connected (stopped, or a network that drops packets).
// It returns its host:port, and a function that stalls it at once (for a
// marker "" only that does).
func StallingProxy(t testing.TB, target, marker string) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stall, done := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		close(done)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	stalled := func() bool {
		select {
		case <-stall:
			<-done // hold the bytes until the test ends
			return true
		default:
			return false
		}
	}
	pipe := func(dst, src net.Conn, watch bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if watch && marker != "" && bytes.Contains(buf[:n], []byte(marker)) {
				once.Do(func() { close(stall) })
			}
			if stalled() {
				return
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				dst.Close()
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			go pipe(s, c, true)
			go pipe(c, s, false)
		}
	}()
	return ln.Addr().String(), func() { once.Do(func() { close(stall) }) }
}
