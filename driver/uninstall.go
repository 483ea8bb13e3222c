package driver

import "errors"

// ErrSessionsAlive is Uninstall's answer when sessions still hold a live
// lease and the removal was not forced: nothing was removed.
var ErrSessionsAlive = errors.New("sessions are alive")

// Object kinds, as Uninstall lists them.
const (
	ObjTrigger   = "trigger"
	ObjEvent     = "event" // MySQL's scheduled event
	ObjView      = "view"
	ObjFunction  = "function"
	ObjProcedure = "procedure"
	ObjTable     = "table"
	ObjSequence  = "sequence"
	ObjType      = "type"
	ObjSchema    = "schema"
)

// Object is one object in the database's catalog.
type Object struct {
	Kind string
	// Schema is the object's schema (PostgreSQL; a trigger's: its
	// table's) or database (MySQL); empty on SQLite.
	Schema string
	Name   string
	// Table is the table a trigger is on, in Schema.
	Table string
	// Args are a PostgreSQL routine's argument types, which name it among
	// its overloads.
	Args string
}

// String names the object as the database does: schema.name, name(args)
// for a routine, name ON table for a trigger.
func (o Object) String() string {
	q := func(n string) string {
		if o.Schema == "" {
			return n
		}
		return o.Schema + "." + n
	}
	switch o.Kind {
	case ObjTrigger:
		return o.Name + " ON " + q(o.Table)
	case ObjSchema:
		return o.Name
	case ObjFunction, ObjProcedure:
		return q(o.Name) + "(" + o.Args + ")"
	}
	return q(o.Name)
}

// UninstallParams are the inputs of Driver.Uninstall.
type UninstallParams struct {
	// Remove removes baton's objects; otherwise Uninstall only lists them.
	Remove bool
	// Force removes them even while sessions hold a live lease.
	Force bool
}

// UninstallReport is what Driver.Uninstall found, and did.
type UninstallReport struct {
	// Objects are baton's objects, in the order of their removal: those
	// its migrations and routine files create (the tracking tables
	// included), the triggers its subscriptions put on the program's
	// tables, and on PostgreSQL the schema `baton migrate` created, once
	// nothing else is in it.
	Objects []Object
	// Kept are objects that carry baton's prefix but that baton does not
	// create: never touched.
	Kept []Object
	// Sessions are the sessions whose lease had not run out.
	Sessions []Session
	// Removed is set once Objects are removed.
	Removed bool
}
