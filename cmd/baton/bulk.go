package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

// bulkFlags are the filter flags of baton queue cancel, delete and retry
// by filter (Client.Bulk).
type bulkFlags struct {
	queue     string
	states    []string
	kind      string
	olderThan time.Duration
	limit     int
	all       bool
}

// bulkStates are the states each action applies to, for its help.
var bulkStates = map[baton.BulkAction]string{
	baton.BulkCancel: "scheduled, ready, running or retrying",
	baton.BulkDelete: "scheduled, ready, retrying, completed, cancelled or dead",
	baton.BulkRetry:  "scheduled, retrying, completed, cancelled or dead",
}

// bulkHelp is the help of the filter flags, for the command of action.
func bulkHelp(action baton.BulkAction) string {
	return fmt.Sprintf(`By filter: with filter flags instead of an ID, %[1]s every message they
select and print how many: --queue Q, --state S[,S...], --kind K,
--older-than D (created longer ago than D; a finished message: finished
longer ago), --limit N (at most N). Without --state: every message that is
%[2]s.
A filter names at least one of --queue, --state, --kind and --older-than,
or --all to %[1]s every message of every queue. It runs in batches of 500
messages, one transaction each, while workers carry on: a message claimed
meanwhile is skipped (cancel asks it to stop). Exit
statuses by filter: 0 done; 64 for a bad filter (a state the command does
not apply to, no filter); 66 for an unknown --queue; 69 when the database
cannot be reached.

`, action, bulkStates[action])
}

// withBulk adds the filter flags to cmd, a command on one message ID
// (up to maxArgs arguments), which then runs action by filter when they
// are given.
func withBulk(g *globals, cmd *cobra.Command, action baton.BulkAction, maxArgs int) *cobra.Command {
	var f bulkFlags
	what := "queue " + string(action)
	fl := cmd.Flags()
	fl.StringVar(&f.queue, "queue", "", "by filter: only this queue's messages")
	fl.StringSliceVar(&f.states, "state", nil, "by filter: only messages in these states (comma-separated)")
	fl.StringVar(&f.kind, "kind", "", "by filter: only messages of this kind")
	fl.DurationVar(&f.olderThan, "older-than", 0, "by filter: only messages created (finished ones: finished) longer ago than this (e.g. 24h)")
	fl.IntVar(&f.limit, "limit", 0, "by filter: act on at most this many messages")
	fl.BoolVar(&f.all, "all", false, "by filter: every message of every queue (when no other filter is given)")
	one := cmd.RunE
	name := strings.Fields(cmd.Use)[0]
	cmd.Use = name + " ID | " + name + " [--queue Q] [--state S] [--kind K] [--older-than D] [--limit N] [--all]"
	cmd.Long = strings.Replace(cmd.Long, messageExits, bulkHelp(action)+messageExits, 1)
	cmd.Args = argsUsage(what, 0, maxArgs)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		byFilter := false
		for _, name := range []string{"queue", "state", "kind", "older-than", "limit", "all"} {
			byFilter = byFilter || cmd.Flags().Changed(name)
		}
		switch {
		case !byFilter && len(args) == 0:
			return usageErr("%s: give a message ID, or filter flags (--queue, --state, --kind, --older-than) or --all (see baton %s --help)", what, what)
		case !byFilter:
			return one(cmd, args)
		case len(args) > 0:
			return usageErr("%s: give a message ID or filter flags, not both", what)
		}
		return f.run(cmd, g, what, action)
	}
	return cmd
}

// run runs the bulk action by the flags' filter and prints how many
// messages it acted on.
func (f *bulkFlags) run(cmd *cobra.Command, g *globals, what string, action baton.BulkAction) error {
	mf := baton.MessageFilter{Queue: f.queue, States: messageStates(f.states), Kind: f.kind,
		OlderThan: f.olderThan, Limit: f.limit, All: f.all}
	if f.queue != "" {
		if err := checkQueue(what, f.queue); err != nil {
			return err
		}
	}
	for _, st := range f.states {
		if _, err := baton.ParseMessageState(st); err != nil {
			return invalidUsage(what, err)
		}
	}
	if err := firstUsageErr(what,
		usageCheck{f.olderThan < 0, fmt.Sprintf("--older-than %v is negative", f.olderThan)},
		usageCheck{f.limit < 0, fmt.Sprintf("--limit %d is negative", f.limit)}); err != nil {
		return err
	}
	return g.withClient(cmd.Context(), func(c *baton.Client) error {
		sp := progress(what, string(action)+" by filter")
		n, err := c.Bulk(cmd.Context(), action, mf)
		sp.stop()
		if err != nil {
			return queueErr(what, f.queue, invalidUsage(what, err))
		}
		fmt.Println(n)
		return nil
	})
}
