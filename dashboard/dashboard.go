// Package dashboard is baton's web dashboard, an http.Handler that an
// application mounts (under any path prefix, with http.StripPrefix) or that
// `baton serve` runs.
//
// Pages: the overview (every queue: counts by state, oldest ready message,
// throughput), a queue (its counts, charts of its per-minute roll-up
// (charts.go) and messages by state, with re-drive and purge of dead
// letters, retry, cancel and delete of one message, and bulk cancel,
// delete and retry by state, kind and age), a message, a workflow's
// graph, locks (the wait-for graph (waitgraph.go), then granted and
// pending, like MySQL's metadata_locks, with owner, held for, waiters and
// fencing token), sessions, subscriptions and job events (streamed live
// from every process). Pages refresh themselves every 2 seconds (the job
// events page is fed by a stream instead). Server-rendered HTML, escaped by
// html/template; the few assets are embedded, nothing is loaded from
// elsewhere.
//
// Security: with Options.Token set, every request must carry it (an
// "Authorization: Bearer" header, or the cookie set by opening any page
// with ?token=...). Mutations are POST requests that carry either that
// bearer token or the page's CSRF token from a same-origin form; with
// Options.ReadOnly no mutating route exists at all.
package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton"
)

//go:embed assets templates
var files embed.FS

// Options configure the dashboard.
type Options struct {
	// ReadOnly leaves out every mutating route.
	ReadOnly bool
	// Token, when set, is required on every request.
	Token string
	// Metrics, when set, is served at /metrics (for example
	// (*metrics.Metrics).Handler()).
	Metrics http.Handler
}

type dash struct {
	c    *baton.Client
	o    Options
	csrf string
	tmpl map[string]*template.Template
}

// New returns the dashboard of c's database.
func New(c *baton.Client, o Options) (http.Handler, error) {
	var rnd [24]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(files, "assets")
	if err != nil {
		return nil, err
	}
	d := &dash{c: c, o: o, csrf: hex.EncodeToString(rnd[:]), tmpl: tmpl}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", d.overview)
	mux.HandleFunc("GET /queues/{queue}", d.queue)
	mux.HandleFunc("GET /queues/{queue}/messages/{id}", d.message)
	mux.HandleFunc("GET /messages/{id}", d.messageByID)
	mux.HandleFunc("GET /workflows/{id}", d.workflow)
	mux.HandleFunc("GET /locks", d.locks)
	mux.HandleFunc("GET /sessions", d.sessions)
	mux.HandleFunc("GET /subscriptions", d.subscriptions)
	mux.HandleFunc("GET /events", d.events)
	mux.HandleFunc("GET /events/stream", d.eventStream)
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics)
	}
	if !o.ReadOnly {
		for _, m := range d.mutations() {
			mux.HandleFunc("POST /queues/{queue}/"+m.route, d.mutate(m.act))
		}
	}
	return d.guard(mux), nil
}

// pages are the templates, each rendered inside layout.html.
var pages = []string{"overview", "queue", "message", "locks", "sessions", "subscriptions", "events", "error", "workflow"}

// parseTemplates parses every page's template, by page.
func parseTemplates() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"ago":     ago,
		"dur":     dur,
		"join":    joinActions,
		"path":    url.PathEscape,
		"list":    func(v ...string) []string { return v },
		"preview": preview,
	}
	out := make(map[string]*template.Template, len(pages))
	for _, page := range pages {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/charts.html", "templates/"+page+".html", "templates/part_*.html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", page, err)
		}
		out[page] = t
	}
	return out, nil
}

// joinActions lists a subscription's actions.
func joinActions(a []baton.Action) string {
	s := make([]string, len(a))
	for i, x := range a {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

// preview is the first 120 bytes of a payload, as text.
func preview(b []byte) string {
	s := string(b)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// mutation is a mutating route below /queues/{queue}/ and its action,
// which returns what it did.
type mutation struct {
	route string
	act   func(ctx context.Context, queue string) (string, error)
}

// mutations are the routes that change a queue or one of its messages.
func (d *dash) mutations() []mutation {
	c := d.c
	return []mutation{
		{"redrive", func(ctx context.Context, q string) (string, error) {
			n, err := c.Redrive(ctx, q)
			return fmt.Sprintf("%d dead letters of %s moved back to the queue", n, q), err
		}},
		{"purge", func(ctx context.Context, q string) (string, error) {
			n, err := c.PurgeDead(ctx, q)
			return fmt.Sprintf("%d dead letters of %s deleted", n, q), err
		}},
		{"messages/{id}/retry", onMessage("message %d of %s is due now", c.RetryNow)},
		{"messages/{id}/delete", onMessage("message %d of %s deleted", c.DeleteMessage)},
		{"messages/{id}/cancel", onMessage("message %d of %s cancelled", func(ctx context.Context, _ string, id int64) error {
			return c.CancelMessage(ctx, id)
		})},
		{"bulk", d.bulk},
		{"pause", func(ctx context.Context, q string) (string, error) {
			return q + " paused: no worker takes its messages until it is resumed", c.SetQueuePaused(ctx, q, true)
		}},
		{"resume", func(ctx context.Context, q string) (string, error) {
			return q + " resumed", c.SetQueuePaused(ctx, q, false)
		}},
		{"limits", d.setLimits},
	}
}

// onMessage is the action of a message route: act on the message {id} of
// the queue; done says what was done, of the id and the queue.
func onMessage(done string, act func(ctx context.Context, queue string, id int64) error) func(context.Context, string) (string, error) {
	return func(ctx context.Context, q string) (string, error) {
		id, err := messageID(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(done, id, q), act(ctx, q, id)
	}
}

// guard checks the token and sets the headers every response carries.
func (d *dash) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w.Header())
		if d.o.Token != "" && !d.admit(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// setHeaders sets the security headers of every response.
func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// admit checks a request's token; false when it answered the request
// instead: a page opened with the right ?token= gets the cookie and goes
// to the same page without it, a request without the token is refused.
func (d *dash) admit(w http.ResponseWriter, r *http.Request) bool {
	if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && same(t, d.o.Token) {
		http.SetCookie(w, &http.Cookie{Name: "baton_token", Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, base(r)+u.RequestURI(), http.StatusSeeOther)
		return false
	}
	if !d.bearer(r) && !d.cookie(r) {
		http.Error(w, "baton dashboard: a token is required (open the page with ?token=..., or send Authorization: Bearer ...)", http.StatusUnauthorized)
		return false
	}
	return true
}

func same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func (d *dash) bearer(r *http.Request) bool {
	t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && d.o.Token != "" && same(t, d.o.Token)
}

func (d *dash) cookie(r *http.Request) bool {
	c, err := r.Cookie("baton_token")
	return err == nil && same(c.Value, d.o.Token)
}

// sameOrigin: the browser says the request comes from this site's own
// pages (Sec-Fetch-Site), or, for browsers that do not send it, Origin
// names this host.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin":
		return true
	case "":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// mutate wraps an action on one queue: bearer token, or CSRF token from a
// same-origin form; then back to the queue's page with a message.
func (d *dash) mutate(act func(ctx context.Context, queue string) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !d.bearer(r) && !(same(r.PostFormValue("csrf"), d.csrf) && sameOrigin(r)) {
			http.Error(w, "baton dashboard: cross-site or unauthenticated request refused", http.StatusForbidden)
			return
		}
		q := r.PathValue("queue")
		ctx := context.WithValue(context.WithValue(r.Context(), idKey{}, r.PathValue("id")), formKey{}, r.PostForm)
		msg, err := act(ctx, q)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		http.Redirect(w, r, base(r)+"/queues/"+url.PathEscape(q)+"?done="+url.QueryEscape(msg), http.StatusSeeOther)
	}
}

type idKey struct{}

// messageID is the {id} of a message route.
func messageID(ctx context.Context) (int64, error) {
	s, _ := ctx.Value(idKey{}).(string)
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: message id %q", baton.ErrInvalid, s)
	}
	return id, nil
}

// base is the path prefix the dashboard is mounted under (what
// http.StripPrefix removed), so that links work wherever it is mounted.
func base(r *http.Request) string {
	full := r.URL.RawPath
	if full == "" {
		full = r.URL.EscapedPath()
	}
	orig := strings.SplitN(r.RequestURI, "?", 2)[0]
	return strings.TrimSuffix(strings.TrimSuffix(orig, full), "/")
}

type page struct {
	Base     string
	Title    string
	Nav      string
	CSRF     string
	ReadOnly bool
	Metrics  bool
	Now      time.Time
	Done     string
	Data     any
}

func (d *dash) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	p := page{Base: base(r), Title: title, Nav: name, CSRF: d.csrf, ReadOnly: d.o.ReadOnly, Metrics: d.o.Metrics != nil,
		Now: time.Now(), Done: r.URL.Query().Get("done"), Data: data}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := d.tmpl[name].Execute(w, p); err != nil {
		http.Error(w, "baton dashboard: "+err.Error(), http.StatusInternalServerError)
	}
}

func (d *dash) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, baton.ErrUnknownQueue), errors.Is(err, baton.ErrInvalid), errors.Is(err, baton.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, baton.ErrRunning), errors.Is(err, baton.ErrFinished):
		status = http.StatusConflict
	}
	w.WriteHeader(status)
	d.render(w, r, "error", "Error", err.Error())
}

// show renders a page of data, or the error that kept it from being read.
func (d *dash) show(w http.ResponseWriter, r *http.Request, name, title string, data any, err error) {
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, name, title, data)
}

type queueRow struct {
	baton.QueueStats
	Event bool
}

func (d *dash) overview(w http.ResponseWriter, r *http.Request) {
	rows, err := d.queueRows(r.Context())
	d.show(w, r, "overview", "Queues", rows, err)
}

// queueRows are the overview's rows: every queue's counts.
func (d *dash) queueRows(ctx context.Context) ([]queueRow, error) {
	qs, err := d.c.Queues(ctx)
	if err != nil {
		return nil, err
	}
	stats, err := d.stats(ctx, qs, false)
	rows := make([]queueRow, len(stats))
	for i, st := range stats {
		rows[i] = queueRow{QueueStats: st, Event: strings.HasPrefix(qs[i], baton.EventQueue(""))}
	}
	return rows, err
}

// stats reads the counts of each queue; with missingOK, a queue that does
// not exist yet (a subscription's before its first event) has none.
func (d *dash) stats(ctx context.Context, queues []string, missingOK bool) ([]baton.QueueStats, error) {
	out := make([]baton.QueueStats, len(queues))
	for i, q := range queues {
		st, err := d.c.Stats(ctx, q)
		if err != nil && !(missingOK && errors.Is(err, baton.ErrUnknownQueue)) {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

type queuePage struct {
	Stats baton.QueueStats
	// State is the tab shown: a message state (baton.MessageStates).
	State string
	// Kind filters the messages of the tab ("" for every kind), Tag by
	// a tag they carry ("" for any), MetaKey and MetaValue by a value of
	// their metadata (ListOptions).
	Kind, Tag          string
	MetaKey, MetaValue string
	Messages           []baton.MessageInfo
	Next               string
	Dead               []baton.DeadLetter
	More               bool
	// Charts are the queue's history over the range asked for (charts.go).
	Charts chartSet
}

const pageSize = 50

func (d *dash) queue(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	p, err := d.queuePage(r.Context(), q, r.URL.Query())
	d.show(w, r, "queue", "Queue "+q, p, err)
}

// queuePage reads a queue's page: its counts and a page of the tab the
// query asks for (state, and after: where the page starts).
func (d *dash) queuePage(ctx context.Context, q string, query url.Values) (queuePage, error) {
	st, err := d.c.Stats(ctx, q)
	if err != nil {
		return queuePage{}, err
	}
	p := queuePage{Stats: st}
	if p.State, err = tab(st, query.Get("state")); err != nil {
		return p, err
	}
	if p.Charts, err = d.charts(ctx, q, query.Get("range")); err != nil {
		return p, err
	}
	p.Kind, p.Tag = query.Get("kind"), query.Get("tag")
	p.MetaKey, p.MetaValue = query.Get("meta_key"), query.Get("meta_value")
	if p.Kind != "" {
		if err := baton.ValidateKind(p.Kind); err != nil {
			return p, err
		}
	}
	if p.State == "dead" {
		p.Dead, p.More, err = d.deadPage(ctx, q)
	} else {
		p.Messages, p.Next, err = d.c.ListMessages(ctx, baton.ListOptions{Queue: q, State: baton.MessageState(p.State),
			Kind: p.Kind, Tag: p.Tag, MetaKey: p.MetaKey, MetaValue: p.MetaValue, After: query.Get("after"), Limit: pageSize})
	}
	return p, err
}

// Filtered says whether the page's messages are filtered.
func (p queuePage) Filtered() bool { return p.Kind != "" || p.Tag != "" || p.MetaKey != "" }

// FilterArgs are the page's filters as query arguments, each after a
// "&" ("" when none), for the links that keep them.
func (p queuePage) FilterArgs() template.URL {
	v := url.Values{}
	for _, f := range [][2]string{{"kind", p.Kind}, {"tag", p.Tag}, {"meta_key", p.MetaKey}, {"meta_value", p.MetaValue}} {
		if f[1] != "" {
			v.Set(f[0], f[1])
		}
	}
	if len(v) == 0 {
		return ""
	}
	// Encoded here, every value escaped: safe as a URL's query.
	return template.URL("&" + v.Encode())
}

// message shows one message of a queue: its fields, its whole payload and
// every failed attempt's error (with the stack of a panic).
func (d *dash) message(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		d.fail(w, r, fmt.Errorf("%w: message id %q", baton.ErrInvalid, r.PathValue("id")))
		return
	}
	m, err := d.c.Message(r.Context(), id)
	if err == nil && m.Queue != q {
		err = fmt.Errorf("%w: message %d is not in queue %q", baton.ErrNotFound, id, q)
	}
	v := messageView{MessageInfo: m}
	if err == nil {
		v.Deps, err = d.c.Dependencies(r.Context(), id)
	}
	d.show(w, r, "message", fmt.Sprintf("Message %d", id), v, err)
}

// tab is the tab a queue's page shows: the state asked for, by default
// the ready messages, or the dead letters when there are only those.
func tab(st baton.QueueStats, state string) (string, error) {
	switch {
	case state != "":
		_, err := baton.ParseMessageState(state)
		return state, err
	case st.Ready == 0 && st.Dead > 0:
		return "dead", nil
	}
	return "ready", nil
}

// deadPage is the first page of a queue's dead letters; more says whether
// there are others.
func (d *dash) deadPage(ctx context.Context, q string) ([]baton.DeadLetter, bool, error) {
	dead, err := d.c.DeadLetters(ctx, q, pageSize+1)
	if len(dead) > pageSize {
		return dead[:pageSize], true, err
	}
	return dead, false, err
}

type lockRow struct {
	baton.LockInfo
	Waiters int
}

func (d *dash) locks(w http.ResponseWriter, r *http.Request) {
	ls, err := d.c.Locks(r.Context())
	d.show(w, r, "locks", "Locks", locksPage{Rows: lockRows(ls), Graph: buildWaitGraph(ls)}, err)
}

// locksPage is the locks page: the wait-for graph above the table.
type locksPage struct {
	Rows  []lockRow
	Graph waitGraph
}

// lockRows are the locks page's rows: each lock, a granted one with the
// number of requests waiting for its identifier.
func lockRows(ls []baton.LockInfo) []lockRow {
	type key struct{ t, ns, name string }
	waiting := map[key]int{}
	for _, l := range ls {
		if l.Status == "PENDING" {
			waiting[key{l.Type, l.Namespace, l.Name}]++
		}
	}
	rows := make([]lockRow, len(ls))
	for i, l := range ls {
		rows[i] = lockRow{LockInfo: l}
		if l.Status == "GRANTED" {
			rows[i].Waiters = waiting[key{l.Type, l.Namespace, l.Name}]
		}
	}
	return rows
}

func (d *dash) sessions(w http.ResponseWriter, r *http.Request) {
	ss, err := d.c.Sessions(r.Context())
	d.show(w, r, "sessions", "Sessions", ss, err)
}

type subRow struct {
	baton.Subscription
	Stats baton.QueueStats
}

func (d *dash) subscriptions(w http.ResponseWriter, r *http.Request) {
	rows, err := d.subRows(r.Context())
	d.show(w, r, "subscriptions", "Subscriptions", rows, err)
}

// subRows are the subscriptions page's rows: each subscription, by name,
// with its queue's counts (none before its first event).
func (d *dash) subRows(ctx context.Context) ([]subRow, error) {
	subs, err := d.c.Subscriptions(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	queues := make([]string, len(subs))
	for i, s := range subs {
		queues[i] = baton.EventQueue(s.Name)
	}
	stats, err := d.stats(ctx, queues, true)
	rows := make([]subRow, len(stats))
	for i, st := range stats {
		rows[i] = subRow{Subscription: subs[i], Stats: st}
	}
	return rows, err
}

// ago says how long before now t was, to the millisecond below a second.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return dur(now.Sub(t))
}

func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
