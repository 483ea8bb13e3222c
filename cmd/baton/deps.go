package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/batonhq/baton"
)

// messageWithDeps is baton queue get --json's object: the message and its
// dependencies, if any.
type messageWithDeps struct {
	baton.MessageInfo
	Dependencies *baton.Dependencies `json:"dependencies,omitempty"`
}

// depsJSON is d, or nil when the message has no dependency.
func depsJSON(d baton.Dependencies) *baton.Dependencies {
	if len(d.Parents) == 0 && len(d.Children) == 0 && d.Workflow == 0 {
		return nil
	}
	return &d
}

// printDeps prints a message's parents, dependants and workflow, if any.
func printDeps(d baton.Dependencies) {
	if depsJSON(d) == nil {
		return
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	if len(d.Parents) > 0 {
		fmt.Fprintf(tw, "parents\t%s\n", refList(d.Parents))
	}
	if len(d.Children) > 0 {
		fmt.Fprintf(tw, "dependants\t%s\n", refList(d.Children))
	}
	if d.Workflow != 0 {
		fmt.Fprintf(tw, "workflow\t%d (step %s)\n", d.Workflow, d.Step)
	}
	_ = tw.Flush()
}

// refList prints messages as "ID (state), ...".
func refList(rs []baton.MessageRef) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		st := string(r.State)
		if st == "" {
			st = "gone"
		}
		parts[i] = fmt.Sprintf("%d (%s)", r.ID, st)
	}
	return strings.Join(parts, ", ")
}
