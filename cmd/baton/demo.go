package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

func demoCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Guided run of the seed scenarios (embedded SQLite unless --dsn is given)",
		Long: `A guided run of the scenarios baton grew from, on a fresh SQLite file in a
temporary directory that is removed at the end.

With --dsn (or BATON_DSN) it runs on that database instead, under tables of
its own named demo_XXXXXXXX_* (a fresh prefix each run; --prefix is not
used), and drops every one of them when it ends, also after a failure or
Ctrl-C: its queues, dead letters, subscriptions, sessions and locks go
with them. It says what it dropped. Nothing else in the database is
changed. The scenarios:

  1. MySQL's locking service: namespaces, read/write locks, atomic multi-lock
     calls, timeouts, deadlock detection, monitoring, fencing tokens.
  2. Cron runners on several machines that must never process the same mailing
     job twice (GET_LOCK / IS_FREE_LOCK / RELEASE_LOCK per job).
  3. A lock holder killed with SIGKILL: its locks pass on by themselves.
  4. A consumer that wakes the moment a producer commits (seed 000).
  5. A mail queue: batches of 10, failures to the back of the queue until
     their attempt limit, then dead letters (seed 002).
  6. Table-change subscriptions: an ordered worker and parallel workers on
     the changes of a table written by plain SQL (seed 004).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("dsn") || os.Getenv("BATON_DSN") != "" {
				return demoOnDSN(cmd.Context(), g.dsn)
			}
			return demoOnTempFile(cmd.Context(), g.prefix)
		},
	}
}

// demoOnDSN runs the demo on the user's database, under tables of a fresh
// prefix, and drops them at the end.
func demoOnDSN(ctx context.Context, dsn string) error {
	prefix := demoPrefix()
	say("baton demo on %s, under tables named %s* that it drops at the end", redactDSN(dsn), prefix)
	err := runDemo(ctx, dsn, prefix, prefix)
	if cerr := dropPrefixed(dsn, prefix); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// demoOnTempFile runs the demo on a SQLite file in a temporary directory,
// removed at the end.
func demoOnTempFile(ctx context.Context, prefix string) error {
	dir, err := os.MkdirTemp("", "baton-demo-")
	if err != nil {
		return err
	}
	dsn := "sqlite://" + filepath.Join(dir, "demo.db")
	say("baton demo on %s (a temporary file, removed at the end)", dsn)
	err = runDemo(ctx, dsn, prefix, "")
	if rerr := os.RemoveAll(dir); rerr != nil {
		return errors.Join(err, rerr)
	}
	say("\nRemoved %s.", dir)
	return err
}

type demo struct {
	ctx    context.Context
	dsn    string
	prefix string
	c      *baton.Client
	// appPrefix goes before the application tables' names.
	appPrefix string
}

func say(format string, a ...any) { fmt.Printf(format+"\n", a...) }

func heading(s string) {
	say("\n%s\n%s", s, strings.Repeat("─", len([]rune(s))))
}

// runDemo runs every scenario; appPrefix is put before the names of the
// application tables the scenarios create.
func runDemo(ctx context.Context, dsn, prefix, appPrefix string) error {
	c, err := baton.Open(ctx, dsn, baton.Options{Prefix: prefix, Name: "demo"})
	if err != nil {
		return err
	}
	defer c.Close()
	d := &demo{ctx: ctx, dsn: dsn, prefix: prefix, appPrefix: appPrefix, c: c}
	for _, step := range []func() error{d.lockingService, d.cron, d.crash, d.wakeOnCommit, d.mailQueue, d.tableEvents} {
		if err := step(); err != nil {
			return err
		}
	}
	say("\nAll scenarios ran as described. Try it yourself:\n  baton lock --write my.job -- sleep 5 &  baton locks")
	return nil
}

// withSession runs op in a new session named name, closed after.
func (d *demo) withSession(name string, op func(*baton.Session) error) error {
	s, err := d.c.NewSession(d.ctx, baton.SessionOptions{Name: name})
	if err != nil {
		return err
	}
	defer s.Close(d.ctx)
	return op(s)
}

// lockingService shows seed 001 with two sessions, alice and bob.
func (d *demo) lockingService() error {
	heading("1. The locking service (seed 001)")
	return d.withSession("alice", func(alice *baton.Session) error {
		return d.withSession("bob", func(bob *baton.Session) error {
			for _, step := range []func(alice, bob *baton.Session) error{d.allOrNone, d.deadlock, d.fencingTokens} {
				if err := step(alice, bob); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// allOrNone: a multi-lock call takes every lock or none, and a timeout
// ends a wait.
func (d *demo) allOrNone(alice, bob *baton.Session) error {
	g, err := alice.Lock(d.ctx, "shop", baton.Write, 0, "orders", "stock")
	if err != nil {
		return err
	}
	say("alice takes write locks on shop/orders and shop/stock in one call (tokens %d, %d)", g[0].Token, g[1].Token)
	_, err = bob.Lock(d.ctx, "shop", baton.Read, 0, "catalog", "stock")
	say("bob asks for read locks on catalog and stock with timeout 0: %v", err)
	say("  ...and holds nothing: the call is all or none")
	_, err = bob.Lock(d.ctx, "shop", baton.Read, 200*time.Millisecond, "stock")
	say("bob waits 200ms for stock: %v", err)
	return nil
}

// deadlock: alice waits for bob, who then asks for what alice holds; bob's
// request is chosen as the victim.
func (d *demo) deadlock(alice, bob *baton.Session) error {
	aliceWait, err := d.waitForLedger(alice, bob)
	if err != nil {
		return err
	}
	start := time.Now()
	_, err = bob.Lock(d.ctx, "shop", baton.Read, baton.Forever, "orders")
	if !errors.Is(err, baton.ErrDeadlock) {
		return fmt.Errorf("expected a deadlock, got %v", err)
	}
	say("bob asks to read orders, held by alice who waits for bob: %v", err)
	say("  detected in %v; bob (the read waiter) is the victim and keeps ledger", time.Since(start).Round(time.Microsecond))
	n, err := bob.Release(d.ctx, "shop")
	if err != nil {
		return err
	}
	say("bob releases namespace shop (%d instance); alice's wait ends: %v", n, <-aliceWait)
	return nil
}

// waitForLedger: bob takes ledger and alice waits for it, as the monitor
// shows; the channel gets the end of alice's wait.
func (d *demo) waitForLedger(alice, bob *baton.Session) (<-chan error, error) {
	if _, err := bob.Lock(d.ctx, "shop", baton.Write, 0, "ledger"); err != nil {
		return nil, err
	}
	say("bob takes a write lock on ledger; alice now waits for ledger...")
	aliceWait := make(chan error, 1)
	go func() {
		_, err := alice.Lock(context.Background(), "shop", baton.Write, baton.Forever, "ledger")
		aliceWait <- err
	}()
	if err := d.waitPending(alice); err != nil {
		return nil, err
	}
	return aliceWait, d.monitor()
}

// fencingTokens: every grant of shop/orders gets a larger token.
func (d *demo) fencingTokens(alice, bob *baton.Session) error {
	var last int64
	for i := 0; i < 3; i++ {
		token, err := d.handOver(alice, bob)
		if err != nil {
			return err
		}
		if token <= last {
			return fmt.Errorf("fencing token went backwards: %d after %d", token, last)
		}
		last = token
		say("fencing token for shop/orders, grant %d: %d (strictly increasing)", i+1, token)
		if _, err := alice.Lock(d.ctx, "shop", baton.Write, 0, "orders"); err != nil {
			return err
		}
	}
	return nil
}

// handOver: alice releases shop, bob takes and releases shop/orders; it
// returns bob's fencing token.
func (d *demo) handOver(alice, bob *baton.Session) (int64, error) {
	if _, err := alice.Release(d.ctx, "shop"); err != nil {
		return 0, err
	}
	g, err := bob.Lock(d.ctx, "shop", baton.Write, 0, "orders")
	if err != nil {
		return 0, err
	}
	_, err = bob.Release(d.ctx, "shop")
	return g[0].Token, err
}

func (d *demo) waitPending(s *baton.Session) error {
	for i := 0; i < 500; i++ {
		ls, err := d.c.Locks(d.ctx)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(ls, func(l baton.LockInfo) bool { return l.Session == s.ID() && l.Status == "PENDING" }) {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return errors.New("request never became pending")
}

func (d *demo) monitor() error {
	ls, err := d.c.Locks(d.ctx)
	if err != nil {
		return err
	}
	say("baton locks:")
	tw := newTable(os.Stdout, "  TYPE\tNAMESPACE\tNAME\tMODE\tSTATUS\tOWNER")
	for _, l := range ls {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", l.Type, l.Namespace, l.Name, l.Mode, l.Status, l.Owner)
	}
	return tw.Flush()
}

// cronSpan is when a runner processed a job.
type cronSpan struct {
	runner     string
	start, end time.Time
}

// cronLog collects what the cron runners did.
type cronLog struct {
	mu      sync.Mutex
	spans   map[int][]cronSpan // by job
	skipped int
}

// skip counts a busy job skipped.
func (log *cronLog) skip() {
	log.mu.Lock()
	log.skipped++
	log.mu.Unlock()
}

// add records that a runner processed job.
func (log *cronLog) add(job int, sp cronSpan) {
	log.mu.Lock()
	log.spans[job] = append(log.spans[job], sp)
	log.mu.Unlock()
}

// cronRunner runs the cron loop twice over the six jobs on a session of
// c: GET_LOCK with timeout 0, process, RELEASE_LOCK; a busy job is skipped.
func (d *demo) cronRunner(c *baton.Client, name string, log *cronLog) error {
	s, err := c.NewSession(d.ctx)
	if err != nil {
		return err
	}
	defer s.Close(d.ctx)
	for round := 0; round < 2; round++ {
		for job := 1; job <= 6; job++ {
			if err := d.cronJob(s, name, job, log); err != nil {
				return err
			}
		}
	}
	return nil
}

// cronJob is one job of the loop: processed under its lock when the lock
// is free, skipped when it is busy.
func (d *demo) cronJob(s *baton.Session, runner string, job int, log *cronLog) error {
	lock := fmt.Sprintf("civimail.job.1.%d", job)
	ok, err := s.GetLock(d.ctx, lock, 0)
	if err != nil {
		return err
	}
	if !ok {
		log.skip()
		return nil
	}
	log.add(job, sendMailing(runner))
	_, err = s.ReleaseLock(d.ctx, lock)
	return err
}

// sendMailing stands for sending a mailing, and returns when it ran.
func sendMailing(runner string) cronSpan {
	sp := cronSpan{runner: runner, start: time.Now()}
	time.Sleep(15 * time.Millisecond) // send the mailing
	sp.end = time.Now()
	return sp
}

// report prints who processed each job, and fails if two runners ever
// processed one job at once.
func (log *cronLog) report() error {
	tw := newTable(os.Stdout, "  JOB\tPROCESSED BY\tOVERLAPS")
	for job := 1; job <= 6; job++ {
		spans := log.spans[job]
		n := overlaps(spans)
		if n > 0 {
			return fmt.Errorf("job %d was processed by two runners at once", job)
		}
		fmt.Fprintf(tw, "  civimail.job.1.%d\t%s\t%d\n", job, strings.Join(runners(spans), ", "), n)
	}
	return tw.Flush()
}

// runners names the runner of each span.
func runners(spans []cronSpan) []string {
	var who []string
	for _, sp := range spans {
		who = append(who, sp.runner)
	}
	return who
}

// overlaps counts the pairs of spans that overlap in time.
func overlaps(spans []cronSpan) int {
	n := 0
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.start.Before(b.end) && b.start.Before(a.end) {
				n++
			}
		}
	}
	return n
}

// cron: three runners, as on three machines, each with its own client and
// session, run the CiviMail cron loop twice over six jobs at the same time.
func (d *demo) cron() error {
	heading("2. Cron runners on several machines (seed 003)")
	say("3 runners, each its own client (as separate machines would be), run the")
	say("cron loop over 6 mailing jobs, twice, all at once. Per job: GET_LOCK with")
	say("timeout 0, process it if acquired, RELEASE_LOCK; a busy job is skipped.")
	log := &cronLog{spans: map[int][]cronSpan{}}
	if err := d.runCronRunners(3, log); err != nil {
		return err
	}
	if err := log.report(); err != nil {
		return err
	}
	say("%d busy jobs were skipped; no job was ever processed by two runners at once.", log.skipped)
	free, err := d.c.IsFreeLock(d.ctx, "civimail.job.1.1")
	if err != nil {
		return err
	}
	say("IS_FREE_LOCK('civimail.job.1.1') after the runs: %v", free)
	return nil
}

// runCronRunners runs n runners at once, each on a client of its own, and
// returns the first error of any.
func (d *demo) runCronRunners(n int, log *cronLog) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for r := 1; r <= n; r++ {
		name := fmt.Sprintf("runner-%d", r)
		c, err := baton.Open(d.ctx, d.dsn, baton.Options{Prefix: d.prefix, Name: name})
		if err != nil {
			return err
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.cronRunner(c, name, log); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when there is none
}

// crash runs `baton lock` in a child process, kills it with SIGKILL and
// waits for its lock.
func (d *demo) crash() error {
	heading("3. A lock holder killed with SIGKILL")
	child, err := d.startHolder()
	if err != nil {
		return err
	}
	defer func() { _ = child.Process.Kill() }()
	say("`baton lock --write nightly.report -- sleep 60` runs as pid %d", child.Process.Pid)
	return d.withSession("successor", func(s *baton.Session) error {
		return d.outliveHolder(s, child)
	})
}

// startHolder starts `baton lock` on nightly.report in a child process,
// and returns once the child holds the lock.
func (d *demo) startHolder() (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"--dsn", d.dsn, "lock", "--write", "nightly.report", "--", "sh", "-c", "echo holding; exec sleep 60"}
	if d.prefix != "" {
		args = append([]string{"--prefix", d.prefix}, args...)
	}
	child := exec.Command(self, args...)
	out, err := child.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := child.Start(); err != nil {
		return nil, err
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "holding" {
		_ = child.Process.Kill()
		return nil, fmt.Errorf("child did not take the lock: %q", line)
	}
	return child, nil
}

// outliveHolder: session s finds the lock busy, kills its holder and gets
// the lock once the holder's session is seen gone.
func (d *demo) outliveHolder(s *baton.Session, child *exec.Cmd) error {
	_, err := s.Lock(d.ctx, "default", baton.Write, 0, "nightly.report")
	say("another session tries the lock: %v", err)
	if err := child.Process.Kill(); err != nil {
		return err
	}
	killed := time.Now()
	_ = child.Wait()
	say("kill -9 %d; waiting for the lock...", child.Process.Pid)
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	g, err := s.Lock(ctx, "default", baton.Write, baton.Forever, "nightly.report")
	if err != nil {
		return err
	}
	say("acquired %v after the kill, token %d: a process on the same host saw the", time.Since(killed).Round(time.Millisecond), g[0].Token)
	say("holder's PID gone; on another host its lease (3s) runs out first")
	return nil
}

// wakeOnCommit: seed 000, a consumer blocked on an empty queue wakes when a
// producer commits.
func (d *demo) wakeOnCommit() error {
	heading("4. A consumer that wakes when a producer commits (seed 000)")
	return d.withSession("consumer", func(s *baton.Session) error {
		woke := d.awaitMessage(s)
		time.Sleep(200 * time.Millisecond)
		say("the consumer waits on an empty queue (no polling)...")
		sent := time.Now()
		if _, err := d.c.Enqueue(d.ctx, "messages", []byte("hi")); err != nil {
			return err
		}
		say("the producer commits a message; the consumer wakes %v later", (<-woke).Sub(sent).Round(time.Microsecond))
		return nil
	})
}

// awaitMessage starts the consumer: it claims a message of queue messages
// (waiting at most 10s), acknowledges it, and sends when it woke.
func (d *demo) awaitMessage(s *baton.Session) <-chan time.Time {
	woke := make(chan time.Time, 1)
	go func() {
		ms, err := s.Claim(d.ctx, "messages", baton.ClaimOptions{Wait: 10 * time.Second})
		if err == nil {
			_ = s.Ack(d.ctx, ms[0])
		}
		woke <- time.Now()
	}()
	return woke
}

// mailQueue: seed 002, a mail queue taken 10 at a time.
func (d *demo) mailQueue() error {
	heading("5. A mail queue, 10 at a time (seed 002)")
	if err := d.enqueueMail(20, 3); err != nil {
		return err
	}
	return d.withSession("mailer", func(s *baton.Session) error {
		say("20 messages; 5, 10 and 15 always fail to send; attempt limit 3")
		if err := d.sendMailBatches(s); err != nil {
			return err
		}
		return d.reportDeadMail()
	})
}

// enqueueMail enqueues n messages "Message 1" to "Message n", each with
// the attempt limit maxAttempts.
func (d *demo) enqueueMail(n, maxAttempts int) error {
	msgs := make([]baton.NewMessage, n)
	for i := range msgs {
		msgs[i] = baton.NewMessage{Payload: []byte(fmt.Sprintf("Message %d", i+1)), EnqueueOptions: baton.EnqueueOptions{MaxAttempts: maxAttempts}}
	}
	_, err := d.c.EnqueueMany(d.ctx, "t_queue", msgs)
	return err
}

// sendMailBatches claims the mail 10 at a time until none is ready, and
// says what each batch sent.
func (d *demo) sendMailBatches(s *baton.Session) error {
	for round := 1; ; round++ {
		ms, err := s.Claim(d.ctx, "t_queue", baton.ClaimOptions{Max: 10})
		if errors.Is(err, baton.ErrEmpty) {
			return nil
		}
		if err != nil {
			return err
		}
		line, err := d.sendBatch(s, ms)
		if err != nil {
			return err
		}
		say("  batch %d: %s", round, line)
	}
}

// sendBatch sends each message of a batch and returns their numbers, a
// failed one marked ✗.
func (d *demo) sendBatch(s *baton.Session, ms []*baton.Message) (string, error) {
	var line []string
	for _, m := range ms {
		n, err := d.sendMail(s, m)
		if err != nil {
			return "", err
		}
		line = append(line, n)
	}
	return strings.Join(line, " "), nil
}

// failingMail are the messages that never send.
var failingMail = map[string]bool{"5": true, "10": true, "15": true}

// sendMail sends one message: acknowledged, or retried when it is one of
// the failing ones. It returns the message's number, marked ✗ on failure.
func (d *demo) sendMail(s *baton.Session, m *baton.Message) (string, error) {
	n := strings.TrimPrefix(string(m.Payload), "Message ")
	if failingMail[n] {
		return n + "✗", s.RetryAfter(d.ctx, m, 0, errors.New("mailbox unavailable"))
	}
	return n, s.Ack(d.ctx, m)
}

// reportDeadMail says which messages ended as dead letters.
func (d *demo) reportDeadMail() error {
	dead, err := d.c.DeadLetters(d.ctx, "t_queue", 10)
	if err != nil {
		return err
	}
	var names []string
	for _, m := range dead {
		names = append(names, string(m.Payload))
	}
	say("dead letters after 3 attempts: %s", strings.Join(names, ", "))
	return nil
}

// ringBell drains the ring_bell subscription with one ordered worker and
// returns the keys of its events in the order handled.
func (d *demo) ringBell() ([]int, error) {
	var order []int
	err := d.c.WorkEvents(d.ctx, "ring_bell", func(ctx context.Context, e baton.Event, m *baton.Message) error {
		var pk struct {
			ID int `json:"language_id"`
		}
		if err := json.Unmarshal(e.PK, &pk); err != nil {
			return fmt.Errorf("event key %s: %w", e.PK, err)
		}
		order = append(order, pk.ID)
		return nil
	}, baton.WorkerOptions{Mode: baton.Ordered, Drain: true})
	return order, err
}

// createLanguages creates the demo's application table.
func createLanguages(db *sql.DB, backend, table string) error {
	ddl := map[string]string{
		"sqlite":   "language_id INTEGER PRIMARY KEY, name TEXT, year_released INTEGER",
		"postgres": "language_id serial PRIMARY KEY, name text, year_released integer",
		"mysql":    "language_id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100), year_released INT",
	}[backend]
	_, err := db.Exec(`CREATE TABLE ` + table + ` (` + ddl + `)`)
	return err
}

// insertLanguages inserts n rows with plain SQL in one transaction.
func insertLanguages(db *sql.DB, backend, table string, n int) error {
	bind := "?"
	if backend == "postgres" {
		bind = "$1"
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if _, err := tx.Exec(`INSERT INTO `+table+` (name, year_released) VALUES ('Dylan', `+bind+`)`, i); err != nil {
			_ = tx.Rollback() // the insert's error is the one to report
			return err
		}
	}
	return tx.Commit()
}

// tableEvents: seed 004, subscriptions on a table written by plain SQL.
func (d *demo) tableEvents() error {
	heading("6. Table-change subscriptions (seed 004)")
	if d.dsn == "sqlite::memory:" {
		say("(not shown on sqlite::memory:, which no other connection can write)")
		return nil
	}
	if err := d.writeLanguages(500); err != nil {
		return err
	}
	ordered, err := d.orderedWorker(500)
	if err != nil {
		return err
	}
	parallel, err := d.parallelWorkers(500)
	if err != nil {
		return err
	}
	if !ordered || !parallel {
		return errors.New("events were lost, duplicated or out of order")
	}
	return nil
}

// writeLanguages creates the application table, subscribes send_email
// and ring_bell to its inserts, and inserts n rows with plain SQL.
func (d *demo) writeLanguages(n int) error {
	db, backend, err := openRaw(d.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	// On a database of the user's the application table carries the
	// demo's prefix too, and is dropped with the rest.
	table := d.appPrefix + "languages"
	if err := createLanguages(db, backend, table); err != nil {
		return err
	}
	for _, name := range []string{"send_email", "ring_bell"} {
		if err := d.c.Subscribe(d.ctx, baton.Subscription{Name: name, Table: table, Actions: []baton.Action{baton.Insert}}); err != nil {
			return err
		}
	}
	say("subscriptions send_email and ring_bell on inserts into %s;", table)
	say("%d rows inserted with plain SQL, in one transaction...", n)
	return insertLanguages(db, backend, table, n)
}

// orderedWorker drains ring_bell with one ordered worker, says how it
// went, and reports whether it handled the n events in insert order.
func (d *demo) orderedWorker(n int) (bool, error) {
	start := time.Now()
	order, err := d.ringBell()
	if err != nil {
		return false, err
	}
	inOrder := sort.IntsAreSorted(order)
	say("ring_bell, one ordered worker: %d events in %v, in insert order: %v", len(order), time.Since(start).Round(time.Millisecond), inOrder)
	return inOrder && len(order) == n, nil
}

// parallelWorkers drains send_email with five parallel workers, says how
// it went, and reports whether each of the n events was handled once.
func (d *demo) parallelWorkers(n int) (bool, error) {
	var mu sync.Mutex
	seen := map[string]int{}
	start := time.Now()
	err := d.c.WorkEvents(d.ctx, "send_email", func(ctx context.Context, e baton.Event, m *baton.Message) error {
		mu.Lock()
		seen[string(e.PK)]++
		mu.Unlock()
		return nil
	}, baton.WorkerOptions{Concurrency: 5, Drain: true})
	if err != nil {
		return false, err
	}
	twice := handledTwice(seen)
	say("send_email, five parallel workers: %d events in %v, %d handled twice", len(seen), time.Since(start).Round(time.Millisecond), twice)
	return len(seen) == n && twice == 0, nil
}

// handledTwice counts the events handled more than once.
func handledTwice(seen map[string]int) int {
	twice := 0
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	return twice
}
