package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/driver"
)

func uninstallCmd(g *globals) *cobra.Command {
	var yes, force, asJSON bool
	cmd := &cobra.Command{
		Use:   "uninstall [--yes [--force]] [--json]",
		Short: "List everything baton installed in the database; remove it with --yes",
		Long: `List every object baton installed in the database: its tables (the migration
tracking table included), views, routines, sequences and types with the table
prefix, in baton's schema on PostgreSQL or the DSN's database on MySQL; the
triggers its event subscriptions put on the program's tables; and on
PostgreSQL the schema when baton migrate created it and nothing else is in
it. The list is read from the database's catalog: an object is baton's when
it carries the prefix and baton's migrations create an object of that name,
or when it is a trigger named as baton's change capture names its triggers
on that table. Objects that merely carry the prefix are listed as kept and
never touched.

Without --yes nothing is removed. With --yes everything listed is removed;
the program's own tables keep their rows and lose only baton's triggers, and
baton migrate installs baton afresh afterwards. The removal is one
transaction on SQLite and PostgreSQL; on MySQL and MariaDB each DROP commits
by itself, so a removal cut short is finished by running it again.

While baton sessions hold a live lease (a running lock holder, worker or
client), --yes removes nothing and exits 1 naming them: stop them first, or
add --force.

Exit statuses: 0 listed or removed; 1 live sessions without --force, or
another error; 64 usage; 69 database unreachable.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr("uninstall: takes no arguments, got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if force && !yes {
				return usageErr("uninstall: --force only goes with --yes")
			}
			return runUninstall(cmd.Context(), g, driver.UninstallParams{Remove: yes, Force: force}, asJSON)
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "remove the objects listed (default: only list them)")
	cmd.Flags().BoolVar(&force, "force", false, "with --yes: remove even while sessions hold a live lease")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (the fields of baton.UninstallReport)")
	return cmd
}

// runUninstall lists (and with p.Remove removes) baton's objects on a
// backend opened without migrating, and prints what it found and did.
func runUninstall(ctx context.Context, g *globals, p driver.UninstallParams, asJSON bool) error {
	d, err := g.openDriver(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	r, err := d.Uninstall(ctx, p)
	rep := uninstallReport(r)
	if asJSON {
		if perr := printJSON(rep); perr != nil {
			return perr
		}
	} else {
		printUninstall(rep, p)
	}
	if errors.Is(err, driver.ErrSessionsAlive) {
		return fmt.Errorf("uninstall: %w (removing them anyway: --force)", err)
	}
	return err
}

// uninstallReport is the library's report of a backend's, as
// Client.Uninstall returns it.
func uninstallReport(r driver.UninstallReport) baton.UninstallReport {
	out := baton.UninstallReport{Removed: r.Removed, Objects: []baton.DBObject{}, Kept: []baton.DBObject{}, Sessions: []baton.SessionInfo{}}
	for _, o := range r.Objects {
		out.Objects = append(out.Objects, baton.DBObject(o))
	}
	for _, o := range r.Kept {
		out.Kept = append(out.Kept, baton.DBObject(o))
	}
	for _, s := range r.Sessions {
		out.Sessions = append(out.Sessions, baton.SessionInfo{ID: s.ID, Owner: fmt.Sprintf("%s:%d/%s", s.Host, s.PID, s.Name),
			Host: s.Host, PID: s.PID, Name: s.Name, Started: s.CreatedAt, Expires: s.ExpiresAt})
	}
	return out
}

// printUninstall prints the objects, the kept ones, the live sessions and
// what was done (or how to do it).
func printUninstall(r baton.UninstallReport, p driver.UninstallParams) {
	objects := func(list []baton.DBObject) {
		tw := newTable(os.Stdout, "  KIND\tNAME")
		for _, o := range list {
			fmt.Fprintf(tw, "  %s\t%s\n", o.Kind, o)
		}
		tw.Flush()
	}
	if len(r.Objects) == 0 {
		fmt.Println("baton has nothing installed in this database.")
	} else {
		fmt.Printf("baton's objects in this database (%d):\n", len(r.Objects))
		objects(r.Objects)
	}
	if len(r.Kept) > 0 {
		fmt.Printf("Kept: they carry baton's prefix, but baton does not create them (%d):\n", len(r.Kept))
		objects(r.Kept)
	}
	if len(r.Sessions) > 0 {
		fmt.Printf("Sessions with a live lease (%d):\n", len(r.Sessions))
		tw := newTable(os.Stdout, "  SESSION\tOWNER\tEXPIRES")
		for _, s := range r.Sessions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.ID, s.Owner, s.Expires.Local().Format("2006-01-02 15:04:05.000"))
		}
		tw.Flush()
	}
	switch {
	case r.Removed && len(r.Objects) > 0:
		fmt.Printf("Removed %d objects.\n", len(r.Objects))
	case !p.Remove && len(r.Objects) > 0:
		fmt.Println("Nothing was removed (a dry run): run `baton uninstall --yes` to remove the objects listed.")
	}
}
