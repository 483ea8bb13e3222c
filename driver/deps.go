package driver

import (
	"context"
	"time"
)

// MessageWaiting is the stored state of a message that waits for its
// parents (dependencies): no claim takes it until the dependency sweep
// makes it ready (MessageReady) or cancels it.
const MessageWaiting MessageState = "W"

// DepsTx are the statements of dependencies and workflows that run in
// baton's transaction or in the program's (CallerQueueTx).
type DepsTx interface {
	// DepParentStates reads would-be parents' stored states (ids distinct);
	// an id missing from the map is no such message, waiting, running or
	// in the history. One statement per 500 ids in baton's transaction.
	DepParentStates(ctx context.Context, ids []int64) (map[int64]MessageState, error)
	// DepAdd records the edges and makes the messages held (just
	// inserted, ready) wait (MessageWaiting): a few statements for any
	// number.
	DepAdd(ctx context.Context, edges []DepNew, held []int64) error
	// WorkflowAdd records messages ids as the steps names (same order) of
	// workflow: a few statements for any number.
	WorkflowAdd(ctx context.Context, workflow int64, ids []int64, names []string) error
}

// DepNew is an edge to record: Child comes after Parent. Done: the parent
// completed already; OnFail: the child runs whatever becomes of the
// parent.
type DepNew struct {
	Parent, Child int64
	Done, OnFail  bool
}

// DepEdge is a message's parent or dependant, its stored state ("" when
// it is gone) and, while it waits or runs, its run-at and attempt.
type DepEdge struct {
	ID      int64
	State   MessageState
	RunAt   time.Time
	Attempt int
}

// DepRelease is a message the dependency sweep made ready.
type DepRelease struct {
	ID    int64
	Queue string
}

// DepSwept is what a dependency sweep did.
type DepSwept struct {
	// Released were made ready, Cancelled (ids) cancelled (a parent did
	// not complete); Pending: edges still wait for their parents.
	Released  []DepRelease
	Cancelled []int64
	Pending   bool
}

// DepOutcome is what a released child whose edges run on failure
// (a batch's callback) is told of its parents: the parent ids by their
// state (stored states; "" for a parent that is gone).
type DepOutcome func(meta string, parents []DepEdge) string

// WorkflowStep is one stored step of a workflow.
type WorkflowStep struct {
	Name string
	DepEdge
}

// DepsRead are the reads of dependencies and workflows, and the sweep.
type DepsRead interface {
	// DepsOf lists a message's parents and its dependants.
	DepsOf(ctx context.Context, id int64) (parents, children []DepEdge, err error)
	// WorkflowOf names the workflow a message is a step of (found false
	// when none) and its step's name.
	WorkflowOf(ctx context.Context, id int64) (workflow int64, name string, found bool, err error)
	// WorkflowGet lists a workflow's steps and its edges (parent, child).
	WorkflowGet(ctx context.Context, workflow int64) (steps []WorkflowStep, edges [][2]int64, err error)
	// DepsSweep settles the edges whose parent is done, under a lock
	// that serializes the sweeps of every process, in one transaction:
	// edges whose parent completed (or, for a child that runs on failure,
	// finished in any way or is gone) are done; a child that does not run
	// on failure is cancelled (and moved to the history) when a parent
	// finished otherwise or is gone, and so on down its own dependants;
	// children with every edge done are made ready (outcome rewrites the
	// meta of those that run on failure). With parents, only the edges of
	// those parents are read (and, down the graph, of the children it
	// cancels); nil: every edge not done.
	DepsSweep(ctx context.Context, parents []int64, outcome DepOutcome) (DepSwept, error)
	// DepsProbeParents reads whether an edge of parents is not done while
	// its parent neither waits nor runs: one a sweep would settle.
	DepsProbeParents(ctx context.Context, parents []int64) (bool, error)
	// DepsProbe reads, in one statement, whether any edge waits and
	// whether one may be settled now (its parent neither waits nor runs).
	DepsProbe(ctx context.Context) (pending, settleable bool, err error)
	// DepsPurge deletes edges and workflow steps whose message has left
	// the history.
	DepsPurge(ctx context.Context) error
	// DepsWaiting counts a queue's messages waiting for their parents, at
	// most limit.
	DepsWaiting(ctx context.Context, queue string, limit int) (int64, error)
}
