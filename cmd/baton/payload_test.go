package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/batontest"
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

// TestWorkPayloadOnStdin: baton work gives CMD the whole payload on its
// standard input, byte for byte, on every backend and at every size that
// matters: the largest a pipe holds, one byte more (a file), and the
// largest a message may hold; binary, every byte value.
func TestWorkPayloadOnStdin(t *testing.T) {
	batontest.EachDSN(t, func(t *testing.T, b batontest.Backend, dsn string) {
		want := map[int64][]byte{}
		for _, n := range []int{pipeHolds, pipeHolds + 1, baton.MaxMessagePayload} {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(i*7 + n)
			}
			want[pushID(t, dsn, string(p), "q", "-")] = p
		}
		dir := t.TempDir()
		runOK(t, dsn, "work", "q", "--drain", "--", "sh", "-c", `cat > "$0/$BATON_MESSAGE_ID"`, dir)
		for id, p := range want {
			got, err := os.ReadFile(filepath.Join(dir, strconv.FormatInt(id, 10)))
			if err != nil || !bytes.Equal(got, p) {
				t.Fatalf("message %d of %d bytes: CMD read %d bytes (%v), want the payload", id, len(p), len(got), err)
			}
		}
		wantCounts(t, statsOf(t, dsn, "q"), 0, 0, 0, 0)
	})
}
