package dashboard

import (
	"fmt"
	"net/http"
	"strconv"

	"net/url"

	"github.com/batonhq/baton"
)

// messageView is a message's page: the message and its dependencies.
type messageView struct {
	baton.MessageInfo
	Deps baton.Dependencies
}

// messageByID sends a message named by id alone (a dependency's link) to
// its page in its queue.
func (d *dash) messageByID(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		d.fail(w, r, fmt.Errorf("%w: message id %q", baton.ErrInvalid, r.PathValue("id")))
		return
	}
	m, err := d.c.Message(r.Context(), id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("%s/queues/%s/messages/%d", base(r), url.PathEscape(m.Queue), id), http.StatusSeeOther)
}

// The workflow graph's geometry (SVG user units).
const (
	nodeW, nodeH = 160, 40
	colGap       = 70
	rowGap       = 22
	margin       = 16
)

// graphNode is a step drawn as a box: its top-left corner, and where its
// label (the step's name, shortened) and its state are written.
type graphNode struct {
	ID          int64
	Name, Label string
	State       string
	X, Y        int
	TX, TY, SY  int
}

// graphEdge is a parent → child arrow.
type graphEdge struct {
	From, To       int64
	X1, Y1, X2, Y2 int
}

// workflowView is a workflow's page: its steps and its graph.
type workflowView struct {
	baton.WorkflowInfo
	Nodes         []graphNode
	Edges         []graphEdge
	Width, Height int
	NodeW, NodeH  int
}

// workflow shows a workflow's steps and its dependency graph.
func (d *dash) workflow(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		d.fail(w, r, fmt.Errorf("%w: workflow id %q", baton.ErrInvalid, r.PathValue("id")))
		return
	}
	wf, err := d.c.Workflow(r.Context(), id)
	var v workflowView
	if err == nil {
		v = layout(wf)
	}
	d.show(w, r, "workflow", fmt.Sprintf("Workflow %d", id), v, err)
}

// layout places each step in the column of its depth (the longest chain
// of parents above it in the workflow), in the order the steps were
// inserted down each column, and draws an arrow for each edge.
func layout(wf baton.WorkflowInfo) workflowView {
	v := workflowView{WorkflowInfo: wf, NodeW: nodeW, NodeH: nodeH}
	depth := map[int64]int{}
	// Steps come by id, parents first (they were inserted so): one pass
	// settles every depth; more would only follow a cycle, which a
	// workflow cannot have.
	for range 2 {
		for _, s := range wf.Steps {
			dep := 0
			for _, p := range s.After {
				if pd, ok := depth[p]; ok && pd+1 > dep {
					dep = pd + 1
				}
			}
			depth[s.ID] = dep
		}
	}
	rows := map[int]int{}
	at := map[int64]graphNode{}
	for _, s := range wf.Steps {
		col := depth[s.ID]
		n := graphNode{ID: s.ID, Name: s.Name, Label: shorten(s.Name, 20), State: string(s.State),
			X: margin + col*(nodeW+colGap), Y: margin + rows[col]*(nodeH+rowGap)}
		n.TX, n.TY, n.SY = n.X+8, n.Y+17, n.Y+33
		if n.State == "" {
			n.State = "gone"
		}
		rows[col]++
		at[s.ID] = n
		v.Nodes = append(v.Nodes, n)
		v.Width = max(v.Width, n.X+nodeW+margin)
		v.Height = max(v.Height, n.Y+nodeH+margin)
	}
	for _, s := range wf.Steps {
		c := at[s.ID]
		for _, p := range s.After {
			pn, ok := at[p]
			if !ok {
				continue // a parent outside the workflow
			}
			v.Edges = append(v.Edges, graphEdge{From: p, To: s.ID,
				X1: pn.X + nodeW, Y1: pn.Y + nodeH/2, X2: c.X - 4, Y2: c.Y + nodeH/2})
		}
	}
	return v
}

// shorten cuts s to n runes, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
