package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/benchrec"
)

// The child protocol, one line per message on the child's stdin and stdout:
//
//	child:  ready SESSION_ID
//	parent: lock NS NAME       child: locked UNIX_NANOS | error MESSAGE
//	parent: release NS         child: released N        | error MESSAGE
//
// The child takes write locks with no timeout and stamps "locked" with its
// wall clock the moment Lock returns; the parent compares that with its own
// wall clock, which is the same clock on one host. The child exits when its
// stdin closes.

// ServeChild is the waiter of the handoff_process case, run in a process of
// its own (`baton bench child`): it opens a client on dsn, starts one
// session and answers the parent's commands from in on out.
func ServeChild(ctx context.Context, dsn string, in io.Reader, out io.Writer) error {
	c, err := baton.Open(ctx, dsn, baton.Options{Name: "baton-bench-child"})
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.NewSession(ctx)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "ready %s\n", s.ID()); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var reply string
		switch {
		case len(f) == 3 && f[0] == "lock":
			_, err := s.Lock(ctx, f[1], baton.Write, baton.Forever, f[2])
			at := time.Now().UnixNano()
			if err != nil {
				reply = "error " + oneLine(err)
			} else {
				reply = "locked " + strconv.FormatInt(at, 10)
			}
		case len(f) == 2 && f[0] == "release":
			n, err := s.Release(ctx, f[1])
			if err != nil {
				reply = "error " + oneLine(err)
			} else {
				reply = "released " + strconv.Itoa(n)
			}
		default:
			reply = fmt.Sprintf("error unknown command %q", sc.Text())
		}
		if _, err := fmt.Fprintln(out, reply); err != nil {
			return err
		}
	}
	return sc.Err()
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// child is the parent's end of a running ServeChild process.
type child struct {
	lines   chan string
	stdin   io.WriteCloser
	stderr  *limitedBuffer
	stop    func()
	exited  <-chan struct{}
	session string
}

// next returns the child's next line, or an error when it exits or stays
// silent for d.
func (ch *child) next(d time.Duration) (string, error) {
	select {
	case l, ok := <-ch.lines:
		if !ok {
			select { // let its stderr be collected
			case <-ch.exited:
			case <-time.After(time.Second):
			}
			return "", fmt.Errorf("child exited: %s", ch.stderr.String())
		}
		return l, nil
	case <-time.After(d):
		return "", fmt.Errorf("child silent for %v", d)
	}
}

func (ch *child) send(format string, a ...any) error {
	_, err := fmt.Fprintf(ch.stdin, format+"\n", a...)
	return err
}

// startChild runs the child command and waits for its "ready".
func (r *runner) startChild() (*child, error) {
	cmd := r.cfg.Child(r.sc.dsn)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ch := &child{lines: make(chan string, 4), stdin: stdin, stderr: &limitedBuffer{max: 4096}}
	cmd.Stderr = ch.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start child %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	ch.exited = exited
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
		close(ch.lines)
		// Wait only after the last read: it closes the pipe.
		_ = cmd.Wait()
		close(exited)
	}()
	ch.stop = func() {
		_ = stdin.Close()
		go func() {
			for range ch.lines { // nobody reads any more
			}
		}()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	l, err := ch.next(30 * time.Second)
	if err == nil && !strings.HasPrefix(l, "ready ") {
		err = fmt.Errorf("child said %q, want ready", l)
	}
	if err != nil {
		ch.stop()
		return nil, err
	}
	ch.session = strings.TrimPrefix(l, "ready ")
	return ch, nil
}

// handoffProcess is the hand-off with the waiter in a child process.
func (r *runner) handoffProcess(ctx context.Context) (*Record, error) {
	cs, ss, closeAll, err := r.openSessions(ctx, 1)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	a := ss[0]
	ch, err := r.startChild()
	if err != nil {
		return nil, err
	}
	defer ch.stop()
	tw := r.native()
	if tw != nil {
		defer tw.close()
	}
	const name = "handoff_process"
	h := handoffSide{
		hold: func(ctx context.Context) error {
			_, err := a.Lock(ctx, ns, baton.Write, 0, name)
			return err
		},
		wait: func(context.Context) <-chan acquired {
			got := make(chan acquired, 1)
			if err := ch.send("lock %s %s", ns, name); err != nil {
				got <- acquired{err: err}
				return got
			}
			go func() {
				l, err := ch.next(60 * time.Second)
				if err != nil {
					got <- acquired{err: err}
					return
				}
				v, ok := strings.CutPrefix(l, "locked ")
				if !ok {
					got <- acquired{err: fmt.Errorf("child: %s", l)}
					return
				}
				n, err := strconv.ParseInt(v, 10, 64)
				got <- acquired{at: time.Unix(0, n), err: err}
			}()
			return got
		},
		waiting: queuedIn(cs[0], ch.session, tw),
		release: func(ctx context.Context) error {
			_, err := a.Release(ctx, ns)
			return err
		},
		waiterRelease: func(context.Context) error {
			if err := ch.send("release %s", ns); err != nil {
				return err
			}
			l, err := ch.next(30 * time.Second)
			if err == nil && !strings.HasPrefix(l, "released ") {
				err = fmt.Errorf("child: %s", l)
			}
			return err
		},
	}
	lat, err := runHandoff(ctx, r.cfg.Duration, settle, h)
	if err != nil {
		return nil, err
	}
	rec := benchrec.LatencyRecord(CaseHandoffProcess, r.cfg.Backend, benchrec.Summarize(lat))
	if nat := r.native(); nat != nil && r.nativeHandoff != nil {
		rec.WithLatencyBaseline(nat.name(), *r.nativeHandoff)
	}
	return rec, nil
}

// limitedBuffer keeps the first max bytes written to it (a child's
// stderr, for error messages).
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(b.buf.String())
	if s == "" {
		return "no output on stderr"
	}
	return oneLine(errors.New(s))
}
