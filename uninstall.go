package baton

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/driver"
)

// UninstallOptions configure Client.Uninstall.
type UninstallOptions struct {
	// Remove removes baton's objects; without it Uninstall only lists
	// them.
	Remove bool
	// Force removes them even while sessions hold a live lease (their
	// programs then fail on the missing tables).
	Force bool
}

// DBObject is one object in the database's catalog.
type DBObject struct {
	Kind string `json:"kind"` // table, view, sequence, function, procedure, trigger, type, event, schema
	// Schema is the object's schema (PostgreSQL; a trigger's table's) or
	// database (MySQL); empty on SQLite.
	Schema string `json:"schema,omitempty"`
	Name   string `json:"name"`
	Table  string `json:"table,omitempty"` // the table a trigger is on
	Args   string `json:"args,omitempty"`  // a PostgreSQL routine's argument types
}

// String names the object as the database does.
func (o DBObject) String() string { return driver.Object(o).String() }

// UninstallReport is what Client.Uninstall found, and did.
type UninstallReport struct {
	// Objects are baton's objects, in the order of their removal: every
	// object its migrations and routine files create (the tracking tables
	// included), the triggers its subscriptions put on the program's
	// tables, and on PostgreSQL the schema `baton migrate` created, when
	// nothing else is in it.
	Objects []DBObject `json:"objects"`
	// Kept are objects that carry baton's prefix but that baton does not
	// create: never touched.
	Kept []DBObject `json:"kept"`
	// Sessions are the sessions whose lease had not run out.
	Sessions []SessionInfo `json:"sessions"`
	// Removed is set once Objects are removed.
	Removed bool `json:"removed"`
}

// Uninstall lists everything baton installed in the database, from the
// database's catalog, and with opts.Remove removes it: the program's own
// tables and rows stay, and the tables it subscribed to lose only baton's
// triggers. The removal is one transaction on SQLite and PostgreSQL; on
// MySQL, where DDL commits by itself, one cut short is finished by running
// it again. While sessions hold a live lease it removes nothing and
// returns an error wrapping ErrSessionsAlive, unless opts.Force. Close the
// client afterwards: Open (or Migrate) installs afresh.
func (c *Client) Uninstall(ctx context.Context, opts UninstallOptions) (UninstallReport, error) {
	r, err := c.drv.Uninstall(ctx, driver.UninstallParams{Remove: opts.Remove, Force: opts.Force})
	out := UninstallReport{Removed: r.Removed, Objects: []DBObject{}, Kept: []DBObject{}, Sessions: []SessionInfo{}}
	for _, o := range r.Objects {
		out.Objects = append(out.Objects, DBObject(o))
	}
	for _, o := range r.Kept {
		out.Kept = append(out.Kept, DBObject(o))
	}
	for _, s := range r.Sessions {
		out.Sessions = append(out.Sessions, sessionInfo(s))
	}
	if err != nil {
		return out, fmt.Errorf("baton: uninstall: %w", err)
	}
	return out, nil
}
