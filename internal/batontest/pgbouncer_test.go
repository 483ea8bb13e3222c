package batontest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBouncerComesBack: the private pgbouncer killed while the tests run is
// started again on the same port, and a database behind it answers.
func TestBouncerComesBack(t *testing.T) {
	dsn := newPgBouncer(t)
	query := func() error {
		db, err := pooledSQLDB(dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var one int
		return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	}
	if err := query(); err != nil {
		t.Fatal(err)
	}
	bouncer.mu.Lock()
	wrapper := bouncer.wrapper
	bouncer.mu.Unlock()
	out, err := exec.Command("pgrep", "-P", strconv.Itoa(wrapper), "-x", "pgbouncer").Output()
	if err != nil {
		t.Fatalf("no pgbouncer under wrapper %d: %v", wrapper, err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(out))[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(10 * time.Millisecond)
	}
	Retry(t, 15*time.Second, "pgbouncer after it was killed", query)
	bouncer.mu.Lock()
	again := bouncer.wrapper
	bouncer.mu.Unlock()
	if again == wrapper {
		t.Fatalf("still the wrapper %d that lost its pgbouncer", wrapper)
	}
}

// TestBouncerRestarts: the supervisor starts a pgbouncer that crashed while
// serving again however often that happens, and gives up on one that exits
// at once three times in a row.
func TestBouncerRestarts(t *testing.T) {
	var r restarts
	for i := 0; i < 20; i++ {
		if !r.after(time.Minute) {
			t.Fatalf("crash %d while serving: not restarted", i+1)
		}
	}
	for i := 1; i <= 2; i++ {
		if !r.after(time.Millisecond) {
			t.Fatalf("gave up after %d quick exits in a row, before three", i)
		}
	}
	if !r.after(quickExit) {
		t.Fatal("a run of quickExit did not count as serving")
	}
	for i := 1; i <= 3; i++ {
		if again := r.after(time.Millisecond); again != (i < 3) {
			t.Fatalf("quick exit %d in a row: start again = %v", i, again)
		}
	}
}
