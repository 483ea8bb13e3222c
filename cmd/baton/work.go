package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton"
)

func workCmd(g *globals) *cobra.Command {
	return newWorkCmd(g, workSpec{
		what:  "work",
		arg:   "QUEUE",
		use:   "work QUEUE [--concurrency N] [--ordered|--per-key] [--drain] [--visibility D] [--grace D] [--snooze D] -- CMD [ARG...]",
		short: "Run a command once per message of a queue",
		long:  workLong,
		example: `  # send mail, ten at a time, forever
  baton work mail --concurrency 10 -- ./send-mail.sh
  # cron: process whatever is ready, then exit
  baton work reports --drain -- python3 render.py
  # one account's events in order, accounts in parallel
  baton work ledger --per-key --concurrency 8 -- ./apply.sh`,
		queue: func(_ context.Context, _ *globals, name string) (string, error) {
			return name, checkQueue("work", name)
		},
	})
}

// workSpec is what distinguishes `baton work` from `baton events work`.
type workSpec struct {
	what, arg, use, short, long, example string
	// queue resolves the command's argument to the queue to work.
	queue func(ctx context.Context, g *globals, arg string) (string, error)
}

const workLong = `Consume QUEUE: run CMD once per message, with the payload on its standard
input and the message in its environment:

  BATON_MESSAGE_ID    the message's id
  BATON_QUEUE         the queue
  BATON_ATTEMPT       this attempt, from 1
  BATON_MAX_ATTEMPTS  the message's attempt limit
  BATON_KEY           the message's key ("" when it has none)
  BATON_KIND          the message's kind ("" when it has none)

CMD's standard output and error pass through. Exit status 0 acknowledges the
message (it is completed, and kept in the history for a day); with --output,
CMD's standard output is also recorded as the message's output (queue get
shows it): as it is when it is one JSON value, otherwise as a JSON string of
the text, in both cases at most its first 16 KiB (a longer output is cut and
recorded as text). Status 75
(EX_TEMPFAIL) snoozes it: it goes back to the queue, due after --snooze
(default 30s), without using an attempt (its next run has the same
BATON_ATTEMPT; baton queue get shows the snooze). Any other status retries it
after a backoff (attempt⁴ seconds ±20%, below), with the status and the
last lines of CMD's standard error recorded as its error; at its attempt limit
it goes to the dead letters (baton queue dead). baton queue cancel ID kills
CMD (the message ends cancelled). baton waits for messages without polling: a
push wakes it at once.

Modes:
  (default)   parallel: up to --concurrency messages at once, in any order
  --ordered   one message at a time, strictly in order; a retry holds the queue
  --per-key   never two messages with the same key at once, each key in order;
              different keys (and messages without one) run in parallel
Every worker of a queue must use the same mode.

While CMD runs its claim is renewed; if baton dies, the message returns to the
queue after --visibility and is delivered again, its attempt counted.

SIGINT or SIGTERM stops gracefully: baton claims nothing more, lets running
commands finish, and exits 0. Commands still running after --grace are killed
(SIGKILL to their process group) and their messages retried; a second signal
kills them at once. On Linux a CMD is killed with baton if baton itself is
killed (kill -9), so it never handles a message that is being delivered again
elsewhere. Each CMD runs in a process group of its own, so a Ctrl-C
on the terminal reaches baton only.

--drain exits 0 as soon as no message is ready and none is in flight (the
cron pattern); delayed messages and retries backing off are left for later.

--metrics ADDR serves Prometheus metrics at http://ADDR/metrics while the
worker runs: this worker's handler outcomes and durations, lost sessions, and
the database's queue counts and held locks (the same baton_* metrics as
baton serve).

A failed run is retried after attempt⁴ seconds (±20%): 1s, 16s, 81s, ...;
a message that fails all of its 25 default attempts (--max-attempts of baton
queue push) is retried for about 20 days before it is dead.

Environment:
  BATON_RETRY_BASE  retry after this Go duration doubling at each attempt
                    up to 10m instead (about 2.6 hours over 25 attempts
                    from 1s); mostly for tests

Exit statuses: 0 after a graceful stop or a drain; 64 for a bad flag, a bad
QUEUE or no CMD; 126 when CMD cannot be executed; 127 when CMD is not found;
69 when the database cannot be reached at the start; 1 for any other error.
A lost session is not an exit: the worker stops its running commands (their
messages are delivered again), opens a new session once the database answers
and carries on.`

// workFlags are the flags of baton work and baton events work.
type workFlags struct {
	concurrency            int
	ordered, perKey, drain bool
	visibility, grace      time.Duration
	timeout                time.Duration
	metricsAddr            string
	kind                   string
	snooze                 time.Duration
	output                 bool
}

// options checks the flags and turns them into worker options.
func (f *workFlags) options(what, name string) (baton.WorkerOptions, error) {
	opts := baton.WorkerOptions{Concurrency: f.concurrency, Visibility: f.visibility, Grace: f.grace, Drain: f.drain,
		Timeout: f.timeout, Name: name, Kind: f.kind, Mode: f.mode()}
	if err := f.checkKind(what); err != nil {
		return opts, err
	}
	return opts, firstUsageErr(what,
		usageCheck{f.timeout < 0, fmt.Sprintf("--timeout %v is negative", f.timeout)},
		usageCheck{f.ordered && f.perKey, "give at most one of --ordered and --per-key"},
		usageCheck{f.concurrency < 1, fmt.Sprintf("--concurrency %d: give at least 1", f.concurrency)},
		usageCheck{f.ordered && f.concurrency > 1, "--ordered runs one message at a time; drop --concurrency"},
		usageCheck{f.visibility < time.Second, fmt.Sprintf("--visibility %v: give at least 1s", f.visibility)},
		usageCheck{f.grace <= 0, fmt.Sprintf("--grace %v: give a positive duration", f.grace)},
		usageCheck{f.snooze < 0, fmt.Sprintf("--snooze %v is negative", f.snooze)})
}

// mode is the queue mode --ordered or --per-key asks for; parallel when
// neither is given.
func (f *workFlags) mode() baton.QueueMode {
	switch {
	case f.ordered:
		return baton.Ordered
	case f.perKey:
		return baton.PerKey
	}
	return baton.Parallel
}

// checkKind checks --kind.
func (f *workFlags) checkKind(what string) error {
	switch {
	case f.kind == "":
		return nil
	case f.ordered || f.perKey:
		return usageErr("%s: --kind takes one kind out of a queue: not with --ordered or --per-key, which serve the queue in its order", what)
	}
	return invalidUsage(what, baton.ValidateKind(f.kind))
}

// workCommand returns the command after -- of baton work's arguments.
func workCommand(what string, spec workSpec, args []string, dash int) ([]string, error) {
	if dash < 0 {
		return nil, usageErr("%s: missing -- CMD: put the command to run after --", what)
	}
	if dash != 1 {
		return nil, usageErr("%s: give exactly one %s before -- (got %d)", what, spec.arg, dash)
	}
	if len(args[dash:]) == 0 {
		return nil, usageErr("%s: empty command after --", what)
	}
	return args[dash:], nil
}

// retryFromEnv is the retry policy BATON_RETRY_BASE sets.
func retryFromEnv(what string) (baton.RetryPolicy, error) {
	var retry baton.RetryPolicy
	if v := os.Getenv("BATON_RETRY_BASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return retry, usageErr("%s: BATON_RETRY_BASE=%q: give a positive Go duration (e.g. 500ms, 5s)", what, v)
		}
		retry.Base = d
	}
	return retry, nil
}

// workJob is what a baton work command was asked to do, checked.
type workJob struct {
	queue   string
	opts    baton.WorkerOptions
	retry   baton.RetryPolicy
	path    string
	command []string
	snooze  time.Duration // the delay of a command's exit status 75
	output  bool          // record CMD's standard output (--output)
}

// prepareWork checks a baton work command's arguments (dash where --
// stood), flags and environment, and finds its queue and CMD.
func prepareWork(ctx context.Context, g *globals, spec workSpec, f *workFlags, args []string, dash int) (workJob, error) {
	var job workJob
	var err error
	what := spec.what
	if job.command, err = workCommand(what, spec, args, dash); err != nil {
		return job, err
	}
	if job.queue, err = spec.queue(ctx, g, args[0]); err != nil {
		return job, err
	}
	if job.opts, err = f.options(what, "baton "+what+" "+args[0]); err != nil {
		return job, err
	}
	job.snooze, job.output = f.snooze, f.output
	if job.retry, err = retryFromEnv(what); err != nil {
		return job, err
	}
	job.path, err = lookCommand(what, job.command[0])
	return job, err
}

func newWorkCmd(g *globals, spec workSpec) *cobra.Command {
	var f workFlags
	cmd := &cobra.Command{
		Use:     spec.use,
		Short:   spec.short,
		Long:    spec.long,
		Example: spec.example,
		RunE: func(cmd *cobra.Command, args []string) error {
			job, err := prepareWork(cmd.Context(), g, spec, &f, args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			obs, err := serveMetrics(f.metricsAddr)
			if err != nil {
				return err
			}
			defer obs.close()
			return runWorker(cmd.Context(), g, job, obs)
		},
	}
	cmd.Flags().IntVar(&f.concurrency, "concurrency", 1, "how many messages (commands) at once")
	if spec.what == "work" {
		cmd.Flags().StringVar(&f.kind, "kind", "", "run CMD only for messages of this kind (queue push --kind); the others stay for other workers")
	}
	cmd.Flags().BoolVar(&f.output, "output", false, fmt.Sprintf("record CMD's standard output as the output of a run that succeeds (queue get shows it): as JSON when it is, else as text, the first %d bytes", baton.MaxOutput))
	cmd.Flags().BoolVar(&f.ordered, "ordered", false, "one message at a time, strictly in order")
	cmd.Flags().BoolVar(&f.perKey, "per-key", false, "never two messages with the same key at once")
	cmd.Flags().BoolVar(&f.drain, "drain", false, "exit once no message is ready (cron)")
	cmd.Flags().DurationVar(&f.visibility, "visibility", 30*time.Second, "claim lease, renewed while CMD runs: how soon a message of a dead worker is delivered again")
	cmd.Flags().DurationVar(&f.grace, "grace", 10*time.Second, "on SIGINT/SIGTERM, how long running commands may take before they are killed")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "kill a command that runs longer than this (its attempt fails); a message's own --timeout (queue push) wins")
	cmd.Flags().DurationVar(&f.snooze, "snooze", 30*time.Second, "a command exiting with status 75 (EX_TEMPFAIL) puts its message off for this long, without using an attempt")
	cmd.Flags().StringVar(&f.metricsAddr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (host:port) while working")
	return cmd
}

func runWorker(ctx context.Context, g *globals, job workJob, obs *workerMetrics) error {
	// The first signal cancels ctx (see main): Work stops claiming and
	// waits for running commands. A second one kills them.
	force, stop := forceOnSecondSignal(job.opts.Grace)
	defer stop()
	c, err := openWorkerClient(ctx, g, job.retry, obs)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return err
	}
	defer c.Close()
	h := commandHandler(force, job.path, job.command, job.snooze)
	if job.output {
		h = recordOutput(h)
	}
	return c.Work(ctx, job.queue, h, job.opts)
}

// forceOnSecondSignal watches SIGINT and SIGTERM while a worker runs: the
// first says the worker is stopping, the second closes force (running
// commands are killed). stop ends the watch.
func forceOnSecondSignal(grace time.Duration) (force <-chan struct{}, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	forced := make(chan struct{})
	stopped := make(chan struct{})
	go watchStopSignals(sigs, grace, forced, stopped)
	return forced, func() {
		close(stopped)
		signal.Stop(sigs)
	}
}

// watchStopSignals announces the graceful stop at the first signal and
// closes force at the second, unless stopped is closed first.
func watchStopSignals(sigs <-chan os.Signal, grace time.Duration, force chan<- struct{}, stopped <-chan struct{}) {
	select {
	case <-sigs:
		fmt.Fprintf(os.Stderr, "baton: work: stopping: letting running commands finish (at most %v; signal again to kill them)\n", grace)
	case <-stopped:
		return
	}
	select {
	case <-sigs:
		close(force)
	case <-stopped:
	}
}

// openWorkerClient opens the worker's client: as g.open, with the backoff
// of BATON_RETRY_BASE, and observed by the metrics when they are served.
func openWorkerClient(ctx context.Context, g *globals, retry baton.RetryPolicy, obs *workerMetrics) (*baton.Client, error) {
	copts := g.options("baton-cli")
	copts.Retry, copts.MaxConns = retry, cliConns
	if obs != nil {
		copts.Observer = obs.m
	}
	c, err := baton.Open(ctx, g.dsn, copts)
	if err == nil && obs != nil {
		obs.m.Watch(c)
	}
	return c, err
}

// commandHandler runs CMD once per message and says on standard error
// why an attempt failed and what comes next; CMD's exit status 75
// snoozes the message for snooze.
func commandHandler(force <-chan struct{}, path string, command []string, snooze time.Duration) baton.Handler {
	return func(ctx context.Context, m *baton.Message) error {
		err := runMessage(ctx, force, m, path, command)
		if errors.Is(err, errTempFail) {
			fmt.Fprintf(os.Stderr, "baton: work: message %d of %s, attempt %d of %d: %s exited with status %d; snoozed for %v\n",
				m.ID, m.Queue, m.Attempt, m.MaxAttempts, command[0], exitTempFail, snooze)
			return baton.Snooze(snooze)
		}
		if err != nil {
			reportFailure(ctx, m, err)
		}
		return err
	}
}

// exitTempFail is the exit status (EX_TEMPFAIL) with which CMD asks to be
// run again later: its message is snoozed, not failed.
const exitTempFail = 75

// errTempFail is runMessage's error when CMD exited with exitTempFail.
var errTempFail = errors.New("temporary failure")

// reportFailure says which attempt of a message failed, why, and whether
// it is retried, goes to the dead letters, or ends cancelled (ctx, the
// handler's context, ended because it was).
func reportFailure(ctx context.Context, m *baton.Message, err error) {
	next := "retrying"
	switch {
	case errors.Is(context.Cause(ctx), baton.ErrCancelled):
		next = "it ends cancelled"
	case m.Attempt >= m.MaxAttempts:
		next = "to the dead letters"
	}
	fmt.Fprintf(os.Stderr, "baton: work: message %d of %s, attempt %d of %d: %s; %s\n",
		m.ID, m.Queue, m.Attempt, m.MaxAttempts, oneLine(err.Error()), next)
}

// runMessage runs CMD for one message; it kills CMD's process group when
// ctx ends (the grace period ran out, or the claim was lost) or force is
// closed.
func runMessage(ctx context.Context, force <-chan struct{}, m *baton.Message, path string, command []string) error {
	select {
	case <-force:
		return errors.New("not run: baton was told to stop at once")
	default:
	}
	child, tail := messageCommand(m, path, command)
	if w := capturedStdout(ctx); w != nil {
		child.Stdout = io.MultiWriter(child.Stdout, w)
	}
	stdin, done, err := payloadInput(m.Payload)
	if err != nil {
		return fmt.Errorf("cannot pass the payload to %s: %v", command[0], err)
	}
	defer done()
	child.Stdin = stdin
	err = child.Start()
	stdin.Close() // CMD has its own
	if err != nil {
		return fmt.Errorf("cannot run %s: %v", command[0], err)
	}
	killed, werr := waitOrKill(ctx, force, child)
	if killed != "" {
		return errors.New(command[0] + " " + killed)
	}
	code := childStatus(werr)
	if code == exitTempFail {
		return errTempFail
	}
	return exitErr(command[0], code, tail)
}

// pipeHolds is the largest payload passed through a pipe: every system's
// pipe buffer holds at least this much, so it is written before CMD starts.
const pipeHolds = 4096

// payloadInput is CMD's standard input: the whole payload, written before
// CMD starts and ended, so that CMD never reads a cut-off payload, not even
// when baton is killed as it starts CMD (a pipe baton fed as CMD ran would
// end early, and CMD, in a process group of its own, could act on the
// short payload before it died with baton). A payload of up to pipeHolds
// bytes waits in a pipe whose writing end is closed, a larger one in an
// unlinked temporary file. done removes the file where it could not be
// unlinked while open (Windows).
func payloadInput(payload []byte) (stdin *os.File, done func(), err error) {
	if len(payload) <= pipeHolds {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, err
		}
		_, err = w.Write(payload)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			r.Close()
			return nil, nil, err
		}
		return r, func() {}, nil
	}
	f, err := os.CreateTemp("", "baton-payload-*")
	if err != nil {
		return nil, nil, err
	}
	done = func() {}
	if os.Remove(f.Name()) != nil {
		done = func() { _ = os.Remove(f.Name()) }
	}
	if _, err = f.Write(payload); err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		done()
		return nil, nil, err
	}
	return f, done, nil
}

// messageCommand prepares CMD for a message (its standard input is
// payloadInput's): the message in its environment, standard error passed through and
// its end kept in tail; in a process group of its own that dies with baton.
func messageCommand(m *baton.Message, path string, command []string) (*exec.Cmd, *tailWriter) {
	child := exec.Command(path, command[1:]...)
	child.Args[0] = command[0]
	child.Stdout = os.Stdout
	tail := &tailWriter{}
	child.Stderr = io.MultiWriter(os.Stderr, tail)
	child.Env = append(os.Environ(),
		"BATON_MESSAGE_ID="+strconv.FormatInt(m.ID, 10),
		"BATON_QUEUE="+m.Queue,
		"BATON_ATTEMPT="+strconv.Itoa(m.Attempt),
		"BATON_MAX_ATTEMPTS="+strconv.Itoa(m.MaxAttempts),
		"BATON_KEY="+m.Key,
		"BATON_KIND="+m.Kind,
	)
	ownGroup(child)
	dieWithParent(child)
	// A background process that keeps CMD's standard error open must not
	// hold the message once CMD itself has exited.
	child.WaitDelay = 2 * time.Second
	return child, tail
}

// waitOrKill waits for the started CMD to exit, or kills its process group
// when ctx ends or force is closed; killed then says why.
func waitOrKill(ctx context.Context, force <-chan struct{}, child *exec.Cmd) (killed string, werr error) {
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case werr := <-exited:
		return "", werr
	case <-ctx.Done():
		killed = "killed: " + context.Cause(ctx).Error()
	case <-force:
		killed = "killed: baton was told to stop at once"
	}
	killGroup(child)
	<-exited
	return killed, nil
}

// exitErr is the error of CMD's exit status (nil for 0), with the last
// lines of its standard error.
func exitErr(name string, code int, tail *tailWriter) error {
	if code == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s exited with status %d", name, code)
	if last := tail.lastLines(3); last != "" {
		msg += "; stderr: " + last
	}
	return errors.New(msg)
}

// tailWriter keeps the last bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

const tailKeep = 1024

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailKeep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailKeep:]...)
	}
	return len(p), nil
}

// lastLines returns the last n non-empty lines, joined by " | ".
func (t *tailWriter) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(string(t.buf), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.ToValidUTF8(strings.Join(lines, " | "), "?")
}
