package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/cmd/baton/internal/bench"
)

func benchCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure baton against the database's own primitives",
		Long: `Measure baton on a backend, side by side with the database's native
primitive in the same run, in a scratch database that is dropped afterwards.
See docs/benchmarks.md for the cases and published figures. The running case
is shown on a progress line on stderr when stderr is a terminal (not with
--json).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(benchLocksCmd(g), benchQueueCmd(g), benchEventsCmd(g), benchChildCmd(g))
	return cmd
}

func benchLocksCmd(g *globals) *cobra.Command {
	var f benchFlags
	var cases []string
	cmd := &cobra.Command{
		Use:   "locks [--backend sqlite|postgres|mysql] [--json] [--duration D] [--case NAME,...]",
		Short: "Benchmark locks: uncontended pairs, hand-off, contention, readers, deadlock detection",
		Long: `Benchmark baton's locks on one backend, in a scratch database (a temporary
SQLite file, a new PostgreSQL schema, a new MySQL/MariaDB database) dropped at
the end.

Cases:
  lock_pair        uncontended Lock(write, timeout 0) + Release; ops/s = pairs/s
                   baseline: pg_advisory_lock/unlock, GET_LOCK(name,0)/RELEASE_LOCK
  multi10          Lock(write, timeout 0) of 10 names in one call + Release;
                   ops/s = calls/s; baseline: 10 native lock calls and one
                   pg_advisory_unlock_all() / RELEASE_ALL_LOCKS()
  try_held         Lock(write, timeout 0) of a name another client's session
                   holds, refused (ErrTimeout); ops/s = calls/s; baseline:
                   pg_try_advisory_lock / GET_LOCK(name,0) on a lock another
                   connection holds
  reenter          a user-level lock (GetLock) taken twice by one session and
                   released one instance at a time (ReleaseLock twice);
                   ops/s = cycles/s; baseline: the native lock taken twice
                   and released twice on one connection
  handoff          latency from the holder's Release to the waiter's Lock
                   returning (two clients); baseline: the native blocking lock
  handoff_process  the same with the waiter in a child process (SQLite and
                   MySQL wake clients of one process directly: this is their
                   figure for separate processes); baseline as for handoff
  handoff_waited   handoff with the waiter queued 100 ms before the release
                   (past the turnstile's first 25 ms, after which a waiter
                   that holds other locks waits in the lock table; this
                   one holds none); baseline as for handoff, queued as long
  handoff_table    handoff_waited with the waiter's session holding another
                   lock, so that its wait goes to the lock table; baseline
                   as for handoff_waited
  contend8         8 sessions on 2 clients loop Lock(write, forever)+Release;
                   ops/s = acquisitions/s, counted after a 500 ms warm-up
                   (connections opened); baseline: the native lock on 8
                   connections, after the same warm-up
  readers8         contend8 with Lock(read, forever): readers, which do
                   not conflict; baseline: pg_advisory_lock_shared on 8
                   connections (none on MySQL: GET_LOCK has no shared mode)
  deadlock_detect  latency from the request that closes a 2-cycle to its
                   deadlock error

ratio is ops/s ÷ baseline ops/s for lock_pair, multi10, try_held, reenter, contend8 and readers8 (above 1: faster
than native) and p50 ÷ baseline p50 for handoff, handoff_process, handoff_waited and
handoff_table (above 1: slower than native).

The server: --backend sqlite (the default) uses a temporary file; postgres uses
$BATON_TEST_POSTGRES or postgres://postgres@127.0.0.1:5432/test; mysql uses
$BATON_TEST_MYSQL or mysql://root@127.0.0.1:3306/test. An explicit --dsn names
the server instead (the scratch schema or database is created inside it; for
sqlite the scratch file goes next to the named file).

--rtt adds a round-trip time to every statement's trip to a postgres or mysql
server (baton's and the baseline's alike), through a proxy in this process that
holds the bytes for half of it each way: the figures as over a network link of
that latency instead of loopback (every bench command has it).`,
		Example: `  baton bench locks
  baton bench locks --backend postgres --json
  baton bench locks --backend mysql --case lock_pair,contend8
  baton bench locks --backend postgres --rtt 500us --case handoff,handoff_table
  baton --dsn postgres://bench@db.internal:5432/app bench locks --duration 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.duration <= 0 {
				return usageErr("bench locks: --duration %v must be positive", f.duration)
			}
			for _, c := range cases {
				if !slices.Contains(bench.Cases, c) {
					return usageErr("bench locks: no case %q (the cases: %s)", c, strings.Join(bench.Cases, ", "))
				}
			}
			return f.run(cmd, g, "bench locks", locksBenchTable, func(backend, server string, progress func(string)) ([]bench.Record, error) {
				child, err := benchChild()
				if err != nil {
					return nil, err
				}
				cfg := bench.Config{Backend: backend, Server: server, Duration: f.duration, Only: cases, Child: child, Progress: progress}
				return bench.Run(cmd.Context(), cfg)
			})
		},
	}
	f.add(cmd, "roughly how long each case runs")
	cmd.Flags().StringSliceVar(&cases, "case", nil, "run only these cases (comma-separated, or the flag repeated; default: all)")
	return cmd
}

// locksBenchTable prints lock records.
var locksBenchTable = benchTable(true, "ratio: lock_pair, multi10, try_held, reenter, contend8, readers8 = ops/s ÷ baseline ops/s (above 1 is faster); handoff, handoff_process, handoff_waited, handoff_table = p50 ÷ baseline p50 (above 1 is slower)")

// benchChild returns the waiter process of the handoff_process case: this
// program again, running bench child on the scratch database.
func benchChild() (func(dsn string) *exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: cannot find this program to run the child process: %w", err)
	}
	return func(dsn string) *exec.Cmd {
		return exec.Command(exe, "--dsn", dsn, "bench", "child")
	}, nil
}

// benchFlags are the flags every bench command has.
type benchFlags struct {
	backend  string
	asJSON   bool
	duration time.Duration
	rtt      time.Duration
}

// add defines the flags on cmd; durationHelp says what --duration bounds.
func (f *benchFlags) add(cmd *cobra.Command, durationHelp string) {
	cmd.Flags().StringVar(&f.backend, "backend", "", "sqlite (default), postgres or mysql")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print one JSON object per record per line, and nothing else")
	cmd.Flags().DurationVar(&f.duration, "duration", 3*time.Second, durationHelp)
	cmd.Flags().DurationVar(&f.rtt, "rtt", 0, "round-trip time added to every statement (postgres, mysql), as over a network (e.g. 500us)")
}

// run measures a suite on the backend and server the flags (and --dsn)
// name, and prints its records as JSON lines or with table.
func (f *benchFlags) run(cmd *cobra.Command, g *globals, what string, table func(io.Writer, []bench.Record) error,
	suite func(backend, server string, progress func(string)) ([]bench.Record, error)) error {
	backend, server, err := benchTarget(cmd, g, what, f.backend)
	if err != nil {
		return err
	}
	if f.rtt < 0 {
		return usageErr("%s: --rtt %v must not be negative", what, f.rtt)
	}
	server, stop, err := bench.DelayServer(backend, server, f.rtt)
	if err != nil {
		return usageErr("%s: --rtt: %v", what, strings.TrimPrefix(err.Error(), "bench: "))
	}
	defer stop()
	return runBench(cmd.Context(), what, backend, f.asJSON, table, func(progress func(string)) ([]bench.Record, error) {
		return suite(backend, server, progress)
	})
}

// benchChildCmd is the waiter process of the handoff_process case; the
// parent runs this program again with it and talks over stdin and stdout.
func benchChildCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "child",
		Short:  "Waiter process of the cross-process hand-off benchmark (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return bench.ServeChild(cmd.Context(), g.dsn, os.Stdin, os.Stdout)
		},
	}
}

// benchTable returns a printer of records as a table, with a baseline p50
// column when latency baselines are part of the suite, and a footer line
// saying what the ratio means.
func benchTable(baseP50 bool, footer string) func(io.Writer, []bench.Record) error {
	head := "CASE\tBACKEND\tOPS\tOPS/S\tP50 µs\tP99 µs\tBASELINE\tBASE OPS/S"
	if baseP50 {
		head += "\tBASE P50 µs"
	}
	return func(w io.Writer, recs []bench.Record) error {
		tw := newTable(w, head+"\tRATIO")
		for _, r := range recs {
			fmt.Fprintln(tw, strings.Join(benchColumns(r, baseP50), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintln(w, footer)
		return err
	}
}

// benchColumns are a record's cells in the table.
func benchColumns(r bench.Record, baseP50 bool) []string {
	cols := []string{r.Name, r.Backend, fmt.Sprint(r.Ops), figure(r.OpsPerSec, 0), figure(r.P50us, 0), figure(r.P99us, 0),
		orDash(r.Baseline), figure(r.BaselineOpsPerSec, 0)}
	if baseP50 {
		cols = append(cols, figure(r.BaselineP50us, 0))
	}
	return append(cols, figure(r.Ratio, 2))
}

// figure prints a measured value with prec decimals, or - when there is
// none.
func figure(v float64, prec int) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// runBench runs one benchmark suite with a spinner on a terminal, and
// prints its records as a table or as JSON lines.
func runBench(ctx context.Context, what, backend string, asJSON bool,
	table func(io.Writer, []bench.Record) error,
	run func(progress func(string)) ([]bench.Record, error)) error {
	sp, progress := benchProgress(asJSON, backend)
	recs, runErr := run(progress)
	sp.stop()
	if ctx.Err() != nil {
		// Figures cut short by an interrupt are not figures.
		return &cliError{code: 130, msg: what + ": interrupted"}
	}
	if err := printRecords(recs, asJSON, table); err != nil {
		return err
	}
	return runErr
}

// benchProgress starts the spinner of a suite on a terminal (not with
// --json) and returns it with the function that names the running case;
// nil and nil otherwise.
func benchProgress(asJSON bool, backend string) (*spinner, func(string)) {
	if asJSON || !isTerminal(os.Stderr) {
		return nil, nil
	}
	sp := startSpinner(os.Stderr, "bench "+backend, "preparing")
	return sp, sp.set
}

// printRecords prints a suite's records: one JSON object a line, or a
// table when there is any.
func printRecords(recs []bench.Record, asJSON bool, table func(io.Writer, []bench.Record) error) error {
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(recs) == 0 {
		return nil
	}
	return table(os.Stdout, recs)
}

// benchTarget resolves which backend and server a bench command measures:
// --backend, or the backend of --dsn when it was given (a scratch schema or
// database is made inside that server); SQLite by default.
func benchTarget(cmd *cobra.Command, g *globals, what, backend string) (string, string, error) {
	if backend != "" && !slices.Contains(bench.Backends, backend) {
		return "", "", usageErr("%s: unknown --backend %q (use sqlite, postgres or mysql)", what, backend)
	}
	if cmd.Flags().Changed("dsn") {
		b, err := serverBackend(what, g.dsn, backend)
		if err != nil {
			return "", "", err
		}
		return b, g.dsn, nil
	}
	if backend == "" {
		backend = "sqlite"
	}
	return backend, "", nil
}

// serverBackend is the backend of the server --dsn names, which must be
// the one --backend names, if any, and a server a scratch database can
// be made in.
func serverBackend(what, dsn, backend string) (string, error) {
	b, err := bench.BackendOf(dsn)
	if err != nil {
		return "", usageErr("%s: --dsn: %v", what, err)
	}
	if backend != "" && backend != b {
		return "", usageErr("%s: --backend %s does not match --dsn, which names a %s server", what, backend, b)
	}
	if err := bench.CheckServer(b, dsn); err != nil {
		return "", usageErr("%s: --dsn: %v", what, err)
	}
	return b, nil
}
