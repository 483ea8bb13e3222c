package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/batontest"
)

// TestWorkKillStorm: `baton work` processes are killed with SIGKILL (the
// whole process group, handler included) again and again while they drain
// a queue, and replaced; afterwards every message has been handled, none is
// dead (no handler ever failed), and a message was handled more than once
// only if a kill could have interrupted it.
func TestWorkKillStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("kills worker processes for several seconds")
	}
	batontest.Each(t, func(t *testing.T, b batontest.Backend) {
		dsn := b.NewDSN(t)
		c, _ := client(t, dsn)
		const n, kills, workers = 150, 15, 3
		for i := 0; i < n; i++ {
			if _, err := c.Enqueue(context.Background(), "storm", []byte(fmt.Sprintf("m%d\n", i))); err != nil {
				t.Fatal(err)
			}
		}
		file := filepath.Join(t.TempDir(), "out")
		start := func() *exec.Cmd {
			w := exec.Command(bin, "--dsn", dsn, "work", "storm", "--", "sh", "-c", `sleep 0.02; cat >> "$0"`, file)
			w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			return w
		}
		var running []*exec.Cmd
		t.Cleanup(func() {
			for _, w := range running {
				_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
				_ = w.Wait()
			}
		})
		for i := 0; i < workers; i++ {
			running = append(running, start())
		}
		rng := rand.New(rand.NewSource(1))
		for k := 0; k < kills; k++ {
			time.Sleep(time.Duration(100+rng.Intn(200)) * time.Millisecond)
			i := rng.Intn(len(running))
			if err := syscall.Kill(-running[i].Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = running[i].Wait()
			running[i] = start()
		}
		handled := map[string]int{}
		deadline := time.Now().Add(60 * time.Second)
		for {
			data, _ := os.ReadFile(file)
			handled = map[string]int{}
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if line != "" {
					handled[line]++
				}
			}
			st := statsOf(t, dsn, "storm")
			if len(handled) == n && st["ready"] == float64(0) && st["claimed"] == float64(0) {
				if st["dead"] != float64(0) {
					t.Fatalf("%v messages dead although no handler failed", st["dead"])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the storm: %d of %d messages handled, stats %v", len(handled), n, st)
			}
			time.Sleep(100 * time.Millisecond)
		}
		again := 0
		for _, k := range handled {
			again += k - 1
		}
		// Each kill interrupts at most the one message its worker was
		// handling (concurrency 1); a message can be interrupted by more
		// than one kill.
		if again > kills {
			t.Fatalf("%d repeated deliveries for %d kills", again, kills)
		}
		t.Logf("%d messages, %d kills, %d handled again", n, kills, again)
	})
}
