package sqlbase

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/batonhq/baton/driver"
)

// Dependencies: edges of message_deps (migration 003) from each parent to
// a child that waits in state 'W'. The hot paths (claims, acks) never read
// them: the dependency sweep settles the edges whose parent is done, one
// sweep at a time across processes (dep_lock), so that two parents that
// finish at once in two processes can neither leave their child waiting
// nor release it early.

// rowsPerStatement bounds the rows of one multi-row insert (and the ids
// of one list): at most 2,000 bind variables.
const rowsPerStatement = 500

// DepParentStates implements driver.DepsTx: a list query per 500 ids; in
// the caller's transaction, which reads one row a statement, a statement
// per id.
func (t *Tx) DepParentStates(ctx context.Context, ids []int64) (map[int64]driver.MessageState, error) {
	out := make(map[int64]driver.MessageState, len(ids))
	if t.caller != nil {
		for _, id := range ids {
			var st string
			if err := t.row(ctx, "dep_parent_state", id, id).Scan(&st); err != nil {
				return nil, fmt.Errorf("dep_parent_state: %w", err)
			}
			if st != "" {
				out[id] = driver.MessageState(st)
			}
		}
		return out, nil
	}
	type parentState struct {
		id int64
		st string
	}
	for part := range slices.Chunk(ids, rowsPerStatement) {
		// The list twice: once numbered ($N), else its values twice.
		q := expandList(t.db.Q("dep_parent_states"), t.db.D.Numbered, 1, len(part))
		args := int64Args(part)
		if !t.db.D.Numbered {
			args = append(args, args...)
		}
		rows, err := t.listed(ctx, q, len(part)).QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("dep_parent_states: %w", err)
		}
		found, err := ScanAll(rows, func(sc Scanner) (p parentState, err error) { return p, sc.Scan(&p.id, &p.st) })
		if err != nil {
			return nil, fmt.Errorf("dep_parent_states: %w", err)
		}
		for _, p := range found {
			out[p.id] = driver.MessageState(p.st)
		}
	}
	return out, nil
}

// DepAdd implements driver.DepsTx: the edges in multi-row inserts, the
// held messages in lists.
func (t *Tx) DepAdd(ctx context.Context, edges []driver.DepNew, held []int64) error {
	err := t.insertRows(ctx, "dep_insert", 4, len(edges), func(i int) []any {
		e := edges[i]
		return []any{e.Parent, e.Child, flag(e.Done), flag(e.OnFail)}
	})
	if err != nil {
		return err
	}
	for part := range slices.Chunk(held, rowsPerStatement) {
		if _, err := t.execText(ctx, "dep_hold", expandList(t.db.Q("dep_hold"), t.db.D.Numbered, 1, len(part)), int64Args(part)...); err != nil {
			return err
		}
	}
	return nil
}

// WorkflowAdd implements driver.DepsTx: multi-row inserts.
func (t *Tx) WorkflowAdd(ctx context.Context, workflow int64, ids []int64, names []string) error {
	return t.insertRows(ctx, "workflow_step_insert", 3, len(ids), func(i int) []any { return []any{workflow, ids[i], names[i]} })
}

// insertRows runs the multi-row insert name ({rows} of width values) over
// n rows, rowsPerStatement a statement; row(i) gives row i's values.
func (t *Tx) insertRows(ctx context.Context, name string, width, n int, row func(i int) []any) error {
	for from := 0; from < n; from += rowsPerStatement {
		to := min(from+rowsPerStatement, n)
		args := make([]any, 0, width*(to-from))
		for i := from; i < to; i++ {
			args = append(args, row(i)...)
		}
		if _, err := t.execText(ctx, name, expandRows(t.db.Q(name), t.db.D.Numbered, width, to-from), args...); err != nil {
			return err
		}
	}
	return nil
}

// edges reads rows of an id and a state.
func (t *Tx) edges(ctx context.Context, name string, args ...any) ([]driver.DepEdge, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, name, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ScanAll(rows, func(sc Scanner) (driver.DepEdge, error) {
		var e driver.DepEdge
		var runAt int64
		err := sc.Scan(&e.ID, &e.State, &runAt, &e.Attempt)
		e.RunAt = FromMicros(runAt)
		return e, err
	})
}

// DepsOf implements driver.DepsRead.
func (t *Tx) DepsOf(ctx context.Context, id int64) (parents, children []driver.DepEdge, err error) {
	if parents, err = t.edges(ctx, "dep_parents", id); err != nil {
		return nil, nil, err
	}
	children, err = t.edges(ctx, "dep_children", id)
	return parents, children, err
}

// WorkflowOf implements driver.DepsRead.
func (t *Tx) WorkflowOf(ctx context.Context, id int64) (int64, string, bool, error) {
	var wf int64
	var name string
	err := t.row(ctx, "workflow_of", id).Scan(&wf, &name)
	switch {
	case err == sql.ErrNoRows:
		return 0, "", false, nil
	case err != nil:
		return 0, "", false, fmt.Errorf("workflow_of: %w", err)
	}
	return wf, name, true, nil
}

// WorkflowGet implements driver.DepsRead.
func (t *Tx) WorkflowGet(ctx context.Context, workflow int64) ([]driver.WorkflowStep, [][2]int64, error) {
	rows, err := t.db.QueryNamed(ctx, t.Tx, "workflow_steps", workflow)
	if err != nil {
		return nil, nil, fmt.Errorf("workflow_steps: %w", err)
	}
	steps, err := ScanAll(rows, func(sc Scanner) (driver.WorkflowStep, error) {
		var s driver.WorkflowStep
		var runAt int64
		err := sc.Scan(&s.ID, &s.Name, &s.State, &runAt, &s.Attempt)
		s.RunAt = FromMicros(runAt)
		return s, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("workflow_steps: %w", err)
	}
	if rows, err = t.db.QueryNamed(ctx, t.Tx, "workflow_edges", workflow); err != nil {
		return nil, nil, fmt.Errorf("workflow_edges: %w", err)
	}
	edges, err := ScanAll(rows, func(sc Scanner) ([2]int64, error) {
		var e [2]int64
		err := sc.Scan(&e[0], &e[1])
		return e, err
	})
	return steps, edges, err
}

// DepsWaiting implements driver.DepsRead.
func (t *Tx) DepsWaiting(ctx context.Context, queue string, limit int) (int64, error) {
	var n int64
	if err := t.row(ctx, "dep_waiting_count", queue, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("dep_waiting_count: %w", err)
	}
	return n, nil
}

// DepsPurge implements driver.DepsRead.
func (t *Tx) DepsPurge(ctx context.Context) error {
	if _, err := t.exec(ctx, "dep_purge"); err != nil {
		return fmt.Errorf("dep_purge: %w", err)
	}
	if _, err := t.exec(ctx, "workflow_purge"); err != nil {
		return fmt.Errorf("workflow_purge: %w", err)
	}
	return nil
}

// listedQuery runs the query name with {list} expanded for ids, on its
// kept statement when there is one (listed).
func (t *Tx) listedQuery(ctx context.Context, name string, ids []int64) (*sql.Rows, error) {
	q := expandList(t.db.Q(name), t.db.D.Numbered, 1, len(ids))
	return t.listed(ctx, q, len(ids)).QueryContext(ctx, q, int64Args(ids)...)
}

// DepsSweep implements driver.DepsRead.
func (t *Tx) DepsSweep(ctx context.Context, parents []int64, outcome driver.DepOutcome) (driver.DepSwept, error) {
	var out driver.DepSwept
	err := t.atomic(ctx, func(t *Tx) error {
		out = driver.DepSwept{}
		if _, err := t.ids(ctx, "dep_lock"); err != nil {
			return fmt.Errorf("dep_lock: %w", err)
		}
		var touched []int64
		// Each round settles the edges whose parent is done; a cancelled
		// child is a parent that did not complete in the next round.
		for round, from := 0, slices.Clip(parents); round < 100; round++ {
			kids, err := depRows(ctx, t, "dep_satisfiable", from, ScanInt64)
			if err != nil {
				return err
			}
			if len(kids) > 0 {
				q := expandList(t.db.Q("dep_satisfy"), t.db.D.Numbered, 1, len(kids))
				if _, err := t.q().ExecContext(ctx, q, int64Args(kids)...); err != nil {
					return fmt.Errorf("dep_satisfy: %w", err)
				}
				touched = append(touched, kids...)
			}
			cancelled, err := t.cancelDoomed(ctx, from)
			if err != nil {
				return err
			}
			out.Cancelled = append(out.Cancelled, cancelled...)
			if len(cancelled) == 0 && len(kids) < 1000 {
				break
			}
			if from != nil {
				from = append(from, cancelled...)
			}
		}
		slices.Sort(touched)
		touched = slices.Compact(touched)
		for len(touched) > 0 {
			batch := touched[:min(len(touched), 500)]
			touched = touched[len(batch):]
			if err := t.release(ctx, batch, outcome, &out); err != nil {
				return err
			}
		}
		var err error
		out.Pending, _, err = t.DepsProbe(ctx)
		return err
	})
	return out, err
}

// depRows reads the rows of query name over every edge not done (parents
// nil) or, by name_ids, over those of parents.
func depRows[T any](ctx context.Context, t *Tx, name string, parents []int64, scan func(Scanner) (T, error)) ([]T, error) {
	var rows *sql.Rows
	var err error
	if parents == nil {
		rows, err = t.db.QueryNamed(ctx, t.Tx, name)
	} else {
		name += "_ids"
		rows, err = t.listedQuery(ctx, name, parents)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out, err := ScanAll(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// DepsProbeParents implements driver.DepsRead.
func (t *Tx) DepsProbeParents(ctx context.Context, parents []int64) (bool, error) {
	rows, err := t.listedQuery(ctx, "dep_probe_ids", parents)
	if err != nil {
		return false, fmt.Errorf("dep_probe_ids: %w", err)
	}
	n, err := ScanAll(rows, ScanInt64)
	if err != nil {
		return false, fmt.Errorf("dep_probe_ids: %w", err)
	}
	return len(n) > 0 && n[0] > 0, nil
}

// DepsProbe implements driver.DepsRead.
func (t *Tx) DepsProbe(ctx context.Context) (pending, settleable bool, err error) {
	var p, s int
	if err := t.row(ctx, "dep_probe").Scan(&p, &s); err != nil {
		return false, false, fmt.Errorf("dep_probe: %w", err)
	}
	return p > 0, s > 0, nil
}

// doom is an edge whose parent did not complete.
type doom struct {
	child, parent int64
	state         string
}

// cancelDoomed cancels the waiting children one of whose parents (of
// parents; nil: any) did not complete, when they do not run on failure,
// and returns them.
func (t *Tx) cancelDoomed(ctx context.Context, parents []int64) ([]int64, error) {
	dooms, err := depRows(ctx, t, "dep_doomed", parents, func(sc Scanner) (doom, error) {
		var d doom
		err := sc.Scan(&d.child, &d.parent, &d.state)
		return d, err
	})
	if err != nil {
		return nil, err
	}
	var n []int64
	for i, d := range dooms {
		if i > 0 && dooms[i-1].child == d.child {
			continue
		}
		why := map[string]string{"D": "dead", "X": "cancelled", "": "deleted"}[d.state]
		if why == "" {
			why = "not completed"
		}
		msg := fmt.Sprintf("baton: cancelled: parent %d was %s", d.parent, why)
		moved, err := affected(t.exec(ctx, "dep_cancel_mark", msg, d.child))
		if err != nil {
			return n, fmt.Errorf("dep_cancel_mark: %w", err)
		}
		if moved {
			if err := t.moveMarked(ctx, d.child, driver.MessageCancelled); err != nil {
				return n, err
			}
			n = append(n, d.child)
		}
		// A child that is gone (deleted) or not waiting any more has its
		// edges done all the same, so that no sweep reads them again.
		if _, err := t.exec(ctx, "dep_done_child", d.child); err != nil {
			return n, fmt.Errorf("dep_done_child: %w", err)
		}
	}
	return n, nil
}

// release makes ready the children of ids that wait with every edge done.
func (t *Tx) release(ctx context.Context, ids []int64, outcome driver.DepOutcome, out *driver.DepSwept) error {
	rows, err := t.listedQuery(ctx, "dep_releasable", ids)
	if err != nil {
		return fmt.Errorf("dep_releasable: %w", err)
	}
	type ready struct {
		id          int64
		queue, meta string
		onFail      int
	}
	rs, err := ScanAll(rows, func(sc Scanner) (ready, error) {
		var r ready
		err := sc.Scan(&r.id, &r.queue, &r.meta, &r.onFail)
		return r, err
	})
	if err != nil {
		return fmt.Errorf("dep_releasable: %w", err)
	}
	for _, r := range rs {
		meta := r.meta
		if r.onFail == 1 && outcome != nil {
			parents, err := t.edges(ctx, "dep_parents", r.id)
			if err != nil {
				return err
			}
			meta = outcome(meta, parents)
		}
		var m any
		if meta != "" {
			m = meta
		}
		if _, err := t.exec(ctx, "dep_release", m, r.id); err != nil {
			return fmt.Errorf("dep_release: %w", err)
		}
		out.Released = append(out.Released, driver.DepRelease{ID: r.id, Queue: r.queue})
	}
	return nil
}
