package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/dashboard"
	"github.com/batonhq/baton/metrics"
)

func serveCmd(g *globals) *cobra.Command {
	var addr, token string
	var readOnly bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the web dashboard and Prometheus metrics",
		Long: `Run the web dashboard of the database's queues, dead letters, locks, sessions
and subscriptions, refreshed every 2 seconds, and Prometheus metrics at
/metrics.

It listens on 127.0.0.1:8080 by default. A non-loopback --addr needs --token:
then every request must carry the token (open any page once with ?token=T,
which sets a cookie, or send "Authorization: Bearer T"). Mutations (re-drive
and purge dead letters) are POST requests from the dashboard's own pages
(same origin, with a CSRF token) or with the bearer token; --read-only leaves
them out entirely. BATON_TOKEN sets --token.

The address it listens on is printed on standard error. SIGINT or SIGTERM
stops it gracefully.

Exit statuses: 0 after SIGINT/SIGTERM; 64 for a bad --addr, an address it
cannot listen on, or a non-loopback address without --token; 69 when the
database cannot be reached; 1 for any other error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkServeAddr(addr, token); err != nil {
				return err
			}
			m := metrics.New()
			opts := g.options("baton-serve")
			opts.Observer = m
			c, err := baton.Open(cmd.Context(), g.dsn, opts)
			if err != nil {
				return err
			}
			defer c.Close()
			m.Watch(c)
			h, err := dashboard.New(c, dashboard.Options{ReadOnly: readOnly, Token: token, Metrics: m.Handler()})
			if err != nil {
				return err
			}
			return serveDashboard(cmd.Context(), addr, h)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (host:port)")
	cmd.Flags().StringVar(&token, "token", os.Getenv("BATON_TOKEN"), "token every request must carry (required off loopback)")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "no mutating routes (re-drive, purge)")
	return cmd
}

// checkServeAddr checks --addr, which off loopback needs a --token.
func checkServeAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("--addr %q: %v (write host:port, e.g. 127.0.0.1:8080)", addr, err)
	}
	if token == "" && !loopback(host) {
		return usageErr("--addr %s is not a loopback address: give --token (or BATON_TOKEN) so that only holders of the token can use the dashboard", addr)
	}
	return nil
}

// serveDashboard serves h on addr until ctx ends, then shuts the server
// down gracefully.
func serveDashboard(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: listen on %s: %v", baton.ErrInvalid, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "baton: dashboard on http://%s/ (metrics at /metrics)\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	return shutdown(srv, 5*time.Second)
}

// shutdown stops srv gracefully, waiting at most wait for the requests
// in progress.
func shutdown(srv *http.Server, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loopback reports whether host is a loopback name or address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// workerMetrics serves a worker's Prometheus metrics (baton work --metrics).
type workerMetrics struct {
	m   *metrics.Metrics
	srv *http.Server
}

// serveMetrics serves the metrics on addr; nil (nothing) when addr is "".
func serveMetrics(addr string) (*workerMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usageErr("--metrics %q: %v (write host:port, e.g. 127.0.0.1:9464)", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: --metrics: listen on %s: %v", baton.ErrInvalid, addr, err)
	}
	w := &workerMetrics{m: metrics.New()}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", w.m.Handler())
	w.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "baton: metrics on http://%s/metrics\n", ln.Addr())
	go func() { _ = w.srv.Serve(ln) }()
	return w, nil
}

// close stops the metrics server, if there is one.
func (w *workerMetrics) close() {
	if w == nil {
		return
	}
	_ = shutdown(w.srv, 2*time.Second)
}
