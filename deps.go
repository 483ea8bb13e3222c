package baton

import (
	"context"
	"fmt"
	"slices"

	"time"

	"github.com/batonhq/baton/driver"
	mq "github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/tracing"
)

// Dependencies, workflows and batches: a message enqueued with
// EnqueueOptions.After runs only after its parents completed; a workflow
// is several messages inserted in one call and one transaction, naming
// each other; a batch is a workflow whose last step (the callback) runs
// once all the others finished, whatever became of them, and reads their
// outcomes (Message.Batch). See docs/guarantees.md.

// WorkflowStep is one message of a workflow (EnqueueWorkflow).
type WorkflowStep struct {
	// Name identifies the step in its workflow: 1 to 255 bytes, unique.
	Name string
	// Queue the step's message goes to.
	Queue   string
	Payload []byte
	// After names the steps of the same workflow this one comes after (in
	// Options.After, ids of messages outside it).
	After []string
	// Options of the step's message; Options.AfterAnyOutcome applies to
	// its parents in After too.
	Options EnqueueOptions
}

// MaxWorkflowSteps bounds the steps of one workflow.
const MaxWorkflowSteps = 1000

// EnqueueWorkflow inserts the steps of a workflow in one transaction, all
// or none, and returns their ids in the steps' order. The workflow's id
// (Client.Workflow) is the smallest of them. A step that names an unknown
// step, itself, or closes a cycle, a duplicate name or an unknown parent
// id is ErrInvalid, and nothing is inserted. Steps without parents are
// ready at once (or at their delay); the others are pending until their
// parents completed (see EnqueueOptions.After).
func (c *Client) EnqueueWorkflow(ctx context.Context, steps []WorkflowStep) ([]int64, error) {
	return c.enqueueWorkflow(ctx, nil, steps)
}

// EnqueueWorkflowTx is EnqueueWorkflow in the caller's transaction tx (a
// *sql.Tx, or a pgx transaction through postgres.PgxTx): the steps exist
// if and only if tx commits.
func (c *Client) EnqueueWorkflowTx(ctx context.Context, tx Execer, steps []WorkflowStep) ([]int64, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: EnqueueWorkflowTx needs a transaction", ErrInvalid)
	}
	return c.enqueueWorkflow(ctx, tx, steps)
}

// Batch returns the steps of a batch: the jobs, and the callback after
// them all, which runs once every job finished, whatever became of it
// (completed, dead, cancelled or deleted), and reads their outcomes with
// Message.Batch. Enqueue them with EnqueueWorkflow.
func Batch(jobs []WorkflowStep, callback WorkflowStep) []WorkflowStep {
	out := append(slices.Clone(jobs), callback)
	cb := &out[len(out)-1]
	cb.After = slices.Clone(cb.After)
	for _, j := range jobs {
		cb.After = append(cb.After, j.Name)
	}
	cb.Options.AfterAnyOutcome = true
	return out
}

// BatchOutcome is what a message enqueued with AfterAnyOutcome (a batch's
// callback) learns of its parents when it is released: how many
// completed, died, were cancelled or were deleted (or pruned), and the
// ids of those that did not complete (at most the first 100).
type BatchOutcome struct {
	Parents   int     `json:"parents"`
	Completed int     `json:"completed"`
	Dead      int     `json:"dead"`
	Cancelled int     `json:"cancelled"`
	Deleted   int     `json:"deleted"`
	Failed    []int64 `json:"failed,omitempty"`
}

// Batch returns the outcomes of the message's parents when it was
// enqueued with EnqueueOptions.AfterAnyOutcome (a batch's callback); ok
// is false otherwise.
func (m *Message) Batch() (o BatchOutcome, ok bool) {
	if m.meta.Batch == nil {
		return BatchOutcome{}, false
	}
	return BatchOutcome(*m.meta.Batch), true
}

// MessageRef is a message named by a dependency, and its state ("" when
// it has left the history).
type MessageRef struct {
	ID    int64        `json:"id"`
	State MessageState `json:"state"`
}

// Dependencies are a message's parents and dependants, and its workflow.
type Dependencies struct {
	Parents  []MessageRef `json:"parents"`
	Children []MessageRef `json:"children"`
	// Workflow is the id of the workflow the message is a step of (0 when
	// none), Step the step's name.
	Workflow int64  `json:"workflow,omitempty"`
	Step     string `json:"step,omitempty"`
}

// Dependencies reads a message's parents, dependants and workflow (empty
// for a message without any).
func (c *Client) Dependencies(ctx context.Context, id int64) (Dependencies, error) {
	parents, children, err := c.mq.DepsOf(ctx, id)
	if err != nil {
		return Dependencies{}, err
	}
	d := Dependencies{Parents: refs(parents), Children: refs(children)}
	wf, step, found, err := c.mq.WorkflowOf(ctx, id)
	if found {
		d.Workflow, d.Step = wf, step
	}
	return d, err
}

// WorkflowInfo is a workflow: its steps, in the order they were inserted.
type WorkflowInfo struct {
	ID    int64              `json:"id"`
	Steps []WorkflowStepInfo `json:"steps"`
}

// WorkflowStepInfo is one step of a workflow, its state ("" once it left
// the history) and the ids of its parents.
type WorkflowStepInfo struct {
	ID    int64        `json:"id"`
	Name  string       `json:"name"`
	State MessageState `json:"state"`
	After []int64      `json:"after,omitempty"`
}

// Workflow reads a workflow by id (EnqueueWorkflow); ErrNotFound when it
// has no step left.
func (c *Client) Workflow(ctx context.Context, id int64) (WorkflowInfo, error) {
	steps, edges, err := c.mq.Workflow(ctx, id)
	if err != nil {
		return WorkflowInfo{}, err
	}
	w := WorkflowInfo{ID: id}
	at := map[int64]int{}
	for _, s := range steps {
		at[s.ID] = len(w.Steps)
		w.Steps = append(w.Steps, WorkflowStepInfo{ID: s.ID, Name: s.Name, State: stateOf(s.DepEdge)})
	}
	for _, e := range edges {
		if i, ok := at[e[1]]; ok {
			w.Steps[i].After = append(w.Steps[i].After, e[0])
		}
	}
	return w, nil
}

// refs converts stored edges.
func refs(es []driver.DepEdge) []MessageRef {
	out := make([]MessageRef, len(es))
	for i, e := range es {
		out[i] = MessageRef{ID: e.ID, State: stateOf(e)}
	}
	return out
}

// stateOf names the state of a message a dependency names ("" when it
// is gone).
func stateOf(e driver.DepEdge) MessageState {
	if e.State == "" {
		return ""
	}
	return MessageState(mq.StateName(driver.Message{State: e.State, RunAt: e.RunAt, Attempt: e.Attempt}, time.Now()))
}

// hasAfter says whether any message names parents.
func hasAfter(msgs []NewMessage) bool {
	return slices.ContainsFunc(msgs, func(m NewMessage) bool { return len(m.After) > 0 })
}

// enqueueAfter inserts checked messages (rows) of which some name parents.
func (c *Client) enqueueAfter(ctx context.Context, tx Execer, msgs []NewMessage, rows []driver.NewMessage) ([]int64, []bool, error) {
	drs := make([]mq.DepRow, len(rows))
	for i, r := range rows {
		if r.UniqueKey != "" {
			return nil, nil, fmt.Errorf("%w: message %d has a unique key, in a call where messages have parents (After): enqueue it on its own", ErrInvalid, i)
		}
		drs[i] = mq.DepRow{Row: r, After: msgs[i].After, RunOnFail: msgs[i].AfterAnyOutcome}
	}
	ids, err := c.insertDeps(ctx, tx, drs, false)
	return ids, make([]bool, len(ids)), err
}

// insertDeps inserts rows with dependencies in baton's transaction or in
// tx.
func (c *Client) insertDeps(ctx context.Context, tx Execer, rows []mq.DepRow, workflow bool) ([]int64, error) {
	if tx == nil {
		return c.mq.InsertDeps(ctx, rows, workflow)
	}
	ct, err := inCallerTx(tx, "EnqueueTx")
	if err != nil {
		return nil, err
	}
	return c.mq.InsertDepsTx(ctx, ct, rows, workflow)
}

// enqueueWorkflow checks the steps, orders them parents first and
// inserts them.
func (c *Client) enqueueWorkflow(ctx context.Context, tx Execer, steps []WorkflowStep) (ids []int64, err error) {
	order, err := workflowOrder(steps)
	if err != nil {
		return nil, err
	}
	at := map[string]int{} // step name -> its row
	rows := make([]mq.DepRow, len(order))
	for i, si := range order {
		s := steps[si]
		row, err := newMessage(s.Queue, s.Payload, s.Options)
		if err == nil && row.UniqueKey != "" {
			err = fmt.Errorf("%w: a workflow step cannot have a unique key", ErrInvalid)
		}
		if err != nil {
			return nil, fmt.Errorf("workflow step %q: %w", s.Name, err)
		}
		rows[i] = mq.DepRow{Row: row, After: s.Options.After, RunOnFail: s.Options.AfterAnyOutcome, Step: s.Name}
		for _, p := range s.After {
			rows[i].AfterRows = append(rows[i].AfterRows, at[p])
		}
		at[s.Name] = i
	}
	ctx, span, meta := c.spans.StartEnqueue(ctx, steps[order[0]].Queue, len(rows))
	defer func() { tracing.End(span, err) }()
	for i := range rows {
		rows[i].Row.Meta = mq.WithTrace(rows[i].Row.Meta, meta)
	}
	got, err := c.insertDeps(ctx, tx, rows, true)
	if err != nil {
		return nil, err
	}
	ids = make([]int64, len(steps))
	for i, si := range order {
		ids[si] = got[i]
	}
	return ids, nil
}

// workflowOrder checks the steps' names and their After and returns the
// steps' indexes parents first (in the given order where it can).
func workflowOrder(steps []WorkflowStep) ([]int, error) {
	if len(steps) == 0 || len(steps) > MaxWorkflowSteps {
		return nil, fmt.Errorf("%w: a workflow has 1 to %d steps, not %d", ErrInvalid, MaxWorkflowSteps, len(steps))
	}
	index := map[string]int{}
	for i, s := range steps {
		if s.Name == "" || len(s.Name) > 255 {
			return nil, fmt.Errorf("%w: workflow step %d: a name is 1 to 255 bytes", ErrInvalid, i)
		}
		if _, dup := index[s.Name]; dup {
			return nil, fmt.Errorf("%w: workflow step %q: two steps have this name", ErrInvalid, s.Name)
		}
		index[s.Name] = i
	}
	waiting := make([]int, len(steps)) // parents not yet placed
	children := make([][]int, len(steps))
	for i, s := range steps {
		seen := map[string]bool{}
		for _, p := range s.After {
			j, ok := index[p]
			switch {
			case !ok:
				return nil, fmt.Errorf("%w: workflow step %q comes after %q, which is no step of the workflow", ErrInvalid, s.Name, p)
			case j == i:
				return nil, fmt.Errorf("%w: workflow step %q comes after itself", ErrInvalid, s.Name)
			case seen[p]:
				continue
			}
			seen[p] = true
			waiting[i]++
			children[j] = append(children[j], i)
		}
	}
	var order []int
	placed := make([]bool, len(steps))
	for len(order) < len(steps) {
		next := -1
		for i := range steps {
			if !placed[i] && waiting[i] == 0 {
				next = i
				break
			}
		}
		if next < 0 {
			var cyc []string
			for i, s := range steps {
				if !placed[i] {
					cyc = append(cyc, s.Name)
				}
			}
			return nil, fmt.Errorf("%w: workflow steps %q come after each other (a cycle)", ErrInvalid, cyc)
		}
		placed[next] = true
		order = append(order, next)
		for _, ch := range children[next] {
			waiting[ch]--
		}
	}
	return order, nil
}
