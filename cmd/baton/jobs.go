package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

// exitNoMessage is the exit status of a command on a message that does not
// exist (or whose history was pruned), exitNoQueue of a command on a queue
// baton has never seen; exitMessageState of a command the message's state
// does not allow (running for retry and delete, finished for cancel).
const (
	exitMessageState = 65
	exitNoMessage    = 66
	exitNoQueue      = 66
)

const messageExits = `Exit statuses: 0 done; 64 for a bad ID; 65 when the message's state does not
allow it (see above); 66 when there is no such message (never enqueued,
deleted, or its history was pruned); 69 when the database cannot be reached;
1 for any other error.`

func queueListCmd(g *globals) *cobra.Command {
	var o baton.ListOptions
	var state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [QUEUE] [--state S] [--kind K] [--tag T] [--meta KEY=VALUE] [--limit N] [--after POS] [--json]",
		Short: "List messages by queue, state and kind",
		Long: `List the messages of QUEUE (every queue when it is missing), for each queue
in turn and each state in the order of a message's life: pending (waiting for
its parents, queue push --after), scheduled (waiting for its run-at), ready, running, retrying (waiting out its backoff), then the
history: completed, cancelled and dead, newest first. Ready and running
messages are listed in the order workers claim them, scheduled and retrying
ones by due time.

--state and --kind keep one state or one kind; --tag T the messages that
carry tag T, --meta KEY=VALUE those whose metadata has KEY with VALUE (a
string, or an integer or boolean as JSON writes it). At most --limit
messages are printed; when there are more, the position to go on from is printed on
standard error as "more: --after POS".

--json prints a JSON array of messages with the fields of the Go type
MessageInfo (id, queue, kind, state, payload or payload_base64, priority,
key, attempt, max_attempts, last_error, errors, created_at, run_at,
claimed_by, claimed_until, cancel_requested, finished_at, metadata, tags,
output), the same on every
backend; times are RFC 3339.

` + queueExits,
		Example: `  baton queue list
  baton queue list mail --state dead --json
  baton queue list --kind invoice --state retrying
  baton queue list mail --tag vip --meta customer=acme`,
		Args: argsUsage("queue list", 0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Queue = args[0]
				if err := checkQueue("queue list", o.Queue); err != nil {
					return err
				}
			}
			if err := parseState(&o, state); err != nil {
				return err
			}
			if o.Limit < 1 || o.Limit > maxListLimit {
				return usageErr("queue list: --limit %d: give 1 to %d", o.Limit, maxListLimit)
			}
			return g.withClient(cmd.Context(), func(c *baton.Client) error {
				ms, next, err := c.ListMessages(cmd.Context(), o)
				if err != nil {
					return invalidUsage("queue list", err)
				}
				if len(ms) == 0 && o.Queue != "" {
					// The library lists nothing for a queue it has
					// never seen; the command says so.
					if err := mustExist(cmd.Context(), c, "queue list", o.Queue); err != nil {
						return err
					}
				}
				printMore(next)
				if asJSON {
					return printJSON(nonNil(ms))
				}
				return printMessages(ms)
			})
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only this state: pending, scheduled, ready, running, retrying, completed, cancelled or dead")
	cmd.Flags().StringVar(&o.Kind, "kind", "", "only messages of this kind")
	listDataFlags(cmd, &o)
	cmd.Flags().IntVar(&o.Limit, "limit", 50, fmt.Sprintf("list at most this many (1 to %d)", maxListLimit))
	cmd.Flags().StringVar(&o.After, "after", "", "go on from this position (printed by an earlier list)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// maxListLimit is the most messages baton queue list prints at once.
const maxListLimit = 1000

// nonNil makes a nil list an empty one, which JSON prints as [] not null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// parseState sets the state --state names, when it names one.
func parseState(o *baton.ListOptions, state string) error {
	if state == "" {
		return nil
	}
	st, err := baton.ParseMessageState(state)
	o.State = st
	return invalidUsage("queue list", err)
}

// printMore says, on standard error, where a cut list goes on from.
func printMore(next string) {
	if next != "" {
		fmt.Fprintf(os.Stderr, "more: --after %s\n", next)
	}
}

// printMessages prints messages as a table.
func printMessages(ms []baton.MessageInfo) error {
	return printTable("no messages", "ID\tQUEUE\tKIND\tSTATE\tATTEMPT\tWHEN\tLAST ERROR\tPAYLOAD", ms, messageLine)
}

// messageLine is one message's line in the table of baton queue list.
func messageLine(m baton.MessageInfo) string {
	first, _, _ := strings.Cut(m.LastError, "\n")
	return fmt.Sprintf("%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s", m.ID, m.Queue, orDash(m.Kind), m.State, m.Attempt, m.MaxAttempts,
		when(m), clip(orDash(first), 50), clip(string(m.Payload), 40))
}

// when is the time that matters in a message's state: when it finished,
// its claim runs out, or it is due.
func when(m baton.MessageInfo) string {
	t := m.RunAt
	switch {
	case !m.FinishedAt.IsZero():
		t = m.FinishedAt
	case !m.ClaimedUntil.IsZero():
		t = m.ClaimedUntil
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func queueGetCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get ID [--json]",
		Short: "Show one message, whatever its state",
		Long: `Show message ID: its queue, kind, state, attempts, times, tags, metadata,
output (what its handler recorded), payload and the error of every failed
attempt (with the stack of a panic). A finished message is
found while its history is kept (completed and cancelled ones 24 hours, dead
ones 7 days by default).

--json prints one object with the fields of baton queue list --json, and
dependencies (parents, children, workflow, step) when it has any. A message
pending waits for its parents (queue push --after).

` + messageExits,
		Args: argsUsage("queue get", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onID(cmd, g, "queue get", args[0], func(c *baton.Client, id int64) error {
				m, err := c.Message(cmd.Context(), id)
				if err != nil {
					return err
				}
				d, err := c.Dependencies(cmd.Context(), id)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(messageWithDeps{m, depsJSON(d)})
				}
				printMessage(m)
				printDeps(d)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

// printMessage prints one message, field by field, then the error of
// every failed attempt.
func printMessage(m baton.MessageInfo) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	for _, f := range messageFields(m) {
		fmt.Fprintf(tw, "%s\t%s\n", f[0], f[1])
	}
	_ = tw.Flush()
	printAttemptErrors(m.Errors)
}

// messageFields are the names and values baton queue get shows of a
// message; the times, claim and cancellation only when set.
func messageFields(m baton.MessageInfo) [][2]string {
	fields := [][2]string{
		{"id", strconv.FormatInt(m.ID, 10)},
		{"queue", m.Queue},
		{"kind", orDash(m.Kind)},
		{"state", string(m.State)},
		{"attempt", fmt.Sprintf("%d of %d", m.Attempt, m.MaxAttempts)},
		{"priority", strconv.Itoa(m.Priority)},
		{"key", orDash(m.Key)},
		{"created", m.CreatedAt.Format(time.RFC3339)},
	}
	// In a message's life order (a map's order would change between runs).
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"run at", m.RunAt}, {"claimed until", m.ClaimedUntil}, {"finished", m.FinishedAt}} {
		if !f.t.IsZero() {
			fields = append(fields, [2]string{f.name, f.t.Format(time.RFC3339)})
		}
	}
	if m.ClaimedBy != "" {
		fields = append(fields, [2]string{"claimed by", m.ClaimedBy})
	}
	if m.CancelRequested {
		fields = append(fields, [2]string{"cancel", "requested"})
	}
	fields = append(fields, dataFields(m)...)
	return append(fields, [2]string{"payload", clip(string(m.Payload), 200)})
}

// printAttemptErrors prints the error of every failed attempt, with the
// stack of a panic indented below it.
func printAttemptErrors(errs []baton.AttemptError) {
	for _, e := range errs {
		if e.Snoozed {
			fmt.Printf("attempt %d %s at %s\n", e.Attempt, e.Error, e.At.Format(time.RFC3339))
			continue
		}
		fmt.Printf("attempt %d failed at %s: %s\n", e.Attempt, e.At.Format(time.RFC3339), e.Error)
		if e.Stack != "" {
			fmt.Println("  " + strings.ReplaceAll(strings.TrimSpace(e.Stack), "\n", "\n  "))
		}
	}
}

func queueCancelCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a message; a running one is stopped",
		Long: `Cancel message ID. A waiting message is cancelled at once and never runs. A
running one has its handler stopped on whatever host runs it (baton work
kills its command; a Go handler's context is cancelled), within one wake-up,
and ends cancelled rather than retried. A finished message cannot be
cancelled (exit 65) and is left as it is.

` + messageExits,
		Args: argsUsage("queue cancel", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onID(cmd, g, "queue cancel", args[0], func(c *baton.Client, id int64) error {
				return c.CancelMessage(cmd.Context(), id)
			})
		},
	}
}

// onID runs op on the message the argument names, with a client, and maps
// its errors to the exit statuses of commands on one message.
func onID(cmd *cobra.Command, g *globals, what, arg string, op func(*baton.Client, int64) error) error {
	id, err := messageID(what, arg)
	if err != nil {
		return err
	}
	return g.withClient(cmd.Context(), func(c *baton.Client) error {
		return messageErr(what, id, op(c, id))
	})
}

// messageID parses a message id argument.
func messageID(what, arg string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id <= 0 {
		return 0, usageErr("%s: message id %q: give a positive number", what, arg)
	}
	return id, nil
}

// messageErr maps the errors of a command on one message to its exit
// statuses.
func messageErr(what string, id int64, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, baton.ErrNotFound):
		return &cliError{code: exitNoMessage, msg: fmt.Sprintf("%s: no message %d", what, id)}
	case errors.Is(err, baton.ErrFinished), errors.Is(err, baton.ErrRunning):
		return &cliError{code: exitMessageState, msg: fmt.Sprintf("%s: %s", what, strings.TrimPrefix(err.Error(), "baton: "))}
	}
	return err
}

// queueMessageCmd is a command on one waiting message: baton queue retry
// or baton queue delete, by id (QUEUE ID, naming the queue, works too).
// With finishedToo, op also takes a finished message (RetryNow).
func queueMessageCmd(g *globals, use, short, long string, finishedToo bool, op func(*baton.Client, context.Context, string, int64) error) *cobra.Command {
	cannot := ` A running message cannot be (exit 65); neither can a
finished one (exit 65) nor an unknown one (exit 66).`
	if finishedToo {
		cannot = `
A running message cannot be (exit 65), nor an unknown one (exit 66).`
	}
	return &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Long: long + cannot + ` The form
"` + use + ` QUEUE ID", naming the queue, is accepted too.

` + messageExits,
		Args: argsUsage("queue "+use, 1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			queue := ""
			if len(args) == 2 {
				queue = args[0]
				if err := checkQueue("queue "+use, queue); err != nil {
					return err
				}
			}
			return onID(cmd, g, "queue "+use, args[len(args)-1], func(c *baton.Client, id int64) error {
				return onMessage(cmd.Context(), c, queue, id, finishedToo, op)
			})
		},
	}
}

// onMessage runs op on a waiting message (or, with finishedToo, a
// finished one), finding its queue when it is not given, and says which
// state stopped it.
func onMessage(ctx context.Context, c *baton.Client, queue string, id int64, finishedToo bool, op func(*baton.Client, context.Context, string, int64) error) error {
	queue, err := waitingQueue(ctx, c, queue, id, finishedToo)
	if err != nil {
		return err
	}
	err = op(c, ctx, queue, id)
	if errors.Is(err, baton.ErrNoMessage) && !finishedToo {
		// Not waiting in that queue: finished, or no such message.
		return finishedInQueue(ctx, c, queue, id, err)
	}
	return err
}

// waitingQueue is the queue given, or else the queue of message id, which
// must not have finished unless finishedToo.
func waitingQueue(ctx context.Context, c *baton.Client, queue string, id int64, finishedToo bool) (string, error) {
	if queue != "" {
		return queue, nil
	}
	m, err := c.Message(ctx, id)
	if err != nil {
		return "", err
	}
	if !finishedToo && !m.FinishedAt.IsZero() {
		return "", finished(m)
	}
	return m.Queue, nil
}

// finishedInQueue says that message id finished, when it did in queue;
// otherwise it passes err on.
func finishedInQueue(ctx context.Context, c *baton.Client, queue string, id int64, err error) error {
	if m, gerr := c.Message(ctx, id); gerr == nil && !m.FinishedAt.IsZero() && m.Queue == queue {
		return finished(m)
	}
	return err
}

// finished is the error of a command on a message that has finished.
func finished(m baton.MessageInfo) error {
	return fmt.Errorf("%w: message %d is %s", baton.ErrFinished, m.ID, m.State)
}
