package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/cmd/baton/internal/bench"
)

func eventsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Subscribe to changes of application tables and process them",
		Long: `Table-change subscriptions. Subscribing to a table installs baton's triggers
on it: every insert, update or delete by any client writes one event per
matching subscription, in the same transaction as the change. A subscription's
events form a queue that "baton events work" consumes like "baton work".`,
	}
	cmd.AddCommand(eventsSubscribeCmd(g), eventsListCmd(g), eventsUnsubscribeCmd(g), eventsRefreshCmd(g), eventsWorkCmd(g))
	return cmd
}

func eventsSubscribeCmd(g *globals) *cobra.Command {
	var on, name string
	var maxAttempts int
	cmd := &cobra.Command{
		Use:   "subscribe TABLE --on insert,update,delete --name NAME [--max-attempts N]",
		Short: "Subscribe to changes of a table",
		Long: `Subscribe NAME to the changes of TABLE ("schema.table" on PostgreSQL). The
table must have a primary key. The first subscription on a table installs
baton's triggers; later ones reuse them.`,
		Example: `  baton events subscribe languages --on insert --name send_email`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return usageErr("events subscribe: --name is required")
			}
			sub := baton.Subscription{Name: name, Table: args[0], Actions: parseActions(on), MaxAttempts: maxAttempts}
			return g.withClient(cmd.Context(), func(c *baton.Client) error {
				if err := subscribeErr(c.Subscribe(cmd.Context(), sub)); err != nil {
					return err
				}
				fmt.Printf("subscribed %s to %s (%s); events in queue %s\n", name, args[0], on, baton.EventQueue(name))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&on, "on", "insert,update,delete", "the changes to follow, comma-separated")
	cmd.Flags().StringVar(&name, "name", "", "the subscription's name")
	cmd.Flags().IntVar(&maxAttempts, "max-attempts", 0, "each event's attempt limit (default 25)")
	return cmd
}

// parseActions reads the comma-separated changes of --on.
func parseActions(on string) []baton.Action {
	var acts []baton.Action
	for _, a := range strings.Split(on, ",") {
		if a = strings.TrimSpace(a); a != "" {
			acts = append(acts, baton.Action(a))
		}
	}
	return acts
}

// subscribeErr makes a bad or existing subscription a usage error.
func subscribeErr(err error) error {
	if errors.Is(err, baton.ErrInvalid) || errors.Is(err, baton.ErrSubscriptionExists) {
		return &cliError{code: exitUsage, msg: "events subscribe: " + err.Error()}
	}
	return err
}

func eventsListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List subscriptions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withClient(cmd.Context(), func(c *baton.Client) error {
				subs, err := c.Subscriptions(cmd.Context())
				if err != nil {
					return err
				}
				rows := subscriptionRows(subs)
				if asJSON {
					return printJSON(rows)
				}
				return printTable("no subscriptions", "NAME\tTABLE\tACTIONS\tQUEUE\tMAX ATTEMPTS", rows, subscriptionRow.line)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// subscriptionRow is one subscription in baton events list.
type subscriptionRow struct {
	Name        string    `json:"name"`
	Table       string    `json:"table"`
	Actions     []string  `json:"actions"`
	Queue       string    `json:"queue"`
	MaxAttempts int       `json:"max_attempts"`
	CreatedAt   time.Time `json:"created_at"`
}

// subscriptionRows lists the subscriptions as baton events list shows them.
func subscriptionRows(subs []baton.Subscription) []subscriptionRow {
	rows := make([]subscriptionRow, len(subs))
	for i, s := range subs {
		acts := make([]string, len(s.Actions))
		for j, a := range s.Actions {
			acts[j] = string(a)
		}
		rows[i] = subscriptionRow{s.Name, s.Table, acts, baton.EventQueue(s.Name), s.MaxAttempts, s.CreatedAt}
	}
	return rows
}

// line is the subscription's line in the table.
func (r subscriptionRow) line() string {
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%d", r.Name, r.Table, strings.Join(r.Actions, ","), r.Queue, r.MaxAttempts)
}

func eventsUnsubscribeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unsubscribe NAME",
		Short: "Remove a subscription (the last one on a table removes the triggers)",
		Args:  cobra.ExactArgs(1),
		RunE:  g.onArg((*baton.Client).Unsubscribe, "unsubscribed %s\n"),
	}
}

func eventsRefreshCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "refresh TABLE",
		Short: "Rewrite the triggers of a subscribed table after an ALTER TABLE",
		Long: `Rewrite baton's triggers on TABLE for its columns as they are now, after an
ALTER TABLE: on SQLite and MariaDB the triggers list the table's columns, so a
column added later is missing from the events until then (PostgreSQL's
triggers read the columns at every change: nothing to do there). Every
subscription on the table and every event already captured stay, and no change
made meanwhile goes uncaptured. MySQL cannot replace a trigger in place: there
baton refuses (exit 64); unsubscribing and subscribing again drops the pending
events.

Exit statuses: 0 done; 64 for a table that does not exist, has no
subscription, or on MySQL; 69 when the database cannot be reached.`,
		Args: cobra.ExactArgs(1),
		RunE: g.onArg((*baton.Client).RefreshSubscriptions, "refreshed the triggers on %s\n"),
	}
}

func eventsWorkCmd(g *globals) *cobra.Command {
	return newWorkCmd(g, workSpec{
		what:  "events work",
		arg:   "NAME",
		use:   "work NAME [--concurrency N|--ordered|--per-key] [--drain] -- CMD [ARG...]",
		short: "Run a command once per event of a subscription",
		long: `Consume the events of subscription NAME exactly like "baton work" consumes a
queue: CMD runs once per event with the event on its standard input as one JSON
object {"subscription","table","action","pk","new","old"}, and the same
environment variables and exit-status contract (0 acknowledges, anything else
retries, the attempt limit dead-letters). --ordered processes the events one at
a time in the order they became visible; --per-key keeps each row's events in
order (FIFO per primary key) and runs different rows in parallel.

The event is in canonical form, the same bytes on every backend: compact, the
columns in the table's order, numbers in shortest exact form, booleans,
timestamps as RFC 3339 in UTC with microseconds, binary as base64 (see
docs/events.md); BATON_KEY is its "pk".

` + strings.SplitN(workLong, "\n\n", 2)[1],
		example: `  baton events work ring_bell --ordered -- ./ring.sh
  baton events work send_email --concurrency 5 -- ./send.sh`,
		queue: subscriptionQueue,
	})
}

// subscriptionQueue is the queue of subscription NAME's events.
func subscriptionQueue(ctx context.Context, g *globals, name string) (string, error) {
	var subs []baton.Subscription
	err := g.withClient(ctx, func(c *baton.Client) (err error) {
		subs, err = c.Subscriptions(ctx)
		return err
	})
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(subs, func(s baton.Subscription) bool { return s.Name == name }) {
		return "", &cliError{code: exitUsage, msg: fmt.Sprintf("events work: unknown subscription %q", name)}
	}
	return baton.EventQueue(name), nil
}

func benchEventsCmd(g *globals) *cobra.Command {
	var f benchFlags
	var rows, workers int
	cmd := &cobra.Command{
		Use:   "events [--backend sqlite|postgres|mysql] [--json] [--rows N] [--workers N]",
		Short: "Benchmark table-change capture and consumption against the naive loop",
		Long: `Measure, on a scratch database:
  events_ordered   events/s of one ordered worker over --rows captured inserts
  events_parallel  the same with --workers parallel workers
  writer_overhead  inserts/s (one row per transaction) into a subscribed table
Baselines in the same run: seed 004's naive loop (select the unclaimed rows of
an event log, then mark and delete each in its own transaction) for the
consumption cases, inserts into an unsubscribed table for writer_overhead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rows < 1 || workers < 1 || f.duration <= 0 {
				return usageErr("bench events: --rows, --workers and --duration must be positive")
			}
			return f.run(cmd, g, "bench events", queueBenchTable, func(backend, server string, progress func(string)) ([]bench.Record, error) {
				cfg := bench.EventsConfig{Backend: backend, Server: server, Rows: rows, Workers: workers, Duration: f.duration, Progress: progress}
				return bench.RunEvents(cmd.Context(), cfg)
			})
		},
	}
	f.add(cmd, "roughly how long each timed part runs")
	cmd.Flags().IntVar(&rows, "rows", 5000, "captured inserts for the consumption cases")
	cmd.Flags().IntVar(&workers, "workers", 4, "concurrency of events_parallel")
	return cmd
}
