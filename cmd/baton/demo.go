package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

func demoCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Guided run of the seed scenarios on embedded SQLite",
		Long: `A guided run of the scenarios baton grew from, on a fresh SQLite file in a
temporary directory (or on --dsn when given explicitly):

  1. MySQL's locking service: namespaces, read/write locks, atomic multi-lock
     calls, timeouts, deadlock detection, monitoring, fencing tokens.
  2. Cron runners on several machines that must never process the same mailing
     job twice (GET_LOCK / IS_FREE_LOCK / RELEASE_LOCK per job).
  3. A lock holder killed with SIGKILL: its locks pass on by themselves.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dsn := g.dsn
			if !cmd.Flags().Changed("dsn") && os.Getenv("BATON_DSN") == "" {
				dir, err := os.MkdirTemp("", "baton-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				dsn = "sqlite://" + filepath.Join(dir, "demo.db")
			}
			return runDemo(cmd.Context(), dsn, g.prefix)
		},
	}
}

type demo struct {
	ctx    context.Context
	dsn    string
	prefix string
	c      *baton.Client
}

func say(format string, a ...any) { fmt.Printf(format+"\n", a...) }

func heading(s string) {
	say("\n%s\n%s", s, strings.Repeat("─", len([]rune(s))))
}

func runDemo(ctx context.Context, dsn, prefix string) error {
	say("baton demo on %s", dsn)
	c, err := baton.Open(ctx, dsn, baton.Options{Prefix: prefix, Name: "demo"})
	if err != nil {
		return err
	}
	defer c.Close()
	d := &demo{ctx: ctx, dsn: dsn, prefix: prefix, c: c}
	for _, step := range []func() error{d.lockingService, d.cron, d.crash} {
		if err := step(); err != nil {
			return err
		}
	}
	say("\nAll scenarios ran as described. Try it yourself:\n  baton lock --write my.job -- sleep 5 &  baton locks")
	return nil
}

func (d *demo) session(name string) (*baton.Session, error) {
	return d.c.NewSession(d.ctx, baton.SessionOptions{Name: name})
}

func (d *demo) lockingService() error {
	heading("1. The locking service (seed 001)")
	alice, err := d.session("alice")
	if err != nil {
		return err
	}
	defer alice.Close(d.ctx)
	bob, err := d.session("bob")
	if err != nil {
		return err
	}
	defer bob.Close(d.ctx)

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

	if _, err := bob.Lock(d.ctx, "shop", baton.Write, 0, "ledger"); err != nil {
		return err
	}
	say("bob takes a write lock on ledger; alice now waits for ledger...")
	aliceWait := make(chan error, 1)
	go func() {
		_, err := alice.Lock(context.Background(), "shop", baton.Write, baton.Forever, "ledger")
		aliceWait <- err
	}()
	if err := d.waitPending(alice); err != nil {
		return err
	}
	if err := d.monitor(); err != nil {
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
	var last int64
	for i := 0; i < 3; i++ {
		if _, err := alice.Release(d.ctx, "shop"); err != nil {
			return err
		}
		g, err := bob.Lock(d.ctx, "shop", baton.Write, 0, "orders")
		if err != nil {
			return err
		}
		if _, err := bob.Release(d.ctx, "shop"); err != nil {
			return err
		}
		if g[0].Token <= last {
			return fmt.Errorf("fencing token went backwards: %d after %d", g[0].Token, last)
		}
		last = g[0].Token
		say("fencing token for shop/orders, grant %d: %d (strictly increasing)", i+1, g[0].Token)
		if _, err := alice.Lock(d.ctx, "shop", baton.Write, 0, "orders"); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) waitPending(s *baton.Session) error {
	for i := 0; i < 500; i++ {
		ls, err := d.c.Locks(d.ctx)
		if err != nil {
			return err
		}
		for _, l := range ls {
			if l.Session == s.ID() && l.Status == "PENDING" {
				return nil
			}
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
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tNAMESPACE\tNAME\tMODE\tSTATUS\tOWNER")
	for _, l := range ls {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", l.Type, l.Namespace, l.Name, l.Mode, l.Status, l.Owner)
	}
	return tw.Flush()
}

// cron: three runners, as on three machines, each with its own client and
// session, run the CiviMail cron loop twice over six jobs at the same time.
func (d *demo) cron() error {
	heading("2. Cron runners on several machines (seed 003)")
	say("3 runners, each its own client (as separate machines would be), run the")
	say("cron loop over 6 mailing jobs, twice, all at once. Per job: GET_LOCK with")
	say("timeout 0, process it if acquired, RELEASE_LOCK; a busy job is skipped.")
	type span struct {
		runner     string
		start, end time.Time
	}
	var mu sync.Mutex
	spans := map[int][]span{}
	skipped := 0
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for r := 1; r <= 3; r++ {
		name := fmt.Sprintf("runner-%d", r)
		c, err := baton.Open(d.ctx, d.dsn, baton.Options{Prefix: d.prefix, Name: name})
		if err != nil {
			return err
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.NewSession(d.ctx)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close(d.ctx)
			for round := 0; round < 2; round++ {
				for job := 1; job <= 6; job++ {
					lock := fmt.Sprintf("civimail.job.1.%d", job)
					ok, err := s.GetLock(d.ctx, lock, 0)
					if err != nil {
						errs <- err
						return
					}
					if !ok {
						mu.Lock()
						skipped++
						mu.Unlock()
						continue
					}
					sp := span{runner: name, start: time.Now()}
					time.Sleep(15 * time.Millisecond) // send the mailing
					sp.end = time.Now()
					mu.Lock()
					spans[job] = append(spans[job], sp)
					mu.Unlock()
					if _, err := s.ReleaseLock(d.ctx, lock); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  JOB\tPROCESSED BY\tOVERLAPS")
	for job := 1; job <= 6; job++ {
		var who []string
		overlaps := 0
		for i, a := range spans[job] {
			who = append(who, a.runner)
			for _, b := range spans[job][i+1:] {
				if a.start.Before(b.end) && b.start.Before(a.end) {
					overlaps++
				}
			}
		}
		if overlaps > 0 {
			return fmt.Errorf("job %d was processed by two runners at once", job)
		}
		fmt.Fprintf(tw, "  civimail.job.1.%d\t%s\t%d\n", job, strings.Join(who, ", "), overlaps)
	}
	_ = tw.Flush()
	say("%d busy jobs were skipped; no job was ever processed by two runners at once.", skipped)
	free, err := d.c.IsFreeLock(d.ctx, "civimail.job.1.1")
	if err != nil {
		return err
	}
	say("IS_FREE_LOCK('civimail.job.1.1') after the runs: %v", free)
	return nil
}

// crash runs `baton lock` in a child process, kills it with SIGKILL and
// waits for its lock.
func (d *demo) crash() error {
	heading("3. A lock holder killed with SIGKILL")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(self, "--dsn", d.dsn, "lock", "--write", "nightly.report", "--", "sh", "-c", "echo holding; exec sleep 60")
	if d.prefix != "" {
		child.Args = append([]string{self, "--prefix", d.prefix}, child.Args[1:]...)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	defer func() { _ = child.Process.Kill() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "holding" {
		return fmt.Errorf("child did not take the lock: %q", line)
	}
	say("`baton lock --write nightly.report -- sleep 60` runs as pid %d", child.Process.Pid)
	s, err := d.session("successor")
	if err != nil {
		return err
	}
	defer s.Close(d.ctx)
	_, err = s.Lock(d.ctx, "default", baton.Write, 0, "nightly.report")
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
