package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver"
	"github.com/batonhq/baton/internal/maintain"
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
which is what a cron job that must not run twice wants. A duration (with its
unit: 500ms, 30s, 2m) bounds the whole call, connecting included; "forever"
waits until baton is interrupted. Connecting is also bounded by the DSN's
connect timeout (5s by default; docs/dsn.md): a server that never answers
makes baton exit 69.

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
			req, command, err := parseLockArgs(args, cmd.ArgsLenAtDash(), ns, read, write, timeout)
			if err != nil {
				return err
			}
			if grace <= 0 {
				return usageErr("lock: --grace %v: give a positive duration", grace)
			}
			path, err := lookCommand("lock", command[0])
			if err != nil {
				return err
			}
			return runLocked(cmd.Context(), g, req, path, command, grace)
		},
	}
	cmd.Flags().StringVar(&ns, "ns", "default", "lock namespace")
	cmd.Flags().BoolVar(&read, "read", false, "take shared (read) locks")
	cmd.Flags().BoolVar(&write, "write", false, "take exclusive (write) locks")
	cmd.Flags().StringVar(&timeout, "timeout", "0", "how long to wait for the locks: 0 tries once, a duration, or forever")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "after a lost lock, how long CMD has between SIGTERM and SIGKILL")
	return cmd
}

// lockRequest is what baton lock asks for: locks of one mode on names of
// one namespace, waiting at most timeout.
type lockRequest struct {
	ns      string
	mode    baton.Mode
	timeout time.Duration
	names   []string
	start   time.Time // when the call started: --timeout counts from there
}

// parseLockArgs checks baton lock's arguments (NAME... -- CMD [ARG...],
// dash where -- stood) and flags, before anything connects: a bad name
// never touches the database.
func parseLockArgs(args []string, dash int, ns string, read, write bool, timeout string) (lockRequest, []string, error) {
	if dash < 0 {
		return lockRequest{}, nil, usageErr("lock: missing -- CMD: put the command to run after --")
	}
	req := lockRequest{ns: ns, mode: baton.Read, names: args[:dash]}
	command := args[dash:]
	err := firstUsageErr("lock",
		usageCheck{len(req.names) == 0, "no lock NAME given before --"},
		usageCheck{len(command) == 0, "empty command after --"},
		usageCheck{read == write, "give exactly one of --read or --write"})
	if err != nil {
		return req, nil, err
	}
	if req.timeout, err = parseTimeout(timeout); err != nil {
		return req, nil, err
	}
	if write {
		req.mode = baton.Write
	}
	return req, command, validateLockNames(ns, req.names)
}

// validateLockNames checks the namespace and every lock name.
func validateLockNames(ns string, names []string) error {
	if err := baton.ValidateName("namespace", ns); err != nil {
		return err
	}
	for _, n := range names {
		if err := baton.ValidateName("lock name", n); err != nil {
			return err
		}
	}
	return nil
}

// lockSignals are the signals baton lock passes on to CMD.
var lockSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

func runLocked(ctx context.Context, g *globals, req lockRequest, path string, command []string, grace time.Duration) error {
	// Signals are forwarded to CMD once it runs; before that they cancel.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, lockSignals...)
	defer signal.Stop(sigs)
	actx, cancel := cancelOnSignal(ctx, sigs)
	defer cancel()

	req.start = time.Now()
	c, err := openWithin(actx, g, req.timeout)
	if err != nil && errors.Is(context.Cause(actx), errSignalled) {
		// A signal cut the connect short: this channel may hear it before
		// main's, so say so here (exit 130, not 69).
		return &cliError{code: exitInterrupted, msg: "lock: interrupted while connecting: " + err.Error()}
	}
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := lockWithRetry(actx, c, "baton lock "+command[0], req)
	if errors.Is(err, context.Canceled) {
		return &cliError{code: exitInterrupted, msg: "lock: interrupted while waiting"}
	}
	if err != nil {
		return err
	}
	cancel()

	child, err := startLocked(path, command, s)
	if err != nil {
		return err
	}
	lost, werr := superviseLocked(child, command[0], s, sigs, grace)
	closeCtx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	_ = s.Close(closeCtx)
	if lost {
		return &exitStatus{code: exitLost}
	}
	return &exitStatus{code: childStatus(werr)}
}

// openWithin opens the client within timeout when it is positive (the
// whole call, connecting included, is bounded by --timeout); otherwise the
// backends' connect timeout bounds connecting.
func openWithin(ctx context.Context, g *globals, timeout time.Duration) (*baton.Client, error) {
	if timeout <= 0 {
		return g.open(ctx)
	}
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := g.open(octx)
	if err != nil && octx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%w (--timeout %v ran out while connecting)", err, timeout)
	}
	return c, err
}

// cancelOnSignal returns a context that a signal on sigs cancels (while
// baton waits for its locks).
func cancelOnSignal(ctx context.Context, sigs <-chan os.Signal) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-sigs:
			cancel(errSignalled)
		case <-actx.Done():
		}
	}()
	return actx, func() { cancel(nil) }
}

// errSignalled is the cause of a context cancelled by a signal.
var errSignalled = errors.New("interrupted by a signal")

// startLocked starts CMD, with the session that holds its locks in its
// environment and its standard streams baton's own.
func startLocked(path string, command []string, s *baton.Session) (*exec.Cmd, error) {
	child := exec.Command(path, command[1:]...)
	child.Args[0] = command[0]
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = append(os.Environ(), "BATON_SESSION="+s.ID())
	dieWithParent(child)
	if err := child.Start(); err != nil {
		return nil, &cliError{code: 126, msg: fmt.Sprintf("lock: cannot run %s: %v", command[0], err)}
	}
	return child, nil
}

// superviseLocked waits for CMD to exit, passing signals on to it, and
// stops it (SIGTERM, then SIGKILL after grace) if the session loses its
// locks; it returns whether the locks were lost, and CMD's wait error.
func superviseLocked(child *exec.Cmd, name string, s *baton.Session, sigs <-chan os.Signal, grace time.Duration) (bool, error) {
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	done, lost := s.Done(), false
	for {
		select {
		case werr := <-exited:
			return lost, werr
		case sig := <-sigs:
			_ = child.Process.Signal(sig)
		case <-done:
			done, lost = nil, true // told once
			fmt.Fprintf(os.Stderr, "baton: lost: %v; sending SIGTERM to %s\n", s.Err(), name)
			terminate(child, grace)
		}
	}
}

// terminate sends CMD SIGTERM, and SIGKILL after grace.
func terminate(child *exec.Cmd, grace time.Duration) {
	_ = child.Process.Signal(syscall.SIGTERM)
	go func() {
		time.Sleep(grace)
		_ = child.Process.Kill()
	}()
}

// lockWithRetry takes the locks in a new session. A waiter whose session is
// lost before it got its locks has lost nothing: it carries on with a new
// session within what is left of its timeout (a try-once call tries once
// more). Only a holder's loss is an error (exit 77, in runLocked).
func lockWithRetry(ctx context.Context, c *baton.Client, owner string, req lockRequest) (*baton.Session, error) {
	if req.start.IsZero() {
		req.start = time.Now()
	}
	deadline := req.start.Add(req.timeout)
	retried := false
	for {
		s, started, err := lockInNewSession(ctx, c, owner, req, deadline)
		if err == nil {
			return s, nil
		}
		if !mayRetryLock(err, started, retried) {
			return nil, err
		}
		if waitedEnough(ctx, req.timeout, deadline, retried) {
			return nil, fmt.Errorf("%w: %v", baton.ErrTimeout, err)
		}
		retried = true
		fmt.Fprintf(os.Stderr, "baton: %v; waiting again with a new session\n", err)
		if !maintain.Sleep(ctx, 200*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// waitedEnough says whether a waiter whose session was lost stops: when
// interrupted, or when a new session already had its try and the timeout
// (unless forever) has run out.
func waitedEnough(ctx context.Context, timeout time.Duration, deadline time.Time, retried bool) bool {
	return ctx.Err() != nil || (timeout >= 0 && time.Now().After(deadline) && retried)
}

// mayRetryLock says whether a failed attempt is worth another session: a
// session lost while waiting is, and so is a session that cannot start
// once an earlier one was lost; the first session that cannot start is
// not (its error says why).
func mayRetryLock(err error, started, retried bool) bool {
	if started {
		return errors.Is(err, baton.ErrSessionLost)
	}
	return retried
}

// lockInNewSession starts a session and takes the locks in it within what
// is left until deadline; started says whether the session started. A
// session that did not get its locks is closed.
func lockInNewSession(ctx context.Context, c *baton.Client, owner string, req lockRequest, deadline time.Time) (*baton.Session, bool, error) {
	s, err := c.NewSession(ctx, baton.SessionOptions{Name: owner})
	if err != nil {
		return nil, false, err
	}
	if _, err = s.Lock(ctx, req.ns, req.mode, timeLeft(req.timeout, deadline), req.names...); err == nil {
		return s, true, nil
	}
	closeCtx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	_ = s.Close(closeCtx)
	ccancel()
	return nil, true, err
}

// timeLeft is the timeout left until deadline: 0 once it passed, and a
// timeout that is not positive (try once, or forever) as it is.
func timeLeft(timeout time.Duration, deadline time.Time) time.Duration {
	if timeout <= 0 {
		return timeout
	}
	return max(time.Until(deadline), 0)
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
(PostgreSQL and MySQL/MariaDB; on SQLite no other connection can see it).

A namespace, name or owner that is not printable text (a tab, a newline, a
control character, invalid UTF-8, or a leading '"') is shown Go-quoted
("a\tb"), so that every lock stays on one line and in its columns. --json
keeps names as they are; one that is not valid UTF-8 shows quoted, with its
exact bytes in name_base64 (namespace_base64).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withClient(cmd.Context(), func(c *baton.Client) error {
				ls, err := c.Locks(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(locksJSON(ls))
				}
				return printTable("no locks held or waited for",
					"TYPE\tNAMESPACE\tNAME\tMODE\tSTATUS\tSESSION\tOWNER\tSINCE\tTOKEN", ls, lockLine)
			})
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

// lockLine is one lock's line in the table of baton locks.
func lockLine(l baton.LockInfo) string {
	token := ""
	if l.Token != 0 {
		token = strconv.FormatInt(l.Token, 10)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", l.Type, display(l.Namespace), display(l.Name), l.Mode, l.Status,
		l.Session, display(l.Owner), l.Since.Local().Format("2006-01-02 15:04:05.000"), token)
}

// display is a name as a table shows it: as it is when it is printable
// UTF-8, else (a tab, a newline, a control character, invalid UTF-8, or a
// leading quote) Go-quoted, "a\tb", so that it stays in its column and
// on its line.
func display(s string) string {
	if !utf8.ValidString(s) || strings.HasPrefix(s, `"`) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// lockJSON is a lock in baton locks --json: a namespace or name that is
// not valid UTF-8 shows quoted (as in the table), its exact bytes in
// namespace_base64 or name_base64.
type lockJSON struct {
	baton.LockInfo
	NamespaceBase64 string `json:"namespace_base64,omitempty"`
	NameBase64      string `json:"name_base64,omitempty"`
}

// locksJSON is baton locks --json's array.
func locksJSON(ls []baton.LockInfo) []lockJSON {
	out := make([]lockJSON, len(ls))
	for i, l := range ls {
		out[i].LockInfo = l
		if !utf8.ValidString(l.Namespace) {
			out[i].Namespace, out[i].NamespaceBase64 = display(l.Namespace), base64.StdEncoding.EncodeToString([]byte(l.Namespace))
		}
		if !utf8.ValidString(l.Name) {
			out[i].Name, out[i].NameBase64 = display(l.Name), base64.StdEncoding.EncodeToString([]byte(l.Name))
		}
	}
	return out
}

// migrateActions are the actions of baton migrate: each returns every
// migration's state after it.
var migrateActions = map[string]func(context.Context, driver.Driver) ([]driver.MigrationStatus, error){
	"up": migrateUp,
	"status": func(ctx context.Context, d driver.Driver) ([]driver.MigrationStatus, error) {
		return d.MigrationStatus(ctx)
	},
}

// runMigrate runs a migrate action and prints every migration's state.
func runMigrate(ctx context.Context, g *globals, action string) error {
	d, err := g.openDriver(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	st, err := migrateActions[action](ctx, d)
	if err != nil {
		return err
	}
	if err := printMigrations(st); err != nil {
		return err
	}
	if err := notInstalled(st); err != nil {
		fmt.Fprintln(os.Stderr, "baton: "+err.Error())
	}
	return nil
}

// migrateUp creates the DSN's schema if need be and applies the pending
// migrations, with a progress line that says how many.
func migrateUp(ctx context.Context, d driver.Driver) ([]driver.MigrationStatus, error) {
	if err := createSchema(ctx, d); err != nil {
		return nil, err
	}
	st, err := d.MigrationStatus(ctx)
	if err != nil {
		return nil, err
	}
	sp := progress("migrate", fmt.Sprintf("applying %d pending migrations", countPending(st)))
	defer sp.stop()
	return d.Migrate(ctx)
}

// createSchema creates the schema the DSN names, on a backend that can,
// and says so when it did not exist.
func createSchema(ctx context.Context, d driver.Driver) error {
	cs, ok := d.(schemaCreator)
	if !ok {
		return nil
	}
	created, err := cs.CreateSchema(ctx)
	if created != "" && err == nil {
		fmt.Printf("created schema %s\n", created)
	}
	return err
}

// countPending counts the migrations not applied yet.
func countPending(st []driver.MigrationStatus) int {
	pending := 0
	for _, m := range st {
		if !m.Applied {
			pending++
		}
	}
	return pending
}

// printMigrations prints every migration with its state.
func printMigrations(st []driver.MigrationStatus) error {
	tw := newTable(os.Stdout, "VERSION\tNAME\tSTATE\tAPPLIED AT")
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
			if migrateActions[action] == nil {
				return usageErr("migrate: unknown action %q (use up or status)", action)
			}
			return runMigrate(cmd.Context(), g, action)
		},
	}
	return cmd
}
