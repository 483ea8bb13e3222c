package main

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// TestPayloadInputComplete: CMD's standard input holds the whole payload,
// ended, before CMD starts: read here with no one feeding it, every size
// (in a pipe up to pipeHolds bytes, in a file above) comes back whole and
// then ends. A pipe baton fed as CMD ran ended early when baton was killed
// as it started CMD, and CMD saw a short payload (the kill storm caught it:
// an empty payload handled).
func TestPayloadInputComplete(t *testing.T) {
	// A temporary directory of the test's own: the shared one may hold
	// payload files of other processes' workers.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, n := range []int{0, 1, pipeHolds, pipeHolds + 1, 1 << 20} {
		payload := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		stdin, done, err := payloadInput(payload)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(stdin)
		stdin.Close()
		done()
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("%d bytes: read %d bytes (%v), want the payload", n, len(got), err)
		}
		left, err := os.ReadDir(tmp)
		if err != nil || len(left) != 0 {
			t.Fatalf("%d bytes: left in the temporary directory: %v %v", n, left, err)
		}
	}
}
