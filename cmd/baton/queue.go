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
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/cmd/baton/internal/bench"
)

func queueCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Push, list, inspect, cancel and retry messages; pause and limit queues; handle dead letters",
		Long: `Durable queues in the database. Messages are pushed here (or by programs
through the Go API) and processed by baton work (or Client.Work).

Queue names: 1 to 64 letters, digits, '_', '.', ':' or '-'.

` + queueExits,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr("queue: unknown command %q (use push, stats, history, list, get, update, cancel, retry, delete, pause, resume, limit, dead, redrive, purge or events)", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(queuePushCmd(g), queueStatsCmd(g), queueListCmd(g), queueGetCmd(g), queueUpdateCmd(g),
		withBulk(g, queueCancelCmd(g), baton.BulkCancel, 1),
		queueDeadCmd(g), queueRedriveCmd(g), queuePurgeCmd(g), queuePauseCmd(g), queueResumeCmd(g), queueLimitCmd(g), queueEventsCmd(g),
		withBulk(g, queueMessageCmd(g, "retry", "Make a waiting or finished message due now, or many by filter",
			"Make message ID, delayed or backing off before a retry, due at once; a dead,\n"+
				"completed or cancelled one still in the history goes back to its queue under\n"+
				"the same id (one more attempt if it had used them all).", true, (*baton.Client).RetryNow), baton.BulkRetry, 2),
		withBulk(g, queueMessageCmd(g, "delete", "Delete a message that is not running, or many by filter",
			"Delete message ID, which waits (scheduled, ready or retrying) or has\n"+
				"finished (completed, cancelled or dead; still in the history): nothing of\n"+
				"it is kept.", true, (*baton.Client).DeleteMessage), baton.BulkDelete, 2))
	cmd.AddCommand(queueHistoryCmd(g))
	return cmd
}

func queuePushCmd(g *globals) *cobra.Command {
	var o baton.EnqueueOptions
	var at string
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
holder's id followed by the word duplicate; --unique-args does the same with
a key derived from the kind and the payload (JSON compared canonically).
--kind K names the worker that handles the message. --timeout D bounds each run of the message's handler (baton
work kills a command that runs longer; the attempt fails).

--at T makes the message due at time T (RFC 3339) rather than after a
--delay: a time in the past is now. T is read on this host's clock: the
message is due when this clock reads T, whatever the database's clock says.
--after ID[,ID...] makes the message pending until those messages (its
parents) completed; one that dies, is cancelled or deleted cancels it, unless
--after-any-outcome is given (it then runs once they all finished, however).
An unknown parent id is bad input.
--meta JSON gives the message metadata (a JSON object) and --tag T a tag
(repeat it for more); both are kept through retries and in the history, and
shown by queue get; queue list --tag T and --meta KEY=VALUE find them.

Bad input (a bad queue name, an empty or oversized payload, a negative
--delay, --at with --delay or not in RFC 3339, a non-numeric --priority, a
--max-attempts below 1) exits 64 with a one-line error and enqueues
nothing.`, baton.MaxMessagePayload),
		Example: `  baton queue push mail '{"to":"ann@example.com"}'
  render-report | baton queue push reports --priority -1 --max-attempts 3
  baton queue push mail --delay 10m --key customer-42 - < message.json
  baton queue push reminders --at 2026-12-24T18:00:00+01:00 'ring'
  baton queue push reports --after 41,42 '{"merge":true}'
  baton queue push mail --meta '{"customer":"acme"}' --tag vip --tag eu '{"to":"ann@example.com"}'`,
		Args: argsUsage("queue push", 1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			queue := args[0]
			if err := checkPush(queue, o, cmd.Flags().Changed("max-attempts")); err != nil {
				return err
			}
			if err := runAt(&o, at); err != nil {
				return err
			}
			payload, err := readPayload(args[1:])
			if err != nil {
				return err
			}
			o.UniqueStates = messageStates(uniqueStates)
			return g.withClient(cmd.Context(), func(c *baton.Client) error {
				id, dup, err := enqueue(cmd.Context(), c, queue, payload, o)
				if err != nil {
					return invalidUsage("queue push", err)
				}
				printPushed(id, dup)
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&o.Delay, "delay", 0, "wait this long before the message may be claimed (e.g. 30s, 10m)")
	cmd.Flags().StringVar(&at, "at", "", "instead of --delay: the time from which the message may be claimed, RFC 3339 (e.g. 2026-12-24T18:00:00Z), by this host's clock")
	cmd.Flags().IntVar(&o.Priority, "priority", 0, "lower numbers are served first; may be negative")
	cmd.Flags().StringVar(&o.Key, "key", "", "key for per-key consumers: same key never in flight twice, served in order (at most 255 bytes)")
	cmd.Flags().IntVar(&o.MaxAttempts, "max-attempts", 0, fmt.Sprintf("attempts before the message goes to the dead letters (default %d: retried for about 20 days by baton work)", baton.DefaultMaxAttempts))
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "bound each handler run of the message (e.g. 30s; overrides baton work --timeout)")
	cmd.Flags().StringVar(&o.UniqueKey, "unique-key", "", "unique key: add nothing while a message with it waits or runs (at most 255 bytes)")
	cmd.Flags().StringVar(&o.UniqueKey, "unique", "", "another name of --unique-key")
	_ = cmd.Flags().MarkHidden("unique")
	cmd.Flags().DurationVar(&o.UniquePeriod, "unique-for", 0, "with --unique-key: hold the key for the period of this length in which the message is enqueued")
	cmd.Flags().StringSliceVar(&uniqueStates, "unique-states", nil, "with --unique-key: the states in which the key's holder keeps it (scheduled, ready, retrying, running, completed, cancelled, dead)")
	cmd.Flags().StringVar(&o.Kind, "kind", "", "the kind of the message: names the worker that handles it")
	cmd.Flags().Int64SliceVar(&o.After, "after", nil, "ids of messages that must complete before this one runs (pending until then)")
	cmd.Flags().BoolVar(&o.AfterAnyOutcome, "after-any-outcome", false, "with --after: run once the parents finished, whatever became of them")
	pushDataFlags(cmd, &o)
	return cmd
}

// checkPush checks baton queue push's queue and flags.
func checkPush(queue string, o baton.EnqueueOptions, maxAttemptsSet bool) error {
	if err := checkQueue("queue push", queue); err != nil {
		return err
	}
	return firstUsageErr("queue push",
		usageCheck{o.Delay < 0, fmt.Sprintf("--delay %v is negative", o.Delay)},
		usageCheck{maxAttemptsSet && o.MaxAttempts < 1, fmt.Sprintf("--max-attempts %d: give at least 1", o.MaxAttempts)})
}

// readPayload reads the payload of baton queue push: the PAYLOAD argument,
// or standard input when it is - or missing. It must be neither empty nor
// too large.
func readPayload(rest []string) ([]byte, error) {
	payload, err := payloadArg(rest)
	if err != nil {
		return nil, err
	}
	return payload, firstUsageErr("queue push",
		usageCheck{len(payload) == 0, "empty payload"},
		usageCheck{len(payload) > baton.MaxMessagePayload, fmt.Sprintf("payload is more than %d bytes", baton.MaxMessagePayload)})
}

// payloadArg is the PAYLOAD argument, or what standard input holds (up
// to one byte more than a payload may hold).
func payloadArg(rest []string) ([]byte, error) {
	if len(rest) == 1 && rest[0] != "-" {
		return []byte(rest[0]), nil
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, baton.MaxMessagePayload+1))
	if err != nil {
		return nil, fmt.Errorf("queue push: read standard input: %w", err)
	}
	return b, nil
}

// messageStates converts the names of message states.
func messageStates(names []string) []baton.MessageState {
	var states []baton.MessageState
	for _, st := range names {
		states = append(states, baton.MessageState(st))
	}
	return states
}

// enqueue adds the message; with a unique key, only when no holder keeps
// the key, and dup says whether it was a duplicate (the id its holder's).
func enqueue(ctx context.Context, c *baton.Client, queue string, payload []byte, o baton.EnqueueOptions) (int64, bool, error) {
	id, err := c.Enqueue(ctx, queue, payload, o)
	if errors.Is(err, baton.ErrDuplicate) {
		return id, true, nil
	}
	return id, false, err
}

// queueExits is the rule of the commands on a QUEUE (stats, list, dead,
// redrive, purge, pause, resume), in their help.
const queueExits = `A QUEUE baton has never seen (nothing was ever pushed to it) is an error,
"no queue QUEUE", with exit status 66 for every command on a QUEUE (stats,
history, list, dead, redrive, purge, pause, resume); a malformed name exits 64.`

// queueErr maps the error of a command on a queue that baton has never
// seen to its exit status; other errors pass.
func queueErr(what, queue string, err error) error {
	if errors.Is(err, baton.ErrUnknownQueue) {
		return &cliError{code: exitNoQueue, msg: fmt.Sprintf("%s: no queue %s (nothing was ever pushed to it)", what, queue)}
	}
	return err
}

// mustExist is queueErr's error when baton has never seen the queue.
func mustExist(ctx context.Context, c *baton.Client, what, queue string) error {
	names, err := c.Queues(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == queue {
			return nil
		}
	}
	return queueErr(what, queue, baton.ErrUnknownQueue)
}

// printPushed prints the id of the message pushed, or of its holder
// followed by the word duplicate.
func printPushed(id int64, dup bool) {
	if dup {
		fmt.Println(id, "duplicate")
		return
	}
	fmt.Println(id)
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
			return nil, queueErr("queue stats", q, err)
		}
		all = append(all, st)
	}
	return all, nil
}

// printQueueStats prints queue stats as a table, or as JSON: one object
// for the queue named, an array otherwise.
func printQueueStats(all []baton.QueueStats, named, asJSON bool) error {
	switch {
	case !asJSON:
		return printTable("no queues", "QUEUE\tPENDING\tREADY\tSCHEDULED\tRETRYING\tCLAIMED\tCOMPLETED\tCANCELLED\tDEAD\tOLDEST READY\tFINISHED/S (5 MIN)", all, statsLine)
	case named:
		return printJSON(all[0])
	}
	return printJSON(all)
}

// statsLine is one queue's line in the table of baton queue stats.
func statsLine(st baton.QueueStats) string {
	oldest := "-"
	if st.Ready > 0 {
		oldest = st.OldestReady.Round(time.Millisecond).String()
	}
	name := st.Queue
	if st.Paused {
		name += " (paused)"
	}
	if !st.Limits.IsZero() {
		name += " (limits: " + limitsText(st.Limits) + ")"
	}
	return fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%.2f", name, st.Pending, st.Ready, st.Scheduled, st.Retrying, st.Claimed,
		st.Completed, st.Cancelled, st.Dead, oldest, st.Throughput)
}

func queueStatsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats [QUEUE] [--json]",
		Short: "Show the message counts of every queue, or of one",
		Long: `Show, for every queue (or for QUEUE), how many messages are:
  PENDING    waiting for other messages to complete (pushed with --after)
  READY      claimable now
  SCHEDULED  due later, never attempted yet (pushed with --delay)
  RETRYING   waiting out the backoff after a failed attempt
  CLAIMED    in flight (claimed by a worker: running)
  COMPLETED  acknowledged, kept in the history for its retention (24 h by default)
  CANCELLED  cancelled, kept in the history for its retention (24 h by default)
  DEAD       dead letters (see baton queue dead)
and how long the oldest ready message has waited; FINISHED/S is how many
messages were acknowledged or dead-lettered per second over about five minutes.
Over 10,000 messages in a state, counts are the database planner's estimates
(exact on SQLite).

--json prints an array of objects (every queue) or one object (QUEUE) with the
Go type's (baton.QueueStats) field names: queue, pending, ready, scheduled,
retrying, claimed, dead, completed, cancelled, oldest_ready_ns (nanoseconds),
estimated and paused (when true), limits (when it has any: see baton queue
limit) and throughput (messages acknowledged or dead-lettered per second over
about five minutes, as worker processes report them every ten seconds or so).

` + queueExits,
		Example: `  baton queue stats
  baton queue stats mail --json | jq .ready`,
		Args: argsUsage("queue stats", 0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, q := range args {
				if err := checkQueue("queue stats", q); err != nil {
					return err
				}
			}
			return g.withClient(cmd.Context(), func(c *baton.Client) error {
				all, err := queueStats(cmd.Context(), c, args)
				if err != nil {
					return err
				}
				return printQueueStats(all, len(args) == 1, asJSON)
			})
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
deletes them.

` + queueExits,
		Args: argsUsage("queue dead", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkQueue("queue dead", args[0]); err != nil {
				return err
			}
			if limit < 1 {
				return usageErr("queue dead: --limit %d: give at least 1", limit)
			}
			return g.withClient(cmd.Context(), func(c *baton.Client) error {
				ds, err := c.DeadLetters(cmd.Context(), args[0], limit)
				if err != nil {
					return queueErr("queue dead", args[0], err)
				}
				if asJSON {
					return printJSON(deadLettersJSON(ds))
				}
				return printTable("no dead letters in queue "+args[0], "ID\tATTEMPTS\tFAILED AT\tERROR\tPAYLOAD", ds, deadLine)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most this many")
	return cmd
}

// deadLettersJSON is what baton queue dead --json prints.
func deadLettersJSON(ds []baton.DeadLetter) []deadJSON {
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
	return out
}

// deadLine is one dead letter's line in the table of baton queue dead.
func deadLine(d baton.DeadLetter) string {
	first, _, _ := strings.Cut(d.Error, "\n")
	return fmt.Sprintf("%d\t%d/%d\t%s\t%s\t%s", d.ID, d.Attempts, d.MaxAttempts,
		d.FailedAt.Local().Format("2006-01-02 15:04:05"), clip(first, 60), clip(string(d.Payload), 40))
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
	return deadLettersCmd(g, "redrive", "Put a queue's dead letters back in the queue and print how many",
		`Move every dead letter of QUEUE back to the queue under its own id, with its
attempt count reset, and print how many were moved. Waiting consumers wake at once.
While it runs, a progress line is shown on stderr when stderr is a terminal.`,
		"moving dead letters back", (*baton.Client).Redrive)
}

func queuePurgeCmd(g *globals) *cobra.Command {
	return deadLettersCmd(g, "purge", "Delete a queue's dead letters and print how many",
		`Delete every dead letter of QUEUE and print how many were deleted. Messages
still in the queue (ready, scheduled or claimed) are not touched. While it
runs, a progress line is shown on stderr when stderr is a terminal.`,
		"deleting dead letters", (*baton.Client).PurgeDead)
}

// deadLettersCmd is a command on every dead letter of QUEUE (baton queue
// redrive or purge) that prints how many it handled, with a progress line
// saying what it is doing.
func deadLettersCmd(g *globals, use, short, long, doing string, op func(*baton.Client, context.Context, string) (int, error)) *cobra.Command {
	what := "queue " + use
	return &cobra.Command{
		Use:   use + " QUEUE",
		Short: short,
		Long:  long + "\n\n" + queueExits,
		Args:  argsUsage(what, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onQueue(cmd, g, what, args[0], func(c *baton.Client) error {
				sp := progress(what+" "+args[0], doing)
				n, err := op(c, cmd.Context(), args[0])
				sp.stop()
				if err != nil {
					return queueErr(what, args[0], err)
				}
				fmt.Println(n)
				return nil
			})
		},
	}
}

// onQueue runs op with a client once the QUEUE argument is checked.
func onQueue(cmd *cobra.Command, g *globals, what, queue string, op func(*baton.Client) error) error {
	if err := checkQueue(what, queue); err != nil {
		return err
	}
	return g.withClient(cmd.Context(), op)
}

func benchQueueCmd(g *globals) *cobra.Command {
	var f benchFlags
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
  drain_batches    drain_N over a backlog of batches of 100 (99 jobs and a
                   callback after them all, pending until they finished),
                   enqueued with EnqueueWorkflow (not timed)
  enqueue_consume  one client enqueues one message per transaction for
                   --duration while another client's worker consumes them;
                   ops/s = messages ÷ time until the last was handled;
                   p50/p99 = the Enqueue calls
  latency          an idle worker on a second client; from calling Enqueue to
                   the handler starting (up to 200 rounds, 10ms apart)
  latency_commit   the same rounds, from Enqueue's return (its commit)
  latency_local    the same with producer and worker on one client
  notify_latency   from Notify on one client to a Listener of another
  drain_N_subscribed
                   drain_N while a second client subscribes to every job
                   event (SubscribeJobs) and reads them
  drain_limited    drain_N on a queue with a concurrency limit of 1000 (not the
                   bottleneck), alternated 3 times with the same drain without
                   limits; medians, ratio = ops/s ÷ the unlimited drain's
  drain_rated      the same with a rate limit of 10,000,000 starts a second

A drain still running after --duration is stopped there and counted as far as
it got. For the latency cases ops/s is 1 ÷ the mean latency.

The server: as for baton bench locks (--backend, $BATON_TEST_POSTGRES,
$BATON_TEST_MYSQL, or an explicit --dsn).`,
		Example: `  baton bench queue
  baton bench queue --backend postgres --json
  baton bench queue --backend mysql --messages 5000 --duration 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := firstUsageErr("bench queue",
				usageCheck{f.duration <= 0, fmt.Sprintf("--duration %v must be positive", f.duration)},
				usageCheck{messages < 1, fmt.Sprintf("--messages %d: give at least 1", messages)},
				usageCheck{workers < 1, fmt.Sprintf("--workers %d: give at least 1", workers)})
			if err != nil {
				return err
			}
			return f.run(cmd, g, "bench queue", queueBenchTable, func(backend, server string, progress func(string)) ([]bench.Record, error) {
				cfg := bench.QueueConfig{Backend: backend, Server: server, Duration: f.duration, Messages: messages, Workers: workers, Progress: progress}
				return bench.RunQueue(cmd.Context(), cfg)
			})
		},
	}
	f.add(cmd, "at most how long each case's measured part runs")
	cmd.Flags().IntVar(&messages, "messages", 20000, "backlog of the drain cases")
	cmd.Flags().IntVar(&workers, "workers", 4, "concurrency of drain_N")
	return cmd
}

// queueBenchTable prints queue and events records.
var queueBenchTable = benchTable(false, "ratio: ops/s ÷ baseline ops/s (above 1 is faster)")

func queuePauseCmd(g *globals) *cobra.Command {
	return queueSwitchCmd(g, "pause", "Pause a queue for every process", `Pause QUEUE for every process: its messages stay where they are, running
commands finish, and no worker claims another message until baton queue resume.
baton queue stats shows paused queues.`, true)
}

func queueResumeCmd(g *globals) *cobra.Command {
	return queueSwitchCmd(g, "resume", "Resume a paused queue",
		`Resume QUEUE for every process: its waiting consumers wake at once.`, false)
}

// queueSwitchCmd is baton queue pause or resume: QUEUE paused or not.
func queueSwitchCmd(g *globals, use, short, long string, paused bool) *cobra.Command {
	what := "queue " + use
	return &cobra.Command{
		Use:   use + " QUEUE",
		Short: short,
		Long:  long + "\n\nExit statuses: 0 done; 64 for a malformed QUEUE; 66 for a queue baton has never\nseen (\"no queue QUEUE\"); 69 when the database cannot be reached; 1 for any\nother error.",
		Args:  argsUsage(what, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onQueue(cmd, g, what, args[0], func(c *baton.Client) error {
				return queueErr(what, args[0], c.SetQueuePaused(cmd.Context(), args[0], paused))
			})
		},
	}
}
