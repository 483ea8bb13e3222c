// Command baton is the shell and cron face of baton: locks around commands,
// the lock monitor, migrations, benchmarks and a guided demo.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver"
	// The CLI links every backend; a Go program imports only the ones
	// it needs.
	_ "github.com/batonhq/baton/driver/mysql"
	_ "github.com/batonhq/baton/driver/postgres"
	_ "github.com/batonhq/baton/driver/sqlite"
)

// Exit statuses, documented in `baton --help` and `baton lock --help`.
const (
	exitOK          = 0
	exitError       = 1   // any other failure
	exitUsage       = 64  // bad flags, arguments, DSN or duration; empty command
	exitBadName     = 65  // invalid lock name or namespace
	exitUnavailable = 69  // database unreachable
	exitTimeout     = 75  // locks not obtained before the timeout
	exitDeadlock    = 76  // chosen as a deadlock victim
	exitLost        = 77  // the session (and its locks) was lost while CMD ran
	exitNoExec      = 126 // CMD was found but cannot be executed
	exitNotFound    = 127 // CMD was not found
	exitInterrupted = 130 // interrupted (SIGINT/SIGTERM/SIGHUP) before baton was done
)

const exitHelp = `Exit statuses (when baton itself fails; otherwise CMD's own status):
  64  usage: unknown command or flag, bad argument, bad DSN, bad duration
      (durations need a unit: 500ms, 10s, 2m), no command
  65  name: invalid lock name or namespace (empty, longer than 64 characters)
  69  unavailable: the database cannot be reached
  75  timeout: the locks were not obtained before --timeout
  76  deadlock: this request was chosen as a deadlock victim
  77  lost: the locks were lost while CMD ran (CMD got SIGTERM); a waiter
      whose session is lost before it got its locks waits again with a new
      session instead
 126  CMD was found but cannot be executed
 127  CMD was not found
 130  interrupted (SIGINT, SIGTERM) before baton was done: while connecting,
      waiting for the locks, or running the demo
   1  any other error`

// lookCommand finds CMD as a shell would, and fails as a shell does: 127
// when it is not found, 126 when it is found but cannot be executed.
func lookCommand(what, name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	if errors.Is(err, fs.ErrPermission) {
		return "", &cliError{code: exitNoExec, msg: fmt.Sprintf("%s: command %q cannot be executed (permission denied)", what, name)}
	}
	return "", &cliError{code: exitNotFound, msg: fmt.Sprintf("%s: command %q not found", what, name)}
}

// cliError carries an exit status and a one-line message.
type cliError struct {
	code int
	msg  string
}

func (e *cliError) Error() string { return e.msg }

func usageErr(format string, a ...any) error {
	return &cliError{code: exitUsage, msg: fmt.Sprintf(format, a...)}
}

// errorClasses maps the library's errors to exit statuses and the word put
// before their message, tried in this order.
var errorClasses = []struct {
	err    error
	code   int
	prefix string
}{
	{baton.ErrTimeout, exitTimeout, "timeout: "},
	{baton.ErrDeadlock, exitDeadlock, "deadlock: "},
	{baton.ErrWrongName, exitBadName, ""},
	{baton.ErrSessionLost, exitLost, "lost: "},
	{baton.ErrBadDSN, exitUsage, ""},
	{baton.ErrInvalid, exitUsage, ""},
}

// classify maps an error to its exit status and the word that names it.
func classify(err error) (int, string) {
	var ce *cliError
	if errors.As(err, &ce) {
		return ce.code, ce.msg
	}
	for _, c := range errorClasses {
		if errors.Is(err, c.err) {
			return c.code, c.prefix + err.Error()
		}
	}
	if msg, ok := privilegeErr(err); ok {
		return exitError, msg
	}
	if isUnavailable(err) {
		return exitUnavailable, "database unavailable: " + err.Error()
	}
	return exitError, err.Error()
}

// privilegeErr says which privilege a user lacks, when the server refused
// a statement for it: the server's own sentence (not the baton routine or
// query that ran into it), and what baton needs.
func privilegeErr(err error) (string, bool) {
	var pe *pgconn.PgError
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &pe) && pe.Code == "42501":
		return deniedLine(pe.Message, pgPrivileges), true
	case errors.As(err, &pe) && pe.Code == "3F000":
		// The search_path schema is skipped when the user may not use it.
		return "no schema to create baton's tables in: " + pe.Message + ": the search_path schema does not exist or the user lacks USAGE on it; " + pgPrivileges, true
	case errors.As(err, &me) && slices.Contains([]uint16{1044, 1142, 1143, 1227, 1370}, me.Number):
		return deniedLine(me.Message, mysqlPrivileges), true
	case strings.Contains(err.Error(), "permission denied for schema"):
		return err.Error() + "; " + pgPrivileges, true
	}
	return "", false
}

// deniedLine is the line of a refused privilege: the server's sentence,
// then what baton needs.
func deniedLine(server, needs string) string {
	if !strings.HasPrefix(strings.ToLower(server), "permission denied") {
		server = "permission denied: " + server
	}
	return server + "; " + needs
}

// The privileges baton needs (README, "Privileges").
const (
	pgPrivileges    = "baton needs USAGE on its schema, SELECT, INSERT, UPDATE and DELETE on its tables, USAGE on its sequences and EXECUTE on its functions (baton migrate also CREATE on the schema)"
	mysqlPrivileges = "baton needs SELECT, INSERT, UPDATE, DELETE and EXECUTE on the database (baton migrate also CREATE, ALTER, INDEX, DROP, TRIGGER and CREATE ROUTINE)"
)

// usageCheck is one rule a command's arguments must keep: when bad is
// true, the command stops with msg as a usage error.
type usageCheck struct {
	bad bool
	msg string
}

// firstUsageErr returns the usage error of the first broken rule, named
// by the command what, or nil when every rule is kept.
func firstUsageErr(what string, checks ...usageCheck) error {
	for _, c := range checks {
		if c.bad {
			return usageErr("%s: %s", what, c.msg)
		}
	}
	return nil
}

func isUnavailable(err error) bool {
	if errors.Is(err, baton.ErrNoAnswer) {
		return true // connected, then the server stopped answering
	}
	s := err.Error()
	for _, w := range []string{"connection refused", "connect to", "no such host", "i/o timeout", "unable to open database"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// globals are the flags every command shares.
type globals struct {
	dsn    string
	prefix string
	// readOnly: the command only reads (readOnlyCommands), and its client
	// never installs or upgrades baton's schema.
	readOnly bool
	// stmtTimeout bounds each statement once connected
	// (--statement-timeout, Options.StatementTimeout); 0: no bound.
	stmtTimeout time.Duration
}

// defaultStatementTimeout is --statement-timeout's default (as the
// library's Options.StatementTimeout).
const defaultStatementTimeout = 30 * time.Second

// statementTimeout is Options.StatementTimeout for --statement-timeout:
// negative (none) for 0.
func (g *globals) statementTimeout() time.Duration {
	if g.stmtTimeout <= 0 {
		return -1
	}
	return g.stmtTimeout
}

// options are the client options of a command's client named name.
func (g *globals) options(name string) baton.Options {
	return baton.Options{Prefix: g.prefix, Name: name, StatementTimeout: g.statementTimeout()}
}

// openDriver opens the backend alone (no client, no migration), its
// statements bounded by --statement-timeout.
func (g *globals) openDriver(ctx context.Context) (driver.Driver, error) {
	d, err := driver.Open(ctx, g.dsn, g.prefix)
	if err != nil {
		return nil, err
	}
	d.SetStatementTimeout(g.statementTimeout())
	return d, nil
}

// statementTimeoutFromEnv applies BATON_STATEMENT_TIMEOUT when
// --statement-timeout is not given.
func (g *globals) statementTimeoutFromEnv(cmd *cobra.Command) error {
	if g.stmtTimeout < 0 {
		return usageErr("--statement-timeout %v is negative: use 0 for no bound, or a positive duration", g.stmtTimeout)
	}
	v := os.Getenv("BATON_STATEMENT_TIMEOUT")
	if v == "" || cmd.Flags().Changed("statement-timeout") {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return usageErr("BATON_STATEMENT_TIMEOUT %q is not a duration: %s (examples: 0, 10s, 2m)", v, durationProblem(v))
	}
	if d < 0 {
		return usageErr("BATON_STATEMENT_TIMEOUT %q is negative: use 0 for no bound, or a positive duration", v)
	}
	g.stmtTimeout = d
	return nil
}

// readOnlyCommands only read: on a database without baton's schema (or an
// older one) they say so and how to install it, instead of installing it.
var readOnlyCommands = map[string]bool{
	"baton locks": true, "baton queue stats": true, "baton queue list": true, "baton queue get": true,
	"baton queue dead": true, "baton events list": true,
}

func defaultDSN() string {
	if v := os.Getenv("BATON_DSN"); v != "" {
		return v
	}
	return "sqlite:baton.db"
}

func (g *globals) open(ctx context.Context) (*baton.Client, error) {
	opts := g.options("baton-cli")
	opts.MaxConns = cliConns
	if !g.readOnly {
		return baton.Open(ctx, g.dsn, opts)
	}
	drv, err := g.openDriver(ctx)
	if err != nil {
		return nil, err
	}
	st, err := drv.MigrationStatus(ctx)
	if err == nil {
		err = notInstalled(st)
	}
	if err != nil {
		drv.Close()
		return nil, err
	}
	opts.NoMigrate = true
	return baton.NewClient(ctx, drv, opts)
}

// notInstalled says that baton is not installed, or not up to date, in a
// database whose migrations are st, and how to install it.
func notInstalled(st []driver.MigrationStatus) error {
	switch pending := countPending(st); pending {
	case 0:
		return nil
	case len(st):
		return errors.New("baton is not installed in this database (no migration applied): install it with `baton migrate` (with the same --dsn and --prefix)")
	default:
		return fmt.Errorf("baton's schema in this database is older than this program (%d of %d migrations pending): upgrade it with `baton migrate`", pending, len(st))
	}
}

// cliConns bounds the server connections of a command's statements
// (Options.MaxConns): a process holding its locks holds one connection,
// one that waits two (the listener), an idle worker two (on MySQL/MariaDB
// one more for a moment while it wakes other processes). A fleet of cron
// jobs waiting on one lock fits the server's max_connections.
const cliConns = 1

// withClient runs op with a client of the command's database, closed after.
func (g *globals) withClient(ctx context.Context, op func(*baton.Client) error) error {
	c, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return op(c)
}

// onArg makes the RunE of a command that calls one Client method on its
// one argument and prints done (a format taking the argument) once it did.
func (g *globals) onArg(call func(*baton.Client, context.Context, string) error, done string) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return g.withClient(cmd.Context(), func(c *baton.Client) error {
			if err := call(c, cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Printf(done, args[0])
			return nil
		})
	}
}

// commands make baton's commands, added to the root in this order.
var commands = []func(*globals) *cobra.Command{
	lockCmd, locksCmd, migrateCmd, demoCmd, versionCmd,
	benchCmd, eventsCmd, notifyCmd, listenCmd, queueCmd, serveCmd, workCmd,
	uninstallCmd,
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "baton",
		Short: "Locks, queues and notifications on the SQL database you already run",
		Long: `baton turns the SQL database an application already runs (SQLite by default,
PostgreSQL, MySQL/MariaDB) into its coordination layer.

The database is chosen with --dsn or BATON_DSN:
  sqlite:PATH | sqlite:///ABS/PATH | postgres://user@host:5432/db | mysql://user:pass@host:3306/db
The default is sqlite:baton.db in the current directory. On PostgreSQL,
?search_path=SCHEMA picks the schema of baton's tables (baton migrate creates
it when it does not exist); other parameters pass through to the backend's
driver. Every parameter is listed in docs/dsn.md. baton uninstall lists
everything baton installed in the database, and removes it with --yes.

The commands that only read (locks, queue stats|list|get|dead, events list,
migrate status) never install baton's schema: on a database without it they
say so, and baton migrate installs it (other commands install it on first
use). Connecting is bounded (5s by default; docs/dsn.md), and so is each
statement once connected (--statement-timeout, 30s by default): a database
that stops answering fails the command with exit status 69.

A command that does not wait (queue push, a lock obtained at once) opens one
connection; one that waits for a lock, and baton work, hold two. A server out
of connection slots is waited for. bench, migrate, queue redrive and queue purge show a progress
line on stderr when it is a terminal. baton version (or --version) prints the
version, commit, Go version and linked drivers; baton completion bash|zsh|fish
prints a shell completion script.

` + exitHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.dsn, "dsn", defaultDSN(), "database to use (env BATON_DSN)")
	root.PersistentFlags().StringVar(&g.prefix, "prefix", os.Getenv("BATON_PREFIX"), "table name prefix (env BATON_PREFIX; default baton_)")
	root.PersistentFlags().DurationVar(&g.stmtTimeout, "statement-timeout", defaultStatementTimeout, "once connected, bound each statement: a database that stops answering fails the command, exit 69 (env BATON_STATEMENT_TIMEOUT; 0: no bound)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		g.readOnly = readOnlyCommands[cmd.CommandPath()]
		return g.statementTimeoutFromEnv(cmd)
	}
	root.SetFlagErrorFunc(flagErr)
	for _, add := range commands {
		root.AddCommand(add(g))
	}
	setVersion(root)
	refuseUnknownCommands(root)
	return root
}

// refuseUnknownCommands makes every command that only groups others (and
// baton itself) exit 64 for an unknown subcommand, naming the known ones,
// and print its help when it is given none.
func refuseUnknownCommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownCommands(sub)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return usageErr("%s: unknown command %q (use %s)", cmd.CommandPath(), args[0], strings.Join(names, ", "))
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRoot().ExecuteContext(ctx)
	if err == nil {
		os.Exit(exitOK)
	}
	var ex *exitStatus
	if errors.As(err, &ex) {
		os.Exit(ex.code)
	}
	code, msg := classify(err)
	if ctx.Err() != nil && code != exitInterrupted {
		// SIGINT or SIGTERM came, and the command failed for it (cut
		// short while connecting, waiting or running the demo).
		code, msg = exitInterrupted, "interrupted: "+msg
	}
	fmt.Fprintln(os.Stderr, "baton: "+oneLine(msg))
	os.Exit(code)
}

// exitStatus makes baton exit with a status without printing anything
// (used to pass on CMD's status).
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// oneLine folds a message onto one line and drops the "baton: " prefixes
// that wrapped library errors carry.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "baton: ", "")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxLine {
		// Whatever echoed a huge argument, stderr gets one readable line.
		cut := strings.ToValidUTF8(s[:maxLine], "")
		s = fmt.Sprintf("%s… (%d more bytes)", cut, len(s)-len(cut))
	}
	return s
}

// maxLine bounds the error line baton prints.
const maxLine = 2000

// parseTimeout accepts a duration (durations need a unit, as every
// duration flag of baton's: 0, 500ms, 10s, 2m), or "forever"/"inf".
func parseTimeout(s string) (time.Duration, error) {
	switch strings.ToLower(s) {
	case "forever", "inf", "infinite":
		return baton.Forever, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, usageErr("--timeout %q is not a duration: %s (examples: 0, 500ms, 10s, 2m, forever)", s, durationProblem(s))
	}
	if d < 0 {
		// Only the spelled-out forms mean forever: a negative duration is
		// more likely a typo than a wish to wait without end.
		return 0, usageErr("--timeout %q is negative: use 0 to try once, a positive duration, or forever", s)
	}
	return d, nil
}

// durationProblem says what is wrong with a duration time.ParseDuration
// refused.
func durationProblem(s string) string {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return "a duration needs a unit"
	}
	return "write a number and a unit (ns, us, ms, s, m, h)"
}

// flagErr is the usage error of a bad flag: for a duration flag, one
// message for every duration (a unit is required), as --timeout's.
func flagErr(_ *cobra.Command, err error) error {
	if m := badDurationFlag.FindStringSubmatch(err.Error()); m != nil {
		return usageErr("%s %q is not a duration: %s (examples: 500ms, 10s, 2m)", m[2], m[1], durationProblem(m[1]))
	}
	return usageErr("%v", err)
}

// badDurationFlag matches pflag's error for a duration flag's bad value.
var badDurationFlag = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: time: `)

// newTable starts a table of aligned columns on w with its header line.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

// printTable prints a table on standard output: header, then one line per
// item, or only the line empty when there is no item.
func printTable[T any](empty, header string, items []T, line func(T) string) error {
	if len(items) == 0 {
		fmt.Println(empty)
		return nil
	}
	tw := newTable(os.Stdout, header)
	for _, it := range items {
		fmt.Fprintln(tw, line(it))
	}
	return tw.Flush()
}

// printJSON writes v to standard output as indented JSON.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
