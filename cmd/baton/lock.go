package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver"
)

func lockCmd(g *globals) *cobra.Command {
	var ns, timeout string
	var read, write bool
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "lock [--ns NS] (--read|--write) [--timeout D] NAME... -- CMD [ARG...]",
		Short: "Run a command while holding locks",
		Long: `Take read (shared) or write (exclusive) locks on every NAME in namespace NS,
all or none, run CMD while holding them, release them and exit with CMD's status.

--timeout 0 (the default) tries once: a busy lock makes baton exit 75 at once,
which is what a cron job that must not run twice wants. A duration waits at most
that long; "forever" waits until baton is interrupted.

If the locks are lost while CMD runs (the database was unreachable for longer
than the session lease), CMD gets SIGTERM (SIGKILL after --grace) and baton
exits 77. SIGINT, SIGTERM and SIGHUP sent to baton are passed on to CMD. On
Linux, if baton itself is killed (kill -9), the kernel kills CMD too: CMD never
runs on after the session holding its locks is gone.

` + exitHelp,
		Example: `  # cron, on every machine: one mailing job at a time, skip when busy
  baton lock --write civimail.job.1.7 -- php civimail.cronjob.php --job 7
  # wait up to 30s for two resources, atomically
  baton lock --ns billing --write --timeout 30s invoices ledger -- ./close-month.sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				return usageErr("lock: missing -- CMD: put the command to run after --")
			}
			names, command := args[:dash], args[dash:]
			if len(names) == 0 {
				return usageErr("lock: no lock NAME given before --")
			}
			if len(command) == 0 {
				return usageErr("lock: empty command after --")
			}
			if read == write {
				return usageErr("lock: give exactly one of --read or --write")
			}
			to, err := parseTimeout(timeout)
			if err != nil {
				return err
			}
			mode := baton.Read
			if write {
				mode = baton.Write
			}
			// Validate before connecting: a bad name never touches the database.
			if err := baton.ValidateName("namespace", ns); err != nil {
				return err
			}
			for _, n := range names {
				if err := baton.ValidateName("lock name", n); err != nil {
					return err
				}
			}
			path, err := lookCommand("lock", command[0])
			if err != nil {
				return err
			}
			return runLocked(cmd.Context(), g, ns, mode, to, names, path, command, grace)
		},
	}
	cmd.Flags().StringVar(&ns, "ns", "default", "lock namespace")
	cmd.Flags().BoolVar(&read, "read", false, "take shared (read) locks")
	cmd.Flags().BoolVar(&write, "write", false, "take exclusive (write) locks")
	cmd.Flags().StringVar(&timeout, "timeout", "0", "how long to wait for the locks: 0 tries once, a duration, or forever")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "after a lost lock, how long CMD has between SIGTERM and SIGKILL")
	return cmd
}

func runLocked(ctx context.Context, g *globals, ns string, mode baton.Mode, timeout time.Duration,
	names []string, path string, command []string, grace time.Duration) error {
	// Signals are forwarded to CMD once it runs; before that they cancel.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-actx.Done():
		}
	}()

	c, err := g.open(actx)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := lockWithRetry(actx, c, "baton lock "+command[0], ns, mode, timeout, names)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return &cliError{code: exitInterrupted, msg: "lock: interrupted while waiting"}
		}
		return err
	}
	cancel()

	child := exec.Command(path, command[1:]...)
	child.Args[0] = command[0]
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = append(os.Environ(), "BATON_SESSION="+s.ID())
	dieWithParent(child)
	if err := child.Start(); err != nil {
		return &cliError{code: 126, msg: fmt.Sprintf("lock: cannot run %s: %v", command[0], err)}
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	lost := false
	var werr error
wait:
	for {
		select {
		case werr = <-exited:
			break wait
		case sig := <-sigs:
			_ = child.Process.Signal(sig)
		case <-s.Done():
			if lost {
				continue
			}
			lost = true
			fmt.Fprintf(os.Stderr, "baton: lost: %v; sending SIGTERM to %s\n", s.Err(), command[0])
			_ = child.Process.Signal(syscall.SIGTERM)
			go func() {
				time.Sleep(grace)
				_ = child.Process.Kill()
			}()
		}
	}
	closeCtx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	_ = s.Close(closeCtx)
	if lost {
		return &exitStatus{code: exitLost}
	}
	return &exitStatus{code: childStatus(werr)}
}

// lockWithRetry takes the locks in a new session. A waiter whose session is
// lost before it got its locks has lost nothing: it carries on with a new
// session within what is left of its timeout (a try-once call tries once
// more). Only a holder's loss is an error (exit 77, in runLocked).
func lockWithRetry(ctx context.Context, c *baton.Client, owner, ns string, mode baton.Mode, timeout time.Duration, names []string) (*baton.Session, error) {
	deadline := time.Now().Add(timeout)
	retried := false
	for {
		s, err := c.NewSession(ctx, baton.SessionOptions{Name: owner})
		if err == nil {
			left := timeout
			if timeout > 0 {
				if left = time.Until(deadline); left <= 0 {
					left = 0
				}
			}
			if _, err = s.Lock(ctx, ns, mode, left, names...); err == nil {
				return s, nil
			}
			closeCtx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = s.Close(closeCtx)
			ccancel()
			if !errors.Is(err, baton.ErrSessionLost) {
				return nil, err
			}
		} else if !retried {
			return nil, err // the first session cannot start: say why
		}
		if ctx.Err() != nil || (timeout >= 0 && time.Now().After(deadline) && retried) {
			return nil, fmt.Errorf("%w: %v", baton.ErrTimeout, err)
		}
		retried = true
		fmt.Fprintf(os.Stderr, "baton: %v; waiting again with a new session\n", err)
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func childStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return exitError
}

func locksCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "locks",
		Short: "Show every held lock and waiting request",
		Long: `Show every granted lock instance and every waiting request, of every session
of every process: type, namespace, name, mode (SHARED/EXCLUSIVE), status
(GRANTED/PENDING), session, owner (host:pid/name), since when, fencing token.
A lock a program took inside its own transaction (Client.LockTx) shows "tx"
and the transaction as its session, and "transaction": true in --json
(PostgreSQL and MySQL/MariaDB; on SQLite no other connection can see it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			ls, err := c.Locks(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if ls == nil {
					ls = []baton.LockInfo{}
				}
				return printJSON(ls)
			}
			if len(ls) == 0 {
				fmt.Println("no locks held or waited for")
				return nil
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TYPE\tNAMESPACE\tNAME\tMODE\tSTATUS\tSESSION\tOWNER\tSINCE\tTOKEN")
			for _, l := range ls {
				token := ""
				if l.Token != 0 {
					token = strconv.FormatInt(l.Token, 10)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Type, l.Namespace, l.Name, l.Mode, l.Status,
					l.Session, l.Owner, l.Since.Local().Format("2006-01-02 15:04:05.000"), token)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// schemaCreator is a backend that can create the schema its DSN names
// (PostgreSQL's search_path).
type schemaCreator interface {
	CreateSchema(ctx context.Context) (string, error)
}

// runMigrate applies the pending migrations (action up) and prints every
// migration's state.
func runMigrate(ctx context.Context, g *globals, action string) error {
	d, err := driver.Open(ctx, g.dsn, g.prefix)
	if err != nil {
		return err
	}
	defer d.Close()
	if cs, ok := d.(schemaCreator); ok && action == "up" {
		created, err := cs.CreateSchema(ctx)
		if err != nil {
			return err
		}
		if created != "" {
			fmt.Printf("created schema %s\n", created)
		}
	}
	st, err := d.MigrationStatus(ctx)
	if action == "up" && err == nil {
		pending := 0
		for _, m := range st {
			if !m.Applied {
				pending++
			}
		}
		sp := progress("migrate", fmt.Sprintf("applying %d pending migrations", pending))
		st, err = d.Migrate(ctx)
		sp.stop()
	}
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tNAME\tSTATE\tAPPLIED AT")
	for _, m := range st {
		state, at := "pending", ""
		if m.Applied {
			state, at = "applied", m.AppliedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%03d\t%s\t%s\t%s\n", m.Version, m.Name, state, at)
	}
	return tw.Flush()
}

func migrateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate [up|status]",
		Short: "Apply baton's schema migrations (up, the default) or show their status",
		Long: `Apply baton's embedded, numbered schema migrations to the database (up, the
default), or list them with their state (status). Safe when several processes
migrate at the same moment. Clients also migrate on start unless told not to.

On PostgreSQL, baton's tables go in the first schema of the DSN's
search_path (postgres://.../db?search_path=myschema). migrate up creates that
schema when it does not exist and says so; other commands fail with an error
naming the missing schema.

While migrations are applied, a progress line is shown on stderr when stderr
is a terminal; otherwise stderr stays silent.`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{"up", "status"},
		RunE: func(cmd *cobra.Command, args []string) error {
			action := "up"
			if len(args) == 1 {
				action = args[0]
			}
			if action != "up" && action != "status" {
				return usageErr("migrate: unknown action %q (use up or status)", action)
			}
			return runMigrate(cmd.Context(), g, action)
		},
	}
	return cmd
}
