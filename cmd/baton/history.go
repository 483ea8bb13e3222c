package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

func queueHistoryCmd(g *globals) *cobra.Command {
	var o baton.HistoryOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history QUEUE [--span 1h] [--step 1m] [--json]",
		Short: "Show a queue's per-minute roll-up: finished, backlog, handler durations",
		Long: `Show what happened to QUEUE over the last --span (whole minutes, up to 24h;
default 1h), one line per --step (whole minutes dividing the span; default
1m), oldest first, from the roll-up every baton process keeps per queue and
minute (kept a day):
  COMPLETED, RETRIED, DEAD   messages acknowledged, given back for another
                             attempt, dead-lettered in the step
  READY, SCHEDULED, RETRYING the backlog, sampled once a minute (the largest
                             sample of the step; "-" when none was taken)
  RUNS, P50, P90, P99        handler runs of workers (baton work, Client.Work)
                             and their durations' percentiles, estimated from
                             buckets with 1-2-5 bounds from 1ms to 1m
Processes write their counts every ten heartbeats or so and when they stop, so
the last minutes may still grow.

--json prints an array of the Go type's (baton.QueuePoint) objects: at,
completed, retried, dead, sampled, ready, scheduled, retrying, handled and
p50_ns, p90_ns, p99_ns (nanoseconds).

` + queueExits,
		Example: `  baton queue history mail
  baton queue history mail --span 24h --step 15m
  baton queue history mail --json | jq 'map(.completed) | add'`,
		Args: argsUsage("queue history", 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := args[0]
			if err := checkQueue("queue history", q); err != nil {
				return err
			}
			return g.withClient(cmd.Context(), func(c *baton.Client) error {
				pts, err := c.QueueHistory(cmd.Context(), q, o)
				if err != nil {
					return invalidUsage("queue history", queueErr("queue history", q, err))
				}
				if asJSON {
					return printJSON(pts)
				}
				return printTable("no points", "AT (UTC)\tCOMPLETED\tRETRIED\tDEAD\tREADY\tSCHEDULED\tRETRYING\tRUNS\tP50\tP90\tP99", pts, historyLine)
			})
		},
	}
	cmd.Flags().DurationVar(&o.Span, "span", time.Hour, "how far back: whole minutes, up to 24h")
	cmd.Flags().DurationVar(&o.Step, "step", time.Minute, "one line per step: whole minutes dividing --span")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of points")
	return cmd
}

// historyLine is one step's line in the table of baton queue history.
func historyLine(p baton.QueuePoint) string {
	backlog := "-\t-\t-"
	if p.Sampled {
		backlog = fmt.Sprintf("%d\t%d\t%d", p.Ready, p.Scheduled, p.Retrying)
	}
	pct := "-\t-\t-"
	if p.Handled > 0 {
		r := func(d time.Duration) time.Duration {
			if d < time.Millisecond {
				return d.Round(time.Microsecond)
			}
			return d.Round(100 * time.Microsecond)
		}
		pct = fmt.Sprintf("%v\t%v\t%v", r(p.P50), r(p.P90), r(p.P99))
	}
	return fmt.Sprintf("%s\t%d\t%d\t%d\t%s\t%d\t%s", p.At.Format("2006-01-02 15:04"), p.Completed, p.Retried, p.Dead, backlog, p.Handled, pct)
}
