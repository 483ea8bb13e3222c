package batontest

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy between clients and a database server whose
// network the test controls: it can cut the connections (Cut), hold every
// byte while closing nothing (Partition, Heal; StallOn), and delay the
// server's replies (DelayReplies).
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	down   bool
	// gate is closed while bytes flow; during a partition it is open
	// and every byte waits (connections stay up, as when a network drops
	// packets silently).
	gate chan struct{}
	// replyDelay holds every chunk from the server to the client this
	// long (ns) after it arrived, in order: replies come late, requests
	// reach the server at once (DelayReplies).
	replyDelay atomic.Int64
	// marker, when set, partitions the proxy once a client sends bytes
	// that contain it (StallOn).
	marker atomic.Pointer[[]byte]
}

// NewProxy starts a proxy to target (host:port), stopped at the end of
// the test.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, gate: make(chan struct{})}
	close(p.gate)
	t.Cleanup(func() { ln.Close(); p.Heal(); p.Cut(true) })
	go p.accept()
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.down {
			// Cut while this one was being dialled: it would have
			// outlived the cut, a live connection through an outage.
			p.mu.Unlock()
			c.Close()
			s.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(s, c)
		go p.pipeReplies(c, s)
	}
}

// Cut closes every proxied connection; with down, new ones are refused
// until Restore.
func (p *Proxy) Cut(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Restore accepts connections again after Cut(true).
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// Partition stops every byte in both directions without closing anything.
func (p *Proxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default: // partitioned already
	}
}

// Heal lets the held bytes through.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// DelayReplies holds every byte from the server d before the client gets
// it (0: none), as a slow or distant network would on the way back.
func (p *Proxy) DelayReplies(d time.Duration) { p.replyDelay.Store(int64(d)) }

// StallOn partitions the proxy once a client sends bytes containing
// marker, that chunk held too: a server that stops answering at a given
// statement.
func (p *Proxy) StallOn(marker string) {
	b := []byte(marker)
	p.marker.Store(&b)
}

// wait returns once bytes may flow.
func (p *Proxy) wait() {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	<-gate
}

// pipe copies the client's bytes (src) to the server (dst), holding every
// chunk while partitioned.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if m := p.marker.Load(); m != nil && bytes.Contains(buf[:n], *m) {
				p.Partition()
			}
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pipeReplies copies the server's bytes (src) to the client (dst) as pipe
// does, each chunk held until replyDelay after it was read.
func (p *Proxy) pipeReplies(dst, src net.Conn) {
	type chunk struct {
		b   []byte
		due time.Time
	}
	out := make(chan chunk, 4096)
	go func() {
		defer close(out)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				out <- chunk{append([]byte(nil), buf[:n]...), time.Now().Add(time.Duration(p.replyDelay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	defer dst.Close()
	for c := range out {
		time.Sleep(time.Until(c.due))
		p.wait()
		if _, err := dst.Write(c.b); err != nil {
			src.Close()
			for range out {
			}
			return
		}
	}
}

// StallingProxy forwards between its clients and target until a client
// sends bytes containing marker; from then on it holds every byte of
// every connection, both ways, and closes nothing: a server that stops
// answering once connected (stopped, or a network that drops packets).
// It returns its host:port, and a function that stalls it at once (for a
// marker "" only that does).
func StallingProxy(t testing.TB, target, marker string) (string, func()) {
	t.Helper()
	p := NewProxy(t, target)
	if marker != "" {
		p.StallOn(marker)
	}
	return p.Addr(), p.Partition
}
