package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

func queueEventsCmd(g *globals) *cobra.Command {
	var f baton.JobFilter
	var states []string
	cmd := &cobra.Command{
		Use:   "events [--queue Q]... [--kind K]... [--state S]...",
		Short: "Print job state changes from every process as they happen",
		Long: `Print one JSON line per job event, from any process on any host, as it
happens, until baton gets SIGINT or SIGTERM, which make it exit 0:

  {"id":ID,"queue":Q,"kind":K,"state":S,"attempt":N,"at":TIME,"error":TEXT}

States: completed, failed (an attempt failed; it will be retried), dead,
cancelled, snoozed. kind is left out for a message without one, error for
an event without one (at most 256 bytes of it); at is RFC 3339.

--queue, --kind and --state keep the events of those queues, kinds and
states (each may be repeated or given a comma-separated list).

Events are notifications, not a log: only those that happen while baton
runs are printed, at most once each, and some may be missed (a process that
dies before sending them; a reader too slow, which baton reports on
standard error as "missed N job events"). The jobs' own records are the
truth (baton queue get, baton queue list).`,
		Example: `  baton queue events
  baton queue events --queue mail --state dead,failed
  baton queue events --kind invoice | jq -r .state`,
		Args: argsUsage("queue events", 0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, s := range states {
				st, err := baton.ParseJobEventState(s)
				if err != nil {
					return invalidUsage("queue events", err)
				}
				f.States = append(f.States, st)
			}
			for _, q := range f.Queues {
				if err := checkQueue("queue events", q); err != nil {
					return err
				}
			}
			for _, k := range f.Kinds {
				if err := invalidUsage("queue events", baton.ValidateKind(k)); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			return g.withClient(ctx, func(c *baton.Client) error {
				s, err := c.SubscribeJobs(ctx, f)
				if err != nil {
					return invalidUsage("queue events", err)
				}
				defer s.Close()
				return printJobEvents(ctx, s)
			})
		},
	}
	cmd.Flags().StringSliceVar(&f.Queues, "queue", nil, "only the events of these queues")
	cmd.Flags().StringSliceVar(&f.Kinds, "kind", nil, "only the events of jobs of these kinds")
	cmd.Flags().StringSliceVar(&states, "state", nil, "only these events: completed, failed, dead, cancelled, snoozed")
	return cmd
}

// printJobEvents prints one JSON line per job event as it arrives, until
// ctx ends (SIGINT or SIGTERM), and says on standard error when events
// were missed.
func printJobEvents(ctx context.Context, s *baton.JobSubscription) error {
	var missed int64
	for {
		select {
		case <-ctx.Done():
			return nil // SIGINT or SIGTERM
		case ev, ok := <-s.C():
			if !ok {
				return errors.New("queue events: the subscription stopped")
			}
			if m := s.Missed(); m != missed {
				fmt.Fprintf(os.Stderr, "baton: missed %d job events\n", m-missed)
				missed = m
			}
			line, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			// os.Stdout is unbuffered: one write per line, seen at once.
			if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
				return fmt.Errorf("queue events: write: %w", err)
			}
		}
	}
}
