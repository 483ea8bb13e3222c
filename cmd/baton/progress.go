package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// spinner shows what a long-running command is doing on one line of a
// terminal, redrawn in place and erased when it stops.
type spinner struct {
	w     io.Writer
	label string
	mu    sync.Mutex
	name  string
	since time.Time
	quit  chan struct{}
	done  chan struct{}
}

func startSpinner(w io.Writer, label, doing string) *spinner {
	s := &spinner{w: w, label: label, name: doing, since: time.Now(),
		quit: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *spinner) set(name string) {
	s.mu.Lock()
	s.name, s.since = name, time.Now()
	s.mu.Unlock()
}

func (s *spinner) run() {
	defer close(s.done)
	frames := []string{"|", "/", "-", `\`}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		s.mu.Lock()
		line := fmt.Sprintf("%s %s: %s %.1fs", frames[i%len(frames)], s.label, s.name, time.Since(s.since).Seconds())
		s.mu.Unlock()
		fmt.Fprint(s.w, "\r\x1b[K"+line)
		select {
		case <-s.quit:
			fmt.Fprint(s.w, "\r\x1b[K")
			return
		case <-t.C:
		}
	}
}

func (s *spinner) stop() {
	if s == nil {
		return
	}
	close(s.quit)
	<-s.done
}

// progress starts a spinner on stderr when stderr is a terminal, and
// returns nil (silence) otherwise. Used by the commands that can run long:
// bench, migrate, queue redrive and queue purge.
func progress(label, doing string) *spinner {
	if !isTerminal(os.Stderr) {
		return nil
	}
	// The first frame already names what it does (set after the start
	// raced with it: a quick migrate showed only "preparing").
	return startSpinner(os.Stderr, label, doing)
}
