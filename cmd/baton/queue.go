package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bench"
)

func queueCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Push, list, inspect, cancel and retry messages; pause queues; handle dead letters",
		Long: `Durable queues in the database. Messages are pushed here (or by programs
through the Go API) and processed by baton work (or Client.Work).

Queue names: 1 to 64 letters, digits, '_', '.', ':' or '-'.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr("queue: unknown command %q (use push, stats, list, get, cancel, retry, delete, pause, resume, dead, redrive or purge)", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(queuePushCmd(g), queueStatsCmd(g), queueListCmd(g), queueGetCmd(g), queueCancelCmd(g),
		queueDeadCmd(g), queueRedriveCmd(g), queuePurgeCmd(g),
		queuePauseCmd(g, true), queuePauseCmd(g, false),
		queueMessageCmd(g, "retry", "Make a waiting message due now",
			"Make message ID, delayed or backing off before a retry, due at once.", (*baton.Client).RetryNow),
		queueMessageCmd(g, "delete", "Delete a waiting message",
			"Delete message ID, which waits (scheduled, ready or retrying).", (*baton.Client).DeleteMessage))
	return cmd
}

func queuePushCmd(g *globals) *cobra.Command {
	var delay, timeout, uniqueFor time.Duration
	var priority, maxAttempts int
	var key, unique, kind string
	var uniqueStates []string
	cmd := &cobra.Command{
		Use:   "push QUEUE [PAYLOAD|-]",
		Short: "Add a message to a queue and print its id",
		Long: fmt.Sprintf(`Add one message to QUEUE and print its id. The payload is PAYLOAD, or
standard input when PAYLOAD is - or missing; it must not be empty and holds
at most %d bytes (1 MiB). Consumers waiting on the queue wake once it commits.

--unique-key KEY adds the message only if no message with that unique key
waits or runs in QUEUE (with --unique-for D: none was enqueued with it in the
same period D; with --unique-states S,...: none is in one of those states,
for example completed,ready,running to keep the key through completion while
the history keeps the message); otherwise it adds nothing and prints the
holder's id followed by the word duplicate. --kind K names the worker that handles the message. --timeout D bounds each run of the message's handler (baton
work kills a command that runs longer; the attempt fails).

Bad input (a bad queue name, an empty or oversized payload, a negative
--delay, a non-numeric --priority, a --max-attempts below 1) exits 64 with a
one-line error and enqueues nothing.`, baton.MaxMessagePayload),
		Example: `  baton queue push mail '{"to":"ann@example.com"}'
  render-report | baton queue push reports --priority -1 --max-attempts 3
  baton queue push mail --delay 10m --key customer-42 - < message.json`,
		Args: argsUsage("queue push", 1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			queue := args[0]
			if err := baton.ValidateQueue(queue); err != nil {
				return invalidUsage("queue push", err)
			}
			if delay < 0 {
				return usageErr("queue push: --delay %v is negative", delay)
			}
			if cmd.Flags().Changed("max-attempts") && maxAttempts < 1 {
				return usageErr("queue push: --max-attempts %d: give at least 1", maxAttempts)
			}
			var payload []byte
			if len(args) == 2 && args[1] != "-" {
				payload = []byte(args[1])
			} else {
				b, err := io.ReadAll(io.LimitReader(os.Stdin, baton.MaxMessagePayload+1))
				if err != nil {
					return fmt.Errorf("queue push: read standard input: %w", err)
				}
				payload = b
			}
			switch {
			case len(payload) == 0:
				return usageErr("queue push: empty payload")
			case len(payload) > baton.MaxMessagePayload:
				return usageErr("queue push: payload is more than %d bytes", baton.MaxMessagePayload)
			}
			c, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			o := baton.EnqueueOptions{Delay: delay, Priority: priority, Key: key, MaxAttempts: maxAttempts,
				Timeout: timeout, UniqueKey: unique, UniquePeriod: uniqueFor, Kind: kind}
			for _, st := range uniqueStates {
				o.UniqueStates = append(o.UniqueStates, baton.MessageState(st))
			}
			var id int64
			dup := false
			if unique != "" {
				id, dup, err = c.EnqueueUnique(cmd.Context(), queue, payload, o)
			} else {
				id, err = c.Enqueue(cmd.Context(), queue, payload, o)
			}
			if err != nil {
				return invalidUsage("queue push", err)
			}
			if dup {
				fmt.Println(id, "duplicate")
				return nil
			}
			fmt.Println(id)
			return nil
		},
	}
	cmd.Flags().DurationVar(&delay, "delay", 0, "wait this long before the message may be claimed (e.g. 30s, 10m)")
	cmd.Flags().IntVar(&priority, "priority", 0, "lower numbers are served first; may be negative")
	cmd.Flags().StringVar(&key, "key", "", "key for per-key consumers: same key never in flight twice, served in order (at most 255 bytes)")
	cmd.Flags().IntVar(&maxAttempts, "max-attempts", 0, fmt.Sprintf("attempts before the message goes to the dead letters (default %d)", baton.DefaultMaxAttempts))
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "bound each handler run of the message (e.g. 30s; overrides baton work --timeout)")
	cmd.Flags().StringVar(&unique, "unique-key", "", "unique key: add nothing while a message with it waits or runs (at most 255 bytes)")
	cmd.Flags().StringVar(&unique, "unique", "", "the former name of --unique-key")
	_ = cmd.Flags().MarkHidden("unique")
	cmd.Flags().DurationVar(&uniqueFor, "unique-for", 0, "with --unique-key: hold the key for the period of this length in which the message is enqueued")
	cmd.Flags().StringSliceVar(&uniqueStates, "unique-states", nil, "with --unique-key: the states in which the key's holder keeps it (scheduled, ready, retrying, running, completed, cancelled, dead)")
	cmd.Flags().StringVar(&kind, "kind", "", "the kind of the message: names the worker that handles it")
	return cmd
}

// queueStats reads the stats of the queue named in args, or of every queue
// (an empty, non-nil list when there is none).
func queueStats(ctx context.Context, c *baton.Client, args []string) ([]baton.QueueStats, error) {
	names := args
	if len(args) == 0 {
		var err error
		if names, err = c.Queues(ctx); err != nil {
			return nil, err
		}
	}
	all := []baton.QueueStats{}
	for _, q := range names {
		st, err := c.Stats(ctx, q)
		if err != nil {
			return nil, err
		}
		all = append(all, st)
	}
	return all, nil
}

// printStats prints queue stats as a table.
func printStats(all []baton.QueueStats) error {
	if len(all) == 0 {
		fmt.Println("no queues")
		return nil
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tREADY\tSCHEDULED\tCLAIMED\tDEAD\tOLDEST READY\tFINISHED/S (5 MIN)")
	for _, st := range all {
		oldest := "-"
		if st.Ready > 0 {
			oldest = st.OldestReady.Round(time.Millisecond).String()
		}
		name := st.Queue
		if st.Paused {
			name += " (paused)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%.2f\n", name, st.Ready, st.Scheduled, st.Claimed, st.Dead, oldest, st.Throughput)
	}
	return tw.Flush()
}

func queueStatsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats [QUEUE] [--json]",
		Short: "Show the message counts of every queue, or of one",
		Long: `Show, for every queue (or for QUEUE), how many messages are:
  READY      claimable now
  SCHEDULED  delayed, or backing off before their next attempt
  CLAIMED    in flight (claimed by a worker)
  DEAD       dead letters (see baton queue dead)
and how long the oldest ready message has waited; FINISHED/S is how many
messages were acknowledged or dead-lettered per second over about five minutes.

--json prints an array of objects (every queue) or one object (QUEUE) with the
Go type's (baton.QueueStats) field names: queue, ready, scheduled, claimed,
dead, oldest_ready_ns (nanoseconds) and throughput (messages acknowledged or
dead-lettered per second over about five minutes, as worker processes report
them every ten seconds or so).
A QUEUE nothing was ever pushed to exits 1 ("unknown queue").`,
		Example: `  baton queue stats
  baton queue stats mail --json | jq .ready`,
		Args: argsUsage("queue stats", 0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if err := baton.ValidateQueue(args[0]); err != nil {
					return invalidUsage("queue stats", err)
				}
			}
			ctx := cmd.Context()
			c, err := g.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			all, err := queueStats(ctx, c, args)
			if err != nil {
				return err
			}
			if asJSON {
				if len(args) == 1 {
					return printJSON(all[0])
				}
				return printJSON(all)
			}
			return printStats(all)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: an array (every queue) or an object (QUEUE)")
	return cmd
}

// deadJSON is one dead letter in `baton queue dead --json`.
type deadJSON struct {
	ID          int64     `json:"id"`
	Queue       string    `json:"queue"`
	Payload     string    `json:"payload,omitempty"`
	Payload64   string    `json:"payload_base64,omitempty"`
	Priority    int       `json:"priority"`
	Key         string    `json:"key,omitempty"`
	Attempts    int       `json:"attempts"`
	MaxAttempts int       `json:"max_attempts"`
	Error       string    `json:"error"`
	CreatedAt   time.Time `json:"created_at"`
	FailedAt    time.Time `json:"failed_at"`
}

func queueDeadCmd(g *globals) *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "dead QUEUE [--limit N] [--json]",
		Short: "List a queue's dead letters, oldest first",
		Long: `List the dead letters of QUEUE, oldest first, at most --limit: messages that
failed at their attempt limit, or failed permanently. The table shows each
one's id, attempts made (of its limit), when it failed, the first line of its
last error and the start of its payload.

--json prints an array of objects with the fields id, queue, payload (or
payload_base64 when it is not UTF-8 text), priority, key, attempts,
max_attempts, error, created_at and failed_at.

baton queue redrive QUEUE puts them back in the queue; baton queue purge QUEUE
deletes them.`,
		Args: argsUsage("queue dead", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := baton.ValidateQueue(args[0]); err != nil {
				return invalidUsage("queue dead", err)
			}
			if limit < 1 {
				return usageErr("queue dead: --limit %d: give at least 1", limit)
			}
			ctx := cmd.Context()
			c, err := g.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			ds, err := c.DeadLetters(ctx, args[0], limit)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]deadJSON, 0, len(ds))
				for _, d := range ds {
					j := deadJSON{ID: d.ID, Queue: d.Queue, Priority: d.Priority, Key: d.Key, Attempts: d.Attempts,
						MaxAttempts: d.MaxAttempts, Error: d.Error, CreatedAt: d.CreatedAt, FailedAt: d.FailedAt}
					if utf8.Valid(d.Payload) {
						j.Payload = string(d.Payload)
					} else {
						j.Payload64 = base64.StdEncoding.EncodeToString(d.Payload)
					}
					out = append(out, j)
				}
				return printJSON(out)
			}
			if len(ds) == 0 {
				fmt.Printf("no dead letters in queue %s\n", args[0])
				return nil
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tATTEMPTS\tFAILED AT\tERROR\tPAYLOAD")
			for _, d := range ds {
				first, _, _ := strings.Cut(d.Error, "\n")
				fmt.Fprintf(tw, "%d\t%d/%d\t%s\t%s\t%s\n", d.ID, d.Attempts, d.MaxAttempts,
					d.FailedAt.Local().Format("2006-01-02 15:04:05"), clip(first, 60), clip(string(d.Payload), 40))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most this many")
	return cmd
}

// clip makes s printable on one table cell: control characters and invalid
// UTF-8 escaped, at most n characters, an ellipsis when cut.
func clip(s string, n int) string {
	printable := utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) < 0
	if !printable {
		q := strconv.QuoteToGraphic(s)
		s = q[1 : len(q)-1]
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func queueRedriveCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "redrive QUEUE",
		Short: "Put a queue's dead letters back in the queue and print how many",
		Long: `Move every dead letter of QUEUE back to the queue, with its attempt count
reset, and print how many were moved. Waiting consumers wake at once.
While it runs, a progress line is shown on stderr when stderr is a terminal.`,
		Args: argsUsage("queue redrive", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := baton.ValidateQueue(args[0]); err != nil {
				return invalidUsage("queue redrive", err)
			}
			c, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			sp := progress("queue redrive "+args[0], "moving dead letters back")
			n, err := c.Redrive(cmd.Context(), args[0])
			sp.stop()
			if err != nil {
				return err
			}
			fmt.Println(n)
			return nil
		},
	}
}

func queuePurgeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "purge QUEUE",
		Short: "Delete a queue's dead letters and print how many",
		Long: `Delete every dead letter of QUEUE and print how many were deleted. Messages
still in the queue (ready, scheduled or claimed) are not touched. While it
runs, a progress line is shown on stderr when stderr is a terminal.`,
		Args: argsUsage("queue purge", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := baton.ValidateQueue(args[0]); err != nil {
				return invalidUsage("queue purge", err)
			}
			c, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			sp := progress("queue purge "+args[0], "deleting dead letters")
			n, err := c.PurgeDead(cmd.Context(), args[0])
			sp.stop()
			if err != nil {
				return err
			}
			fmt.Println(n)
			return nil
		},
	}
}

func benchQueueCmd(g *globals) *cobra.Command {
	var backend string
	var asJSON bool
	var duration time.Duration
	var messages, workers int
	cmd := &cobra.Command{
		Use:   "queue [--backend sqlite|postgres|mysql] [--json] [--duration D] [--messages N]",
		Short: "Benchmark queues: drain, enqueue while consuming, wake-up latency",
		Long: `Benchmark baton's queues and notifications on one backend. Every case runs in
a scratch database of its own (a temporary SQLite file, a new PostgreSQL
schema, a new MySQL/MariaDB database), dropped at the end.

Cases:
  drain_1          a backlog of --messages messages, enqueued with EnqueueMany
                   in batches of 1000 (not timed), drained by Client.Work with
                   concurrency 1; ops/s = messages handled per second
  drain_N          the same with concurrency --workers (default 4)
                   baseline (PostgreSQL): skip_locked_raw, a loop of
                   DELETE ... WHERE id IN (SELECT id ... ORDER BY id LIMIT 100
                   FOR UPDATE SKIP LOCKED) RETURNING id on as many connections
                   as workers, over as many rows; ratio = ops/s ÷ baseline ops/s
  enqueue_consume  one client enqueues one message per transaction for
                   --duration while another client's worker consumes them;
                   ops/s = messages ÷ time until the last was handled;
                   p50/p99 = the Enqueue calls
  latency          an idle worker on a second client; from calling Enqueue to
                   the handler starting (up to 200 rounds, 10ms apart)
  latency_commit   the same rounds, from Enqueue's return (its commit)
  latency_local    the same with producer and worker on one client
  notify_latency   from Notify on one client to a Listener of another

A drain still running after --duration is stopped there and counted as far as
it got. For the latency cases ops/s is 1 ÷ the mean latency.

The server: as for baton bench locks (--backend, $BATON_TEST_POSTGRES,
$BATON_TEST_MYSQL, or an explicit --dsn).`,
		Example: `  baton bench queue
  baton bench queue --backend postgres --json
  baton bench queue --backend mysql --messages 5000 --duration 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case duration <= 0:
				return usageErr("bench queue: --duration %v must be positive", duration)
			case messages < 1:
				return usageErr("bench queue: --messages %d: give at least 1", messages)
			case workers < 1:
				return usageErr("bench queue: --workers %d: give at least 1", workers)
			}
			backend, server, err := benchTarget(cmd, g, "bench queue", backend)
			if err != nil {
				return err
			}
			cfg := bench.QueueConfig{Backend: backend, Server: server, Duration: duration, Messages: messages, Workers: workers}
			return runBench(cmd.Context(), "bench queue", backend, asJSON, queueBenchTable,
				func(progress func(string)) ([]bench.Record, error) {
					cfg.Progress = progress
					return bench.RunQueue(cmd.Context(), cfg)
				})
		},
	}
	cmd.Flags().StringVar(&backend, "backend", "", "sqlite (default), postgres or mysql")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record per line, and nothing else")
	cmd.Flags().DurationVar(&duration, "duration", 3*time.Second, "at most how long each case's measured part runs")
	cmd.Flags().IntVar(&messages, "messages", 20000, "backlog of the drain cases")
	cmd.Flags().IntVar(&workers, "workers", 4, "concurrency of drain_N")
	return cmd
}

// queueBenchTable prints queue and events records.
var queueBenchTable = benchTable(false, "ratio: ops/s ÷ baseline ops/s (above 1 is faster)")

// queuePauseCmd is baton queue pause (pause true) or baton queue resume.
func queuePauseCmd(g *globals, pause bool) *cobra.Command {
	use, short, long := "resume", "Resume a paused queue", `Resume QUEUE for every process: its waiting consumers wake at once.`
	if pause {
		use, short, long = "pause", "Pause a queue for every process", `Pause QUEUE for every process: its messages stay where they are, running
commands finish, and no worker claims another message until baton queue resume.
baton queue stats shows paused queues.`
	}
	return &cobra.Command{
		Use:   use + " QUEUE",
		Short: short,
		Long:  long + "\n\nExit statuses: 0 done; 64 for a bad or unknown QUEUE; 69 when the database\ncannot be reached; 1 for any other error.",
		Args:  argsUsage("queue "+use, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := baton.ValidateQueue(args[0]); err != nil {
				return invalidUsage("queue "+use, err)
			}
			c, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			if pause {
				err = c.PauseQueue(cmd.Context(), args[0])
			} else {
				err = c.ResumeQueue(cmd.Context(), args[0])
			}
			if errors.Is(err, baton.ErrUnknownQueue) {
				return usageErr("queue %s: %s", use, strings.TrimPrefix(err.Error(), "baton: "))
			}
			return err
		},
	}
}
