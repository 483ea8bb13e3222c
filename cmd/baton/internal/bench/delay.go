package bench

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"
)

// delayProxy forwards TCP connections to a server and holds every chunk of
// bytes for half a round trip in each direction before passing it on: a
// statement's round trip through it takes rtt longer, as over a network
// link of that latency (loopback's own is a few µs). Both baton's and the
// baseline's connections go through it, so the ratios compare like with
// like. Bytes keep their order; only their delivery is late.
type delayProxy struct {
	ln     net.Listener
	target string
	half   time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startDelayProxy listens on a loopback port and forwards to target
// (host:port) with rtt added to every round trip.
func startDelayProxy(target string, rtt time.Duration) (*delayProxy, error) {
	if rtt <= 0 {
		return nil, errors.New("bench: the added round trip must be positive")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: delay proxy: %w", err)
	}
	p := &delayProxy{ln: ln, target: target, half: rtt / 2, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *delayProxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, cuts every forwarded connection and waits for
// the forwarding goroutines.
func (p *delayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// track records c for Close; false once the proxy is closed.
func (p *delayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *delayProxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.wg.Add(2)
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

// chunk is bytes read and the time they may be written.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each chunk half a round trip after it was read;
// when either side ends both are closed.
func (p *delayProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sleep, release := preciseSleeper()
		defer release()
		for c := range q {
			if d := time.Until(c.due); d > 0 {
				sleep(d)
			}
			if _, err := dst.Write(c.b); err != nil {
				_ = src.Close()
				for range q {
				}
				return
			}
		}
		_ = dst.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.half)}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
}

// DelayServer starts a proxy in this process in front of the backend's
// server (the server DSN as Config.Server takes it; "" for the default)
// that adds rtt to every round trip, holding the bytes for half of it
// each way: what the cases and their ratios look like over a network link
// of that latency (loopback's own is a few µs). It returns the server DSN
// pointed at the proxy, for Config.Server (baton's connections and the
// baseline's alike then go through it), and the func that stops the
// proxy. With rtt 0 it returns server as it is. The server must be a URL
// (postgres://…, mysql://…); SQLite has no server.
func DelayServer(backend, server string, rtt time.Duration) (string, func(), error) {
	if rtt <= 0 {
		return server, func() {}, nil
	}
	if backend == "sqlite" {
		return "", nil, errors.New("bench: an added round trip needs a server backend (postgres or mysql): SQLite's calls make none")
	}
	if server == "" {
		server = DefaultServer(backend)
	}
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", nil, fmt.Errorf("bench: an added round trip needs the server as a URL with a host (postgres://… or mysql://…), not %s", redact(server))
	}
	target := u.Host
	if u.Port() == "" {
		port := "5432"
		if backend == "mysql" {
			port = "3306"
		}
		target = net.JoinHostPort(u.Hostname(), port)
	}
	p, err := startDelayProxy(target, rtt)
	if err != nil {
		return "", nil, err
	}
	u.Host = p.Addr()
	return u.String(), p.Close, nil
}
