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
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/internal/bench"
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
	var backend string
	var asJSON bool
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "locks [--backend sqlite|postgres|mysql] [--json] [--duration D]",
		Short: "Benchmark locks: uncontended pairs, hand-off, contention, deadlock detection",
		Long: `Benchmark baton's locks on one backend, in a scratch database (a temporary
SQLite file, a new PostgreSQL schema, a new MySQL/MariaDB database) dropped at
the end.

Cases:
  lock_pair        uncontended Lock(write, timeout 0) + Release; ops/s = pairs/s
                   baseline: pg_advisory_lock/unlock, GET_LOCK(name,0)/RELEASE_LOCK
  multi10          Lock(write, timeout 0) of 10 names in one call + Release;
                   ops/s = calls/s; baseline: 10 native lock calls and one
                   pg_advisory_unlock_all() / RELEASE_ALL_LOCKS()
  handoff          latency from the holder's Release to the waiter's Lock
                   returning (two clients); baseline: the native blocking lock
  handoff_process  the same with the waiter in a child process (SQLite and
                   MySQL wake clients of one process directly: this is their
                   figure for separate processes); baseline as for handoff
  contend8         8 sessions on 2 clients loop Lock(write, forever)+Release;
                   ops/s = acquisitions/s; baseline: the native lock on 8
                   connections
  deadlock_detect  latency from the request that closes a 2-cycle to its
                   deadlock error

ratio is ops/s ÷ baseline ops/s for lock_pair, multi10 and contend8 (above 1: faster
than native) and p50 ÷ baseline p50 for handoff and handoff_process (above 1: slower than
native).

The server: --backend sqlite (the default) uses a temporary file; postgres uses
$BATON_TEST_POSTGRES or postgres://postgres@127.0.0.1:5432/test; mysql uses
$BATON_TEST_MYSQL or mysql://root@127.0.0.1:3306/test. An explicit --dsn names
the server instead (the scratch schema or database is created inside it; for
sqlite the scratch file goes next to the named file).`,
		Example: `  baton bench locks
  baton bench locks --backend postgres --json
  baton --dsn postgres://bench@db.internal:5432/app bench locks --duration 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if duration <= 0 {
				return usageErr("bench locks: --duration %v must be positive", duration)
			}
			backend, server, err := benchTarget(cmd, g, "bench locks", backend)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench: cannot find this program to run the child process: %w", err)
			}
			cfg := bench.Config{
				Backend:  backend,
				Server:   server,
				Duration: duration,
				Child: func(dsn string) *exec.Cmd {
					return exec.Command(exe, "--dsn", dsn, "bench", "child")
				},
			}
			return runBench(cmd.Context(), "bench locks", backend, asJSON,
				benchTable(true, "ratio: lock_pair, multi10, contend8 = ops/s ÷ baseline ops/s (above 1 is faster); handoff, handoff_process = p50 ÷ baseline p50 (above 1 is slower)"),
				func(progress func(string)) ([]bench.Record, error) {
					cfg.Progress = progress
					return bench.Run(cmd.Context(), cfg)
				})
		},
	}
	cmd.Flags().StringVar(&backend, "backend", "", "sqlite (default), postgres or mysql")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record per line, and nothing else")
	cmd.Flags().DurationVar(&duration, "duration", 3*time.Second, "roughly how long each case runs")
	return cmd
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
	return func(w io.Writer, recs []bench.Record) error {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		head := "CASE\tBACKEND\tOPS\tOPS/S\tP50 µs\tP99 µs\tBASELINE\tBASE OPS/S"
		if baseP50 {
			head += "\tBASE P50 µs"
		}
		fmt.Fprintln(tw, head+"\tRATIO")
		num := func(v float64, prec int) string {
			if v == 0 {
				return "-"
			}
			return fmt.Sprintf("%.*f", prec, v)
		}
		for _, r := range recs {
			base := r.Baseline
			if base == "" {
				base = "-"
			}
			cols := []string{r.Name, r.Backend, fmt.Sprint(r.Ops), num(r.OpsPerSec, 0), num(r.P50us, 0), num(r.P99us, 0),
				base, num(r.BaselineOpsPerSec, 0)}
			if baseP50 {
				cols = append(cols, num(r.BaselineP50us, 0))
			}
			fmt.Fprintln(tw, strings.Join(append(cols, num(r.Ratio, 2)), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintln(w, footer)
		return err
	}
}

// runBench runs one benchmark suite with a spinner on a terminal, and
// prints its records as a table or as JSON lines.
func runBench(ctx context.Context, what, backend string, asJSON bool,
	table func(io.Writer, []bench.Record) error,
	run func(progress func(string)) ([]bench.Record, error)) error {
	var sp *spinner
	var progress func(string)
	if !asJSON && isTerminal(os.Stderr) {
		sp = startSpinner(os.Stderr, "bench "+backend, "preparing")
		progress = sp.set
	}
	recs, runErr := run(progress)
	if sp != nil {
		sp.stop()
	}
	if ctx.Err() != nil {
		// Figures cut short by an interrupt are not figures.
		return &cliError{code: 130, msg: what + ": interrupted"}
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	} else if len(recs) > 0 {
		if err := table(os.Stdout, recs); err != nil {
			return err
		}
	}
	return runErr
}

// benchTarget resolves which backend and server a bench command measures:
// --backend, or the backend of --dsn when it was given (a scratch schema or
// database is made inside that server); SQLite by default.
func benchTarget(cmd *cobra.Command, g *globals, what, backend string) (string, string, error) {
	if backend != "" && !slices.Contains(bench.Backends, backend) {
		return "", "", usageErr("%s: unknown --backend %q (use sqlite, postgres or mysql)", what, backend)
	}
	server := ""
	if cmd.Flags().Changed("dsn") {
		b, err := bench.BackendOf(g.dsn)
		if err != nil {
			return "", "", usageErr("%s: --dsn: %v", what, err)
		}
		if backend != "" && backend != b {
			return "", "", usageErr("%s: --backend %s does not match --dsn, which names a %s server", what, backend, b)
		}
		if err := bench.CheckServer(b, g.dsn); err != nil {
			return "", "", usageErr("%s: --dsn: %v", what, err)
		}
		backend, server = b, g.dsn
	}
	if backend == "" {
		backend = "sqlite"
	}
	return backend, server, nil
}
