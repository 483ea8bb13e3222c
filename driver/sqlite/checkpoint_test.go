package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/batontest"
)

// TestCheckpointsTick: the checkpointer's decision, tick by tick. Nothing
// committed: no checkpoint, however long. The first commit: at once (no
// checkpoint yet). A commit now and then (a quiet database, an idle
// process's renewals): once checkpointQuiet has passed since the last
// checkpoint, then not again until something more is committed. Commits
// in two ticks in a row (a database in use): at once. The next tick comes
// after checkpointEvery while commits come, else after checkpointIdle.
func TestCheckpointsTick(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	steps := []struct {
		at        time.Duration
		committed bool
		want      bool
		next      time.Duration
	}{
		{0, false, false, checkpointIdle},
		{time.Second, true, true, checkpointEvery}, // the first commit
		{2 * time.Second, false, false, checkpointIdle},
		{3 * time.Second, true, false, checkpointEvery}, // quiet: wait
		{4 * time.Second, false, false, checkpointIdle},
		{5 * time.Second, false, false, checkpointIdle},
		{time.Second + checkpointQuiet, false, true, checkpointIdle}, // the quiet spell is over
		{time.Second + checkpointQuiet + time.Second, false, false, checkpointIdle},
		{20 * time.Second, false, false, checkpointIdle},                // nothing since
		{21 * time.Second, true, true, checkpointEvery},                 // long since the last
		{21*time.Second + checkpointEvery, true, true, checkpointEvery}, // in use
		{21*time.Second + 2*checkpointEvery, true, true, checkpointEvery},
		{21*time.Second + 3*checkpointEvery, false, false, checkpointIdle},
	}
	var c checkpoints
	for i, s := range steps {
		if got := c.tick(s.committed, at(s.at)); got != s.want {
			t.Fatalf("step %d (at %v, committed %v): checkpoint %v, want %v", i, s.at, s.committed, got, s.want)
		}
		if got := c.interval(); got != s.next {
			t.Fatalf("step %d (at %v): next tick after %v, want %v", i, s.at, got, s.next)
		}
	}
}

// TestQuietSpell: the writes of one commit after a quiet spell do not
// pause the file watch; a fifth write, a write after quietCommit, and
// every write while writes keep coming (a database in use) do; after
// quietGap without writes the next commit's are quiet again.
func TestQuietSpell(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var q quietSpell
	at := t0
	for i := 1; i <= quietEvents; i++ {
		at = t0.Add(time.Duration(i) * time.Microsecond)
		if !q.event(at) {
			t.Fatalf("write %d of a commit after a quiet spell: not quiet", i)
		}
	}
	at = at.Add(time.Microsecond)
	if q.event(at) {
		t.Fatalf("write %d of a commit: quiet, want a pause", quietEvents+1)
	}
	at = at.Add(quietGap)
	if !q.event(at) {
		t.Fatalf("the first write %v later: not quiet", quietGap)
	}
	if q.event(at.Add(quietCommit)) {
		t.Fatalf("a write %v after the first: quiet, want a pause", quietCommit)
	}
	// Writes every 5 ms: a database in use, never a quiet spell.
	for i := 0; i < 50; i++ {
		at = at.Add(5 * time.Millisecond)
		if q.event(at) {
			t.Fatalf("a write 5 ms after the one before: quiet")
		}
	}
}

// TestCheckpointerCopiesCommits: what another connection commits reaches
// the database file itself (read with immutable=1, which ignores the
// WAL): while commits come, and a commit after an idle spell once the
// quiet spell is over, while the driver's process does nothing else. The
// checkpointer skips only ticks with nothing new.
func TestCheckpointerCopiesCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the checkpointer's quiet spell")
	}
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ckpt.db")
	d, err := Open(ctx, "sqlite:"+path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Another connection of the process: a commit moves the
	// checkpointer's data_version.
	app, err := sql.Open(DriverName, fileConnString(path))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.Exec("CREATE TABLE app (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	file, err := sql.Open(DriverName, "file:"+path+"?immutable=1") // as fileConnString names it
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	// A connection assumes an immutable file never changes: a new one for
	// each look.
	file.SetMaxIdleConns(0)
	inFile := func() (int, error) {
		var n int
		err := file.QueryRow("SELECT count(*) FROM app").Scan(&n)
		return n, err
	}
	for want := 1; want <= 2; want++ {
		if want == 2 {
			// The checkpointer idle again (ticks with nothing new), so
			// that this row waits for the quiet spell's end.
			time.Sleep(2 * checkpointIdle)
		}
		if _, err := app.Exec("INSERT INTO app VALUES (?)", want); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(checkpointQuiet + 20*time.Second)
		for {
			n, err := inFile()
			if err == nil && n == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("row %d: the database file has %d rows (%v) after %v", want, n, err, checkpointQuiet+20*time.Second)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestRenewalBesideCheckpoint: a checkpoint in progress (its connection
// taken for as long as a slow fsync would keep it) does not hold up a
// lease renewal. On one shared connection the renewal waited for it, and
// under load a 1 s-lease session was lost.
func TestRenewalBesideCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openMigrated(t, filepath.Join(t.TempDir(), "beat.db"))
	ck := d.beat.ckpt.get(d)
	if ck == nil {
		t.Fatal("no checkpointer connection on a file database")
	}
	busy, err := ck.SQL.Conn(ctx) // the pool's one connection
	if err != nil {
		t.Fatal(err)
	}
	renewed := make(chan error, 1)
	go func() {
		_, _, err := d.SessionHeartbeat(ctx, driver.HeartbeatParams{ClientID: "c", HostID: "h", Lease: time.Second, Limit: 10})
		renewed <- err
	}()
	select {
	case err = <-renewed:
	case <-time.After(3 * time.Second):
		t.Error("the renewal waited 3 s for the checkpointer's connection")
		busy.Close()
		err = <-renewed
	}
	busy.Close()
	if err != nil {
		t.Fatalf("renewal while the checkpointer's connection is busy: %v", err)
	}
}

// openMigrated opens the file database at path with the driver, migrated,
// and closes it when the test ends.
func openMigrated(t *testing.T, path string) *Driver {
	t.Helper()
	return batontest.Migrated(t, "sqlite:"+path).(*Driver)
}
