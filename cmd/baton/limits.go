package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

func queueLimitCmd(g *globals) *cobra.Command {
	var none, asJSON bool
	var conc, partConc int
	var by, rate, partRate string
	const what = "queue limit"
	cmd := &cobra.Command{
		Use:   "limit QUEUE [--concurrency N] [--partition-by key|kind|arg:NAME] [--partition-concurrency N] [--rate N/PERIOD] [--partition-rate N/PERIOD] [--none] [--json]",
		Short: "Show or set a queue's concurrency and rate limits",
		Long: `Show QUEUE's concurrency and rate limits, or set them for every process and host
(then print them). A flag changes only what it names; 0 removes that limit, and
--none removes them all (before the other flags apply).

  --concurrency N            at most N of the queue's messages run at once, in all
  --partition-by BY          partitions: key (the message's key), kind, or
                             arg:NAME (the payload's top-level JSON field NAME);
                             messages without one share one partition
  --partition-concurrency N  at most N messages of one partition run at once
  --rate N/PERIOD            at most N messages start in any window of PERIOD
                             (10/1s, 600/1m, 5/s), counted across every process
  --partition-rate N/PERIOD  the same per partition (one PERIOD for both rates)

Limits bind workers in the default parallel mode (baton work without --ordered
or --per-key). A killed worker's messages free their slots when its session is
found dead (about a second on the same host, the lease elsewhere). While
messages wait, the whole limit is used: a full partition does not hold back
the others. baton queue stats shows the limits.

--json prints the limits as an object with the Go type's (baton.QueueLimits)
field names: concurrency, partition_by, partition_concurrency, rate,
partition_rate, per_ns (the rates' period in nanoseconds); {} for none.

Exit statuses: 0 done; 64 for a malformed QUEUE or limits that do not hold
together; 66 for a queue baton has never seen ("no queue QUEUE"); 69 when the
database cannot be reached; 1 for any other error.`,
		Example: `  baton queue limit mail --concurrency 2
  baton queue limit api --partition-by arg:tenant --partition-concurrency 1 --rate 10/1s
  baton queue limit mail --none`,
		Args: argsUsage(what, 1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := args[0]
			fl := cmd.Flags()
			set := none
			for _, f := range []string{"concurrency", "partition-by", "partition-concurrency", "rate", "partition-rate"} {
				set = set || fl.Changed(f)
			}
			var r, pr *rateFlag
			for _, x := range []struct {
				name, v string
				to      **rateFlag
			}{{"rate", rate, &r}, {"partition-rate", partRate, &pr}} {
				if !fl.Changed(x.name) {
					continue
				}
				v, err := parseRate(x.v)
				if err != nil {
					return usageErr("%s: --%s %q: %v", what, x.name, x.v, err)
				}
				*x.to = &v
			}
			return onQueue(cmd, g, what, q, func(c *baton.Client) error {
				l, err := c.QueueLimits(cmd.Context(), q)
				if err != nil {
					return queueErr(what, q, err)
				}
				if set {
					if none {
						l = baton.QueueLimits{}
					}
					if fl.Changed("concurrency") {
						l.Concurrency = conc
					}
					if fl.Changed("partition-by") {
						l.PartitionBy = by
					}
					if fl.Changed("partition-concurrency") {
						l.PartitionConcurrency = partConc
					}
					if err := applyRates(&l, r, pr); err != nil {
						return usageErr("%s: %v", what, err)
					}
					if l.PartitionConcurrency == 0 && l.PartitionRate == 0 && !fl.Changed("partition-by") {
						l.PartitionBy = "" // no partitioned limit left
					}
					if err := c.SetQueueLimits(cmd.Context(), q, l); err != nil {
						return queueErr(what, q, invalidUsage(what, err))
					}
				}
				if asJSON {
					return printJSON(l)
				}
				fmt.Printf("%s: %s\n", q, limitsText(l))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&conc, "concurrency", 0, "at most N of the queue's messages running at once (0: no limit)")
	f.StringVar(&by, "partition-by", "", "partitions of the partition limits: key, kind or arg:NAME")
	f.IntVar(&partConc, "partition-concurrency", 0, "at most N messages of one partition running at once (0: no limit)")
	f.StringVar(&rate, "rate", "", "at most N starts per PERIOD, as N/PERIOD (10/1s; 0 for no limit)")
	f.StringVar(&partRate, "partition-rate", "", "at most N starts per PERIOD per partition, as N/PERIOD (0 for no limit)")
	f.BoolVar(&none, "none", false, "remove every limit (before the other flags apply)")
	f.BoolVar(&asJSON, "json", false, "print the limits as JSON")
	return cmd
}

// rateFlag is a parsed --rate: N starts per Per (N 0: none).
type rateFlag struct {
	N   int
	Per time.Duration
}

// parseRate reads N/PERIOD (PERIOD a Go duration; a unit alone is one of
// it: 5/s) or 0.
func parseRate(s string) (rateFlag, error) {
	if s == "0" {
		return rateFlag{}, nil
	}
	ns, ps, ok := strings.Cut(s, "/")
	if !ok {
		return rateFlag{}, fmt.Errorf("give N/PERIOD, such as 10/1s (or 0 for none)")
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 0 {
		return rateFlag{}, fmt.Errorf("N must be a whole number, 0 or more")
	}
	if ps != "" && (ps[0] < '0' || ps[0] > '9') {
		ps = "1" + ps
	}
	per, err := time.ParseDuration(ps)
	if err != nil {
		return rateFlag{}, fmt.Errorf("PERIOD: %v", err)
	}
	if n == 0 {
		return rateFlag{}, nil
	}
	return rateFlag{N: n, Per: per}, nil
}

// applyRates sets the rates given (nil: unchanged): both share one period.
func applyRates(l *baton.QueueLimits, r, pr *rateFlag) error {
	if r != nil {
		l.Rate = r.N
	}
	if pr != nil {
		l.PartitionRate = pr.N
	}
	switch {
	case r != nil && pr != nil && r.N > 0 && pr.N > 0 && r.Per != pr.Per:
		return fmt.Errorf("--rate and --partition-rate share one period (%v, %v)", r.Per, pr.Per)
	case r != nil && r.N > 0:
		if l.PartitionRate > 0 && pr == nil && l.Per != r.Per {
			return fmt.Errorf("--rate's period %v differs from the partition rate's %v: they share one (give both)", r.Per, l.Per)
		}
		l.Per = r.Per
	case pr != nil && pr.N > 0:
		if l.Rate > 0 && r == nil && l.Per != pr.Per {
			return fmt.Errorf("--partition-rate's period %v differs from the rate's %v: they share one (give both)", pr.Per, l.Per)
		}
		l.Per = pr.Per
	}
	if l.Rate == 0 && l.PartitionRate == 0 {
		l.Per = 0
	}
	return nil
}

// limitsText is a queue's limits in a line ("none" for none).
func limitsText(l baton.QueueLimits) string {
	var parts []string
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d", l.Concurrency))
	}
	if l.Rate > 0 {
		parts = append(parts, fmt.Sprintf("rate %d/%v", l.Rate, l.Per))
	}
	if l.PartitionConcurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d per %s", l.PartitionConcurrency, l.PartitionBy))
	}
	if l.PartitionRate > 0 {
		parts = append(parts, fmt.Sprintf("rate %d/%v per %s", l.PartitionRate, l.Per, l.PartitionBy))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
