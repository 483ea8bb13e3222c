package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/batonhq/baton"
)

// The job events page: a table that events.js fills as the stream
// (/events/stream, server-sent events) brings job events from every
// process. The page does not refresh itself.

// eventsPage is the events page's data: the filter and the stream's URL
// (with the filter).
type eventsPage struct {
	Queue, Kind, State string
	Stream             string
}

// jobFilter reads the filter of the events page and stream: queue, kind
// and state, each optional.
func jobFilter(r *http.Request) (baton.JobFilter, eventsPage, error) {
	q := r.URL.Query()
	p := eventsPage{Queue: q.Get("queue"), Kind: q.Get("kind"), State: q.Get("state")}
	var f baton.JobFilter
	if p.Queue != "" {
		if err := baton.ValidateQueue(p.Queue); err != nil {
			return f, p, err
		}
		f.Queues = []string{p.Queue}
	}
	if p.Kind != "" {
		if err := baton.ValidateKind(p.Kind); err != nil {
			return f, p, err
		}
		f.Kinds = []string{p.Kind}
	}
	if p.State != "" {
		st, err := baton.ParseJobEventState(p.State)
		if err != nil {
			return f, p, err
		}
		f.States = []baton.JobEventState{st}
	}
	v := url.Values{}
	for k, s := range map[string]string{"queue": p.Queue, "kind": p.Kind, "state": p.State} {
		if s != "" {
			v.Set(k, s)
		}
	}
	p.Stream = base(r) + "/events/stream"
	if len(v) > 0 {
		p.Stream += "?" + v.Encode()
	}
	return f, p, nil
}

func (d *dash) events(w http.ResponseWriter, r *http.Request) {
	_, p, err := jobFilter(r)
	d.show(w, r, "events", "Job events", p, err)
}

// eventStream streams job events as server-sent events, one JSON object
// (baton.JobEvent) per event, until the client goes away; a comment every
// 15 s keeps idle connections open through proxies.
func (d *dash) eventStream(w http.ResponseWriter, r *http.Request) {
	f, _, err := jobFilter(r)
	if err != nil {
		http.Error(w, "baton dashboard: "+err.Error(), http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "baton dashboard: streaming unsupported", http.StatusInternalServerError)
		return
	}
	sub, err := d.c.SubscribeJobs(r.Context(), f)
	if err != nil {
		http.Error(w, "baton dashboard: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer sub.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": subscribed\n\n") // the subscription is live once the page sees the stream open
	flusher.Flush()
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			b, err := json.Marshal(ev)
			if err != nil {
				return
			}
			fmt.Fprintf(w, "data: %s\n\n", b) // JSON holds no newline
		}
		flusher.Flush()
	}
}
